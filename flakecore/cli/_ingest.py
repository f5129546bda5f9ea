"""``flakecore ingest``: test reports -> attempt records (JSON Lines).

The only verb besides ``replay`` that needs the adapters extra; it imports it
lazily so the rest of the CLI works without it.  Output goes to a temporary
file first and reaches stdout (or ``--out``) only when every report was read:
a report that turns out to be unusable halfway leaves nothing half-written.
On a terminal, stderr shows the progress of each report (share read,
attempts so far) on one line that the summary replaces.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator
from typing import IO, Any, BinaryIO, cast

from flakecore._wording import plural
from flakecore.cli._common import adapters, die, one_stdin, warn
from flakecore.cli._github import SummaryRow
from flakecore.cli._output import Output, Result, add_output_arguments
from flakecore.errors import InputError, UsageError
from flakecore.exits import EXIT_CANTCREAT, EXIT_DATAERR, EXIT_OK, EXIT_USAGE
from flakecore.files import atomic_output, open_stream
from flakecore.testids import closest_ids

__all__ = ["register"]


def register(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], wanted: Collection[str]
) -> None:
    """Add the ``ingest`` verb."""
    parser = sub.add_parser(
        "ingest",
        help="turn JUnit XML / pytest JSON / reportlog / TAP reports into attempt records",
        description=(
            "Read test reports and write one attempt record (JSON Lines, "
            "schemas/attempt-record.v1.json) per execution of a test, reruns included. "
            "'auto' decides the format from the content, never the file name. The records are "
            "the output in the text and json formats alike; with --out, --format json prints "
            "one summary object instead, and --format github (which needs --out) an annotation "
            "and a step-summary row."
        ),
        epilog=(
            "exit: 0 every report read; 65 a report is unusable (malformed, hostile, over a "
            "limit, not a regular file: nothing is written), or --test-id matched no attempt; "
            "66 missing file; 64 usage; 70 adapters not installed; 73 --out cannot be written"
        ),
    )
    parser.add_argument("reports", nargs="+", metavar="FILE", help="report file, or - for stdin")
    parser.add_argument(
        "--report-format",
        default="auto",
        metavar="FORMAT",
        help="report format: auto (the default: from the content) or a name the adapters "
        "register (junit, pytest-json, ...: see docs/adapters.md)",
    )
    parser.add_argument(
        "--test-id",
        metavar="ID",
        help="keep only this test's attempts (a pytest node id also matches pytest's xunit2 "
        "JUnit form of it; see docs/adapters.md)",
    )
    parser.add_argument(
        "--list-ids",
        action="store_true",
        help="print each test id the reports hold, once, instead of the records",
    )
    parser.add_argument(
        "--out", metavar="FILE", help="write the records here (atomically) instead of stdout"
    )
    add_output_arguments(parser, reports=True)
    parser.set_defaults(run=_run)


def _write(args: argparse.Namespace, out: BinaryIO, counts: Counter[str]) -> int:
    """Every report's attempt records to ``out``; returns how many were written.

    Uses the adapters' record-free path (``iter_jsonl``): the same bytes as
    ``write_jsonl(iter_attempts(...))``, without building ``Attempt`` objects.
    """
    iter_jsonl = cast(Callable[..., Iterable[bytes]], adapters("ingest").iter_jsonl)
    one_stdin(*args.reports)
    progress = _Progress(counts) if sys.stderr.isatty() else None
    try:
        for report in args.reports:
            # Progress needs the read position, so the file is opened here; a
            # file that does not open is left to the adapter, which names why.
            stream = _open(report) if progress is not None else None
            source: Any = stream or (sys.stdin.buffer if report == "-" else report)
            try:
                for chunk in iter_jsonl(
                    source,
                    format=args.report_format,
                    source_name=report,
                    test_id=args.test_id,
                    counts=counts,
                ):
                    out.write(chunk)
                    if progress is not None:
                        progress.show(report, stream)
                if progress is not None:
                    progress.show(report, stream, final=True)
            finally:
                if stream is not None:
                    stream.close()
    finally:
        if progress is not None:
            progress.clear()
    return _attempts(counts)


def _ids(args: argparse.Namespace) -> Iterator[str]:
    """Each test id of the reports once, in order of first appearance."""
    iter_test_ids = cast(Callable[..., Iterable[str]], adapters("ingest").iter_test_ids)
    seen: set[str] = set()
    for report in args.reports:
        source: Any = sys.stdin.buffer if report == "-" else report
        for test_id in iter_test_ids(source, format=args.report_format, source_name=report):
            if test_id not in seen:
                seen.add(test_id)
                yield test_id


def _write_ids(args: argparse.Namespace, out: BinaryIO) -> int:
    """``--list-ids``: one id per line (JSON-quoted when it is not printable); returns how many."""
    count = 0
    for test_id in _ids(args):
        text = test_id if test_id.isprintable() else json.dumps(test_id)
        out.write(text.encode("utf-8", "backslashreplace") + b"\n")
        count += 1
    return count


def _closest(args: argparse.Namespace) -> str:
    """The end of the "no attempt of test" error: the ids most like the one asked for."""
    if "-" in args.reports:
        return ""  # standard input was read once already
    ids = list(_ids(args))
    if near := closest_ids(args.test_id, ids):
        return "; closest: " + ", ".join(repr(i) for i in near)
    return f"; none is close among its {len(ids)} ids (--list-ids prints them)"


def _attempts(counts: Counter[str]) -> int:
    return sum(v for k, v in counts.items() if k != "flagged")


def _open(report: str) -> BinaryIO | None:
    if report == "-":
        return None
    try:
        return open_stream(report)  # closed by _write
    except InputError:
        return None


class _Progress:
    """One line on a terminal: the report, how much of it was read, attempts so far."""

    __slots__ = ("_counts", "_last", "_shown")
    _EVERY_S = 0.5

    def __init__(self, counts: Counter[str]) -> None:
        self._counts = counts
        self._last = -self._EVERY_S
        self._shown = False

    def show(self, report: str, stream: IO[bytes] | None, *, final: bool = False) -> None:
        now = time.monotonic()
        if not final and now - self._last < self._EVERY_S:
            return
        self._last = now
        read = ""
        if stream is not None and stream.seekable():
            size = os.fstat(stream.fileno()).st_size
            at = size if final else min(stream.tell(), size)
            read = f"{at * 100 // size}% of {size / 1e6:.1f} MB, " if size else ""
        attempts = plural(_attempts(self._counts), "attempt")
        sys.stderr.write(f"\ringest: {report}: {read}{attempts}\x1b[K")
        sys.stderr.flush()
        self._shown = True

    def clear(self) -> None:
        if self._shown:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


def _run(args: argparse.Namespace) -> int:
    out = Output.chosen(args, "flakecore ingest")
    if out.form == "github" and args.out is None:
        raise UsageError(
            "ingest: --format github prints annotations on stdout; write the records "
            "with --out FILE"
        )
    if args.list_ids and args.test_id is not None:
        return die("ingest: give --list-ids or --test-id, not both", EXIT_USAGE)
    adapters("ingest", report_format=args.report_format)  # before anything is written
    counts: Counter[str] = Counter()

    def write(sink: BinaryIO) -> int:
        return _write_ids(args, sink) if args.list_ids else _write(args, sink, counts)

    if args.out is not None:
        try:
            with atomic_output(args.out) as fh:
                total = write(fh)
        except OSError as exc:
            return die(f"{args.out}: cannot write: {exc.strerror or exc}", EXIT_CANTCREAT)
    else:
        with tempfile.TemporaryFile() as spool:
            total = write(spool)
            spool.seek(0)
            shutil.copyfileobj(spool, sys.stdout.buffer)
            sys.stdout.flush()
    reports = plural(len(args.reports), "report")
    if args.list_ids:
        listed = f"{plural(total, 'test id')} in {reports}"
        print(f"ingest: {listed}", file=sys.stderr)
        out.emit(Result(row=_row(args, "LISTED", EXIT_OK, listed)))
        return out.finish(EXIT_OK)
    outcomes = " ".join(f"{k}={v}" for k, v in sorted(counts.items()) if k != "flagged")
    flagged = counts["flagged"]
    summary = f"{plural(total, 'attempt')} from {reports} ({outcomes or 'none'}; flagged={flagged})"
    print(f"ingest: {summary}", file=sys.stderr)
    missed = total == 0 and args.test_id is not None
    exit_code = EXIT_DATAERR if missed else EXIT_OK
    reason = summary
    if missed:
        reason = f"no attempt of test {args.test_id!r} in the reports" + _closest(args)
    # With --out, stdout is free for a summary; without it, the records are the output.
    counted = {
        "input": list(args.reports),
        "out": args.out,
        "test_id": args.test_id,
        "attempts": total,
        "results": {k: v for k, v in sorted(counts.items()) if k != "flagged"},
        "flagged": flagged,
        "exit": exit_code,
    }
    out.emit(
        Result(
            json=counted if args.out is not None else None,
            row=_row(args, "NO_ATTEMPT" if missed else "READ", exit_code, reason),
        )
    )
    if missed:
        warn(f"ingest: {reason}")
    return out.finish(exit_code)


def _row(args: argparse.Namespace, code: str, exit_code: int, reason: str) -> SummaryRow:
    """The ``--format github`` row: what was read, into which file (--out)."""
    return SummaryRow(
        test=args.test_id or "",
        policy="ingest",
        code=code,
        exit=exit_code,
        reason=reason,
        evidence=args.out or "",
        refused=exit_code != EXIT_OK,
    )
