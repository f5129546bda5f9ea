"""``flakecore replay`` and ``flakecore budget-run``: run a procedure of docs/gate.md, then decide.

These verbs are the only place the gate procedures meet the adapters: the
replay's report judge is built here from ``flakecore_adapters.iter_attempts``
(imported lazily, only with ``--report``), and injected into the core.
Signals become exceptions while a verb runs, so a CI cancel (SIGTERM) or a
Ctrl-C still removes the worktree before the process exits.  The policy is
the ``--base`` revision's ``[tool.flakecore]`` (never the scored tree's); a
record written with a signing key is its DSSE envelope, signed only after
every attempt has ended, from what flakecore itself observed.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
from collections.abc import Callable, Collection, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from flakecore.admit import admit_verdict
from flakecore.cli._common import adapters, die, write_record
from flakecore.cli._config import Configured, Need, add_config_arguments, config_from_args
from flakecore.cli._output import Output, Result, add_output_arguments, reason_text
from flakecore.cli._signing import add_signing_arguments, signer_from_args
from flakecore.codes import AdmitCode, BudgetCode
from flakecore.decision import Decision
from flakecore.errors import GitError, UsageError
from flakecore.exits import EXIT_CANTCREAT, EXIT_IOERR
from flakecore.gate.replay import (
    ExitStatusJudge,
    Judge,
    ReplayOutcome,
    ReplayRequest,
    ReportJudge,
    ReportReader,
    run_replay,
)
from flakecore.gate.runtime import Terminated, adopt_orphans, remove_file, signals_raise
from flakecore.policy import DEFAULT_POLICY

if TYPE_CHECKING:
    from flakecore.cli._github import SummaryRow
    from flakecore.evidence import Attempt
    from flakecore.signing import RecordSigner

__all__ = ["register"]

_REPLAY_EPILOG = (
    "COMMAND runs once per attempt in a fresh process, cwd = the base worktree; {seed} in it is "
    "replaced by --seed. Before the first attempt --setup runs there once, and the COMMAND's "
    "Python is probed: imports that resolve into this checkout are REJECT_INCOMPLETE. "
    "Without --report: exit 0 pass, a --miss-exit-codes status (default 1, "
    "pytest's 'tests failed') miss, a timeout timeout, any other status error. "
    "exit: 0 ACCEPT_PREEXISTING (freeze record written to --out), 1 REJECT_INCOMPLETE "
    "(also: git failure, dirty base, unusable report), 2 REJECT_PROPERTY_DRIFT, "
    "3 REJECT_FIXTURE_EPOCH, 4 REJECT_PATCH_INTRODUCED, 5 REJECT_BUDGET; 64 usage error, "
    "65 unusable input, 66 missing input file, 73 --log already exists, "
    "128+N stopped by signal N (worktree removed)."
)
_BUDGET_EPILOG = (
    "--property-cmd is ONE shell-quoted string (split with shlex, run without a shell) in which "
    "{fixture} is replaced by the parent fixture's path; COMMAND (after --) runs once per seed "
    "with {seed} replaced. Exit 0 pass, a --miss-exit-codes status miss, anything else stops the "
    "run (INSUFFICIENT_BUDGET). exit: 0 FLAKE_CANDIDATE, 1 INSUFFICIENT_BUDGET (also: git "
    "failure), 2 PROPERTY_MISS, 3 FIXTURE_DRIFT, 5 STABLE_FAIL, 6 STABLE_PASS; 64 usage error, "
    "65 unusable input, 66 missing input file."
)


def register(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], wanted: Collection[str]
) -> None:
    """Add those of the ``replay`` and ``budget-run`` verbs that ``wanted`` names."""
    if "replay" in wanted:
        _register_replay(sub)
    if "budget-run" in wanted:
        _register_budget_run(sub)


def _common_run_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--timeout", type=float, metavar="SECONDS", help="per-run timeout (kills the process group)"
    )
    parser.add_argument(
        "--seed-env", metavar="NAME", help="also pass the seed in this environment variable"
    )
    parser.add_argument(
        "--miss-exit-codes",
        metavar="N[,N...]",
        default="1",
        help="exit statuses that mean 'the assertion failed' (default: 1, pytest's)",
    )
    parser.add_argument("command", nargs="*", metavar="COMMAND", help="the test command, after --")


def _register_replay(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "replay",
        help="replay the base commit in a detached worktree and decide with admit",
        description=(
            "The base replay (docs/gate.md): hash the claim on this checkout, replay the "
            "unmodified base commit in a detached git worktree (refused unless exact and clean), "
            "count attempts and misses, re-hash both trees after every attempt, decide with admit, "
            "write the freeze record only for ACCEPT_PREEXISTING, remove the worktree always."
        ),
        epilog=_REPLAY_EPILOG,
    )
    parser.add_argument("--base", required=True, metavar="REV", help="base commit (SHA or ref)")
    parser.add_argument("--seed", required=True, help="the seed pinned from the patch failure")
    parser.add_argument(
        "--attempts", type=int, metavar="N", help="base attempts (default and maximum: the cap)"
    )
    parser.add_argument(
        "--property-file",
        required=True,
        metavar="PATH",
        help="the property's source file in this checkout (hashed on both trees)",
    )
    parser.add_argument(
        "--epoch-lock",
        required=True,
        metavar="PATH",
        help="the fixture epoch lock file in this checkout (hashed on both trees)",
    )
    parser.add_argument(
        "--claimed-epoch",
        required=True,
        metavar="DIGEST",
        help="the epoch the claim names: the lock's sha256, as sha256sum EPOCH_LOCK prints it",
    )
    patch = parser.add_mutually_exclusive_group(required=True)
    patch.add_argument("--patch-misses", type=int, metavar="N", help="misses of the patch run")
    patch.add_argument(
        "--patch-log",
        action="append",
        metavar="FILE",
        help="the patch run's attempt log (repeat for several workers)",
    )
    patch.add_argument(
        "--patch-report",
        action="append",
        metavar="FILE",
        help="the patch run's test report, read as --report-format says (repeat for several); "
        "the --test-id test's failed attempts are the patch misses",
    )
    parser.add_argument(
        "--report", metavar="FILE", help="report the COMMAND writes (relative to the worktree)"
    )
    parser.add_argument(
        "--report-format",
        default="auto",
        metavar="FORMAT",
        help="format of --report: auto (the default: from the content) or a name the adapters "
        "register (junit, pytest-json, ...: see docs/adapters.md)",
    )
    parser.add_argument(
        "--test-id",
        metavar="ID",
        help="the test to read from --report and --patch-report; recorded as property_id",
    )
    parser.add_argument(
        "--out", required=True, metavar="RECORD.json", help="freeze record (written on accept)"
    )
    parser.add_argument(
        "--log", metavar="ATTEMPTS.jsonl", help="attempt log to create (default: a temporary file)"
    )
    parser.add_argument(
        "--setup",
        metavar="'CMD ...'",
        help="one shell-quoted command run once in the base worktree before the first attempt "
        "(e.g. build the base its own venv)",
    )
    _common_run_flags(parser)
    add_output_arguments(parser, reports=True)
    add_config_arguments(parser, base=False)
    add_signing_arguments(parser)
    parser.set_defaults(run=_run_replay)


def _register_budget_run(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "budget-run",
        help="observe a fixed seed budget and decide with budget",
        description=(
            "The seed-budget run (docs/gate.md): compare the parent fixture (from --base) with "
            "the head fixture, score the property on the parent fixture, run each committed seed "
            "exactly once, write the observation to --out, decide with budget."
        ),
        epilog=_BUDGET_EPILOG,
    )
    parser.add_argument(
        "--test-id",
        required=True,
        metavar="ID",
        help="the test the budget is about (its ledger row)",
    )
    parser.add_argument(
        "--base", required=True, metavar="REV", help="the parent commit (required: no guessing)"
    )
    parser.add_argument(
        "--parent-fixture",
        metavar="PATH",
        help="fixture path in the base commit, from the repository top (default: --fixture's)",
    )
    parser.add_argument("--fixture", required=True, metavar="PATH", help="the head fixture file")
    parser.add_argument(
        "--property-cmd",
        required=True,
        metavar="'CMD ... {fixture}'",
        help="the property check as one shell-quoted string; exit 0 = holds",
    )
    parser.add_argument(
        "--seeds", metavar="S1,S2,...", help="committed seeds (default: the policy's list)"
    )
    parser.add_argument("--out", required=True, metavar="budget.json", help="observation record")
    parser.add_argument(
        "--jobs",
        type=int,
        default=1,
        metavar="N",
        help="seed runs side by side (default 1); budget.json is the one a run one after "
        "the other writes",
    )
    _common_run_flags(parser)
    add_output_arguments(parser)
    add_config_arguments(parser, base=False)
    add_signing_arguments(parser)
    parser.set_defaults(run=_run_budget)


def _miss_codes(text: str) -> frozenset[int]:
    try:
        codes = frozenset(int(token) for token in text.split(","))
    except ValueError:
        raise UsageError(f"--miss-exit-codes {text!r}: give integers, e.g. 1 or 1,3") from None
    if 0 in codes:
        raise UsageError("--miss-exit-codes: 0 is a pass, never a miss")
    return codes


def _shell_words(flag: str, text: str | None) -> tuple[str, ...]:
    """One shell-quoted string (split with shlex, run without a shell) as argv."""
    if text is None:
        return ()
    try:
        words = tuple(shlex.split(text))
    except ValueError as exc:
        raise UsageError(f"{flag}: {exc}") from None
    if not words:
        raise UsageError(f"{flag} is empty")
    return words


def _output_fd() -> int:
    """Where the command's output goes: our stderr, so stdout stays machine-readable."""
    try:
        sys.stderr.flush()
        return sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        return subprocess.DEVNULL


