"""Attempt records as JSON text, without building ``Attempt`` objects.

One encoder for both outputs: :func:`flakecore_adapters.attempt_line` (an
``Attempt`` object to bytes) and the record-free ingest path
(:func:`flakecore_adapters.iter_jsonl`), which renders each record straight
from the parser's values.  Both must give the bytes of
``flakecore.jsonio.compact_line(attempt.to_json())``: compact, key order of
the schema, ASCII-only (strings through the C ``encode_basestring_ascii``,
floats through ``float.__repr__``, exactly as ``json.dumps`` does).
"""

from __future__ import annotations

import json.encoder
from collections.abc import Callable, Iterable

from flakecore.codes import AttemptFlag, Outcome
from flakecore.evidence import ATTEMPT_RECORD_FORMAT, duration_or_none

__all__ = [
    "HEAD",
    "OUTCOME_KEY",
    "add_flag",
    "file_prefix",
    "flags_json",
    "quote",
    "render",
    "source_json",
]

#: ``json.dumps`` of one string, ASCII-only (C implementation).
quote: Callable[[str], str] = json.encoder.encode_basestring_ascii

#: Every record starts with these bytes, up to the test id's value.
HEAD = '{"format":' + quote(ATTEMPT_RECORD_FORMAT) + ',"format_version":"1.0","test_id":'
#: From the end of the test id to the start of the native word's value.
OUTCOME_KEY = {o: ',"outcome":"' + o.value + '","native":' for o in Outcome}

_FLAGS: dict[frozenset[AttemptFlag], str] = {}
_FLAGS_KEY = ',"flags":['


def flags_json(flags: frozenset[AttemptFlag]) -> str:
    """The ``flags`` array (sorted values), cached per flag set."""
    text = _FLAGS.get(flags)
    if text is None:
        text = "[" + ",".join(quote(v) for v in sorted(f.value for f in flags)) + "]"
        if len(_FLAGS) < 64:
            _FLAGS[flags] = text
    return text


def file_prefix(file: str, fmt: str) -> str:
    """The start of a ``source`` object: ``{"file":...,"format":...`` (no closing brace)."""
    return '{"file":' + quote(file) + ',"format":' + quote(fmt)


def source_json(  # noqa: PLR0917 - mirrors Source's fields, in its order
    prefix: str,
    line: int | None = None,
    classname: str | None = None,
    name: str | None = None,
    suite: str | None = None,
    number: int | None = None,
    description: str | None = None,
    subtest_path: Iterable[str] = (),
) -> str:
    """``Source(...).to_json()`` as compact JSON; ``prefix`` from :func:`file_prefix`."""
    parts = [prefix]
    if line is not None:
        parts += [',"line":', int.__repr__(line)]
    if classname is not None:
        parts += [',"classname":', quote(classname)]
    if name is not None:
        parts += [',"name":', quote(name)]
    if suite is not None:
        parts += [',"suite":', quote(suite)]
    if number is not None:
        parts += [',"number":', int.__repr__(number)]
    if description is not None:
        parts += [',"description":', quote(description)]
    path = ",".join(map(quote, subtest_path))
    if path:
        parts += [',"subtest_path":[', path, "]"]
    parts.append("}")
    return "".join(parts)


def render(  # noqa: PLR0917 - the per-record hot path: positional on purpose
    test_id: str,
    outcome: Outcome,
    native: str,
    number: int,
    src: str,
    duration: float | None,
    message: str | None,
    flags: frozenset[AttemptFlag],
) -> str:
    """One attempt record line (with its newline); ``src`` from :func:`source_json`."""
    duration = duration_or_none(duration)
    return "".join(
        (
            HEAD,
            quote(test_id),
            OUTCOME_KEY[outcome],
            quote(native),
            ',"attempt":',
            int.__repr__(number),
            ',"duration_s":',
            "null" if duration is None else float.__repr__(duration),
            ',"message":',
            "null" if message is None else quote(message),
            _FLAGS_KEY,
            flags_json(flags)[1:],
            ',"source":',
            src,
            "}\n",
        )
    )


def add_flag(line: str, flag: AttemptFlag) -> str:
    """``line`` with ``flag`` added to its flags (kept sorted, no repeat).

    Every string value in a record is escaped, so an unescaped ``,"flags":[``
    can only be the key itself, and flag values never hold ``]`` or ``,``.
    """
    start = line.index(_FLAGS_KEY) + len(_FLAGS_KEY)
    end = line.index("]", start)
    values = set(line[start:end].split(",")) if end > start else set()
    values.add(quote(flag.value))
    return line[:start] + ",".join(sorted(values)) + line[end:]
