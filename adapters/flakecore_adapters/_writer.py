"""Attempt records as JSON Lines, fast.

``flakecore.jsonio.compact_line(attempt.to_json())`` is the reference; this
produces the same bytes (a test checks it) without building two dicts and a
generic encoder call per record.  The encoder itself is shared with the
record-free ingest path (:mod:`flakecore_adapters._render`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import BinaryIO

from flakecore.evidence import Attempt, Source
from flakecore_adapters._render import file_prefix, render, source_json

__all__ = ["attempt_line", "source_text", "write_jsonl"]

_PREFIXES: dict[tuple[str, str], str] = {}


def source_text(src: Source) -> str:
    """``src.to_json()`` as compact JSON."""
    key = (src.file, src.format)
    prefix = _PREFIXES.get(key)
    if prefix is None:
        if len(_PREFIXES) > 64:
            _PREFIXES.clear()
        prefix = _PREFIXES[key] = file_prefix(src.file, src.format)
    return source_json(
        prefix,
        src.line,
        src.classname,
        src.name,
        src.suite,
        src.number,
        src.description,
        src.subtest_path,
    )


def attempt_line(attempt: Attempt) -> bytes:
    """One attempt record: compact, ASCII-only, newline-terminated."""
    return render(
        attempt.test_id,
        attempt.outcome,
        attempt.native,
        attempt.attempt,
        source_text(attempt.source),
        attempt.duration_s,
        attempt.message,
        attempt.flags,
    ).encode("ascii")


def write_jsonl(attempts: Iterable[Attempt], stream: BinaryIO, *, buffer: int = 256) -> int:
    """Write every attempt as one JSON Lines record; returns how many were written."""
    count = 0
    batch: list[bytes] = []
    for attempt in attempts:
        batch.append(attempt_line(attempt))
        if len(batch) >= buffer:
            stream.write(b"".join(batch))
            count += len(batch)
            batch.clear()
    if batch:
        stream.write(b"".join(batch))
        count += len(batch)
    return count