#: ``flakecore_adapters.iter_attempts(path, *, format, source_name, test_id)``.
_IterAttempts = Callable[..., Iterable["Attempt"]]


def _report_reader(args: argparse.Namespace, flag: str, name: str | None) -> ReportReader:
    """The adapters' reader of ``--test-id``'s attempts, in ``--report-format``.

    ``name`` names the report in records and errors (None: its path).
    """
    if args.test_id is None:
        raise UsageError(f"replay: {flag} needs --test-id (the one test to read from it)")
    module = adapters(f"replay {flag}", report_format=args.report_format)
    iter_attempts = cast(_IterAttempts, module.iter_attempts)
    fmt, test_id = args.report_format, args.test_id

    def read(path: Path) -> Iterable[Attempt]:
        source = os.fspath(path) if name is None else name
        return iter_attempts(os.fspath(path), format=fmt, source_name=source, test_id=test_id)

    return read


def _report_judge(args: argparse.Namespace) -> ReportJudge:
    read = _report_reader(args, "--report", args.report)
    module, fmt = adapters("replay --report"), args.report_format

    def ids(path: Path) -> Iterable[str]:
        return cast(Iterable[str], module.iter_test_ids(os.fspath(path), format=fmt))

    return ReportJudge(report=args.report, test_id=args.test_id, read=read, ids=ids)


