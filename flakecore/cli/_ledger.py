"""``flakecore ledger apply``: the seed-budget ledger, one row per test id, one file per row.

``FLAKE_CANDIDATE`` writes (replaces) the row, ``STABLE_PASS`` deletes it,
every other code leaves the ledger untouched; a row that cannot be written
or deleted exits 73, never 0.  Each packet (a budget packet, or the
``budget.json`` that ``budget-run`` wrote) must count as evidence first
(docs/trust.md): one that does not leaves the ledger untouched.
"""

from __future__ import annotations

import argparse
import datetime as dt
from collections.abc import Collection

from flakecore.cli._common import (
    RecordWriteError,
    file_of,
    first_failure,
    flat,
    input_exit,
    parse_now,
)
from flakecore.cli._config import Need, add_config_arguments, config_from_args
from flakecore.cli._evidence import each_evidence
from flakecore.cli._github import SummaryRow
from flakecore.cli._output import Output, Result, add_output_arguments
from flakecore.cli._signing import add_signing_arguments, signer_from_args
from flakecore.codes import BudgetCode
from flakecore.errors import InputError, UsageError
from flakecore.exits import BUDGET_EXIT, EXIT_OK
from flakecore.gate.ledger import apply_budget, utc_today
from flakecore.trust import TrustVerdict

__all__ = ["register"]


def register(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], wanted: Collection[str]
) -> None:
    """Add the ``ledger`` verbs."""
    ledger = sub.add_parser(
        "ledger",
        help="apply a seed-budget decision to the ledger (docs/policies.md)",
        description="The seed-budget ledger: one row per test id, one file per row.",
    )
    verbs = ledger.add_subparsers(dest="ledger_verb", metavar="ACTION", required=True)
    apply = verbs.add_parser(
        "apply",
        help="run budget; FLAKE_CANDIDATE writes the row, STABLE_PASS deletes it",
        description=(
            "Run budget on each packet (a budget packet, or budget-run's budget.json as it is: "
            "its packet counts only when it agrees with the record's own runs). FLAKE_CANDIDATE "
            "writes (replaces) the row for its test id; STABLE_PASS deletes it; every other code "
            "leaves the ledger untouched."
        ),
        epilog=(
            "exit: budget's exit (0 FLAKE_CANDIDATE, 1 INSUFFICIENT_BUDGET, 2 PROPERTY_MISS, "
            "3 FIXTURE_DRIFT, 5 STABLE_FAIL, 6 STABLE_PASS); 1 also for a FLAKE_CANDIDATE "
            "without opened_against (no row can be written) and for a packet that does not "
            "count as evidence (docs/trust.md); 64 usage (also: no --base, --config or "
            "--no-config), 65 unusable packet, 66 missing file, 73 the row could not be "
            "written or deleted"
        ),
    )
    apply.add_argument(
        "packets",
        nargs="+",
        metavar="BUDGET.json",
        help="budget packet, or the budget.json budget-run wrote; - reads stdin (JSON Lines, "
        "or one record)",
    )
    apply.add_argument("--dir", metavar="LEDGER_DIR", help="default: ledger_dir from the config")
    when = apply.add_mutually_exclusive_group()
    when.add_argument("--today", metavar="YYYY-MM-DD", help="UTC date the row's expiry counts from")
    when.add_argument("--now", metavar="RFC3339", help="evaluation time (its UTC date is used)")
    add_output_arguments(apply)
    add_config_arguments(apply)
    add_signing_arguments(apply)
    apply.set_defaults(run=_run_apply)


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


def _run_apply(args: argparse.Namespace) -> int:
    out = Output.chosen(args, "flakecore ledger apply")
    configured = config_from_args(args, verb="ledger apply", need=Need.LOCATION)
    out.use(configured, announce=True)
    config = configured.config
    signer = signer_from_args(args, configured)
    today = _today(args)
    directory = args.dir or config.resolve(config.ledger_dir)
    exits: list[int] = []
    for path, verdict in each_evidence(args.packets, configured, kind=_KINDS):
        if isinstance(verdict, InputError):
            exits.append(input_exit(verdict))
            out.emit(_unreadable(path, verdict, exits[-1]))
            continue
        if not verdict.trusted or verdict.record is None:
            exits.append(BUDGET_EXIT[BudgetCode.INSUFFICIENT_BUDGET])
            out.emit(_untrusted(path, verdict, exits[-1]))
            continue
        try:
            action = apply_budget(
                directory, verdict.record, today=today, policy=config.policy, signer=signer
            )
        except OSError as exc:
            raise RecordWriteError(exc.filename or directory, exc.strerror or str(exc)) from None
        code = action.decision.exit_code
        if action.action == "refused":
            code = 1
        exits.append(code)
        target = f" {action.path}" if action.path and action.action != "untouched" else ""
        text = (
            f"{path}: exit={code} budget={action.decision.code.value} "
            f"ledger={action.action}{target} -- {flat(action.note)}"
        )
        row = SummaryRow(
            test=action.test_id or "",
            policy="budget",
            code=action.decision.code.value,
            exit=code,
            reason="; ".join((*action.decision.reasons, f"ledger {action.action}: {action.note}")),
            evidence=path,
            refused=code != EXIT_OK,
            file=file_of(path),
        )
        record = {**action.to_json(), "decision": out.decision(action.decision)}
        out.emit(Result(json={**record, "input": path, "exit": code}, text=[text], row=row))
    return out.finish(first_failure(exits))


#: What ``ledger apply`` reads: a budget packet, or the observation ``budget-run`` wrote.
_KINDS = ("budget-run", "budget-packet")


def _unreadable(path: str, error: InputError, code: int) -> Result:
    """A packet that cannot be read: a refusal row, and the ledger left untouched."""
    return _refused(path, str(error), code, "the packet cannot be read")


def _untrusted(path: str, verdict: TrustVerdict, code: int) -> Result:
    """A packet that does not count as evidence (docs/trust.md): refused, ledger untouched."""
    why = f"{path}: not evidence: {verdict.reason.value}: {verdict.detail}"
    return _refused(path, why, code, "the packet does not count as evidence", verdict)


def _refused(
    path: str, why: str, code: int, what: str, verdict: TrustVerdict | None = None
) -> Result:
    record: dict[str, object] = {
        "test_id": None,
        "action": "untouched",
        "path": None,
        "row": None,
        "note": f"ledger untouched: {what}",
        "input": path,
        "exit": code,
        "error": why,
    }
    if verdict is not None:
        record["trust"] = verdict.to_json()
    row = SummaryRow(
        test="",
        policy="budget",
        code=BudgetCode.INSUFFICIENT_BUDGET.value,
        exit=code,
        reason=why,
        evidence=path,
        refused=True,
        file=file_of(path),
    )
    return Result(json=record, stderr=[f"{why} (ledger untouched)"], row=row)
