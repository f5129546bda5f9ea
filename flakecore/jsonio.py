"""Strict JSON in, canonical JSON out.

Every packet, record and log line that flakecore reads passes through
:func:`loads_strict`.  Python's ``json`` module is lenient where a gate must
not be: it keeps the *last* of two duplicate keys (so a packet can carry
``"base_misses": 0`` for a schema validator and ``"base_misses": 3`` for us),
accepts ``NaN``, and lets lone surrogates through.  Here each of those is an
:class:`~flakecore.errors.InputError` naming the source and position.
"""

from __future__ import annotations

import json
import json.encoder
import json.scanner
import math
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from flakecore.errors import InputError, LimitError

try:
    import _json
except ImportError:  # an interpreter without CPython's accelerator: json's own path
    _json = None  # type: ignore[assignment]

__all__ = [
    "MAX_DEPTH",
    "MAX_DOCUMENT_BYTES",
    "canonical_bytes",
    "compact_line",
    "compact_text",
    "compact_value",
    "load_object",
    "loads_strict",
    "quote",
]

#: Packets and records are small; anything bigger is refused unread.
MAX_DOCUMENT_BYTES = 16 * 1024 * 1024
#: Nesting deeper than this is refused before Python's recursion limit is near.
MAX_DEPTH = 64


class _Refused(ValueError):
    """Raised inside the decoder hooks; turned into an InputError with a position."""


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen = dict(pairs)
    if len(seen) < len(pairs):  # a key repeats: name the first repeat
        earlier: set[str] = set()
        for key, _ in pairs:
            if key in earlier:
                raise _Refused(f"duplicate key {key!r}")
            earlier.add(key)
    return seen


def _constant(name: str) -> float:
    raise _Refused(f"{name} is not valid JSON")


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Refused(f"number {text[:40]} is out of range")
    return value


def _int(text: str) -> int:
    if len(text) > 40:
        raise _Refused(f"integer with {len(text)} digits is out of range")
    return int(text)


