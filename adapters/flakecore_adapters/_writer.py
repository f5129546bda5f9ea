"""Attempt records as JSON Lines, fast.

``flakecore.jsonio.compact_line(attempt.to_json())`` is the reference; this
produces the same bytes (a test checks it) without building two dicts and a
generic encoder call per record, which dominated the ingest path.
"""

from __future__ import annotations

import json.encoder
from collections.abc import Callable, Iterable
from typing import BinaryIO

from flakecore.evidence import ATTEMPT_RECORD_FORMAT, Attempt, Source

__all__ = ["attempt_line", "write_jsonl"]

_quote: Callable[[str], str] = json.encoder.encode_basestring_ascii
_HEAD = '{"format":' + _quote(ATTEMPT_RECORD_FORMAT) + ',"format_version":"1.0","test_id":'


_PREFIXES: dict[tuple[str, str], str] = {}


def _source(src: Source) -> str:
    key = (src.file, src.format)
    prefix = _PREFIXES.get(key)
    if prefix is None:
        if len(_PREFIXES) > 64:
            _PREFIXES.clear()
        prefix = _PREFIXES[key] = '{"file":' + _quote(src.file) + ',"format":' + _quote(src.format)
    parts = [prefix]
    if src.line is not None:
        parts += [',"line":', int.__repr__(src.line)]
    if src.classname is not None:
        parts += [',"classname":', _quote(src.classname)]
    if src.name is not None:
        parts += [',"name":', _quote(src.name)]
    if src.suite is not None:
        parts += [',"suite":', _quote(src.suite)]
    if src.number is not None:
        parts += [',"number":', int.__repr__(src.number)]
    if src.description is not None:
        parts += [',"description":', _quote(src.description)]
    if src.subtest_path:
        parts += [',"subtest_path":[', ",".join(map(_quote, src.subtest_path)), "]"]
    parts.append("}")
    return "".join(parts)


def attempt_line(attempt: Attempt) -> bytes:
    """One attempt record: compact, ASCII-only, newline-terminated."""
    duration = attempt.duration_s
    message = attempt.message
    flags = attempt.flags
    return "".join(
        (
            _HEAD,
            _quote(attempt.test_id),
            ',"outcome":"',
            attempt.outcome.value,
            '","native":',
            _quote(attempt.native),
            ',"attempt":',
            int.__repr__(attempt.attempt),
            ',"duration_s":',
            "null" if duration is None else float.__repr__(duration),
            ',"message":',
            "null" if message is None else _quote(message),
            ',"flags":[',
            ",".join(_quote(v) for v in sorted(f.value for f in flags)) if flags else "",
            '],"source":',
            _source(attempt.source),
            "}\n",
        )
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
