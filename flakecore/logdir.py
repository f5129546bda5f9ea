"""A directory of attempt logs, one per test and per worker: the pytest plugin's output.

For worker ``W`` (``main`` without pytest-xdist, else xdist's ``gw0``, ``gw1``, ...):

- ``<sha256 of the test id>.W.jsonl`` is that test's attempt log (attempt-line
  lines, written by :class:`~flakecore.attempts.AttemptWriter`).  The name is
  a digest, never a path built from the id, so no id can reach outside the
  directory or collide with another's file.
- ``index.W.jsonl`` names the test of each log, one line
  ``{"test_id":ID,"log":NAME}`` per test, appended before the test's first
  attempt line.  The digest cannot be turned back into the id; the index can,
  and the reader checks every name against the id it claims.

Every file is created exclusively, so a directory that already holds a
worker's files is refused instead of mixed into: one directory per session.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from flakecore._fields import Seed
from flakecore.attempts import AttemptWriter, append_line
from flakecore.codes import AttemptResult
from flakecore.errors import InputError, UsageError
from flakecore.files import open_append, open_stream
from flakecore.jsonio import compact_line, load_object
from flakecore.testids import id_digest

__all__ = ["MAIN_WORKER", "LogDirectory", "index_name", "log_name", "read_log_dir"]

#: The worker name of a run without pytest-xdist.
MAIN_WORKER = "main"
_WORKER = re.compile(r"[A-Za-z0-9_-]{1,64}")
_INDEX = re.compile(r"index\.([A-Za-z0-9_-]{1,64})\.jsonl")
_LOG = re.compile(r"[0-9a-f]{64}\.([A-Za-z0-9_-]{1,64})\.jsonl")
#: An index line names one test id (at most 64 Ki characters, each at most 6 bytes escaped).
MAX_INDEX_LINE_BYTES = 6 * 65_536 + 64


def _worker(worker: str) -> str:
    if not _WORKER.fullmatch(worker):
        raise UsageError(f"worker name {worker[:80]!r} is not 1-64 of A-Z a-z 0-9 _ -")
    return worker


def log_name(test_id: str, worker: str) -> str:
    """The file name of ``test_id``'s log written by ``worker``."""
    return f"{id_digest(test_id)}.{_worker(worker)}.jsonl"


def index_name(worker: str) -> str:
    """The file name of ``worker``'s index."""
    return f"index.{_worker(worker)}.jsonl"


def _index_line(test_id: str, log: str) -> bytes:
    return compact_line({"test_id": test_id, "log": log})


class LogDirectory:
    """One worker's writer: an index, and one log per test created at its first attempt.

    Creating it creates the worker's index exclusively; a directory that
    already holds it is a :class:`~flakecore.errors.UsageError`.  No log
    descriptor is held between attempts, so a session of any size fits in
    the descriptor limit; a test that runs again later in the same session
    (``--keep-duplicates``, a rerun plugin) appends ``n`` = 2, 3, ... to its log.
    """

    def __init__(self, directory: str | os.PathLike[str], worker: str, seed: Seed) -> None:
        self.directory = Path(directory)
        self.worker = _worker(worker)
        self.seed = seed
        self._index_path = self.directory / index_name(worker)
        try:
            self._index = open_append(self._index_path, new=True)
        except FileExistsError:
            raise UsageError(
                f"{self._index_path} already exists: give each session an empty log directory"
            ) from None
        self._logs: dict[str, AttemptWriter] = {}

    def append(self, test_id: str, result: AttemptResult) -> int:
        """One attempt of ``test_id``; returns its number ``n`` in that test's log."""
        writer = self._logs.get(test_id)
        if writer is None:
            name = log_name(test_id, self.worker)
            append_line(self._index, _index_line(test_id, name), self._index_path)
            writer = AttemptWriter(self.directory / name, self.seed, hold=False)
            self._logs[test_id] = writer
        return writer.append(result)

    def close(self) -> None:
        """Close the index; no more attempts can be recorded."""
        for writer in self._logs.values():
            writer.close()
        if self._index >= 0:
            os.close(self._index)
            self._index = -1


def _read_index(path: Path, worker: str) -> dict[str, str]:
    """``{test_id: log name}`` of one index, refused unless every line is exactly as written."""
    source = str(path)
    with open_stream(path, source=source) as fh:
        logs: dict[str, str] = {}
        number = 0
        while raw := fh.readline(MAX_INDEX_LINE_BYTES + 1):
            number += 1
            if len(raw) > MAX_INDEX_LINE_BYTES or not raw.endswith(b"\n"):
                raise InputError("line too long or without its newline", source=source, line=number)
            obj = load_object(raw[:-1], source=source, line=number)
            test_id, log = obj.get("test_id"), obj.get("log")
            if not isinstance(test_id, str) or not test_id.strip() or not isinstance(log, str):
                raise InputError("not a test_id/log line", source=source, line=number)
            if raw != _index_line(test_id, log):
                raise InputError("not exactly as the plugin writes it", source=source, line=number)
            if log != log_name(test_id, worker):
                raise InputError(
                    f"{log[:80]!r} is not the log of its test", source=source, line=number
                )
            if test_id in logs:
                raise InputError(f"test {test_id[:200]!r} listed twice", source=source, line=number)
            logs[test_id] = log
    return logs


def read_log_dir(directory: str | os.PathLike[str]) -> dict[str, tuple[Path, ...]]:
    """Every test's logs in a log directory: ``{test_id: (one log per worker, ...)}``.

    Raises :class:`~flakecore.errors.InputError` for anything an honest
    session does not leave behind: a file that is neither an index nor a
    log, an index line that is not exactly as written, a log name that is
    not its test's, a test listed twice by one worker, a listed log that is
    missing, or a log no index lists.  The logs themselves are read by
    :func:`~flakecore.attempts.reduce_logs`.
    """
    root = Path(directory)
    try:
        names = sorted(os.listdir(root))
    except OSError as exc:
        raise InputError(f"cannot list: {exc.strerror}", source=str(root)) from None
    tests: dict[str, list[Path]] = {}
    listed: set[str] = set()
    for name in names:
        if match := _INDEX.fullmatch(name):
            for test_id, log in _read_index(root / name, match[1]).items():
                tests.setdefault(test_id, []).append(root / log)
                listed.add(log)
        elif not _LOG.fullmatch(name):
            raise InputError("neither an index nor an attempt log", source=str(root / name))
    for name in names:
        if not _LOG.fullmatch(name):
            continue
        if name not in listed:
            raise InputError("an attempt log that no index lists", source=str(root / name))
        if not stat.S_ISREG(os.lstat(root / name).st_mode):
            raise InputError("not a regular file", source=str(root / name))
    if missing := sorted(listed.difference(names)):
        raise InputError("listed in an index but missing", source=str(root / missing[0]))
    return {test_id: tuple(logs) for test_id, logs in tests.items()}