def _depth_ok(text: str) -> bool:
    """Cheap bound on nesting so the recursive decoder never recurses deep."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return True  # cannot nest deeper than it has openers (C-speed count)
    depth = 0
    in_string = False
    escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return False
        elif ch in "]}":
            depth -= 1
    return True


#: One decoder for every document (``json.loads`` with hooks would build one per call).
_DECODER = json.JSONDecoder(
    object_pairs_hook=_pairs, parse_constant=_constant, parse_float=_float, parse_int=_int
)
#: A ``\u`` escape of a surrogate (U+D800..U+DFFF).  Strict UTF-8 holds no surrogate,
#: so a decoded string can hold one only where the text has such an escape.
#: The decoder's scanner (what ``decode`` runs), built the same way.
_SCAN = json.scanner.make_scanner(_DECODER)  # type: ignore[arg-type]  # reads its options
#: JSON's whitespace: what ``decode`` skips around a value.
_WHITESPACE = " \t\n\r"
#: A first character ``decode`` skips (JSON's whitespace), and the empty text.
_WHITESPACE_OR_EMPTY = frozenset({"", *_WHITESPACE})
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _decode(text: str) -> object:
    """``_DECODER.decode(text)``; a document with nothing around it skips decode's two layers.

    A document that starts with its value and ends with it, or with JSON's
    whitespace after it (every JSON Lines record, and a record file with its
    closing newline), is the decoder's one scan; anything else, an error
    included, is decoded again by ``decode`` itself, for its exact error.
    """
    if text[:1] not in _WHITESPACE_OR_EMPTY:
        try:
            value, end = _SCAN(text, 0)
        except (StopIteration, ValueError, RecursionError):
            pass
        else:
            if end == len(text) or not text[end:].strip(_WHITESPACE):
                return value
    return _DECODER.decode(text)


def _walk_strings(value: object) -> Iterator[str]:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def loads_strict(data: bytes, *, source: str = "<input>", line: int | None = None) -> object:
    """Decode one JSON document strictly.

    Refuses: invalid UTF-8, a byte-order mark, duplicate keys, NaN/Infinity,
    numbers outside the float range, integers over 40 digits, lone
    surrogates, nesting deeper than :data:`MAX_DEPTH`, trailing garbage.
    ``line`` (1-based) is the line of ``data`` within a larger file, for
    JSON Lines input.
    """
    if len(data) > MAX_DOCUMENT_BYTES:
        raise LimitError(f"document larger than {MAX_DOCUMENT_BYTES} bytes", source=source)
    if data.startswith(b"\xef\xbb\xbf"):
        raise InputError("byte-order mark before JSON", source=source, line=line or 1)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"invalid UTF-8 at byte {exc.start}", source=source, line=line or None
        ) from None
    if not _depth_ok(text):
        raise LimitError(f"JSON nested deeper than {MAX_DEPTH}", source=source, line=line)
    try:
        value = _decode(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"invalid JSON: {exc.msg}",
            source=source,
            line=exc.lineno if line is None else line,
            column=exc.colno,
        ) from None
    except (_Refused, ValueError, RecursionError) as exc:
        raise InputError(f"invalid JSON: {exc}", source=source, line=line) from None
    if "\\" not in text or _SURROGATE_ESCAPE.search(text) is None:
        return value  # no escape of a surrogate (no escape at all: one memchr): nothing to walk for
    for string in _walk_strings(value):
        try:
            string.encode("utf-8")
        except UnicodeEncodeError:
            raise InputError(
                "invalid JSON: lone surrogate in a string", source=source, line=line
            ) from None
    return value


def load_object(data: bytes, *, source: str = "<input>", line: int | None = None) -> dict[str, Any]:
    """:func:`loads_strict`, and the top level must be a JSON object."""
    value = loads_strict(data, source=source, line=line)
    if not isinstance(value, dict):
        raise InputError(
            f"expected a JSON object, got {_json_type(value)}", source=source, line=line
        )
    return value


#: The two encoders, built once (``json.dumps`` with options builds one per call).
_CANONICAL = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
)
_COMPACT = json.JSONEncoder(separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def _one_encoder(encoder: json.JSONEncoder) -> Callable[[object], str]:
    """``encoder.encode`` as one C encoder built once, where CPython's ``_json`` has one.

    ``JSONEncoder.encode`` builds a C encoder for every call (a third of a
    small record's cost).  This is that encoder, made once with the same
    options; only the check for circular references is left out, and no
    record holds a cycle (they are built from decoded JSON and plain values).
    """
    if _json is None:
        return encoder.encode
    scan = _json.make_encoder(
        None,
        encoder.default,
        _json.encode_basestring_ascii,
        None,
        encoder.key_separator,
        encoder.item_separator,
        encoder.sort_keys,
        encoder.skipkeys,
        encoder.allow_nan,
    )
    return lambda value: "".join(scan(value, 0))


#: A string as the encoders write it (ASCII-only, JSON's escapes).
quote = json.encoder.encode_basestring_ascii
_CANONICAL_ONCE = _one_encoder(_CANONICAL)
_COMPACT_ONCE = _one_encoder(_COMPACT)


def canonical_bytes(value: object) -> bytes:
    """The canonical encoding that digests hash: sorted keys, compact, ASCII-only, no NaN."""
    return _CANONICAL_ONCE(value).encode("ascii")


def compact_text(value: Mapping[str, object]) -> str:
    """One JSON Lines record as text, without its newline: compact, key order kept, ASCII-only."""
    return _COMPACT_ONCE(value)


def compact_value(value: object) -> str:
    """Any JSON value as :func:`compact_text` writes it inside a record.

    A string, an integer, a boolean, null, and a list of strings are written
    here (what the encoder writes for them); anything else by the encoder.
    A record assembled from these parts, with the same separators, is
    byte for byte the encoder's (docs/performance.md).
    """
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    kind = type(value)
    if kind is str:
        return quote(value)  # type: ignore[arg-type]
    if kind is int:
        return int.__repr__(value)
    if kind is list or kind is tuple:
        try:
            return "[" + ",".join(map(quote, value)) + "]"  # type: ignore[call-overload]
        except TypeError:  # not only strings
            pass
    return _COMPACT_ONCE(value)


def compact_line(value: Mapping[str, object]) -> bytes:
    """One JSON Lines record: compact, key order kept, ASCII-only, newline-terminated."""
    return (compact_text(value) + "\n").encode("ascii")


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"
