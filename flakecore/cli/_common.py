"""Shared CLI plumbing: argument errors, packet input, record writes, decision output."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import itertools
import os
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from types import ModuleType
from typing import IO, TYPE_CHECKING, Any, NoReturn

from flakecore.digest import commit_id_problem
from flakecore.errors import InputError, MissingExtra, MissingInputError, UsageError
from flakecore.exits import EXIT_DATAERR, EXIT_NOINPUT, EXIT_OK
from flakecore.files import read_bytes, write_atomic
from flakecore.jsonio import MAX_DOCUMENT_BYTES, compact_text, load_object

if TYPE_CHECKING:
    import datetime as dt

__all__ = [
    "HelpFormatter",
    "Packet",
    "RecordWriteError",
    "UsageArgumentParser",
    "adapters",
    "add_patch_hash_argument",
    "commit_id",
    "die",
    "file_of",
    "first_failure",
    "flat",
    "flush_out",
    "input_exit",
    "one_stdin",
    "out_line",
    "parse_now",
    "read_one",
    "read_packets",
    "warn",
    "write_json_line",
    "write_record",
]


class HelpFormatter(argparse.HelpFormatter):
    """argparse's help formatter, asking for the terminal's width only when it formats.

    argparse builds a formatter for every ``add_argument`` (to check the
    metavar) and the stock one asks ``shutil`` for the width there, which
    imports ``shutil`` (with zlib, bz2 and lzma) into every call; the width
    is only read by :meth:`format_help`, which gets it as the stock one does.
    """

    def __init__(
        self,
        prog: str,
        indent_increment: int = 2,
        max_help_position: int = 24,
        width: int | None = None,
    ) -> None:
        super().__init__(prog, indent_increment, max_help_position, width=0)
        self._asked: tuple[int, int, int | None] | None = (
            indent_increment,
            max_help_position,
            width,
        )

    def format_help(self) -> str:
        """The help text, at the width (and help position) the stock formatter would use."""
        if self._asked is not None:
            sized = argparse.HelpFormatter(self._prog, *self._asked)
            self._width, self._max_help_position = sized._width, sized._max_help_position
            self._asked = None
        return super().format_help()


class UsageArgumentParser(argparse.ArgumentParser):
    """argparse exits 2 on errors, which collides with policy codes; raise instead.

    Every verb's parser is one of these too (argparse builds subparsers with
    the parent's class, and names each ``flakecore VERB``).  argparse hands
    the arguments a verb does not know up to the top-level parser, whose
    error would name only ``flakecore``; :meth:`parse` refuses them with the
    parser of the verb that was reading them, recorded as ``verb_parser``.
    Help is formatted by :class:`HelpFormatter`.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)
        self.set_defaults(verb_parser=self)

    def add_subparsers(self, **kwargs: Any) -> argparse._SubParsersAction[Any]:
        """argparse's, named as argparse names them without formatting a usage line.

        argparse names the subparsers by the usage of this parser's
        positionals, formatted at the terminal's width; with no positional
        and no usage of its own that is this parser's ``prog``, at any width.
        """
        if "prog" not in kwargs and self.usage is None and not self._get_positional_actions():
            kwargs["prog"] = self.prog
        return super().add_subparsers(**kwargs)

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}")

    def parse(self, argv: Sequence[str] | None = None) -> argparse.Namespace:
        """``parse_args``, with unknown arguments refused by the verb that got them."""
        args, unknown = self.parse_known_args(argv)
        if unknown:
            parser = getattr(args, "verb_parser", self)
            parser.error("unrecognized arguments: " + " ".join(unknown))
        return args


def commit_id(value: str) -> str:
    """An argparse ``type``: a patch hash is a git commit id (the core's one rule)."""
    problem = commit_id_problem(repr(value), value)
    if problem is not None:
        raise argparse.ArgumentTypeError(problem)
    return value


def add_patch_hash_argument(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup, *, required: bool, help: str
) -> None:
    """``--patch-hash COMMIT``: checked as a git commit id; ``help`` says what it binds."""
    parser.add_argument(
        "--patch-hash",
        required=required,
        type=commit_id,
        metavar="COMMIT",
        help=f"{help}: the patch's git commit id (git rev-parse HEAD in the patched checkout)",
    )


