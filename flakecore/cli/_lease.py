"""``flakecore lease open|show|check``: write a lease only when it may open; check them all.

A lease is the only freeze ``classify`` can open.  ``open`` writes it only
when classify allows the freeze and the roles are apart; ``show`` and
``check`` re-judge stored records at ``--now`` (there is no renewal).
Exits beyond classify's (docs/leases.md lists them all): 7 ``lease open``
refused by the role/record rules, 8 an invalid stored record.  ``show`` and
``check`` judge a record only once it counts as evidence (docs/trust.md):
they need ``--base`` or trusted keys, and refuse to run without (64).
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import os
from collections.abc import Collection, Sequence

from flakecore._wording import plural
from flakecore.cli._common import (
    add_patch_hash_argument,
    file_of,
    flat,
    parse_now,
    read_one,
    warn,
    write_record,
)
from flakecore.cli._config import Configured, Need, add_config_arguments, config_from_args
from flakecore.cli._evidence import one_evidence, refusal
from flakecore.cli._github import SummaryRow
from flakecore.cli._output import Output, Result, add_output_arguments
from flakecore.cli._signing import add_signing_arguments, signer_from_args
from flakecore.errors import InputError, UsageError
from flakecore.exits import EXIT_INVALID_RECORDS, EXIT_LEASE_REFUSED, EXIT_NOINPUT, EXIT_OK
from flakecore.files import read_bytes
from flakecore.gate.ledger import (
    STORED_KINDS,
    RecordCheck,
    check_directory,
    check_file,
    peek_record,
    record_file_name,
    stored_bytes,
)
from flakecore.jsonio import MAX_DOCUMENT_BYTES
from flakecore.lease import LEASE_FORMAT, Roles, build_lease, lease_problems, short_form

__all__ = ["register"]


def register(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], wanted: Collection[str]
) -> None:
    """Add the ``lease`` verbs."""
    lease = sub.add_parser(
        "lease",
        help="open, show and check flake leases (docs/policies.md)",
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
            "(identities are printable ASCII, compared without case and spaces). Otherwise "
            "print why and write nothing."
        ),
        epilog=(
            "exit: 0 lease written; classify's refusals unchanged (1 INCOMPLETE, 2 PROPERTY, "
            "3 FIXTURE, 5 STABLE_RED, 6 FLAKE whose lease is refused); 7 lease refused by the "
            "role/record rules (acceptor is the replay host or the patch author, no patch "
            "author, no canary, no pinned sha256, a renewal of the same attempts); 64 usage "
            "(also: no --base, --config or --no-config), 65 unusable report (also: a report "
            "that does not count as evidence, docs/trust.md), 66 missing report, 73 the lease "
            "could not be written"
        ),
    )
    opener.add_argument(
        "--report",
        required=True,
        metavar="REPORT.json",
        help="the classify report of the replays (schemas/classify-report.v1.json; - for stdin)",
    )
    opener.add_argument("--test-id", required=True, metavar="ID", help="the test to freeze")
    opener.add_argument(
        "--replay-host",
        required=True,
        metavar="RUNNER_ID",
        help="the runner that ran the replays, as flakecore runner-id printed it there",
    )
    opener.add_argument(
        "--accepted-by",
        required=True,
        metavar="ID",
        help="the reviewer or policy job accepting the lease (not the host, not the author)",
    )
    opener.add_argument("--patch-author", metavar="ID", help="required for a lease to open")
    add_patch_hash_argument(opener, required=False, help="bind the lease to one patch")
    opener.add_argument(
        "--oracle-version", metavar="V", help="bind the lease to this oracle version"
    )
    opener.add_argument("--canary", metavar="JOB", help="canary job (when the report names none)")
    opener.add_argument("--now", metavar="RFC3339", help="evaluation time instead of the clock")
    opener.add_argument("--dir", metavar="LEASE_DIR", help="default: lease_dir from the config")
    add_output_arguments(opener)
    add_config_arguments(opener)
    add_signing_arguments(opener)
    opener.set_defaults(run=_run_open)

    show = verbs.add_parser(
        "show",
        help="print a lease as the short key=value record",
        description="Print a lease: the short key=value form, or the record with --json.",
        epilog=(
            "exit: 0 the lease is valid now; 8 it is invalid or does not count as evidence "
            "(reasons on stderr; docs/trust.md); 64 usage (also: neither --base nor trusted "
            "keys), 65 unusable file or another kind of record (a ledger row), 66 missing file"
        ),
    )
    show.add_argument("file", metavar="FILE", help="a lease file, or - for stdin")
    show.add_argument("--now", metavar="RFC3339", help="evaluation time instead of the clock")
    add_patch_hash_argument(
        show, required=False, help="the lease must be bound to this patch (else invalid)"
    )
    show.add_argument(
        "--oracle-version",
        metavar="V",
        help="the lease must be bound to this oracle version (else invalid)",
    )
    add_output_arguments(show)
    add_config_arguments(show)
    show.set_defaults(run=_run_show)

    check = verbs.add_parser(
        "check",
        help="CI enforcement: fail on any expired, overlong, malformed or rebound record",
        description=(
            "Check every lease, ledger row and stored decide packet in each DIR (default: the "
            "configured lease_dir and ledger_dir). A record counts only when the base holds it "
            "byte for byte or a trusted key signed it (docs/trust.md); one the diff added or "
            "changed unsigned is invalid with that reason. One line per bad record. No renewal."
        ),
        epilog=(
            f"exit: 0 every record valid; {EXIT_INVALID_RECORDS} at least one invalid or "
            "untrusted record; 64 usage (also: neither --base nor trusted keys: nothing could "
            "count), 66 a directory cannot be read"
        ),
    )
    check.add_argument("dirs", nargs="*", metavar="DIR", help="lease or ledger directory (or file)")
    add_patch_hash_argument(check, required=False, help="every lease must be bound to this patch")
    check.add_argument(
        "--oracle-version", metavar="V", help="every lease must be bound to this oracle version"
    )
    check.add_argument("--now", metavar="RFC3339", help="evaluation time instead of the clock")
    add_output_arguments(check)
    add_config_arguments(check)
    check.set_defaults(run=_run_check)


def _nonblank_or_none(value: str | None, flag: str) -> str | None:
    if value is not None and not value.strip():
        raise UsageError(f"{flag} is blank")
    return value


def _run_open(args: argparse.Namespace) -> int:
    out = Output.chosen(args, "flakecore lease open")
    configured = config_from_args(args, verb="lease open", need=Need.LOCATION)
    out.use(configured, announce=True)
    config = configured.config
    signer = signer_from_args(args, configured)
    now = parse_now(args.now)
    oracle = _nonblank_or_none(args.oracle_version, "--oracle-version")
    report = _read_report(args.report, configured)
    directory = args.dir or config.resolve(config.lease_dir)
    roles = Roles(
        replay_host=args.replay_host,
        accepted_by=args.accepted_by,
        patch_author=args.patch_author,
        patch_hash=args.patch_hash,
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
        body = stored_bytes(outcome.record, kind="lease", signer=signer)
        write_record(path, body, make_dir=directory)
    elif not decision.freeze_allowed:
        exit_code = decision.exit_code
    else:
        exit_code = EXIT_LEASE_REFUSED
    out.emit(_open_result(args, outcome.record, out.decision(decision), reasons, path, exit_code))
    return out.finish(exit_code)


def _read_report(path: str, configured: Configured) -> dict[str, object]:
    """The classify report, as evidence when there is a base or trusted keys (docs/trust.md).

    Like a policy verb's packet: outside the checkout it is the job's own
    input; in the checkout the base must hold it or a trusted key sign it.
    """
    trust = configured.trust
    if trust.base is None and not trust.keys:
        return read_one(path)
    verdict = one_evidence(path, configured, kind="classify-report")
    if not verdict.trusted or verdict.record is None:
        raise refusal(verdict)
    return dict(verdict.record)


def _renewal_problems(path: str, record: dict[str, object]) -> list[str]:
    """Same attempts, later expiry: that is renewing a lease without new evidence.

    A stored envelope is opened without verifying it: this check can only refuse.
    """
    if not os.path.lexists(path):
        return []
    try:
        existing = peek_record(read_bytes(path, MAX_DOCUMENT_BYTES), source=path)
    except InputError:
        return []  # an unreadable old lease is replaced by a checked new one
    if existing is None:
        return []
    same_attempts = existing.get("attempt_ids") == record["attempt_ids"]
    if same_attempts and str(existing.get("expires_at")) != str(record["expires_at"]):
        return [
            "the stored lease rests on the same attempts with another expiry: that is a renewal; "
            "open a lease only on new replays"
        ]
    return []


def _open_result(  # noqa: PLR0917
    args: argparse.Namespace,
    record: dict[str, object] | None,
    decision: dict[str, object],
    reasons: Sequence[str],
    path: str,
    exit_code: int,
) -> Result:
    opened = exit_code == EXIT_OK and record is not None
    data = {
        "test_id": args.test_id,
        "opened": opened,
        "exit": exit_code,
        "path": path if opened else None,
        "lease": record if opened else None,
        "reasons": list(reasons),
        "decision": {**decision, "input": args.report},
    }
    if opened and record is not None:
        text = [f"lease: wrote {path}", short_form(record)]
        why, evidence = short_form(record), path
    else:
        why, evidence = "; ".join(reasons), args.report
        text = [f"lease: refused (exit={exit_code}) -- {flat(why)}"]
    row = SummaryRow(
        test=args.test_id,
        policy="lease",
        code="OPENED" if opened else "REFUSED",
        exit=exit_code,
        reason=why,
        evidence=evidence,
        refused=not opened,
        file=None if opened else file_of(args.report),
    )
    return Result(json=data, text=text, row=row)


def _run_show(args: argparse.Namespace) -> int:
    out = Output.chosen(args, "flakecore lease show")
    configured = config_from_args(args, verb="lease show", need=Need.TRUST)
    out.use(configured, announce=True)
    now = parse_now(args.now)
    verdict = one_evidence(args.file, configured, kind=STORED_KINDS)
    problems: list[str] = []
    if verdict.trusted and verdict.record is not None:
        record: dict[str, object] = dict(verdict.record)
        kind = record.get("format")
        if isinstance(kind, str) and kind.startswith("flakecore.") and kind != LEASE_FORMAT:
            raise InputError(
                f"a {kind.removeprefix('flakecore.')} record ({kind!r}), not a lease "
                f"({LEASE_FORMAT!r}): lease show reads one lease; lease check judges every kind",
                source=args.file,
            )
        problems = lease_problems(
            record,
            now=now,
            policy=configured.config.policy,
            patch_hash=args.patch_hash,
            oracle_version=args.oracle_version,
        )
    else:
        peeked = peek_record(verdict.data, source=args.file) if verdict.data else None
        record = peeked or {}
        problems = [f"{verdict.reason.value}: {verdict.detail}"]
    exit_code = EXIT_INVALID_RECORDS if problems else EXIT_OK
    test = record.get("test_id")
    row = SummaryRow(
        test=test if isinstance(test, str) else "",
        policy="lease",
        code="INVALID" if problems else "VALID",
        exit=exit_code,
        reason="; ".join(problems) if problems else short_form(record),
        evidence=args.file,
        refused=bool(problems),
        file=file_of(args.file),
    )
    out.emit(Result(json=record, text=[short_form(record)] if record else [], row=row))
    for problem in problems:
        warn(f"{args.file}: invalid: {problem}")
    return out.finish(exit_code)


def _run_check(args: argparse.Namespace) -> int:
    out = Output.chosen(args, "flakecore lease check")
    configured = config_from_args(args, verb="lease check", need=Need.TRUST)
    out.use(configured, announce=True)
    config = configured.config
    now = parse_now(args.now)
    patch_hash, oracle = args.patch_hash, _nonblank_or_none(args.oracle_version, "--oracle-version")
    targets: list[tuple[str, bool]] = [(d, True) for d in args.dirs]
    if not targets:
        targets = [
            (config.resolve(config.lease_dir), False),
            (config.resolve(config.ledger_dir), False),
        ]
    checks: list[RecordCheck] = []
    unreadable: list[InputError] = []
    collecting = gc.isenabled()
    gc.disable()  # records hold no cycles; the collector would re-walk every one kept so far
    try:
        for target, explicit in targets:
            if not explicit and not os.path.exists(target):
                out.emit(Result(stderr=[f"lease check: {target}: no such directory (no records)"]))
                continue
            try:
                checks += _check_target(target, now, configured, patch_hash, oracle)
            except InputError as exc:
                unreadable.append(exc)
    finally:
        if collecting:
            gc.enable()
    bad = [c for c in checks if not c.valid]
    if unreadable:
        exit_code = EXIT_NOINPUT
    elif bad:
        exit_code = EXIT_INVALID_RECORDS
    else:
        exit_code = EXIT_OK
    for result in _check_results(checks, unreadable, exit_code):
        out.emit(result)
    return out.finish(exit_code)


def _check_target(
    target: str,
    now: dt.datetime,
    configured: Configured,
    patch_hash: str | None,
    oracle: str | None,
) -> list[RecordCheck]:
    trust, policy = configured.trust, configured.config.policy
    if os.path.isdir(target) or not os.path.lexists(target):
        return check_directory(
            target,
            trust=trust,
            now=now,
            policy=policy,
            patch_hash=patch_hash,
            oracle_version=oracle,
        )
    checked = check_file(
        target, trust=trust, now=now, policy=policy, patch_hash=patch_hash, oracle_version=oracle
    )
    return [checked]


def _check_results(
    checks: Sequence[RecordCheck], unreadable: Sequence[InputError], exit_code: int
) -> list[Result]:
    """Each unreadable target and each record; then the text summary (or GitHub's all-valid row)."""
    results = [
        Result(
            json={
                "file": error.source,
                "kind": "directory",
                "test_id": None,
                "valid": False,
                "problems": [str(error)],
            },
            text=[flat(str(error))],
            row=SummaryRow(
                test="",
                policy="lease-check",
                code="UNREADABLE",
                exit=EXIT_NOINPUT,
                reason=str(error),
                evidence=error.source,
                refused=True,
            ),
        )
        for error in unreadable
    ]
    results += [_check_result(check) for check in checks]
    invalid = sum(not c.valid for c in checks)
    valid_row = SummaryRow(
        test="",
        policy="lease-check",
        code="VALID",
        exit=EXIT_OK,
        reason=f"{plural(len(checks), 'record')} valid",
        evidence="",
        refused=False,
    )
    summary = (
        f"lease check: {plural(len(checks), 'record')}, {invalid} invalid"
        + (f", {len(unreadable)} unreadable" if unreadable else "")
        + f" (exit={exit_code})"
    )
    results.append(Result(text=[summary], row=None if invalid or unreadable else valid_row))
    return results


def _check_result(check: RecordCheck) -> Result:
    """Every record is a JSON line; only an invalid one is a text line and a GitHub row."""
    if check.valid:
        return Result(json_text=check.record_text())
    why = "; ".join(check.problems)
    row = SummaryRow(
        test=check.test_id or "",
        policy=f"lease-check {check.kind}",
        code="INVALID",
        exit=EXIT_INVALID_RECORDS,
        reason=why,
        evidence=check.path,
        refused=True,
        file=check.path,
    )
    text = f"{check.path}: invalid {check.kind}: {flat(why)}"
    return Result(json_text=check.record_text(), text=[text], row=row)