def _progress(attempt: int, total: int, misses: int) -> None:
    print(f"attempt {attempt}/{total} misses={misses}", file=sys.stderr, flush=True)


def _stopped(exc: Terminated) -> int:
    return die(f"stopped by {exc} (worktree removed, no freeze record)", 128 + exc.signum)


def _row(output: Output, test: str, evidence: str, decision: Decision[Any]) -> SummaryRow | None:
    """The step-summary row, built (and the GitHub module loaded) for GitHub output only."""
    if output.form != "github":
        return None
    from flakecore.cli._github import SummaryRow  # noqa: PLC0415

    return SummaryRow(
        test=test,
        policy=decision.policy.value,
        code=decision.code.value,
        exit=decision.exit_code,
        reason=reason_text(decision),
        evidence=evidence,
        refused=not decision.accepted,
    )


def _configured(args: argparse.Namespace, verb: str) -> Configured | GitError:
    """The base revision's policy; a base git cannot read is the verb's refusal, not a crash."""
    try:
        return config_from_args(args, verb=verb, need=Need.LOCATION, head=verb == "replay")
    except GitError as exc:
        return exc


def _resolved(configured: Configured) -> tuple[Path, str] | None:
    """The checkout and ``--base`` as the configuration resolved them, for the replay to reuse."""
    return None if configured.base is None else (configured.checkout, configured.base)


