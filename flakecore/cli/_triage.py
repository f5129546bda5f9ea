"""``flakecore triage``: from the patch run's evidence to one verdict per red test.

The procedure is :mod:`flakecore.gate.triage`; this verb reads the evidence
(the plugin's log directories, the run's reports through the adapters'
format registry), the policy from the base revision, prints one result per
red test through the one printer, and shows progress on a terminal.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import os
import shlex
import sys
import threading
from collections.abc import Callable, Collection, Iterable
from pathlib import Path
from typing import cast

from flakecore._wording import plural
from flakecore.cli._common import adapters, die, flat, parse_now, warn
from flakecore.cli._config import Configured
from flakecore.cli._github import SummaryRow
from flakecore.cli._output import Output, Result, add_output_arguments
from flakecore.cli._signing import add_signing_arguments, signer_from_args
from flakecore.errors import UsageError
from flakecore.evidence import Attempt
from flakecore.exits import EXIT_CANTCREAT, TRIAGE_EXIT, TRIAGE_NOTHING_RED, triage_exit
from flakecore.gate.basetrust import RecordTrust
from flakecore.gate.config import GateConfig, parse_policy_override
from flakecore.gate.policy_source import (
    PYPROJECT,
    compare_scored_table,
    load_trusted_config,
    scored_table_reason,
)
from flakecore.gate.replay import ExitStatusJudge, Judge, ReportJudge
from flakecore.gate.runtime import Terminated, adopt_orphans, signals_raise
from flakecore.gate.triage import LeaseTerms, RedTest, TestVerdict, TriageRequest, find_red_tests
from flakecore.gate.triage import run_triage as _run_triage
from flakecore.gate.triage_config import TriageConfig
from flakecore.gate.worktree import repo_toplevel
from flakecore.identity import RunnerId
from flakecore.logdir import read_log_dir
from flakecore.timeutil import format_rfc3339

__all__ = ["register"]

_EPILOG = (
    "The test command, the epoch lock and the policies come from [tool.flakecore.triage] of "
    "the --base revision, never from the working tree (docs/triage.md). exit: 0 every red "
    "test ACCEPT_PREEXISTING; otherwise the most serious verdict's: 10 REJECT_TOO_MANY_RED, "
    "4 REJECT_PATCH_INTRODUCED, 5 REJECT_POLICY, 3 REJECT_ERROR, 1 REJECT_INCOMPLETE; "
    "11 the evidence holds no red test; 64 usage, 65 unusable input, 66 missing input, "
    "70 a missing extra, 73 a record cannot be written, 128+N stopped by signal N."
)


def register(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], wanted: Collection[str]
) -> None:
    """Add the ``triage`` verb."""
    parser = sub.add_parser(
        "triage",
        help="decide every red test of a CI run: pre-existing flake, or broken by the patch",
        description=(
            "Read the patch run's evidence (the flakecore pytest plugin's --flakecore-log "
            "directories and the run's reports), replay each red test on the base commit with "
            "its own pinned seed (and the seed budget, when configured), and print one verdict "
            "per red test. Records (freeze records, lease proposals) go to --out-dir."
        ),
        epilog=_EPILOG,
    )
    parser.add_argument("--base", required=True, metavar="REV", help="the base commit (exact)")
    parser.add_argument(
        "--log-dir",
        action="append",
        default=[],
        metavar="DIR",
        help="a --flakecore-log directory of the patch run (repeatable): red tests and seeds",
    )
    parser.add_argument(
        "--report",
        action="append",
        default=[],
        metavar="FILE",
        help="a report of the patch run (repeatable): red tests, collection and set-up errors",
    )
    parser.add_argument(
        "--report-format",
        default="auto",
        metavar="FORMAT",
        help="the reports' format: auto (default) or a name the adapters register",
    )
    parser.add_argument(
        "--out-dir",
        required=True,
        metavar="DIR",
        help="where the records go: outside the checkout, empty or new",
    )
    parser.add_argument(
        "--jobs", type=int, default=1, metavar="N", help="replays run side by side (default 1)"
    )
    parser.add_argument(
        "--config-path",
        default=PYPROJECT,
        metavar="PATH",
        help="the pyproject.toml in the base revision, from the repository top",
    )
    parser.add_argument(
        "--policy",
        dest="policy_overrides",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override one policy number of the base's table (recorded as an override)",
    )
    lease = parser.add_argument_group("lease proposals (docs/leases.md)")
    lease.add_argument("--owner", metavar="ID", help="who owns a frozen test until it is fixed")
    lease.add_argument(
        "--expires-at",
        metavar="RFC3339",
        help="the proposal's expiry (default: now plus the policy's max_lease_days)",
    )
    lease.add_argument("--canary", metavar="JOB", help="the canary job that keeps running it")
    lease.add_argument(
        "--replay-host", metavar="RUNNER_ID", help="this job's runner id (default: a fresh one)"
    )
    lease.add_argument(
        "--patch-author", metavar="ID", help="who wrote the patch (for the lease open command)"
    )
    parser.add_argument("--now", metavar="RFC3339", help="evaluation time instead of the clock")
    add_signing_arguments(parser)
    add_output_arguments(parser)
    parser.set_defaults(run=_run)


def _config(args: argparse.Namespace, checkout: Path) -> GateConfig:
    config = load_trusted_config(checkout, args.base, path=args.config_path)
    config = compare_scored_table(config, checkout=checkout)
    overrides = dict(parse_policy_override(t) for t in args.policy_overrides)
    return config.with_policy(overrides)


_IterAttempts = Callable[..., Iterable[Attempt]]


def _reports(args: argparse.Namespace) -> list[tuple[str, list[Attempt]]]:
    if not args.report:
        return []
    iter_attempts = cast(
        _IterAttempts, adapters("triage --report", report_format=args.report_format).iter_attempts
    )
    return [
        (name, list(iter_attempts(name, format=args.report_format, source_name=name)))
        for name in args.report
    ]


def _logs(args: argparse.Namespace) -> dict[str, list[Path]]:
    merged: dict[str, list[Path]] = {}
    for directory in args.log_dir:
        for test_id, logs in read_log_dir(directory).items():
            merged.setdefault(test_id, []).extend(logs)
    return merged


def _judges(triage: TriageConfig | None) -> Callable[[str], Judge]:
    """How one replay attempt is told: from the configured report, or the exit status."""
    if triage is None or triage.report is None:
        return lambda _test_id: ExitStatusJudge()
    module = adapters("triage (the base's report setting)", report_format=triage.report_format)
    iter_attempts = cast(_IterAttempts, module.iter_attempts)
    report, fmt = triage.report, triage.report_format

    def judge(test_id: str) -> Judge:
        def read(path: Path) -> Iterable[Attempt]:
            return iter_attempts(os.fspath(path), format=fmt, source_name=report, test_id=test_id)

        def ids(path: Path) -> Iterable[str]:
            return cast(Iterable[str], module.iter_test_ids(os.fspath(path), format=fmt))

        return ReportJudge(report=report, test_id=test_id, read=read, ids=ids)

    return judge


class _Progress:
    """One line on a terminal: how many red tests are decided, and what runs now."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.done = 0
        self.status: dict[str, str] = {}
        self.lock = threading.Lock()

    def __call__(self, test_id: str, status: str) -> None:
        with self.lock:
            if status == "done":
                self.done += 1
                self.status.pop(test_id, None)
            else:
                self.status[test_id] = status
            running = "; ".join(f"{flat(t)[-60:]}: {s}" for t, s in self.status.items())
            line = f"triage: {self.done}/{self.total} decided" + (f"; {running}" if running else "")
            sys.stderr.write(f"\r{line[:200]}\x1b[K")
            sys.stderr.flush()

    def clear(self) -> None:
        with self.lock:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


