"""Gate verbs: ``runner-id``, ``packet``, ``lease open|show|check``, ``ledger apply``, ``guard``.

Thin, like every verb: parse, call :mod:`flakecore.lease` and
:mod:`flakecore.gate`, print, exit by the documented code.  Nothing here
decides anything the core does not decide; these verbs add the file
handling CI needs (one file per test id, atomic writes, directories of
records checked on every run) and never write a record the core refuses.

Exit codes beyond the policy tables (docs/leases.md lists them all):
7 ``lease open`` refused by the role/record rules, 8 ``lease check``/
``lease show`` found an invalid record, 9 ``guard`` tripped; 64 usage,
65 unusable input, 66 missing input or unreadable directory/git diff.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
from collections.abc import Callable, Sequence

from flakecore.classify import ClassifyDecision
from flakecore.cli._common import die, first_failure, input_exit, parse_now, write_json_line
from flakecore.cli._output import (
    GithubOutput,
    SummaryRow,
    add_config_arguments,
    add_output_arguments,
    config_from_args,
    flat,
    output_format,
)
from flakecore.decide import decide
from flakecore.errors import InputError, MissingInputError, UsageError
from flakecore.exits import (
    EXIT_CANTCREAT,
    EXIT_GUARD_TRIPPED,
    EXIT_INVALID_RECORDS,
    EXIT_LEASE_REFUSED,
    EXIT_NOINPUT,
    EXIT_OK,
)
from flakecore.files import write_atomic
from flakecore.gate.config import GateConfig
from flakecore.gate.guard import GitError, run_guard
from flakecore.gate.ledger import (
    RecordCheck,
    apply_budget,
    check_directory,
    check_record,
    read_record,
    record_bytes,
    record_file_name,
    utc_today,
)
from flakecore.gate.vote import assemble_packet, run_record_problems
from flakecore.identity import RunnerId
from flakecore.lease import (
    Roles,
    build_lease,
    lease_problems,
    short_form,
)

__all__ = ["IMAGE_ENV", "register"]

#: Environment variable naming the job's image digest for ``runner-id``.
IMAGE_ENV = "FLAKECORE_IMAGE_DIGEST"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the gate verbs; their runners turn a failed record write into exit 73."""
    _register_runner_id(sub)
    _register_packet(sub)
    _register_lease(sub)
    _register_ledger(sub)
    _register_guard(sub)


class RecordWriteError(Exception):
    """A record or output file could not be written or deleted (exit 73, never 0)."""

    def __init__(self, path: str, why: str) -> None:
        self.path = str(path)
        super().__init__(f"{path}: cannot write: {why}")


