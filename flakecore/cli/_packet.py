"""``flakecore packet``: assemble the ``decide`` packet from the local and clean run records.

A field a run record does not prove is left out, never copied from the
other run, so ``decide`` refuses what the records do not show.  Both run
records must count as evidence (docs/trust.md), and where trusted keys are
configured the clean run must be signed by a key other than the local
run's: a clean runner is a different key, not a different string.
"""

from __future__ import annotations

import argparse
from collections.abc import Collection

from flakecore.cli._common import add_patch_hash_argument, flat, one_stdin, warn, write_record
from flakecore.cli._config import Configured, Need, add_config_arguments, config_from_args
from flakecore.cli._evidence import one_evidence, refusal
from flakecore.cli._github import SummaryRow
from flakecore.cli._output import Output, Result, add_output_arguments, reason_text
from flakecore.cli._signing import add_signing_arguments, signer_from_args
from flakecore.decide import decide
from flakecore.errors import InputError
from flakecore.exits import EXIT_OK
from flakecore.gate.ledger import record_bytes, stored_bytes
from flakecore.gate.vote import assemble_packet, run_record_problems
from flakecore.trust import TrustVerdict, require_other_signer

__all__ = ["register"]


def register(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], wanted: Collection[str]
) -> None:
    """Add the ``packet`` verb."""
    parser = sub.add_parser(
        "packet",
        help="assemble the 13-field decide packet from the local and clean run records",
        description=(
            "Assemble the clean-runner packet (docs/policies.md) from two run records. A field "
            "a run record does not prove is left out, never copied from the other run: a clean run "
            "that did not echo its fixture or input hash makes decide say CLEAN_RUN_UNAVAILABLE."
        ),
        epilog=(
            "exit: 0 packet assembled (with --decide: decide's exit, 0 eligible, 2 missing field, "
            "3 evidence disagrees, 4 clean run unavailable); 64 usage (also: no --base, --config "
            "or --no-config), 65 unusable run record (also: one that does not count as "
            "evidence, or with trusted keys a clean run not signed by another key; "
            "docs/trust.md), 66 missing file, 73 the output could not be written"
        ),
    )
    parser.add_argument("--test-id", required=True, metavar="ID", help="the test the vote is about")
    add_patch_hash_argument(parser, required=True, help="the patch the vote is about")
    parser.add_argument(
        "--oracle-version",
        required=True,
        metavar="V",
        help="the test oracle's version: a new oracle is a new vote",
    )
    parser.add_argument(
        "--local",
        required=True,
        metavar="RUN.json",
        help="run record of the run that saw the failure (- for stdin)",
    )
    parser.add_argument(
        "--clean",
        required=True,
        metavar="RUN.json",
        help="run record of the clean run on a distinct runner (- for stdin)",
    )
    parser.add_argument("--out", metavar="PACKET.json", help="write the packet here (atomically)")
    parser.add_argument("--decide", action="store_true", help="also judge the packet with decide")
    add_output_arguments(parser)
    add_config_arguments(parser)
    add_signing_arguments(parser)
    parser.set_defaults(run=_run)


def _read_run(path: str, args: argparse.Namespace, configured: Configured) -> TrustVerdict:
    """One run record that counts as evidence and is usable for this test, patch and oracle."""
    verdict = one_evidence(path, configured, kind="run-record", test_id=args.test_id)
    if not verdict.trusted or verdict.record is None:
        raise refusal(verdict)
    problems = run_record_problems(
        verdict.record,
        test_id=args.test_id,
        patch_hash=args.patch_hash,
        oracle_version=args.oracle_version,
    )
    if problems:
        raise InputError("unusable run record: " + "; ".join(problems), source=path)
    return verdict


def _run(args: argparse.Namespace) -> int:
    out = Output.chosen(args, "flakecore packet")
    configured = config_from_args(args, verb="packet", need=Need.LOCATION)
    out.use(configured, announce=True)
    signer = signer_from_args(args, configured)
    one_stdin(args.local, args.clean)
    local = _read_run(args.local, args, configured)
    clean = _read_run(args.clean, args, configured)
    if configured.trust.keys:
        clean = require_other_signer(clean, other_than=local)
        if not clean.trusted:
            raise refusal(clean)
    assert local.record is not None and clean.record is not None
    assembly = assemble_packet(
        local.record,
        clean.record,
        test_id=args.test_id,
        patch_hash=args.patch_hash,
        oracle_version=args.oracle_version,
    )
    if args.out:
        write_record(args.out, stored_bytes(assembly.packet, kind="decide-packet", signer=signer))
    for field, why in assembly.omitted:
        warn(f"packet: left out {field}: {why}")
    record = {**assembly.to_json(), "out": args.out}
    written = f"packet: wrote {args.out}" if args.out else record_bytes(assembly.packet).decode()
    if not args.decide:
        out.emit(Result(json=record, text=[written.rstrip("\n")]))
        return out.finish(EXIT_OK)
    decision = decide(assembly.packet, policy=configured.config.policy)
    reasons = reason_text(decision)
    record["decision"] = {**out.decision(decision), "input": args.out or "packet"}
    line = f"exit={decision.exit_code} decide={decision.code.value} -- {flat(reasons)}"
    row = SummaryRow(
        test=args.test_id,
        policy="decide",
        code=decision.code.value,
        exit=decision.exit_code,
        reason=reasons,
        evidence=args.out or f"{args.local}, {args.clean}",
        refused=not decision.accepted,
        file=args.out,
    )
    out.emit(Result(json=record, text=[written.rstrip("\n"), line], row=row))
    return out.finish(decision.exit_code)
