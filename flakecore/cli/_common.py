"""Shared CLI plumbing: argument errors, packet input, decision output."""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from collections.abc import Iterator, Sequence
from typing import IO, NoReturn

import attrs

from flakecore.errors import InputError, MissingInputError, UsageError
from flakecore.exits import EXIT_DATAERR, EXIT_NOINPUT, EXIT_OK
from flakecore.files import read_bytes
from flakecore.jsonio import MAX_DOCUMENT_BYTES, compact_line, load_object
from flakecore.timeutil import parse_rfc3339

__all__ = [
    "Packet",
    "UsageArgumentParser",
    "die",
    "first_failure",
    "input_exit",
    "parse_now",
    "read_packets",
    "write_json_line",
]


class UsageArgumentParser(argparse.ArgumentParser):
    """argparse exits 2 on errors, which collides with policy codes; raise instead."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}")


def die(message: str, code: int) -> int:
    """Print one line on stderr and return ``code`` (for ``return die(...)``)."""
    flat = " ".join(message.split())
    print(f"flakecore: {flat}", file=sys.stderr)
    return code


@attrs.frozen
class Packet:
    """One packet read from a file or a stdin line; ``error`` set when unusable."""

    source: str
    data: dict[str, object] | None
    error: InputError | None = None

    @property
    def error_exit(self) -> int:
        """The exit for this packet's input error."""
        assert self.error is not None
        return input_exit(self.error)


def input_exit(error: InputError) -> int:
    """66 for a file that is not there or not readable, 65 for one that is unusable (by type)."""
    return EXIT_NOINPUT if isinstance(error, MissingInputError) else EXIT_DATAERR


def _read_file(path: str) -> Packet:
    try:
        return Packet(path, load_object(read_bytes(path, MAX_DOCUMENT_BYTES), source=path))
    except InputError as exc:
        return Packet(path, None, exc)


def _read_stdin(stream: IO[bytes]) -> Iterator[Packet]:
    number = 0
    while line := stream.readline(MAX_DOCUMENT_BYTES + 1):
        number += 1
        source = f"-:{number}"
        if not line.endswith(b"\n") and len(line) > MAX_DOCUMENT_BYTES:
            yield Packet(source, None, InputError("line too long", source="-", line=number))
            return
        try:
            yield Packet(source, load_object(line.rstrip(b"\n"), source="-", line=number))
        except InputError as exc:
            yield Packet(source, None, exc)
    if number == 0:
        yield Packet("-", None, InputError("no packet on standard input", source="-"))


def read_packets(files: Sequence[str]) -> Iterator[Packet]:
    """Packets from files (one JSON object each) or ``-`` (JSON Lines on stdin), in order.

    An unreadable or invalid packet is yielded with its error, never skipped.
    """
    for name in files:
        if name == "-":
            yield from _read_stdin(sys.stdin.buffer)
        else:
            yield _read_file(name)


def write_json_line(record: dict[str, object]) -> None:
    """One JSON Lines record on stdout."""
    sys.stdout.buffer.write(compact_line(record))
    sys.stdout.flush()


def first_failure(exits: Sequence[int]) -> int:
    """A batch exits 0 only if every packet did; else with the first non-zero exit."""
    return next((code for code in exits if code != EXIT_OK), EXIT_OK)


def parse_now(text: str | None) -> dt.datetime:
    """``--now`` (RFC 3339 with offset) or the clock."""
    if text is None:
        return dt.datetime.now(dt.timezone.utc)
    try:
        return parse_rfc3339(text)
    except ValueError as exc:
        raise UsageError(f"--now: {exc}") from None
