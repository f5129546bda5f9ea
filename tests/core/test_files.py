"""The one file layer: every hostile kind x every reader, atomic writes, appends, typed errors.

Readers are called in this process, so a reader that blocks on a FIFO or on
``/dev/stdin`` would hang the test: an alarm guards against that (it fails
the test; it is not what the test asserts).
"""

from __future__ import annotations

import hashlib
import os
import signal
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import attrs
import pytest
from flakecore_adapters import iter_attempts
from hostile_files import HONEST, HOSTILE, Kind, snapshot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flakecore.attempts import AttemptWriter, reduce_logs
from flakecore.cli._common import input_exit
from flakecore.cli._github import SummaryRow, append_step_summary
from flakecore.codes import AttemptResult, LogStatus
from flakecore.digest import file_sha256
from flakecore.errors import InputError, LimitError, MissingInputError, UnusableInputError
from flakecore.exits import EXIT_DATAERR, EXIT_NOINPUT
from flakecore.files import (
    atomic_output,
    open_append,
    open_stream,
    read_bytes,
    read_bytes_at,
    write_atomic,
)
from flakecore.gate.ledger import read_record
from flakecore.gate.policy_source import load_outside_config

#: The scored checkout, for the configuration reader: not where the planted files are.
_ELSEWHERE = Path(__file__).resolve().parent


@pytest.fixture(autouse=True)
def no_hang() -> Iterator[None]:
    """Guard: a reader that blocks fails the test after 20 s instead of hanging the suite."""

    def stop(signum: int, frame: object) -> None:
        raise AssertionError("a reader blocked (guard alarm)")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.alarm(20)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@attrs.frozen
class Reader:
    """One entry point that reads a file, the honest bytes it reads, and what it returns."""

    name: str
    content: bytes
    read: Callable[[str], object]
    expect: Callable[[bytes], object]


LOG = b'{"seed":"s","n":1,"result":"miss"}\n'
JUNIT = b'<testsuite name="s"><testcase classname="c" name="t"/></testsuite>'
PYPROJECT = b"[tool.flakecore]\nmax_lease_days = 7\n"
RECORD = b'{"format": "flakecore.lease", "b": [1, 2]}\n'


def _stream(path: str) -> bytes:
    with open_stream(path) as fh:
        return fh.read()


READERS = (
    Reader("read_bytes", b"x" * 300, lambda p: read_bytes(p, 300), lambda c: c),
    Reader("open_stream", b"stream\n", _stream, lambda c: c),
    Reader("file_sha256", b"hash me", file_sha256, lambda c: hashlib.sha256(c).hexdigest()),
    Reader(
        "read_record", RECORD, read_record, lambda c: {"format": "flakecore.lease", "b": [1, 2]}
    ),
    Reader(
        "reduce_logs",
        LOG,
        lambda p: (s := reduce_logs([p])).status is LogStatus.COMPLETE and s.misses,
        lambda c: 1,
    ),
    Reader(
        "load_outside_config",
        PYPROJECT,
        lambda p: load_outside_config(p, checkout=_ELSEWHERE).policy.max_lease_days,
        lambda c: 7,
    ),
    Reader(
        "iter_attempts", JUNIT, lambda p: [a.test_id for a in iter_attempts(p)], lambda c: ["c::t"]
    ),
)


def _plant(tmp_path: Path, kind: Kind, content: bytes) -> str:
    directory = tmp_path / "evidence"
    directory.mkdir()
    return kind.plant(directory, "input.file", content)


@pytest.mark.parametrize("reader", READERS, ids=lambda r: r.name)
@pytest.mark.parametrize("kind", HOSTILE, ids=lambda k: k.name)
def test_every_reader_refuses_every_hostile_kind(
    tmp_path: Path, kind: Kind, reader: Reader
) -> None:
    path = _plant(tmp_path, kind, reader.content)
    before = snapshot(tmp_path)
    with pytest.raises(InputError) as info:
        reader.read(path)
    error = info.value
    assert isinstance(error, MissingInputError if kind.missing else UnusableInputError), error
    assert input_exit(error) == (EXIT_NOINPUT if kind.missing else EXIT_DATAERR)
    assert error.source == path and str(error).startswith(f"{path}: ")
    assert "\n" not in str(error)
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("reader", READERS, ids=lambda r: r.name)
@pytest.mark.parametrize("kind", HONEST, ids=lambda k: k.name)
def test_every_reader_reads_the_honest_twins(tmp_path: Path, kind: Kind, reader: Reader) -> None:
    path = _plant(tmp_path, kind, reader.content)
    assert reader.read(path) == reader.expect(reader.content)