def flat(text: str) -> str:
    """One line of plain output: whitespace runs (newlines included) become one space."""
    return " ".join(text.split())


#: Longest a line printed with :func:`out_line` waits before the reader gets it.
FLUSH_S = 0.1
#: Lines of stdout not written yet, and when they were last written.
_pending: list[str] = []
_flushed = [time.monotonic()]


def out_line(text: str) -> None:
    """One line on stdout, written with the others at most :data:`FLUSH_S` later.

    A write per record is a large share of a batch's time (and with
    ``PYTHONUNBUFFERED``, as CI often sets, every ``print`` is one); the
    lines and their order are the same, and :func:`warn` and
    :func:`flush_out` write them out first.
    """
    _pending.append(text + "\n")
    now = time.monotonic()
    if now - _flushed[0] > FLUSH_S:
        flush_out()
        _flushed[0] = now


def flush_out() -> None:
    """Write every pending :func:`out_line` line to stdout now."""
    if _pending:
        text = "".join(_pending)
        _pending.clear()
        sys.stdout.write(text)
    sys.stdout.flush()


def warn(message: str) -> None:
    """One line on stderr, ``flakecore: <message>`` (flattened: input cannot forge lines).

    What is printed on stdout goes out first, so a terminal shows both in order.
    """
    with contextlib.suppress(OSError):  # a reader that went away still leaves stderr
        flush_out()
    print(f"flakecore: {flat(message)}", file=sys.stderr, flush=True)


def die(message: str, code: int) -> int:
    """Print one line on stderr and return ``code`` (for ``return die(...)``)."""
    warn(message)
    return code


class RecordWriteError(Exception):
    """A record or output file could not be written or deleted (exit 73, never 0)."""

    def __init__(self, path: str, why: str) -> None:
        self.path = str(path)
        super().__init__(f"{path}: cannot write: {why}")


def write_record(path: str, data: bytes, *, make_dir: str | None = None) -> None:
    """Write a record atomically; an OS error becomes :class:`RecordWriteError`."""
    try:
        if make_dir is not None:
            os.makedirs(make_dir, exist_ok=True)
        write_atomic(path, data)
    except OSError as exc:
        raise RecordWriteError(path, exc.strerror or str(exc)) from None


def adapters(needed_by: str, *, report_format: str = "auto") -> ModuleType:
    """``flakecore_adapters``, imported only by a verb that reads test reports.

    The rest of the CLI works without the ``adapters`` extra; a verb that
    needs it raises :class:`~flakecore.errors.MissingExtra` (exit 70).  A
    ``report_format`` other than ``auto`` must be in the adapters' format
    registry (a usage error naming them otherwise), checked before any work.
    """
    try:
        module = importlib.import_module("flakecore_adapters")
    except ImportError as exc:
        raise MissingExtra("adapters", needed_by=needed_by, name=exc.name) from None
    if report_format != "auto":
        try:
            module.report_format(report_format)
        except UsageError as exc:
            raise UsageError(f"{needed_by}: --report-format: {exc}") from None
    return module


class Packet:
    """One packet read from a file or a stdin line; ``error`` set when unusable.

    A plain class, not an attrs one: it is the CLI's own carrier between the
    reader and the verb (never compared, hashed or returned by the library),
    and building an attrs class is a start-up cost of every policy verb
    (docs/performance.md, Start-up).
    """

    __slots__ = ("data", "error", "source")

    def __init__(
        self, source: str, data: dict[str, object] | None, error: InputError | None = None
    ) -> None:
        self.source = source
        self.data = data
        self.error = error

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


def _line_packet(line: bytes, number: int) -> Packet:
    source = f"-:{number}"
    if not line.endswith(b"\n") and len(line) > MAX_DOCUMENT_BYTES:
        return Packet(source, None, InputError("line too long", source="-", line=number))
    try:
        return Packet(source, load_object(line.rstrip(b"\n"), source="-", line=number))
    except InputError as exc:
        return Packet(source, None, exc)


