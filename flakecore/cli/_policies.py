"""The four policy verbs: ``admit``, ``decide``, ``budget``, ``classify``."""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from flakecore.cli._common import (
    Packet,
    file_of,
    first_failure,
    out_line,
    parse_now,
    read_packets,
)
from flakecore.cli._config import Configured, add_config_arguments, config_from_args
from flakecore.cli._output import Output, Result, add_output_arguments, as_classify, reason_text
from flakecore.codes import PolicyName
from flakecore.decision import DECISION_FORMAT, DECISION_FORMAT_VERSION, Decision
from flakecore.errors import InputError, UsageError
from flakecore.policy import Policy

if TYPE_CHECKING:
    from flakecore.attestation import Kinds
    from flakecore.cli._github import SummaryRow
    from flakecore.trust import TrustVerdict

__all__ = ["register"]

AnyDecision = Decision[Any]
Judge = Callable[[Mapping[str, object], Policy], AnyDecision]


@functools.cache
def _refusals(name: PolicyName) -> tuple[Any, tuple[Any, int]]:
    """What a packet of ``name`` that cannot be read becomes, and one not evidence, with its exit.

    An unreadable packet is a refusal, never a skip (README.md, CLI); a
    packet file that does not count as evidence is refused too
    (docs/trust.md).  Looked up by the first such packet: a verb builds
    only its own policy's codes (docs/performance.md).
    """
    if name is PolicyName.ADMIT:
        from flakecore.codes import AdmitCode  # noqa: PLC0415
        from flakecore.exits import ADMIT_EXIT  # noqa: PLC0415

        incomplete = AdmitCode.REJECT_INCOMPLETE
        return incomplete, (incomplete, ADMIT_EXIT[incomplete])
    if name is PolicyName.DECIDE:
        from flakecore.codes import DecideCode  # noqa: PLC0415
        from flakecore.exits import DECIDE_EXIT  # noqa: PLC0415

        untrusted = DecideCode.CLEAN_RUN_UNAVAILABLE
        return DecideCode.MISSING_FIELD, (untrusted, DECIDE_EXIT[untrusted])
    if name is PolicyName.BUDGET:
        from flakecore.codes import BudgetCode  # noqa: PLC0415
        from flakecore.exits import BUDGET_EXIT  # noqa: PLC0415

        insufficient = BudgetCode.INSUFFICIENT_BUDGET
        return insufficient, (insufficient, BUDGET_EXIT[insufficient])
    from flakecore.codes import ClassifyClass  # noqa: PLC0415
    from flakecore.exits import CLASSIFY_EXIT  # noqa: PLC0415

    return ClassifyClass.INCOMPLETE, (
        ClassifyClass.INCOMPLETE,
        CLASSIFY_EXIT[ClassifyClass.INCOMPLETE],
    )


#: The record kinds each verb reads, for the trusted reader.
_KIND: dict[PolicyName, Kinds] = {
    PolicyName.ADMIT: "admit-packet",
    PolicyName.DECIDE: "decide-packet",
    PolicyName.BUDGET: ("budget-packet", "budget-run"),
    PolicyName.CLASSIFY: "classify-report",
}


def _judge(name: PolicyName, now: str | None) -> Judge:
    """The policy ``name`` names, as the verb calls it on each packet.

    Each policy is imported by the verb that runs it: one verb's start-up
    does not pay for the other three (docs/performance.md).  ``now`` is
    ``--now``: checked for every policy verb, and only ``classify`` judges
    at a time (the clock's, without it), so only it reads the clock.
    """
    if name is PolicyName.CLASSIFY:
        from flakecore.classify import classify  # noqa: PLC0415

        at = parse_now(now)
        return lambda p, policy: classify(p, now=at, policy=policy)
    if now is not None:
        parse_now(now)  # a bad --now is a usage error for every policy verb
    if name is PolicyName.ADMIT:
        from flakecore.admit import admit  # noqa: PLC0415

        return lambda p, policy: admit(p, policy=policy)
    if name is PolicyName.DECIDE:
        from flakecore.decide import decide  # noqa: PLC0415

        return lambda p, policy: decide(p, policy=policy)
    return _budget_judge()


def _budget_judge() -> Judge:
    """A budget packet, or budget-run's ``budget.json`` as it is (its packet, checked).

    The seed runner, which checks a ``budget.json``, is imported by the first
    one: a batch of budget packets does not pay for its imports.
    """
    from flakecore.budget import BUDGET_RUN_FORMAT, budget  # noqa: PLC0415

    def judge(record: Mapping[str, object], policy: Policy) -> AnyDecision:
        if record.get("format") != BUDGET_RUN_FORMAT:  # what budget_evidence passes on as it is
            return budget(record, policy=policy)
        from flakecore.gate.seedrun import budget_evidence  # noqa: PLC0415

        packet, refused = budget_evidence(record, policy=policy)
        return refused or budget(packet, policy=policy)

    return judge