@pytest.mark.parametrize(
    "kind", [k for k in HOSTILE + HONEST if k.in_directory], ids=lambda k: k.name
)
def test_read_bytes_at_follows_no_symlink_at_all(tmp_path: Path, kind: Kind) -> None:
    path = Path(_plant(tmp_path, kind, b"content"))
    fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        if kind.name == "regular file":
            assert read_bytes_at(fd, path.name, 10, source="s") == b"content"
            return
        symlink = path.is_symlink()
        with pytest.raises(InputError) as info:
            read_bytes_at(fd, path.name, 10, source="s")
    finally:
        os.close(fd)
    missing = kind.missing and not symlink
    assert isinstance(info.value, MissingInputError if missing else UnusableInputError)
    assert str(info.value).startswith("s: ")


def test_a_missing_name_is_missing(tmp_path: Path) -> None:
    with pytest.raises(MissingInputError, match="no such file"):
        read_bytes(tmp_path / "absent.json", 10)
    with pytest.raises(MissingInputError, match="no such file"):
        read_bytes(tmp_path / "absent" / "below.json", 10)


def test_the_exit_is_decided_by_type_never_by_the_words() -> None:
    assert input_exit(MissingInputError("refused: anything", source="f")) == EXIT_NOINPUT
    assert input_exit(UnusableInputError("no such file", source="f")) == EXIT_DATAERR
    assert input_exit(InputError("cannot read: words", source="f")) == EXIT_DATAERR
    assert input_exit(LimitError("no such file", source="f")) == EXIT_DATAERR


def test_a_symlink_escape_is_named_on_one_line_even_with_control_characters(tmp_path: Path) -> None:
    evil = tmp_path / "evil\nflakecore: forged line\x1b[2J"
    evil.write_bytes(b"{}")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "r.json").symlink_to(evil)
    with pytest.raises(UnusableInputError) as info:
        read_bytes(tmp_path / "d" / "r.json", 10)
    text = str(info.value)
    assert "\n" not in text and "\x1b" not in text and "out of its directory" in text


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(size=st.integers(0, 600), limit=st.integers(0, 600))
def test_read_bytes_returns_the_file_exactly_when_it_is_within_the_limit(
    tmp_path: Path, size: int, limit: int
) -> None:
    path = tmp_path / "sized"
    data = os.urandom(size)
    path.write_bytes(data)
    if size <= limit:
        assert read_bytes(path, limit) == data
        assert file_sha256(path, limit=limit) == hashlib.sha256(data).hexdigest()
    else:
        with pytest.raises(LimitError, match=f"larger than {limit} bytes"):
            read_bytes(path, limit)
        with pytest.raises(LimitError):
            file_sha256(path, limit=limit)


def test_large_files_are_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "big"
    data = os.urandom(3 * 1024 * 1024 + 17)  # several chunks
    path.write_bytes(data)
    assert read_bytes(path, len(data)) == data
    assert file_sha256(path) == hashlib.sha256(data).hexdigest()


# --------------------------------------------------------------------------- writes


def _outside(tmp_path: Path) -> Path:
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"must stay\n")
    return outside


def test_atomic_write_replaces_the_target_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "out" / "record.json"
    target.parent.mkdir()
    target.write_bytes(b"old")
    write_atomic(target, b"new\n")
    assert target.read_bytes() == b"new\n"
    assert [p.name for p in target.parent.iterdir()] == ["record.json"]
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask


def test_a_symlink_planted_at_the_target_is_replaced_never_followed(tmp_path: Path) -> None:
    outside = _outside(tmp_path)
    (tmp_path / "out").mkdir()
    target = tmp_path / "out" / "record.json"
    target.symlink_to(outside)
    write_atomic(target, b"record\n")
    assert outside.read_bytes() == b"must stay\n"
    assert not target.is_symlink() and target.read_bytes() == b"record\n"