def _lease_hint(verdict: TestVerdict, args: argparse.Namespace, host: str, base: str) -> list[str]:
    proposal = verdict.records.get("lease-proposal")
    if proposal is None:
        return []
    author = shlex.quote(args.patch_author) if args.patch_author else "<the patch's author>"
    command = shlex.join(
        ["flakecore", "lease", "open", "--base", base, "--report", proposal,
         "--test-id", verdict.test_id, "--replay-host", host, "--patch-author"]
    )  # fmt: skip
    return [
        f"lease proposal for {flat(verdict.test_id)}: the acceptor (a reviewer, or a policy "
        f"job with its own key; never this replay host nor the patch's author) runs "
        f"{command} {author} --accepted-by <acceptor> "
        "and commits the lease in its own reviewed commit (docs/leases.md)"
    ]


def _result(verdict: TestVerdict, args: argparse.Namespace, host: str, base: str) -> Result:
    exit_code = TRIAGE_EXIT[verdict.verdict]
    evidence = ", ".join(verdict.evidence) or "-"
    why = "; ".join(verdict.reasons)
    text = (
        f"{flat(verdict.test_id)}: {verdict.verdict.value} (code={verdict.code}, "
        f"exit={exit_code}) evidence: {evidence} -- {flat(why)}"
    )
    data = {**verdict.to_json(), "replay_host": host}
    row = SummaryRow(
        test=verdict.test_id,
        policy="triage",
        code=verdict.code,
        exit=exit_code,
        reason=why,
        evidence=", ".join([*verdict.evidence, *verdict.records.values()]),
        refused=not verdict.accepted,
        verdict=verdict.verdict.value,
    )
    return Result(json=data, text=[text], stderr=_lease_hint(verdict, args, host, base), row=row)