_HELP = {
    PolicyName.ADMIT: (
        "base-commit replay: freeze only if the unmodified base already missed",
        "exit: 0 ACCEPT_PREEXISTING, 1 REJECT_INCOMPLETE, 2 REJECT_PROPERTY_DRIFT, "
        "3 REJECT_FIXTURE_EPOCH, 4 REJECT_PATCH_INTRODUCED, 5 REJECT_BUDGET",
    ),
    PolicyName.DECIDE: (
        "clean-runner vote: a second, clean runner must reproduce the flake",
        "exit: 0 eligible, 2 missing field, 3 evidence disagrees, 4 clean run unavailable",
    ),
    PolicyName.BUDGET: (
        "fixed seed budget: one run per committed seed, five codes",
        "exit: 0 FLAKE_CANDIDATE, 1 INSUFFICIENT_BUDGET, 2 PROPERTY_MISS, 3 FIXTURE_DRIFT, "
        "5 STABLE_FAIL, 6 STABLE_PASS",
    ),
    PolicyName.CLASSIFY: (
        "exit class of a failing run, and whether its lease may open",
        "exit: 1 INCOMPLETE, 2 PROPERTY, 3 FIXTURE, 4 FLAKE with a lease allowed, "
        "5 STABLE_RED, 6 FLAKE whose lease is refused",
    ),
}

_COMMON_EPILOG = (
    "; 64 usage error, 65 unusable packet, 66 missing file. "
    "With several packets the exit is that of the first one that did not exit 0. "
    "With --base (or trusted keys) a packet FILE must count as evidence (docs/trust.md); "
    "one that does not is refused with the incomplete code. Packets on stdin (-) are the "
    "caller's own input to a pure function, never a stored record."
)


def register(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], wanted: Collection[str]
) -> None:
    """Add those of the four policy verbs that ``wanted`` names (only the one a call runs)."""
    for name in PolicyName:
        if name.value not in wanted:
            continue
        summary, exits = _HELP[name]
        parser = sub.add_parser(
            name.value,
            help=summary,
            description=summary + ". Reads packets from files, or JSON Lines from stdin with '-'.",
            epilog=exits + _COMMON_EPILOG,
        )
        parser.add_argument(
            "files", nargs="*", metavar="FILE", help="packet files (one JSON object each), or -"
        )
        add_output_arguments(parser)
        add_config_arguments(parser)
        parser.add_argument("--now", metavar="RFC3339", help="evaluation time instead of the clock")
        if name is PolicyName.CLASSIFY:
            _add_classify_flags(parser)
        parser.set_defaults(run=_runner(name))


def _add_classify_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "evidence as flags (instead of FILE; a flag left out is missing evidence)"
    )
    group.add_argument(
        "--property-verdict", metavar="pass|fail", help="the property's verdict on this run"
    )
    group.add_argument(
        "--pin-status",
        metavar="match|mismatch",
        help="whether the fixture matched its pinned sha256 (--pinned-sha256)",
    )
    group.add_argument(
        "--origin-passed",
        metavar="true|false",
        help="whether the failing run itself passed (false: it was red)",
    )
    group.add_argument(
        "--replay", metavar="green,red,...", help="replay results in order (green/red)"
    )
    group.add_argument("--owner", metavar="ID", help="who owns the lease (a plain identity)")
    group.add_argument(
        "--expires-at",
        metavar="RFC3339",
        help="when the lease ends, with an offset; at most max_lease_days from now",
    )
    group.add_argument("--budget", type=int, metavar="N", help="replay budget (default: policy)")
    group.add_argument(
        "--pinned-sha256",
        metavar="DIGEST",
        help="the fixture's pinned digest: sha256sum FIXTURE (64 hex; a sha256: prefix is dropped)",
    )
    group.add_argument("--canary", metavar="JOB", help="the canary job that watches the lease")


_FLAG_FIELDS = (
    "property_verdict",
    "pin_status",
    "origin_passed",
    "replay",
    "owner",
    "expires_at",
    "budget",
    "pinned_sha256",
    "canary",
)
_GREEN = {"green": True, "pass": True, "red": False, "fail": False}


def _report_from_flags(args: argparse.Namespace) -> dict[str, object]:
    """The classify report the flags describe; unknown words stay as given (INCOMPLETE)."""
    report: dict[str, object] = {}
    for name in ("property_verdict", "pin_status", "owner", "expires_at", "budget", "canary"):
        value = getattr(args, name)
        if value is not None:
            report[name] = value
    if args.pinned_sha256 is not None:
        report["pinned_sha256"] = args.pinned_sha256.removeprefix("sha256:")
    if args.origin_passed is not None:
        word = args.origin_passed.strip().lower()
        report["origin_passed"] = {"true": True, "false": False}.get(word, args.origin_passed)
    if args.replay is not None:
        tokens = [t.strip().lower() for t in args.replay.split(",")]
        report["replays"] = [
            {"attempt_id": f"replay-{i}", "passed": _GREEN.get(t, t)}
            for i, t in enumerate(tokens, start=1)
        ]
    return report


