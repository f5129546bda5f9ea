"""Opening a report and reading it in bounded chunks; content sniffing.

The format is decided from the first bytes, never from the file name: a
patch can name a gzip file ``report.xml``.  Compressed and UTF-16/32 input is
refused here, before any parser sees it, and never decompressed.
"""

from __future__ import annotations

import os
import re
from typing import BinaryIO

from flakecore.errors import InputError, LimitError, MissingInputError, UsageError
from flakecore.files import open_stream

__all__ = ["CHUNK", "Reader", "check_prefix", "open_report", "sniff"]

#: Read size; large enough that per-chunk work is noise, small enough to stay flat.
CHUNK = 256 * 1024
SNIFF_BYTES = 64 * 1024

_TAP_START = re.compile(
    rb"(?:TAP version [0-9]|1\.\.[0-9]|ok\b|not ok\b|bail out!|pragma [+-]|#)", re.IGNORECASE
)
#: A line the TAP parser acts on (a version, plan, test point or bail out, at
#: any indent), anywhere in the sniffed bytes: TAP behind build noise
#: (``make[1]: Entering directory ...``) is still TAP to ``--format tap``.
_TAP_LINE = re.compile(
    rb"^ *(?:(?i:TAP version) [0-9]|1\.\.[0-9]|(?:not )?ok(?:[ \t#\r]|$)|(?i:Bail out!))",
    re.MULTILINE,
)
_REFUSED_PREFIXES = (
    (b"\x1f\x8b", "gzip-compressed input is refused (decompress it first)"),
    (b"BZh", "bzip2-compressed input is refused (decompress it first)"),
    (b"\xfd7zXZ\x00", "xz-compressed input is refused (decompress it first)"),
    (b"PK\x03\x04", "a zip archive is not a report"),
    (b"\x00\x00\xfe\xff", "UTF-32 input is refused (reports must be UTF-8)"),
    (b"\xff\xfe\x00\x00", "UTF-32 input is refused (reports must be UTF-8)"),
    (b"\xfe\xff", "UTF-16 input is refused (reports must be UTF-8)"),
    (b"\xff\xfe", "UTF-16 input is refused (reports must be UTF-8)"),
)


def sniff(first_bytes: bytes, *, source: str = "<input>") -> str:
    """Name the format of a report from its first bytes (up to 64 KiB are looked at).

    Returns ``junit``, ``pytest-json``, ``pytest-reportlog`` or ``tap``;
    raises :class:`~flakecore.errors.InputError` for empty, compressed,
    UTF-16/32, NUL-bearing or unrecognized content.  Text that starts with
    something else is TAP when a line in those bytes is one the TAP parser
    acts on, as ``format="tap"`` would read it.
    """
    head = bytes(first_bytes[:SNIFF_BYTES])
    check_prefix(head, source)
    nul = head.find(b"\x00")
    if nul >= 0:
        raise InputError(
            "NUL byte in a text report", source=source, line=head.count(b"\n", 0, nul) + 1
        )
    body = head[3:] if head.startswith(b"\xef\xbb\xbf") else head
    stripped = body.lstrip(b" \t\r\n")
    if not stripped:
        raise InputError("empty report", source=source)
    lead = stripped[:1]
    if lead == b"<":
        return "junit"
    if lead == b"{":
        first_line = stripped.split(b"\n", 1)[0]
        return "pytest-reportlog" if b'"$report_type"' in first_line else "pytest-json"
    if _TAP_START.match(stripped) or _TAP_LINE.search(body):
        return "tap"  # (also "[INFO] ..." noise before TAP: pytest JSON is never an array)
    if lead == b"[":
        return "pytest-json"
    raise InputError(
        "unrecognized report format (expected JUnit XML, pytest JSON, "
        "pytest-reportlog JSON Lines or TAP)",
        source=source,
        line=1,
    )


def check_prefix(head: bytes, source: str) -> None:
    """Refuse compressed, archived and UTF-16/32 input by its first bytes."""
    for prefix, why in _REFUSED_PREFIXES:
        if head.startswith(prefix):
            raise InputError(why, source=source, line=1, column=1)


class Reader:
    """A binary stream read in chunks, with the total-size limit and a replay buffer."""

    __slots__ = ("_head", "_max", "_stream", "source", "total")

    def __init__(self, stream: BinaryIO, *, source: str, max_bytes: int) -> None:
        self._stream = stream
        self._max = max_bytes
        self._head = b""
        self.source = source
        self.total = 0

    def peek(self, size: int = SNIFF_BYTES) -> bytes:
        """The first ``size`` bytes (or fewer at end of input), left to be read again."""
        while len(self._head) < size:
            more = self._raw(size - len(self._head))
            if not more:
                break
            self._head += more
        return self._head[:size]

    def read(self, size: int = CHUNK) -> bytes:
        """Next chunk; ``b""`` only at end of input."""
        if self._head:
            data, self._head = self._head, b""
            return data
        return self._raw(size)

    def _raw(self, size: int) -> bytes:
        try:
            data = self._stream.read(size)
        except OSError as exc:
            raise MissingInputError(
                f"cannot read: {exc.strerror or exc}", source=self.source
            ) from None
        if not isinstance(data, (bytes, bytearray)):
            raise UsageError("the report stream must be binary (opened with 'rb')")
        self.total += len(data)
        if self.total > self._max:
            raise LimitError(f"report larger than {self._max} bytes", source=self.source)
        return bytes(data)


def open_report(
    path_or_stream: str | os.PathLike[str] | BinaryIO, source: str | None
) -> tuple[BinaryIO, str, bool]:
    """``(stream, source name, we opened it)`` for a path or an open binary stream."""
    if isinstance(path_or_stream, (str, os.PathLike)):
        name = os.fspath(path_or_stream)
        # Regular files only, no symlink out of its directory, never a blocking open.
        return open_stream(name, source=source or name), source or name, True
    if not hasattr(path_or_stream, "read"):
        raise UsageError("iter_attempts needs a path or a binary stream")
    name = source or str(getattr(path_or_stream, "name", "<stream>"))
    return path_or_stream, name, False
