"""Turn real test reports into flakecore evidence: one Attempt per execution.

Formats: JUnit XML (``junit``), pytest-json-report (``pytest-json``),
pytest-reportlog JSON Lines (``pytest-reportlog``) and TAP 13/14 (``tap``).
The report may have been written by the patch under judgement, so every
parser is streaming, bounded (:class:`Limits`) and fails closed: anything it
cannot read is an :class:`~flakecore.errors.InputError` naming the source,
line and column, never a guess and never a silent pass.

:data:`REPORT_FORMATS` is the one list of formats: each name with its two
parsers (``Attempt`` objects, or rendered JSON lines).  The API, ``ingest``
and ``replay --report`` all read it; :func:`sniff` names one of its entries.

The core never imports this package; this package depends on the core.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import BinaryIO, Final, Protocol

import attrs

from flakecore.errors import InputError, UsageError
from flakecore.evidence import Attempt
from flakecore_adapters import junit, pytest_json, reportlog, tap
from flakecore_adapters._common import PLAN_ID, SESSION_ID
from flakecore_adapters._input import Reader, open_report, sniff
from flakecore_adapters._limits import DEFAULT_LIMITS, Limits
from flakecore_adapters._writer import attempt_line, write_jsonl

__all__ = [
    "DEFAULT_LIMITS",
    "FORMATS",
    "PLAN_ID",
    "REPORT_FORMATS",
    "SESSION_ID",
    "Limits",
    "ReportFormat",
    "attempt_line",
    "iter_attempts",
    "iter_jsonl",
    "iter_test_ids",
    "report_format",
    "sniff",
    "write_jsonl",
]


class _AttemptParser(Protocol):
    """A format's parser into ``Attempt`` objects, in report order."""

    def __call__(
        self, reader: Reader, *, limits: Limits, only: str | None = None
    ) -> Iterator[Attempt]: ...


class _LineParser(Protocol):
    """The same parser rendering attempt records as JSON lines, in batches."""

    def __call__(
        self, reader: Reader, *, limits: Limits, only: str | None = None, counts: dict[str, int]
    ) -> Iterator[list[str]]: ...


@attrs.frozen
class ReportFormat:
    """One report format: its name (the ``format=`` value) and its two parsers."""

    name: str
    attempts: _AttemptParser
    lines: _LineParser


#: Every format the adapters read, by name.  A new format is one entry here
#: (and, for ``format="auto"``, one rule in :func:`sniff`).
REPORT_FORMATS: Final[Mapping[str, ReportFormat]] = MappingProxyType(
    {
        f.name: f
        for f in (
            ReportFormat("junit", junit.iter_attempts, junit.iter_lines),
            ReportFormat("pytest-json", pytest_json.iter_attempts, pytest_json.iter_lines),
            ReportFormat("pytest-reportlog", reportlog.iter_attempts, reportlog.iter_lines),
            ReportFormat("tap", tap.iter_attempts, tap.iter_lines),
        )
    }
)
#: The format names, in registry order (``format=`` also takes ``auto``).
FORMATS: Final = tuple(REPORT_FORMATS)

#: Lines joined into one chunk of bytes (bounds the transient copies).
_JOIN = 2048


def report_format(name: str) -> ReportFormat:
    """The registered format ``name``; a :class:`~flakecore.errors.UsageError` naming them all."""
    try:
        return REPORT_FORMATS[name]
    except KeyError:
        known = ", ".join(FORMATS)
        raise UsageError(
            f"unknown report format {name!r} (expected auto or one of {known})"
        ) from None


def _chosen(format: str) -> ReportFormat | None:
    """``None`` for ``auto`` (sniffed once the report is open), else the registered format."""
    return None if format == "auto" else report_format(format)


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
    name) or a name in :data:`REPORT_FORMATS`.  ``source_name`` names the report in
    records and errors (default: the path, or the stream's ``name``).
    ``test_id`` keeps only that test's attempts (numbering is unchanged).
    Attempts are numbered 1, 2, 3 per test id in report order; see
    ``docs/adapters.md`` for the outcome mapping and the flags.

    Raises :class:`~flakecore.errors.InputError` (or its
    :class:`~flakecore.errors.LimitError`) for any unusable input, possibly
    after some attempts were already yielded: a consumer must treat the
    whole report as unusable then.
    """
    chosen = _chosen(format)
    stream, source, owned = open_report(path_or_stream, source_name)
    try:
        reader = Reader(stream, source=source, max_bytes=limits.max_bytes)
        fmt = chosen or report_format(sniff(reader.peek(), source=source))
        yield from fmt.attempts(reader, limits=limits, only=test_id)
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
    chosen = _chosen(format)
    stream, source, owned = open_report(path_or_stream, source_name)
    tally: dict[str, int] = {} if counts is None else counts
    try:
        reader = Reader(stream, source=source, max_bytes=limits.max_bytes)
        fmt = chosen or report_format(sniff(reader.peek(), source=source))
        for batch in fmt.lines(reader, limits=limits, only=test_id, counts=tally):
            for at in range(0, len(batch), _JOIN):
                yield "".join(batch[at : at + _JOIN]).encode("ascii")
    except RecursionError:
        raise InputError("report nested too deeply", source=source) from None
    finally:
        if owned:
            stream.close()
