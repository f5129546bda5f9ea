"""Hardened, streaming use of the standard library's expat.

Why not ``xml.etree``/junitparser's ``fromfile``: they build the whole tree
and, depending on the Python and expat versions, expand entities.  Here the
parser refuses any DOCTYPE (so no DTD, no entity declarations, no external
entities and no "billion laughs"), never parses parameter entities, accepts
UTF-8 only (an XML declaration naming any other encoding is refused; BOMs and
compressed input are refused before parsing), and bounds the bytes expat may
buffer for one unfinished token, so a 2 GB attribute or comment is refused
without being held.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NoReturn
from xml.parsers import expat

from flakecore.errors import InputError, LimitError
from flakecore_adapters._input import CHUNK, Reader, check_prefix
from flakecore_adapters._limits import Limits

__all__ = ["feed", "hardened_parser"]


def hardened_parser(source: str) -> expat.XMLParserType:
    """An expat parser that refuses every DTD feature and non-UTF-8 declarations."""
    parser = expat.ParserCreate(encoding="UTF-8")
    parser.buffer_text = True
    parser.buffer_size = 64 * 1024
    parser.ordered_attributes = False
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)

    def refuse(what: str) -> NoReturn:
        raise InputError(
            f"{what} refused (no DTD features in a report)",
            source=source,
            line=parser.CurrentLineNumber,
            column=parser.CurrentColumnNumber + 1,
        )

    def doctype(*_: object) -> None:
        refuse("DOCTYPE")

    def entity(*_: object) -> None:
        refuse("entity declaration")

    def external(*_: object) -> int:
        refuse("external entity")

    def notation(*_: object) -> None:
        refuse("notation declaration")

    def declaration(_version: str, encoding: str | None, _standalone: int) -> None:
        if encoding is not None and encoding.lower() not in ("utf-8", "utf8"):
            raise InputError(
                f"XML declaration names encoding {encoding[:40]!r}; only UTF-8 is accepted",
                source=source,
                line=parser.CurrentLineNumber,
                column=parser.CurrentColumnNumber + 1,
            )

    parser.StartDoctypeDeclHandler = doctype
    parser.EntityDeclHandler = entity
    parser.UnparsedEntityDeclHandler = entity
    parser.NotationDeclHandler = notation
    parser.ExternalEntityRefHandler = external
    parser.XmlDeclHandler = declaration
    return parser


def feed(parser: expat.XMLParserType, reader: Reader, limits: Limits) -> Iterator[None]:
    """Feed the whole input chunk by chunk; yields after each chunk so callers can drain.

    Raises :class:`InputError` (with line and column) for malformed XML,
    truncation and every refused construct; :class:`LimitError` when one
    unfinished token grows past ``limits.max_token_bytes``.
    """
    source = reader.source
    fed = 0
    first = True
    try:
        while True:
            chunk = reader.read(CHUNK)
            if first:
                check_prefix(chunk, source)
                first = False
            if not chunk:
                break
            if b"\x00" in chunk:
                at = chunk.index(b"\x00")
                raise InputError(
                    "NUL byte in an XML report",
                    source=source,
                    line=parser.CurrentLineNumber + chunk.count(b"\n", 0, at),
                )
            fed += len(chunk)
            parser.Parse(chunk, False)
            if fed - parser.CurrentByteIndex > limits.max_token_bytes:
                raise LimitError(
                    f"one XML token is longer than {limits.max_token_bytes} bytes",
                    source=source,
                    line=parser.CurrentLineNumber,
                )
            yield
        parser.Parse(b"", True)
    except expat.ExpatError as exc:
        reason = expat.ErrorString(exc.code) if exc.code is not None else str(exc)
        if fed == 0:
            raise InputError("empty report", source=source) from None
        raise InputError(
            f"not well-formed XML: {reason}", source=source, line=exc.lineno, column=exc.offset + 1
        ) from None
    except RecursionError:
        raise LimitError("XML nested too deeply", source=source) from None
    yield
