"""``flakecore packet``: assemble the ``decide`` packet from the local and clean run records.

A field a run record does not prove is left out, never copied from the
other run, so ``decide`` refuses what the records do not show.
"""

from __future__ import annotations

import argparse
import sys

from flakecore.cli._common import write_json_line, write_record
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
from flakecore.errors import InputError
from flakecore.exits import EXIT_OK
from flakecore.gate.ledger import read_record, record_bytes
from flakecore.gate.vote import assemble_packet, run_record_problems

__all__ = ["register"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``packet`` verb."""
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
    parser.set_defaults(run=_run)


def _read_run(path: str, args: argparse.Namespace) -> dict[str, object]:
    record = read_record(path)
    problems = run_record_problems(
        record, test_id=args.test_id, patch_hash=args.patch_hash, oracle_version=args.oracle_version
    )
    if problems:
        raise InputError("unusable run record: " + "; ".join(problems), source=path)
    return record


def _run(args: argparse.Namespace) -> int:
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
        write_record(args.out, record_bytes(assembly.packet))
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