def _guarded(run: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """A verb runner whose failed record write exits 73 with one line, not 70 or a traceback."""

    def wrapped(args: argparse.Namespace) -> int:
        try:
            return run(args)
        except RecordWriteError as exc:
            return die(str(exc), EXIT_CANTCREAT)

    return wrapped


def _write(path: str, data: bytes, *, make_dir: str | None = None) -> None:
    """Write a record atomically; an OS error becomes :class:`RecordWriteError`."""
    try:
        if make_dir is not None:
            os.makedirs(make_dir, exist_ok=True)
        write_atomic(path, data)
    except OSError as exc:
        raise RecordWriteError(path, exc.strerror or str(exc)) from None


# --------------------------------------------------------------------------- runner-id


def _register_runner_id(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "runner-id",
        help="print a fresh runner identity (img:<digest>+nonce:<16 hex>)",
        description=(
            "Print a fresh runner identity for this job: the image digest from --image or "
            f"${IMAGE_ENV}, else the honest 'local-uncontainerized', and a new random nonce."
        ),
        epilog="exit: 0 printed; 64 the image digest is malformed",
    )
    parser.add_argument("--image", metavar="DIGEST", help="sha256:<64 hex> or <64 hex>")
    add_output_arguments(parser)
    parser.set_defaults(run=_guarded(_run_runner_id))


def _run_runner_id(args: argparse.Namespace) -> int:
    fmt = output_format(args)
    image = args.image
    origin = "--image"
    if image is None:
        env = os.environ.get(IMAGE_ENV, "")
        image, origin = (env, f"${IMAGE_ENV}") if env.strip() else (None, "")
    try:
        runner = RunnerId.fresh(image)
    except ValueError as exc:
        raise UsageError(f"{origin}: {exc}") from None
    if fmt == "json":
        write_json_line(
            {
                "runner_id": str(runner),
                "image": runner.image,
                "nonce": runner.nonce,
                "containerized": runner.containerized,
            }
        )
    else:
        print(runner)
    return EXIT_OK


# --------------------------------------------------------------------------- packet


def _register_packet(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "packet",
        help="assemble the 13-field decide packet from the local and clean run records",
        description=(
            "Assemble the clean-runner packet (SPEC 3.2) from two run records. A field a run "
            "record does not prove is left out, never copied from the other run: a clean run "
            "that did not echo its fixture or input hash makes decide say CLEAN_RUN_UNAVAILABLE."
        ),
        epilog=(
            "exit: 0 packet assembled (with --decide: decide's exit, 0 eligible, 2 missing field, "
            "3 evidence disagrees, 4 clean run unavailable); 64 usage, 65 unusable run record, "
            "66 missing file, 73 the output could not be written"
        ),
    )
    parser.add_argument("--test-id", required=True, metavar="ID")
    parser.add_argument("--patch-hash", required=True, metavar="H")
    parser.add_argument("--oracle-version", required=True, metavar="V")
    parser.add_argument("--local", required=True, metavar="RUN.json", help="local run record")
    parser.add_argument("--clean", required=True, metavar="RUN.json", help="clean run record")
    parser.add_argument("--out", metavar="PACKET.json", help="write the packet here (atomically)")
    parser.add_argument("--decide", action="store_true", help="also judge the packet with decide")
    add_output_arguments(parser)
    add_config_arguments(parser)
    parser.set_defaults(run=_guarded(_run_packet))


def _read_run(path: str, args: argparse.Namespace) -> dict[str, object]:
    record = read_record(path)
    problems = run_record_problems(
        record, test_id=args.test_id, patch_hash=args.patch_hash, oracle_version=args.oracle_version
    )
    if problems:
        raise InputError("unusable run record: " + "; ".join(problems), source=path)
    return record


def _run_packet(args: argparse.Namespace) -> int:
    fmt = output_format(args)
    config = config_from_args(args)
    local = _read_run(args.local, args)
    clean = _read_run(args.clean, args)
    assembly = assemble_packet(
        local,
        clean,
        test_id=args.test_id,
        patch_hash=args.patch_hash,
        oracle_version=args.oracle_version,
    )
    if args.out:
        _write(args.out, record_bytes(assembly.packet))
    for field, why in assembly.omitted:
        print(f"flakecore: packet: left out {field}: {why}", file=sys.stderr)
    decision = decide(assembly.packet, policy=config.policy) if args.decide else None
    if fmt == "json":
        out = assembly.to_json()
        out["out"] = args.out
        if decision is not None:
            out["decision"] = {**decision.to_json(), "input": args.out or "packet"}
        write_json_line(out)
    elif fmt == "github":
        gh = GithubOutput("flakecore packet")
        if decision is not None:
            gh.add(
                SummaryRow(
                    test=args.test_id,
                    policy="decide",
                    code=decision.code.value,
                    reason="; ".join(decision.reasons),
                    evidence=args.out or f"{args.local}, {args.clean}",
                    refused=not decision.accepted,
                ),
                file=args.out,
            )
        return gh.finish(decision.exit_code if decision is not None else EXIT_OK)
    else:
        if args.out:
            print(f"packet: wrote {args.out}")
        else:
            sys.stdout.buffer.write(record_bytes(assembly.packet))
        if decision is not None:
            print(
                f"exit={decision.exit_code} decide={decision.code.value} -- "
                + flat("; ".join(decision.reasons))
            )
    sys.stdout.flush()
    return decision.exit_code if decision is not None else EXIT_OK


# --------------------------------------------------------------------------- lease


def _register_lease(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    lease = sub.add_parser(
        "lease",
        help="open, show and check flake leases (SPEC 3.4)",
        description=(
            "Open, show and check leases. There is no renewal: an expired lease is invalid."
        ),
    )
    verbs = lease.add_subparsers(dest="lease_verb", metavar="ACTION", required=True)

    opener = verbs.add_parser(
        "open",
        help="classify a report and write its lease, if allowed and the roles are apart",
        description=(
            "Run classify on REPORT and write the lease for TEST_ID only when a freeze is "
            "allowed and the acceptor is neither the replay host nor the patch author "
            "(compared after NFKC, case folding and whitespace removal). Otherwise print why "
            "and write nothing."
        ),
        epilog=(
            "exit: 0 lease written; classify's refusals unchanged (1 INCOMPLETE, 2 PROPERTY, "
            "3 FIXTURE, 5 STABLE_RED, 6 FLAKE whose lease is refused); 7 lease refused by the "
            "role/record rules (acceptor is the replay host or the patch author, no patch "
            "author, no canary, no pinned sha256, a renewal of the same attempts); 64 usage, "
            "65 unusable report, 66 missing report, 73 the lease could not be written"
        ),
    )
    opener.add_argument("--report", required=True, metavar="REPORT.json")
    opener.add_argument("--test-id", required=True, metavar="ID")
    opener.add_argument("--replay-host", required=True, metavar="RUNNER_ID")
    opener.add_argument("--accepted-by", required=True, metavar="ID")
    opener.add_argument("--patch-author", metavar="ID", help="required for a lease to open")
    opener.add_argument("--patch-hash", metavar="H")
    opener.add_argument("--oracle-version", metavar="V")
    opener.add_argument("--canary", metavar="JOB", help="canary job (when the report names none)")
    opener.add_argument("--now", metavar="RFC3339", help="evaluation time instead of the clock")
    opener.add_argument("--dir", metavar="LEASE_DIR", help="default: lease_dir from the config")
    add_output_arguments(opener)
    add_config_arguments(opener)
    opener.set_defaults(run=_guarded(_run_lease_open))

    show = verbs.add_parser(
        "show",
        help="print a lease as the short key=value record",
        description="Print a lease: the short key=value form, or the record with --json.",
        epilog=(
            "exit: 0 the lease is valid now; 8 it is invalid (reasons on stderr); "
            "65 unusable file, 66 missing file"
        ),
    )
    show.add_argument("file", metavar="FILE")
    show.add_argument("--now", metavar="RFC3339", help="evaluation time instead of the clock")
    show.add_argument("--patch-hash", metavar="H")
    show.add_argument("--oracle-version", metavar="V")
    add_output_arguments(show)
    add_config_arguments(show)
    show.set_defaults(run=_guarded(_run_lease_show))

    check = verbs.add_parser(
        "check",
        help="CI enforcement: fail on any expired, overlong, malformed or rebound record",
        description=(
            "Check every lease, ledger row and stored decide packet in each DIR (default: the "
            "configured lease_dir and ledger_dir). One line per bad record. No renewal."
        ),
        epilog=(
            f"exit: 0 every record valid; {EXIT_INVALID_RECORDS} at least one invalid record; "
            "64 usage, 66 a directory cannot be read"
        ),
    )
    check.add_argument("dirs", nargs="*", metavar="DIR", help="lease or ledger directory (or file)")
    check.add_argument("--patch-hash", metavar="H", help="every lease must be bound to this patch")
    check.add_argument("--oracle-version", metavar="V", help="... and to this oracle version")
    check.add_argument("--now", metavar="RFC3339", help="evaluation time instead of the clock")
    add_output_arguments(check)
    add_config_arguments(check)
    check.set_defaults(run=_guarded(_run_lease_check))


def _nonblank_or_none(value: str | None, flag: str) -> str | None:
    if value is not None and not value.strip():
        raise UsageError(f"{flag} is blank")
    return value


def _read_report(path: str) -> dict[str, object]:
    return read_record(path)


def _lease_row(
    test_id: str, code: str, reasons: Sequence[str], evidence: str, refused: bool
) -> SummaryRow:
    return SummaryRow(
        test=test_id,
        policy="lease",
        code=code,
        reason="; ".join(reasons),
        evidence=evidence,
        refused=refused,
    )


def _run_lease_open(args: argparse.Namespace) -> int:
    fmt = output_format(args)
    config = config_from_args(args)
    now = parse_now(args.now)
    patch_hash = _nonblank_or_none(args.patch_hash, "--patch-hash")
    oracle = _nonblank_or_none(args.oracle_version, "--oracle-version")
    report = _read_report(args.report)
    directory = args.dir or config.resolve(config.lease_dir)
    roles = Roles(
        replay_host=args.replay_host,
        accepted_by=args.accepted_by,
        patch_author=args.patch_author,
        patch_hash=patch_hash,
        oracle_version=oracle,
    )
    outcome = build_lease(
        report,
        test_id=args.test_id,
        roles=roles,
        now=now,
        policy=config.policy,
        canary=args.canary,
    )
    reasons = list(outcome.reasons)
    path = os.path.join(directory, record_file_name(args.test_id))
    if outcome.record is not None:
        reasons += _renewal_problems(path, outcome.record)
    decision = outcome.decision
    if outcome.record is not None and not reasons:
        exit_code = EXIT_OK
        _write(path, record_bytes(outcome.record), make_dir=directory)
    elif not decision.freeze_allowed:
        exit_code = decision.exit_code
    else:
        exit_code = EXIT_LEASE_REFUSED
    opened = exit_code == EXIT_OK
    return _print_lease_open(args, fmt, outcome.record, decision, reasons, path, opened, exit_code)


def _renewal_problems(path: str, record: dict[str, object]) -> list[str]:
    """Same attempts, later expiry: that is renewing a lease without new evidence."""
    if not os.path.lexists(path):
        return []
    try:
        existing = read_record(path)
    except InputError:
        return []  # an unreadable old lease is replaced by a checked new one
    same_attempts = existing.get("attempt_ids") == record["attempt_ids"]
    if same_attempts and str(existing.get("expires_at")) != str(record["expires_at"]):
        return [
            "the stored lease rests on the same attempts with another expiry: that is a renewal; "
            "open a lease only on new replays"
        ]
    return []


def _print_lease_open(  # noqa: PLR0917
    args: argparse.Namespace,
    fmt: str,
    record: dict[str, object] | None,
    decision: ClassifyDecision,
    reasons: Sequence[str],
    path: str,
    opened: bool,
    exit_code: int,
) -> int:
    if fmt == "json":
        write_json_line(
            {
                "test_id": args.test_id,
                "opened": opened,
                "exit": exit_code,
                "path": path if opened else None,
                "lease": record if opened else None,
                "reasons": list(reasons),
                "decision": {**decision.to_json(), "input": args.report},
            }
        )
        return exit_code
    if fmt == "github":
        gh = GithubOutput("flakecore lease open")
        gh.add(
            _lease_row(
                args.test_id,
                "OPENED" if opened else "REFUSED",
                [short_form(record)] if opened and record is not None else reasons,
                path if opened else args.report,
                refused=not opened,
            ),
            file=None if opened else args.report,
        )
        return gh.finish(exit_code)
    if opened and record is not None:
        print(f"lease: wrote {path}")
        print(short_form(record))
    else:
        print(f"lease: refused (exit={exit_code}) -- {flat('; '.join(reasons))}")
    return exit_code


def _run_lease_show(args: argparse.Namespace) -> int:
    fmt = output_format(args)
    config = config_from_args(args)
    now = parse_now(args.now)
    record = read_record(args.file)
    problems = lease_problems(
        record,
        now=now,
        policy=config.policy,
        patch_hash=args.patch_hash,
        oracle_version=args.oracle_version,
    )
    exit_code = EXIT_INVALID_RECORDS if problems else EXIT_OK
    if fmt == "json":
        write_json_line(record)
    elif fmt == "github":
        gh = GithubOutput("flakecore lease show")
        test = record.get("test_id")
        gh.add(
            _lease_row(
                test if isinstance(test, str) else "",
                "INVALID" if problems else "VALID",
                problems or [short_form(record)],
                args.file,
                refused=bool(problems),
            ),
            file=args.file,
        )
        return gh.finish(exit_code)
    else:
        print(short_form(record))
    for problem in problems:
        print(f"flakecore: {args.file}: invalid: {flat(problem)}", file=sys.stderr)
    return exit_code


def _run_lease_check(args: argparse.Namespace) -> int:
    fmt = output_format(args)
    config = config_from_args(args)
    now = parse_now(args.now)
    patch_hash = _nonblank_or_none(args.patch_hash, "--patch-hash")
    oracle = _nonblank_or_none(args.oracle_version, "--oracle-version")
    targets: list[tuple[str, bool]] = [(d, True) for d in args.dirs]
    if not targets:
        targets = [
            (config.resolve(config.lease_dir), False),
            (config.resolve(config.ledger_dir), False),
        ]
    checks: list[RecordCheck] = []
    unreadable: list[InputError] = []
    for target, explicit in targets:
        if not explicit and not os.path.exists(target):
            if fmt == "text":
                print(f"lease check: {target}: no such directory (no records)", file=sys.stderr)
            continue
        try:
            checks += _check_target(target, now, config, patch_hash, oracle)
        except InputError as exc:
            unreadable.append(exc)
    bad = [c for c in checks if not c.valid]
    if unreadable:
        exit_code = EXIT_NOINPUT
    elif bad:
        exit_code = EXIT_INVALID_RECORDS
    else:
        exit_code = EXIT_OK
    return _print_check(fmt, checks, unreadable, exit_code)


def _check_target(
    target: str,
    now: dt.datetime,
    config: GateConfig,
    patch_hash: str | None,
    oracle: str | None,
) -> list[RecordCheck]:
    if os.path.isdir(target) or not os.path.lexists(target):
        return check_directory(
            target, now=now, policy=config.policy, patch_hash=patch_hash, oracle_version=oracle
        )
    try:
        data = read_record(target)
    except InputError as exc:
        if isinstance(exc, MissingInputError):
            raise
        return [RecordCheck(path=target, kind="unknown", test_id=None, problems=(str(exc),))]
    return [
        check_record(
            data,
            path=target,
            now=now,
            policy=config.policy,
            patch_hash=patch_hash,
            oracle_version=oracle,
        )
    ]


def _print_check(
    fmt: str, checks: Sequence[RecordCheck], unreadable: Sequence[InputError], exit_code: int
) -> int:
    bad = [c for c in checks if not c.valid]
    if fmt == "json":
        for error in unreadable:
            write_json_line(
                {
                    "file": error.source,
                    "kind": "directory",
                    "test_id": None,
                    "valid": False,
                    "problems": [str(error)],
                }
            )
        for check in checks:
            write_json_line(check.to_json())
        return exit_code
    if fmt == "github":
        gh = GithubOutput("flakecore lease check")
        for error in unreadable:
            gh.add(
                SummaryRow(
                    test="",
                    policy="lease-check",
                    code="UNREADABLE",
                    reason=str(error),
                    evidence=error.source,
                    refused=True,
                )
            )
        for check in bad:
            gh.add(
                SummaryRow(
                    test=check.test_id or "",
                    policy=f"lease-check {check.kind}",
                    code="INVALID",
                    reason="; ".join(check.problems),
                    evidence=check.path,
                    refused=True,
                ),
                file=check.path,
            )
        if not bad and not unreadable:
            gh.add(
                SummaryRow(
                    test="",
                    policy="lease-check",
                    code="VALID",
                    reason=f"{len(checks)} records valid",
                    evidence="",
                    refused=False,
                )
            )
        return gh.finish(exit_code)
    for error in unreadable:
        print(f"{flat(str(error))}")
    for check in bad:
        print(f"{check.path}: invalid {check.kind}: {flat('; '.join(check.problems))}")
    print(
        f"lease check: {len(checks)} records, {len(bad)} invalid"
        + (f", {len(unreadable)} unreadable" if unreadable else "")
        + f" (exit={exit_code})"
    )
    return exit_code


# --------------------------------------------------------------------------- ledger


def _register_ledger(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    ledger = sub.add_parser(
        "ledger",
        help="apply a seed-budget decision to the ledger (SPEC 3.3)",
        description="The seed-budget ledger: one row per test id, one file per row.",
    )
    verbs = ledger.add_subparsers(dest="ledger_verb", metavar="ACTION", required=True)
    apply = verbs.add_parser(
        "apply",
        help="run budget; FLAKE_CANDIDATE writes the row, STABLE_PASS deletes it",
        description=(
            "Run budget on each packet. FLAKE_CANDIDATE writes (replaces) the row for its test "
            "id; STABLE_PASS deletes it; every other code leaves the ledger untouched."
        ),
        epilog=(
            "exit: budget's exit (0 FLAKE_CANDIDATE, 1 INSUFFICIENT_BUDGET, 2 PROPERTY_MISS, "
            "3 FIXTURE_DRIFT, 5 STABLE_FAIL, 6 STABLE_PASS); 1 also for a FLAKE_CANDIDATE "
            "without opened_against (no row can be written); 64 usage, 65 unusable packet, "
            "66 missing file, 73 the row could not be written or deleted"
        ),
    )
    apply.add_argument("packets", nargs="+", metavar="BUDGET_PACKET.json")
    apply.add_argument("--dir", metavar="LEDGER_DIR", help="default: ledger_dir from the config")
    when = apply.add_mutually_exclusive_group()
    when.add_argument("--today", metavar="YYYY-MM-DD", help="UTC date the row's expiry counts from")
    when.add_argument("--now", metavar="RFC3339", help="evaluation time (its UTC date is used)")
    add_output_arguments(apply)
    add_config_arguments(apply)
    apply.set_defaults(run=_guarded(_run_ledger_apply))


def _today(args: argparse.Namespace) -> dt.date:
    if args.today is not None:
        text = args.today
        if len(text) != 10 or not text.isascii():
            raise UsageError(f"--today {text!r} is not a YYYY-MM-DD date")
        try:
            return dt.date.fromisoformat(text)
        except ValueError:
            raise UsageError(f"--today {text!r} is not a YYYY-MM-DD date") from None
    return utc_today(parse_now(args.now))


def _run_ledger_apply(args: argparse.Namespace) -> int:
    fmt = output_format(args)
    config = config_from_args(args)
    today = _today(args)
    directory = args.dir or config.resolve(config.ledger_dir)
    gh = GithubOutput("flakecore ledger apply") if fmt == "github" else None
    exits: list[int] = []
    for path in args.packets:
        try:
            packet = read_record(path)
        except InputError as exc:
            code = input_exit(exc)
            exits.append(code)
            _print_unreadable_packet(fmt, gh, path, exc, code)
            continue
        try:
            action = apply_budget(directory, packet, today=today, policy=config.policy)
        except OSError as exc:
            raise RecordWriteError(exc.filename or directory, exc.strerror or str(exc)) from None
        code = action.decision.exit_code
        if action.action == "refused":
            code = 1
        exits.append(code)
        if fmt == "json":
            out = action.to_json()
            out["input"] = path
            out["exit"] = code
            write_json_line(out)
        elif gh is not None:
            gh.add(
                SummaryRow(
                    test=action.test_id or "",
                    policy="budget",
                    code=action.decision.code.value,
                    reason="; ".join(
                        (*action.decision.reasons, f"ledger {action.action}: {action.note}")
                    ),
                    evidence=path,
                    refused=code != EXIT_OK,
                ),
                file=path,
            )
        else:
            target = f" {action.path}" if action.path and action.action != "untouched" else ""
            print(
                f"{path}: exit={code} budget={action.decision.code.value} "
                f"ledger={action.action}{target} -- {flat(action.note)}"
            )
    exit_code = first_failure(exits)
    return gh.finish(exit_code) if gh is not None else exit_code


def _print_unreadable_packet(
    fmt: str, gh: GithubOutput | None, path: str, error: InputError, code: int
) -> None:
    if fmt == "json":
        write_json_line(
            {
                "test_id": None,
                "action": "untouched",
                "path": None,
                "row": None,
                "note": "ledger untouched: the packet cannot be read",
                "input": path,
                "exit": code,
                "error": str(error),
            }
        )
    elif gh is not None:
        gh.add(
            SummaryRow(
                test="",
                policy="budget",
                code="INSUFFICIENT_BUDGET",
                reason=str(error),
                evidence=path,
                refused=True,
            ),
            file=path,
        )
    else:
        print(f"flakecore: {flat(str(error))} (ledger untouched)", file=sys.stderr)


# --------------------------------------------------------------------------- guard


def _register_guard(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "guard",
        help="fail when one diff touches both fixture/oracle/test files and ledger/lease files",
        description=(
            "Read 'git diff --name-only BASE...HEAD' and fail closed when it names both a "
            "fixture/oracle/test path and a ledger/lease path. Globs use fnmatch on the "
            "repository-relative path ('*' crosses '/'); a glob without '/' also matches the "
            "file name at any depth. Flags replace the configured globs."
        ),
        epilog=(
            f"exit: 0 the diff does not couple them; {EXIT_GUARD_TRIPPED} it does; 64 usage; "
            "66 git failed (not a repository, unknown base, no merge base, git missing)"
        ),
    )
    parser.add_argument("--base", required=True, metavar="REF")
    parser.add_argument("--fixture-glob", action="append", metavar="GLOB", default=None)
    parser.add_argument("--ledger-glob", action="append", metavar="GLOB", default=None)
    parser.add_argument("--repo", default=".", metavar="DIR", help="repository (default: .)")
    add_output_arguments(parser)
    add_config_arguments(parser, policy=False)
    parser.set_defaults(run=_guarded(_run_guard))


def _run_guard(args: argparse.Namespace) -> int:
    fmt = output_format(args)
    config = config_from_args(args, start=args.repo)
    fixture_globs = tuple(args.fixture_glob) if args.fixture_glob else config.fixture_globs
    ledger_globs = tuple(args.ledger_glob) if args.ledger_glob else config.effective_ledger_globs
    try:
        result = run_guard(
            args.repo, args.base, fixture_globs=fixture_globs, ledger_globs=ledger_globs
        )
    except GitError as exc:
        message = f"guard: cannot read the diff: {exc}"
        if fmt == "json":
            write_json_line({"base": args.base, "tripped": None, "error": message})
        elif fmt == "github":
            gh = GithubOutput("flakecore guard")
            gh.add(
                SummaryRow(
                    test="",
                    policy="guard",
                    code="GIT_FAILED",
                    reason=message,
                    evidence=args.repo,
                    refused=True,
                )
            )
            return gh.finish(EXIT_NOINPUT)
        else:
            print(f"flakecore: {flat(message)}", file=sys.stderr)
        return EXIT_NOINPUT
    exit_code = EXIT_GUARD_TRIPPED if result.tripped else EXIT_OK
    if result.tripped:
        reason = (
            "one diff touches fixture/oracle/test paths ("
            + ", ".join(result.fixture_paths)
            + ") and ledger/lease paths ("
            + ", ".join(result.ledger_paths)
            + "): fail closed"
        )
    else:
        reason = (
            f"{len(result.paths)} changed paths: {len(result.fixture_paths)} fixture/oracle/test, "
            f"{len(result.ledger_paths)} ledger/lease"
        )
    if fmt == "json":
        out = result.to_json()
        out["exit"] = exit_code
        write_json_line(out)
    elif fmt == "github":
        gh = GithubOutput("flakecore guard")
        gh.add(
            SummaryRow(
                test="",
                policy="guard",
                code="TRIPPED" if result.tripped else "OK",
                reason=reason,
                evidence=f"git diff {args.base}...HEAD",
                refused=result.tripped,
            )
        )
        return gh.finish(exit_code)
    else:
        print(f"guard: {'TRIPPED' if result.tripped else 'ok'} -- {flat(reason)}")
    return exit_code
