"""The plugin's log directory: what the writer leaves, and what the reader refuses."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from flakecore import AttemptResult, InputError
from flakecore.errors import UsageError
from flakecore.logdir import LogDirectory, index_name, log_name, read_log_dir

A = "tests/test_a.py::TestX::test_y[p::q]"
B = "tests/test_a.py::test_z"


def _written(tmp_path: Path) -> Path:
    for worker in ("gw0", "gw1"):
        logs = LogDirectory(tmp_path, worker, 7)
        assert logs.append(A if worker == "gw0" else B, AttemptResult.MISS) == 1
        if worker == "gw0":
            assert logs.append(A, AttemptResult.PASS) == 2
        logs.close()
    return tmp_path


def test_names_are_digests_and_the_reader_maps_ids_to_logs(tmp_path: Path) -> None:
    name = hashlib.sha256(A.encode()).hexdigest() + ".gw0.jsonl"
    assert log_name(A, "gw0") == name
    assert index_name("gw0") == "index.gw0.jsonl"
    _written(tmp_path)
    assert (tmp_path / name).read_bytes() == (
        b'{"seed":7,"n":1,"result":"miss"}\n{"seed":7,"n":2,"result":"pass"}\n'
    )
    assert (tmp_path / "index.gw0.jsonl").read_bytes() == (
        b'{"test_id":"tests/test_a.py::TestX::test_y[p::q]","log":"' + name.encode() + b'"}\n'
    )
    assert read_log_dir(tmp_path) == {A: (tmp_path / name,), B: (tmp_path / log_name(B, "gw1"),)}


def test_a_second_writer_for_a_worker_is_refused(tmp_path: Path) -> None:
    LogDirectory(tmp_path, "main", 1).close()
    with pytest.raises(UsageError, match="already exists"):
        LogDirectory(tmp_path, "main", 1)


@pytest.mark.parametrize("worker", ["", "../x", "gw 0", "a" * 65, "gw0\n"])
def test_worker_names_are_plain(tmp_path: Path, worker: str) -> None:
    with pytest.raises(UsageError):
        LogDirectory(tmp_path, worker, 1)


def _index(path: Path) -> Path:
    return path / "index.gw0.jsonl"


def _rewrite(old: bytes, new: bytes) -> Callable[[Path], object]:
    def edit(path: Path) -> None:
        index = _index(path)
        index.write_bytes(index.read_bytes().replace(old, new))

    return edit


#: (what is done to an honest directory, the refusal's source file, its message)
REFUSALS: list[tuple[str, Callable[[Path], object], str, str]] = [
    (
        "spaces in an index line",
        _rewrite(b'","log":', b'", "log":'),
        "index.gw0.jsonl:1",
        "not exactly as the plugin writes it",
    ),
    ("an extra field", _rewrite(b'"}\n', b'","x":1}\n'), "index.gw0.jsonl:1", "not exactly"),
    (
        "another test's log",
        lambda p: _index(p).write_bytes(_index(p).read_bytes().replace(A.encode(), B.encode())),
        "index.gw0.jsonl:1",
        "is not the log of its test",
    ),
    (
        "a blank test id",
        lambda p: _index(p).write_bytes(b'{"test_id":" ","log":"x"}\n'),
        "index.gw0.jsonl:1",
        "not a test_id/log line",
    ),
    (
        "a test listed twice",
        lambda p: _index(p).write_bytes(_index(p).read_bytes() * 2),
        "index.gw0.jsonl:2",
        "listed twice",
    ),
    (
        "a truncated index",
        lambda p: _index(p).write_bytes(_index(p).read_bytes()[:-1]),
        "index.gw0.jsonl:1",
        "without its newline",
    ),
    (
        "a duplicate key",
        _rewrite(b'{"test_id":', b'{"test_id":"a","test_id":'),
        "index.gw0.jsonl:1",
        "duplicate",
    ),
    (
        "a log no index lists",
        lambda p: (p / ("0" * 64 + ".gw0.jsonl")).write_bytes(b""),
        "0" * 64 + ".gw0.jsonl",
        "no index lists",
    ),
    (
        "a listed log is missing",
        lambda p: (p / log_name(A, "gw0")).unlink(),
        log_name(A, "gw0"),
        "missing",
    ),
    (
        "an unknown file",
        lambda p: (p / "notes.txt").write_bytes(b""),
        "notes.txt",
        "neither an index nor an attempt log",
    ),
]


@pytest.mark.parametrize(
    ("case", "damage", "source", "message"), REFUSALS, ids=[r[0] for r in REFUSALS]
)
def test_reader_refuses_what_an_honest_session_does_not_leave(
    tmp_path: Path, case: str, damage: Callable[[Path], object], source: str, message: str
) -> None:
    _written(tmp_path)
    damage(tmp_path)
    with pytest.raises(InputError, match=message) as caught:
        read_log_dir(tmp_path)
    assert caught.value.source.endswith(source.split(":", maxsplit=1)[0])
    if ":" in source:
        assert caught.value.line == int(source.split(":")[1])


def test_symlinked_log_itself_is_refused(tmp_path: Path) -> None:
    _written(tmp_path)
    log = tmp_path / log_name(B, "gw1")
    target = tmp_path.parent / f"{tmp_path.name}-outside"
    os.replace(log, target)
    log.symlink_to(target)
    with pytest.raises(InputError, match="not a regular file"):
        read_log_dir(tmp_path)


def test_missing_directory_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot list"):
        read_log_dir(tmp_path / "nope")
