"""Streaming walk over one big JSON document, element by element.

Why not ijson: a test object must be refused when it repeats a key, and the
top-level shape and ``collectors`` must be checked in the same single pass.
With ijson's yajl2_c backend that needs a Python ``__setitem__`` per key plus
a second full tokenizing pass (measured: about 3.5x a bare
``ijson.items(f, "tests.item")``).  The standard library's C scanner
(``JSONDecoder.raw_decode``) decodes one array element at a time from a
sliding text buffer, with ``object_pairs_hook`` refusing duplicate keys once
per object; measured faster than bare ijson (figures in docs/adapters.md).

Refused: invalid UTF-8, a byte-order mark, duplicate keys, NaN/Infinity,
integers over Python's digit limit, nesting past the C recursion guard,
trailing data, one element larger than ``Limits.max_token_bytes``.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Callable, Iterator
from typing import Any, NoReturn

from flakecore.errors import InputError, LimitError
from flakecore_adapters._input import CHUNK, Reader, check_prefix
from flakecore_adapters._limits import Limits

__all__ = ["JsonStream"]

_WS = " \t\r\n"


class _Refused(ValueError):
    """Raised from decoder hooks; becomes an InputError with a position."""


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _Refused(f"duplicate key {key[:80]!r}")
            seen.add(key)
    return obj


def _constant(name: str) -> NoReturn:
    raise _Refused(f"{name} is not valid JSON")


_DECODER = json.JSONDecoder(object_pairs_hook=_pairs, parse_constant=_constant)
#: The C scanner behind ``_DECODER.raw_decode``, without its Python frame.
_scan_once: Callable[[str, int], tuple[Any, int]] = _DECODER.scan_once  # type: ignore[attr-defined]


class JsonStream:
    """A cursor over a JSON text read in chunks; values are decoded whole."""

    __slots__ = (
        "_bslash",
        "_buf",
        "_cline",
        "_cnl",
        "_cpos",
        "_decoder",
        "_eof",
        "_first",
        "_lines",
        "_pos",
        "escaped",
        "limits",
        "reader",
    )

    def __init__(self, reader: Reader, limits: Limits) -> None:
        self.reader = reader
        self.limits = limits
        self._decoder = codecs.getincrementaldecoder("utf-8")("strict")
        self._buf = ""
        self._pos = 0
        self._eof = False
        self._first = True
        self._lines = 0  # newlines in text already dropped from the buffer
        self._cpos = 0  # line cache: newlines in _buf[:_cpos] are _cline
        self._cline = 0
        # The first newline in _buf at or after _cpos (len: none); -1 unknown.  A
        # report written on one line then costs one search per chunk, not a count
        # over every value.
        self._cnl = -1
        #: Whether the text of the last value decoded holds a backslash.  Without
        #: one its strings hold no control character and no lone surrogate: the
        #: strict scanner refuses raw control characters, so only an escape
        #: can make them.
        self.escaped = False
        self._bslash = -1  # the first backslash in _buf at or after _pos (len: none); -1 unknown

    # -- positions and errors -------------------------------------------------
    def line_at(self, pos: int) -> int:
        """1-based line of buffer position ``pos`` (incremental: cheap going forward)."""
        if pos >= self._cpos:
            if pos > self._cnl:  # a newline in _buf[_cpos:pos] (or not known)
                buf = self._buf
                self._cline += buf.count("\n", self._cpos, pos)
                found = buf.find("\n", pos)
                self._cnl = len(buf) if found < 0 else found
            self._cpos = pos
            return self._lines + self._cline + 1
        return self._lines + self._buf.count("\n", 0, pos) + 1

    def where(self, pos: int | None = None) -> tuple[int, int]:
        """1-based line and column of ``pos`` (default: the cursor); for error messages."""
        at = self._pos if pos is None else pos
        return self.line_at(at), at - self._buf.rfind("\n", 0, at)

    def error(self, message: str, pos: int | None = None) -> InputError:
        line, column = self.where(pos)
        return InputError(message, source=self.reader.source, line=line, column=column)

    # -- buffer ---------------------------------------------------------------
    def _fill(self, want: int = CHUNK) -> bool:
        """Append at least one more chunk; False at end of input."""
        if self._eof:
            return False
        data = self.reader.read(max(want, CHUNK))
        if self._first:
            check_prefix(data, self.reader.source)
            if data.startswith(b"\xef\xbb\xbf"):
                raise InputError("byte-order mark before JSON", source=self.reader.source, line=1)
            self._first = False
        try:
            text = self._decoder.decode(data, final=not data)
        except UnicodeDecodeError as exc:
            raise self.error(
                f"invalid UTF-8 (byte {exc.start} of a chunk)", len(self._buf)
            ) from None
        if "\x00" in text:
            raise self.error(
                "NUL character outside a JSON string", len(self._buf) + text.index("\x00")
            )
        if self._pos > 0:
            cut = self._pos
            dropped = self._buf.count("\n", 0, cut)
            self._lines += dropped
            if self._cpos >= cut:
                self._cline -= dropped
                self._cpos -= cut
            else:
                self._cline = 0
                self._cpos = 0
            self._buf = self._buf[cut:] + text
            self._pos = 0
        else:
            self._buf += text
        self._bslash = -1
        self._cnl = -1
        if not data:
            self._eof = True
        return bool(data) or bool(text)

    def peek(self) -> str:
        """Next non-whitespace character ('' at end of input); the cursor moves to it."""
        while True:
            buf = self._buf
            pos = self._pos
            end = len(buf)
            while pos < end and buf[pos] in _WS:
                pos += 1
            self._pos = pos
            if pos < end:
                return buf[pos]
            if not self._fill():
                return ""

    def expect(self, char: str, what: str) -> None:
        """Consume ``char`` (after whitespace) or refuse."""
        got = self.peek()
        if got != char:
            found = repr(got) if got else "end of input"
            raise self.error(f"expected {what}, found {found}")
        self._pos += 1

    def items(self, where: str) -> Iterator[tuple[Any, int]]:
        """``(element, line)`` of the array whose ``[`` was just consumed; consumes its ``]``."""
        if self.peek() == "]":
            self._pos += 1
            return
        value = self.value
        while True:
            yield value()
            buf = self._buf
            pos = self._pos
            nxt = buf[pos : pos + 1]
            if nxt in _WS:  # also "" at the end of the buffer
                nxt = self.peek()
                buf = self._buf
                pos = self._pos
            if nxt == ",":
                # json.dump's separator is ", ": step over that space here, so value()
                # finds a value at the cursor without a call to peek().
                self._pos = pos + 2 if buf[pos + 1 : pos + 2] == " " else pos + 1
            elif nxt == "]":
                self._pos = pos + 1
                return
            else:
                found = repr(nxt) if nxt else "end of input"
                raise self.error(f"expected ',' or ']' in {where}, found {found}")

    def value(self) -> tuple[Any, int]:
        """Decode the complete JSON value at the cursor; returns it with its line."""
        pos = self._pos
        if pos >= len(self._buf) or self._buf[pos] in _WS:
            self.peek()
        while True:
            buf = self._buf
            pos = self._pos
            try:
                try:
                    value, end = _scan_once(buf, pos)
                except StopIteration as stop:
                    raise json.JSONDecodeError("Expecting value", buf, stop.value) from None
            except json.JSONDecodeError as exc:
                if self._eof:
                    raise self.error(f"invalid JSON: {exc.msg}", exc.pos) from None
                if len(buf) - pos > self.limits.max_token_bytes:
                    if exc.msg.startswith("Unterminated") or exc.pos >= len(buf) - 1:
                        raise LimitError(
                            f"one JSON element is longer than {self.limits.max_token_bytes} bytes",
                            source=self.reader.source,
                            line=self.line_at(pos),
                        ) from None
                    raise self.error(f"invalid JSON: {exc.msg}", exc.pos) from None
                self._fill(len(buf) - pos)
                continue
            except _Refused as exc:
                raise self.error(f"invalid JSON: {exc}") from None
            except RecursionError:
                raise LimitError(
                    "JSON nested too deeply", source=self.reader.source, line=self.line_at(pos)
                ) from None
            except ValueError as exc:  # e.g. an integer over Python's digit limit
                raise self.error(f"invalid JSON: {str(exc)[:120]}") from None
            if end == len(buf) and not self._eof and isinstance(value, (int, float)):
                # A number at the very end of the buffer may continue in the next chunk.
                self._fill()
                continue
            if self._cpos <= pos <= self._cnl:  # line_at's common case, without the call
                self._cpos = pos
                start_line = self._lines + self._cline + 1
            else:
                start_line = self.line_at(pos)
            self._pos = end
            bslash = self._bslash
            if bslash < pos:  # one search per backslash (and per chunk), not per value
                found = buf.find("\\", pos)
                self._bslash = bslash = len(buf) if found < 0 else found
            self.escaped = bslash < end
            return value, start_line

    def at_end(self) -> bool:
        """True when only whitespace is left."""
        return self.peek() == ""