def test_symlinks_planted_at_predictable_temporary_names_are_never_followed(tmp_path: Path) -> None:
    outside = _outside(tmp_path)
    (tmp_path / "out").mkdir()
    target = tmp_path / "out" / "record.json"
    pid = os.getpid()
    # The names the old writers used (pid-named, fixed): all of them lead outside.
    for name in (f".record.json.{pid}.tmp", f"record.json.{pid}.tmp", ".record.json.tmp"):
        (target.parent / name).symlink_to(outside)
    write_atomic(target, b"record\n")
    with atomic_output(target) as fh:
        fh.write(b"again\n")
    assert outside.read_bytes() == b"must stay\n"
    assert target.read_bytes() == b"again\n"
    assert sorted(p.name for p in target.parent.iterdir() if not p.is_symlink()) == ["record.json"]


def test_a_failed_write_keeps_the_old_file_and_removes_its_temporary(tmp_path: Path) -> None:
    target = tmp_path / "record.json"
    target.write_bytes(b"old")

    def halfway() -> None:
        with atomic_output(target) as fh:
            fh.write(b"partial")
            raise ValueError("halfway")

    with pytest.raises(ValueError, match="halfway"):
        halfway()
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["record.json"]


@pytest.mark.parametrize(
    ("make", "error"),
    [
        (lambda t: None, FileNotFoundError),  # the directory is missing
        (lambda t: t.mkdir(parents=True), IsADirectoryError),  # the target is a directory
    ],
)
def test_write_errors_name_the_target_not_the_temporary(
    tmp_path: Path, make: Callable[[Path], None], error: type[OSError]
) -> None:
    target = tmp_path / "d" / "record.json"
    make(target)
    with pytest.raises(error) as info:
        write_atomic(target, b"x")
    assert info.value.filename == str(target)


# --------------------------------------------------------------------------- appends


def test_the_attempt_writer_never_writes_through_a_planted_symlink(tmp_path: Path) -> None:
    outside = _outside(tmp_path)
    log = tmp_path / "attempts.jsonl"
    log.symlink_to(outside)
    with pytest.raises(FileExistsError):
        AttemptWriter(log, "s")
    dangling = tmp_path / "dangling.jsonl"
    dangling.symlink_to(tmp_path / "would-be-created")
    with pytest.raises(FileExistsError):
        AttemptWriter(dangling, "s")
    assert outside.read_bytes() == b"must stay\n"
    assert not (tmp_path / "would-be-created").exists()
    with AttemptWriter(tmp_path / "honest.jsonl", "s") as writer:
        writer.append(AttemptResult.MISS)
    assert reduce_logs([tmp_path / "honest.jsonl"]).misses == 1


@pytest.mark.parametrize("kind", ["symlink", "FIFO", "device", "directory"])
def test_appends_refuse_everything_but_a_regular_file(tmp_path: Path, kind: str) -> None:
    outside = _outside(tmp_path)
    path = tmp_path / "summary.md"
    if kind == "symlink":
        path.symlink_to(outside)
    elif kind == "FIFO":
        os.mkfifo(path)  # no reader: an append must fail at once, not block
    elif kind == "device":
        path = Path("/dev/null")
    else:
        path.mkdir()
    with pytest.raises(OSError):  # noqa: PT011 - the errno differs by kind; all are refusals
        os.close(open_append(path, new=False))
    assert outside.read_bytes() == b"must stay\n"


def test_the_step_summary_is_appended_only_to_a_regular_file(tmp_path: Path) -> None:
    outside = _outside(tmp_path)
    row = SummaryRow(
        test="t", policy="decide", code="OK", exit=0, reason="r", evidence="e", refused=False
    )
    link = tmp_path / "summary-link.md"
    link.symlink_to(outside)
    error = append_step_summary("title", [row], {"GITHUB_STEP_SUMMARY": str(link)})
    assert error is not None and "cannot append" in error
    assert outside.read_bytes() == b"must stay\n"
    honest = tmp_path / "summary.md"
    honest.write_text("earlier\n")
    assert append_step_summary("title", [row], {"GITHUB_STEP_SUMMARY": str(honest)}) is None
    text = honest.read_text()
    assert text.startswith("earlier\n### title") and "| t | decide | OK | accepted | 0 |" in text