def _signer(
    args: argparse.Namespace, configured: Configured, test_id: str | None
) -> RecordSigner | None:
    signer = signer_from_args(args, configured)
    if signer is not None and test_id is None:
        raise UsageError("a signed freeze record names its test: give --test-id")
    return signer


def _refused(
    output: Output,
    decision: Decision[Any],
    verb: str,
    test: str,
    *,
    counts: str = "",
) -> int:
    """A run refused before it started (its base cannot be read): nothing was run or written."""
    line = f"exit={decision.exit_code} {decision.policy.value}={decision.code.value}{counts}"
    output.emit(
        Result(
            json={**output.decision(decision), "input": verb},
            text=[f"{line} -- {reason_text(decision)}"],
            row=_row(output, test, "", decision),
        )
    )
    return output.finish(decision.exit_code)


def _run_replay(args: argparse.Namespace) -> int:
    out = Path(args.out)
    # First of all: whatever happens next, a stale freeze record is never inherited.
    remove_file(out)
    judge: Judge
    if args.report is not None:
        judge = _report_judge(args)
    else:
        judge = ExitStatusJudge(_miss_codes(args.miss_exit_codes))
    patch_reader = _report_reader(args, "--patch-report", None) if args.patch_report else None
    output = Output.chosen(args, "flakecore replay")
    configured = _configured(args, "replay")
    if isinstance(configured, GitError):
        decision = admit_verdict(
            AdmitCode.REJECT_INCOMPLETE, str(configured), policy=DEFAULT_POLICY
        )
        test = args.test_id or args.property_file
        return _refused(output, decision, "replay", test, counts=" base_misses=0/0")
    output.use(configured)
    policy = configured.config.policy
    signer = _signer(args, configured, args.test_id)
    request = ReplayRequest(
        checkout=Path.cwd(),
        base=args.base,
        seed=args.seed,
        command=tuple(args.command),
        property_file=Path(args.property_file),
        epoch_lock=Path(args.epoch_lock),
        claimed_epoch=args.claimed_epoch,
        attempts=args.attempts,
        patch_misses=args.patch_misses,
        patch_logs=tuple(Path(p) for p in args.patch_log or ()),
        patch_reports=tuple(Path(p) for p in args.patch_report or ()),
        property_id=args.test_id,
        timeout_s=args.timeout,
        seed_env=args.seed_env,
        log=Path(args.log) if args.log is not None else None,
        setup=_shell_words("--setup", args.setup),
    )
    adopt_orphans()  # the second line: this process owns everything it starts
    try:
        with signals_raise():
            outcome = run_replay(
                request,
                judge=judge,
                out=out,
                progress=_progress if sys.stderr.isatty() else None,
                output=_output_fd(),
                policy=policy,
                patch_reader=patch_reader,
                resolved=_resolved(configured),
                head=configured.head,
            )
    except Terminated as exc:
        return _stopped(exc)
    except FileExistsError as exc:
        return die(
            f"{exc.filename}: already exists (attempt logs are never rewritten)", EXIT_CANTCREAT
        )
    except (FileNotFoundError, PermissionError) as exc:
        return die(f"{exc.filename}: cannot write: {exc.strerror}", EXIT_CANTCREAT)
    except OSError as exc:
        return die(f"{exc.filename or out}: I/O error: {exc.strerror}", EXIT_IOERR)
    decision = outcome.decision
    if outcome.freeze is not None and signer is not None:
        from flakecore.gate.ledger import stored_bytes  # noqa: PLC0415 - a signing writer's

        body = stored_bytes(
            outcome.freeze, kind="freeze-record", signer=signer, test_id=args.test_id
        )
        write_record(str(out), body)
    runs = outcome.attempts
    misses = sum(r.result.value == "miss" for r in runs)
    text = [
        f"exit={decision.exit_code} admit={decision.code.value} "
        f"base_misses={misses}/{len(runs)} -- {reason_text(decision)}"
    ]
    if outcome.freeze is not None:
        text.append(f"freeze record: {out}")
    output.emit(
        Result(
            json={**output.decision(decision), "input": "replay", **outcome.to_json()},
            text=text,
            row=_row(
                output,
                args.test_id or args.property_file,
                _replay_evidence(args, outcome),
                decision,
            ),
        )
    )
    return output.finish(decision.exit_code)


