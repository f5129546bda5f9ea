"""``flakecore attempts``: reduce attempt logs (one file per worker)."""

from __future__ import annotations

import argparse
from collections.abc import Collection

from flakecore.attempts import reduce_logs
from flakecore.cli._config import add_config_arguments, config_from_args
from flakecore.cli._github import SummaryRow
from flakecore.cli._output import Output, Result, add_output_arguments
from flakecore.codes import LogStatus
from flakecore.exits import ATTEMPTS_EXIT

__all__ = ["register"]


def register(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], wanted: Collection[str]
) -> None:
    """Add the ``attempts`` verb."""
    parser = sub.add_parser(
        "attempts",
        help="reduce append-only attempt logs to counts (INCOMPLETE on any defect)",
        description=(
            "Reduce attempt logs. Several files are several workers' logs of one experiment, "
            "each numbered from 1; each is checked on its own and the counts are summed. "
            "A log longer than the policy's max_log_lines is INCOMPLETE."
        ),
        epilog="exit: 0 COMPLETE, 1 INCOMPLETE, 65 unusable input, 66 missing file",
    )
    parser.add_argument("logs", nargs="+", metavar="LOG", help="attempt log (JSON Lines)")
    add_output_arguments(parser)
    add_config_arguments(parser)
    parser.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    out = Output.chosen(args, "flakecore attempts")
    configured = config_from_args(args, verb="attempts")
    out.use(configured)
    policy = configured.policy
    summary = reduce_logs(args.logs, policy=policy)
    line = (
        f"status={summary.status.value} attempts={summary.attempts} "
        f"misses={summary.misses} files={len(summary.files)}"
    )
    if summary.reasons:
        line += " -- " + "; ".join(summary.reasons)
    exit_code = ATTEMPTS_EXIT[summary.status]
    row = SummaryRow(
        test="",
        policy="attempts",
        code=summary.status.value,
        exit=exit_code,
        reason="; ".join(summary.reasons) or line,
        evidence=", ".join(summary.files),
        refused=summary.status is not LogStatus.COMPLETE,
    )
    out.emit(Result(json=summary.to_json(), text=[line], row=row))
    return out.finish(exit_code)
