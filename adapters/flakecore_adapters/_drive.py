"""Drive a format's parser into either output: Attempt objects or rendered JSON lines.

JUnit, pytest-json and reportlog parse the same way for both outputs (an
``Emitter`` whose ``build`` makes objects or text); only TAP, which must
flush at the end of the stream, drives its parser itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from flakecore.evidence import Attempt, trusted_attempt
from flakecore_adapters._flags import Emitter
from flakecore_adapters._input import Reader
from flakecore_adapters._limits import Limits
from flakecore_adapters._render import render

__all__ = ["Parse", "attempts_from", "lines_from"]

#: ``_parse(reader, limits, emitter, text=...)``: feeds the emitter, yields when records
#: may be ready.
Parse = Callable[..., Iterator[None]]


def attempts_from(
    parse: Parse, reader: Reader, *, limits: Limits, only: str | None, alias: str | None = None
) -> Iterator[Attempt]:
    """The attempts ``parse`` finds, as objects, in emission order (``alias``: see ``Emitter``)."""
    emitter = Emitter(
        source=reader.source,
        window=limits.reorder_window,
        only=only,
        alias=alias,
        build=trusted_attempt,
    )
    for _ in parse(reader, limits, emitter, text=False):
        if emitter.out:
            yield from emitter.out
            emitter.out.clear()


def lines_from(
    parse: Parse,
    reader: Reader,
    *,
    limits: Limits,
    only: str | None,
    counts: dict[str, int],
    alias: str | None = None,
) -> Iterator[list[str]]:
    """The same records rendered as JSON lines, in batches (same order and bytes)."""
    emitter = Emitter(
        source=reader.source,
        window=limits.reorder_window,
        only=only,
        alias=alias,
        build=render,
        counts=counts,
    )
    for _ in parse(reader, limits, emitter, text=True):
        if emitter.out:
            yield emitter.out
            emitter.out = []