def _replay_evidence(args: argparse.Namespace, outcome: ReplayOutcome) -> str:
    """The files the replay left to look at: the freeze record, the attempt log (if kept)."""
    kept = [args.out] if outcome.freeze is not None else []
    if args.log is not None and os.path.isfile(args.log):
        kept.append(args.log)
    return ", ".join(kept)


def _run_budget(args: argparse.Namespace) -> int:
    # Imported here: the seed-run machinery is no start-up cost of replay.
    from flakecore.budget import budget_verdict  # noqa: PLC0415
    from flakecore.gate.ledger import stored_bytes  # noqa: PLC0415
    from flakecore.gate.seedrun import BudgetRunRequest, parse_seeds, run_budget  # noqa: PLC0415

    out = Path(args.out)
    remove_file(out)  # a stale observation never stands in for this one
    property_cmd = _shell_words("--property-cmd", args.property_cmd)
    output = Output.chosen(args, "flakecore budget-run")
    configured = _configured(args, "budget-run")
    if isinstance(configured, GitError):
        why = str(configured)
        decision = budget_verdict(BudgetCode.INSUFFICIENT_BUDGET, why, policy=DEFAULT_POLICY)
        return _refused(output, decision, "budget-run", args.test_id)
    output.use(configured)
    policy = configured.config.policy
    signer = signer_from_args(args, configured)
    request = BudgetRunRequest(
        checkout=Path.cwd(),
        test_id=args.test_id,
        base=args.base,
        fixture=Path(args.fixture),
        parent_fixture=args.parent_fixture,
        property_command=property_cmd,
        command=tuple(args.command),
        seeds=parse_seeds(args.seeds) if args.seeds is not None else None,
        timeout_s=args.timeout,
        seed_env=args.seed_env,
        miss_exit_codes=_miss_codes(args.miss_exit_codes),
        jobs=args.jobs,
    )
    adopt_orphans()
    try:
        with signals_raise():
            outcome = run_budget(request, out=out, output=_output_fd(), policy=policy)
    except Terminated as exc:
        return die(f"stopped by {exc}", 128 + exc.signum)
    except (FileNotFoundError, PermissionError) as exc:
        return die(f"{exc.filename}: cannot write: {exc.strerror}", EXIT_CANTCREAT)
    except OSError as exc:
        return die(f"{exc.filename or out}: I/O error: {exc.strerror}", EXIT_IOERR)
    decision = outcome.decision
    if outcome.record is not None and signer is not None:
        write_record(str(out), stored_bytes(outcome.record, kind="budget-run", signer=signer))
    line = f"exit={decision.exit_code} budget={decision.code.value} -- {reason_text(decision)}"
    output.emit(
        Result(
            json={
                **output.decision(decision),
                "input": "budget-run",
                "packet": outcome.packet,
                "record": outcome.record,
            },
            text=[line],
            row=_row(
                output, args.test_id, args.out if outcome.record is not None else "", decision
            ),
        )
    )
    return output.finish(decision.exit_code)