def _lines(head: bytes, stream: IO[bytes]) -> Iterator[bytes]:
    """The lines of ``head``, then of ``stream``; a line over the bound ends the input."""
    *complete, carry = head.split(b"\n")
    for line in complete:
        yield line + b"\n"
    while True:
        line = carry
        if len(carry) <= MAX_DOCUMENT_BYTES:
            line += stream.readline(MAX_DOCUMENT_BYTES + 1 - len(carry))
        carry = b""
        if not line:
            return
        yield line
        if not line.endswith(b"\n") and len(line) > MAX_DOCUMENT_BYTES:
            return


def _read_stdin(stream: IO[bytes]) -> Iterator[Packet]:
    """JSON Lines, or one JSON object over several lines (a record written indented).

    The first line decides: a JSON object on its own starts JSON Lines, read
    a line at a time.  Otherwise the input is tried as one object; when it
    is not one, its lines are judged one by one, so a line that cannot be
    read is a refusal of its own, never a skipped line.
    """
    head = stream.readline(MAX_DOCUMENT_BYTES + 1)
    if not head:
        yield Packet("-", None, InputError("no packet on standard input", source="-"))
        return
    if head.endswith(b"\n") and _line_packet(head, 1).data is None:
        head += stream.read(MAX_DOCUMENT_BYTES + 1 - len(head))
        if len(head) <= MAX_DOCUMENT_BYTES:
            try:
                yield Packet("-", load_object(head, source="-"))
                return
            except InputError:
                pass
    for number, line in enumerate(_lines(head, stream), start=1):
        yield _line_packet(line, number)


def read_packets(files: Sequence[str]) -> Iterator[Packet]:
    """Packets from files (one JSON object each) or ``-`` (stdin: JSON Lines, or one object).

    An unreadable or invalid packet is yielded with its error, never skipped.
    """
    for name in files:
        if name == "-":
            yield from _read_stdin(sys.stdin.buffer)
        else:
            yield _read_file(name)


def file_of(source: str) -> str | None:
    """The file a record came from, for an annotation; standard input (``-``, ``-:3``) has none."""
    return None if not source or source == "-" or source.startswith("-:") else source


def read_one(name: str) -> dict[str, object]:
    """One record from a file, or from stdin with ``-`` (JSON Lines of one line, or one object).

    Raises the record's :class:`~flakecore.errors.InputError` when it is unusable.
    """
    if name != "-":
        # Imported here: the ledger module is no start-up cost of every verb.
        from flakecore.gate.ledger import read_record  # noqa: PLC0415

        return read_record(name)
    packets = list(itertools.islice(_read_stdin(sys.stdin.buffer), 2))
    if len(packets) > 1:
        raise InputError("one record expected on standard input, got several", source="-")
    (packet,) = packets
    if packet.error is not None:
        raise packet.error
    assert packet.data is not None
    return packet.data


def one_stdin(*names: str | None) -> None:
    """Standard input can be read once: ``-`` for two of a verb's inputs is a usage error."""
    if sum(name == "-" for name in names) > 1:
        raise UsageError("standard input (-) can be read only once; give the other inputs as files")


def write_json_line(record: Mapping[str, object]) -> None:
    """One JSON Lines record on stdout (an :func:`out_line`)."""
    out_line(compact_text(record))


def first_failure(exits: Sequence[int]) -> int:
    """A batch exits 0 only if every packet did; else with the first non-zero exit."""
    return next((code for code in exits if code != EXIT_OK), EXIT_OK)


def parse_now(text: str | None) -> dt.datetime:
    """``--now`` (RFC 3339 with offset) or the clock.

    ``datetime`` is loaded here: a verb that judges no time (``decide``
    without ``--now``) does not pay for it.
    """
    import datetime as dt  # noqa: PLC0415

    from flakecore.timeutil import parse_rfc3339  # noqa: PLC0415

    if text is None:
        return dt.datetime.now(dt.timezone.utc)
    try:
        return parse_rfc3339(text)
    except ValueError as exc:
        raise UsageError(f"--now: {exc}") from None
