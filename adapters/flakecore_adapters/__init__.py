"""Turn real test reports into flakecore evidence: one Attempt per execution.

Formats: JUnit XML (``junit``), pytest-json-report (``pytest-json``),
pytest-reportlog JSON Lines (``pytest-reportlog``) and TAP 13/14 (``tap``).
The report may have been written by the patch under judgement, so every
parser is streaming, bounded (:class:`Limits`) and fails closed: anything it
cannot read is an :class:`~flakecore.errors.InputError` naming the source,
line and column, never a guess and never a silent pass.

The core never imports this package; this package depends on the core.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import BinaryIO

from flakecore.errors import InputError, UsageError
from flakecore.evidence import Attempt
from flakecore_adapters import junit, pytest_json, reportlog, tap
from flakecore_adapters._common import PLAN_ID, SESSION_ID
from flakecore_adapters._input import FORMATS, Reader, open_report, sniff
from flakecore_adapters._limits import DEFAULT_LIMITS, Limits
from flakecore_adapters._writer import attempt_line, write_jsonl

__all__ = [
    "DEFAULT_LIMITS",
    "FORMATS",
    "PLAN_ID",
    "SESSION_ID",
    "Limits",
    "attempt_line",
    "iter_attempts",
    "iter_jsonl",
    "iter_test_ids",
    "sniff",
    "write_jsonl",
]

_PARSERS = {
    "junit": junit.iter_attempts,
    "pytest-json": pytest_json.iter_attempts,
    "pytest-reportlog": reportlog.iter_attempts,
    "tap": tap.iter_attempts,
}


#: Lines joined into one chunk of bytes (bounds the transient copies).
_JOIN = 2048
_LINES = {
    "junit": junit.iter_lines,
    "pytest-json": pytest_json.iter_lines,
    "pytest-reportlog": reportlog.iter_lines,
    "tap": tap.iter_lines,
}


def iter_attempts(
    path_or_stream: str | os.PathLike[str] | BinaryIO,
    *,
    format: str = "auto",
    source_name: str | None = None,
    test_id: str | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> Iterator[Attempt]:
    """Stream the attempts recorded in one report, in report order.

    ``format`` is ``auto`` (decided from the first bytes, never the file
    name) or one of :data:`FORMATS`.  ``source_name`` names the report in
    records and errors (default: the path, or the stream's ``name``).
    ``test_id`` keeps only that test's attempts (numbering is unchanged).
    Attempts are numbered 1, 2, 3 per test id in report order; see
    ``docs/adapters.md`` for the outcome mapping and the flags.

    Raises :class:`~flakecore.errors.InputError` (or its
    :class:`~flakecore.errors.LimitError`) for any unusable input, possibly
    after some attempts were already yielded: a consumer must treat the
    whole report as unusable then.
    """
    if format != "auto" and format not in _PARSERS:
        raise UsageError(f"unknown report format {format!r} (expected auto or one of {FORMATS})")
    stream, source, owned = open_report(path_or_stream, source_name)
    try:
        reader = Reader(stream, source=source, max_bytes=limits.max_bytes)
        name = format
        if name == "auto":
            name = sniff(reader.peek(), source=source)
        yield from _PARSERS[name](reader, limits=limits, only=test_id)
    except RecursionError:
        raise InputError("report nested too deeply", source=source) from None
    finally:
        if owned:
            stream.close()


def iter_test_ids(
    path_or_stream: str | os.PathLike[str] | BinaryIO,
    *,
    format: str = "auto",
    source_name: str | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> Iterator[str]:
    """Each test id of one report once, in order of first appearance (``ingest --list-ids``).

    Read like :func:`iter_attempts` (same ids, same refusals).
    """
    seen: set[str] = set()
    for attempt in iter_attempts(
        path_or_stream, format=format, source_name=source_name, limits=limits
    ):
        if attempt.test_id not in seen:
            seen.add(attempt.test_id)
            yield attempt.test_id


def iter_jsonl(
    path_or_stream: str | os.PathLike[str] | BinaryIO,
    *,
    format: str = "auto",
    source_name: str | None = None,
    test_id: str | None = None,
    limits: Limits = DEFAULT_LIMITS,
    counts: dict[str, int] | None = None,
) -> Iterator[bytes]:
    """The attempt records of one report as JSON Lines, in chunks of whole lines.

    The bytes are exactly those of ``write_jsonl(iter_attempts(...))`` with
    the same arguments (same records, order, flags, numbering and errors),
    made without building ``Attempt`` objects: this is what ``flakecore
    ingest`` writes.  ``counts``, when given, gets the number of records per
    outcome value and ``flagged`` (records with any flag) added to it.

    Raises like :func:`iter_attempts`, possibly after some chunks were
    yielded: a consumer must then treat the whole report as unusable.
    """
    if format != "auto" and format not in _LINES:
        raise UsageError(f"unknown report format {format!r} (expected auto or one of {FORMATS})")
    stream, source, owned = open_report(path_or_stream, source_name)
    tally: dict[str, int] = {} if counts is None else counts
    try:
        reader = Reader(stream, source=source, max_bytes=limits.max_bytes)
        name = format
        if name == "auto":
            name = sniff(reader.peek(), source=source)
        for batch in _LINES[name](reader, limits=limits, only=test_id, counts=tally):
            for at in range(0, len(batch), _JOIN):
                yield "".join(batch[at : at + _JOIN]).encode("ascii")
    except RecursionError:
        raise InputError("report nested too deeply", source=source) from None
    finally:
        if owned:
            stream.close()