def _refusal(
    name: PolicyName, source: str, code: Any, exit_code: int, why: str
) -> dict[str, object]:
    """The decision record of a packet that was never judged: unreadable, or not evidence."""
    return {
        "format": DECISION_FORMAT,
        "format_version": DECISION_FORMAT_VERSION,
        "policy": name.value,
        "code": code.value,
        "exit": exit_code,
        "accepted": False,
        "reasons": [why],
        "policy_values": {},
        "input": source,
        "error": why,
    }


def _read(
    files: Sequence[str], configured: Configured, kind: Kinds
) -> Iterator[tuple[Packet, TrustVerdict | None]]:
    """Each packet, and, when there is a base or trusted keys, its trust verdict.

    Without either the packets are the caller's to vouch for (these verbs are
    pure functions of them); with one, each is read as evidence
    (docs/trust.md), and standard input stays the caller's own.
    """
    if not configured.judges_records:
        for packet in read_packets(files):
            yield packet, None
        return
    from flakecore.cli._evidence import each_evidence  # noqa: PLC0415

    for source, verdict in each_evidence(files, configured, kind=kind):
        if isinstance(verdict, InputError):
            yield Packet(source, None, verdict), None
        elif verdict.trusted and verdict.record is not None:
            yield Packet(source, dict(verdict.record)), verdict
        else:
            yield Packet(source, None), verdict


def _text(decision: AnyDecision, source: str) -> str:
    classified = as_classify(decision)
    line = classified.summary_line() if classified is not None else _verdict_line(decision)
    reasons = reason_text(decision)
    return f"{source}: {line} -- {reasons}" if source else f"{line} -- {reasons}"


def _verdict_line(decision: AnyDecision) -> str:
    """``exit=N policy=CODE``, kept by the members' identities (an enum's ``value`` runs Python).

    The members are kept with the line, so an id stays theirs (as the record heads are).
    """
    policy, code, exit_code = decision.policy, decision.code, decision.exit_code
    if type(exit_code) is not int:
        return f"exit={exit_code} {policy.value}={code.value}"
    key = (id(policy), id(code), exit_code)
    kept = _LINES.get(key)
    if kept is None:
        kept = (policy, code, f"exit={exit_code} {policy.value}={code.value}")
        if len(_LINES) < 256:
            _LINES[key] = kept
    return kept[2]


#: :func:`_verdict_line`'s answers, by the members' identities and the exit.
_LINES: dict[tuple[int, int, int], tuple[PolicyName, Any, str]] = {}


def _runner(name: PolicyName) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        judge = _judge(name, args.now)
        out = Output.chosen(args, f"flakecore {name.value}")
        configured = config_from_args(args, verb=name.value)
        out.use(configured)
        policy = configured.policy
        packets: Iterable[tuple[Packet, TrustVerdict | None]]
        if name is PolicyName.CLASSIFY:
            flags_given = any(getattr(args, f, None) is not None for f in _FLAG_FIELDS)
            if flags_given and args.files:
                raise UsageError("classify takes evidence as FILE or as flags, not both")
            if not args.files:
                packets = [(Packet("", _report_from_flags(args)), None)]
            else:
                packets = _read(args.files, configured, _KIND[name])
        elif not args.files:
            raise UsageError(f"{name.value}: give packet files, or - for JSON Lines on stdin")
        else:
            packets = _read(args.files, configured, _KIND[name])
        exits: list[int] = []
        for packet, verdict in packets:
            if packet.data is None:
                unreadable, untrusted = _refusals(name)
                if verdict is not None:
                    code, exit_code = untrusted
                    why = f"not evidence: {verdict}"
                else:
                    assert packet.error is not None
                    code, exit_code, why = unreadable, packet.error_exit, str(packet.error)
                record = _refusal(name, packet.source, code, exit_code, why)
                exits.append(exit_code)
                row = _summary_row(record, packet, exit_code, why) if out.form == "github" else None
                out.emit(Result(json=record, stderr=[why], row=row))
                continue
            decision = judge(packet.data, policy)
            exits.append(decision.exit_code)
            if out.form == "text":  # only the form printed is built: a batch pays per packet
                out_line(_text(decision, packet.source))  # what emit(Result(text=[...])) prints
                continue
            if out.form == "json":
                out.emit_decision(decision, packet.source or "flags")
                continue
            record = {**out.decision(decision), "input": packet.source or "flags"}
            summary = _summary_row(record, packet, decision.exit_code, reason_text(decision))
            out.emit(Result(json=record, row=summary))
        return out.finish(first_failure(exits))

    return run


def _summary_row(
    record: Mapping[str, object], packet: Packet, exit_code: int, reason: str
) -> SummaryRow:
    """A ``--format github`` row: the test named by the packet, else its file."""
    from flakecore.cli._github import SummaryRow  # noqa: PLC0415 - only GitHub output needs it

    data = packet.data or {}
    test = data.get("test_id", data.get("property_id", ""))
    return SummaryRow(
        test=test if isinstance(test, str) else "",
        policy=str(record["policy"]),
        code=str(record["code"]),
        exit=exit_code,
        reason=reason,
        evidence=packet.source or "flags",
        refused=record.get("accepted") is not True,
        file=file_of(packet.source),
    )