def _terms(args: argparse.Namespace, config: GateConfig) -> LeaseTerms:
    now = parse_now(args.now)
    expires = args.expires_at
    if expires is None:
        until = now.replace(microsecond=0) + dt.timedelta(days=config.policy.max_lease_days)
        expires = format_rfc3339(until)
    return LeaseTerms(owner=args.owner, expires_at=expires, canary=args.canary)


def _configured(top: Path, config: GateConfig) -> Configured:
    """The trust of the base the configuration came from (what ``--signing-key`` checks)."""
    trust = RecordTrust(checkout=top, base=config.source.revision, keys=config.trusted_keys)
    return Configured(config=config, trust=trust)


def _request(
    args: argparse.Namespace, top: Path, config: GateConfig, red: list[RedTest]
) -> TriageRequest:
    assert config.source.revision is not None
    return TriageRequest(
        checkout=top,
        base_sha=config.source.revision,
        config=config,
        red=tuple(red),
        out_dir=Path(os.path.abspath(args.out_dir)),
        jobs=args.jobs,
        terms=_terms(args, config),
        signer=signer_from_args(args, _configured(top, config)),
    )


def _run(args: argparse.Namespace) -> int:
    out = Output.chosen(args, "flakecore triage")
    if not args.log_dir and not args.report:
        raise UsageError("triage: give the patch run's evidence: --log-dir DIR, --report FILE")
    top = repo_toplevel(Path.cwd())
    config = _config(args, top)
    if (why := scored_table_reason(config)) is not None:
        warn(why)
    judge_for = _judges(config.triage)
    red = find_red_tests(_logs(args), _reports(args), policy=config.policy)
    request = _request(args, top, config, red)
    host = args.replay_host or str(RunnerId.fresh(os.environ.get("FLAKECORE_IMAGE_DIGEST") or None))
    progress = _Progress(len(red)) if sys.stderr.isatty() and red else None
    adopt_orphans()
    verdicts: list[TestVerdict] = []
    try:
        with (
            signals_raise(),
            contextlib.closing(
                _run_triage(request, judge_for=judge_for, progress=progress)
            ) as results,
        ):
            for verdict in results:
                if progress is not None:
                    progress.clear()
                out.emit(_result(verdict, args, host, request.base_sha))
                verdicts.append(verdict)
    except Terminated as exc:
        return die(f"stopped by {exc} (worktrees removed, no record written)", 128 + exc.signum)
    except OSError as exc:  # the records could not be written: nothing of this run stands
        return die(f"{exc.filename}: cannot write the records: {exc.strerror}", EXIT_CANTCREAT)
    finally:
        if progress is not None:
            progress.clear()
    exit_code = triage_exit(v.verdict for v in verdicts)
    accepted = sum(v.accepted for v in verdicts)
    summary = (
        f"triage: {plural(len(verdicts), 'red test')}, {accepted} accepted as pre-existing, "
        f"{len(verdicts) - accepted} refused (exit={exit_code})"
    )
    if exit_code == TRIAGE_NOTHING_RED:
        why = (
            "the evidence holds no red test, so nothing can be accepted: if the run was red, "
            "its cause is not in this evidence (a collection error? give the run's report "
            "with --report)"
        )
        warn(f"triage: {why} (exit={exit_code})")
        row = SummaryRow(test="", policy="triage", code="NO_RED_TEST", exit=exit_code,
                         reason=why, evidence=", ".join(args.log_dir + args.report),
                         refused=True)  # fmt: skip
        out.emit(Result(row=row))
    else:
        out.emit(Result(stderr=[summary]))
    return out.finish(exit_code)
