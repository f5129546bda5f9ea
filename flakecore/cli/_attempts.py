"""``flakecore attempts``: reduce attempt logs (one file per worker)."""

from __future__ import annotations

import argparse

from flakecore.attempts import reduce_logs
from flakecore.cli._output import Output, Result
from flakecore.exits import ATTEMPTS_EXIT

__all__ = ["register"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``attempts`` verb."""
    parser = sub.add_parser(
        "attempts",
        help="reduce append-only attempt logs to counts (INCOMPLETE on any defect)",
        description=(
            "Reduce attempt logs. Several files are several workers' logs of one experiment, "
            "each numbered from 1; each is checked on its own and the counts are summed."
        ),
        epilog="exit: 0 COMPLETE, 1 INCOMPLETE, 65 unusable input, 66 missing file",
    )
    parser.add_argument("logs", nargs="+", metavar="LOG", help="attempt log (JSON Lines)")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    out = Output.chosen(args, "flakecore attempts")
    summary = reduce_logs(args.logs)
    line = (
        f"status={summary.status.value} attempts={summary.attempts} "
        f"misses={summary.misses} files={len(summary.files)}"
    )
    if summary.reasons:
        line += " -- " + "; ".join(summary.reasons)
    out.emit(Result(json=summary.to_json(), text=[line]))
    return out.finish(ATTEMPTS_EXIT[summary.status])
