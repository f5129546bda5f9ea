"""Append-only attempt logs and their strict reducer (README.md, evidence primitives).

A log is never rewritten: a rewrite can drop a pass and keep a miss, which
manufactures an acceptance.  So the writer only appends whole lines, and the
reducer refuses (``INCOMPLETE``) anything that is not exactly the log an
honest writer produces: one compact object per ``\\n``-terminated line,
``n`` counting 1, 2, 3, ... with no gap, one seed, known results only.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import attrs

from flakecore._fields import Seed, is_int, is_seed
from flakecore._wording import plural
from flakecore.codes import AttemptResult, LogStatus
from flakecore.errors import InputError, MissingInputError
from flakecore.files import open_append, open_stream
from flakecore.jsonio import compact_line, load_object
from flakecore.policy import DEFAULT_POLICY, Policy

__all__ = ["MAX_LINE_BYTES", "AttemptWriter", "LogSummary", "append_line", "reduce_logs"]

_LINE_KEYS = frozenset({"seed", "n", "result"})
_RESULTS = frozenset(r.value for r in AttemptResult)
_WHITESPACE = frozenset(b" \t\r\n\x0b\x0c")
#: An honest attempt line is ~60 bytes; a longer one is refused unread.
MAX_LINE_BYTES = 4096


def append_line(
    fd: int, line: bytes, path: str | os.PathLike[str], *, durable: bool = True
) -> None:
    """One whole line in one ``write`` to an ``O_APPEND`` descriptor, fsynced before returning."""
    written = os.write(fd, line)
    if written != len(line):
        raise OSError(f"{os.fspath(path)}: short write ({written} of {len(line)} bytes)")
    if durable:
        os.fsync(fd)


@attrs.frozen(kw_only=True)
class LogSummary:
    """What one or more workers' logs reduce to.

    Counts are meaningful only when ``status`` is ``COMPLETE``; on
    ``INCOMPLETE`` they are what was read before the first refusal.
    """

    status: LogStatus
    attempts: int
    misses: int
    seed: Seed | None
    files: tuple[str, ...]
    reasons: tuple[str, ...] = ()
    results: dict[str, int] = attrs.field(factory=dict, hash=False)

    @property
    def complete(self) -> bool:
        """True only when every line of every file passed every check."""
        return self.status is LogStatus.COMPLETE

    def to_json(self) -> dict[str, object]:
        """The summary record printed by ``flakecore attempts --json``."""
        return {
            "format": "flakecore.attempts-summary",
            "format_version": "1.0",
            "status": self.status.value,
            "attempts": self.attempts,
            "misses": self.misses,
            "seed": self.seed,
            "files": list(self.files),
            "results": dict(self.results),
            "reasons": list(self.reasons),
        }


class AttemptWriter:
    """Appends attempt lines for one worker to its own new log file.

    Each line is one ``O_APPEND`` write, flushed and fsynced before
    :meth:`append` returns, so a crash leaves at most one truncated last line
    (which the reducer refuses) and never a reordered one.  The file is
    created exclusively and never through a symlink: a second writer on the
    same file, or any existing name, is ``FileExistsError``.

    With ``hold=False`` no descriptor is held between lines: each
    :meth:`append` opens the file again (append-only, a regular file, never
    through a symlink), for a process that writes one log per test and would
    otherwise run out of descriptors (the pytest plugin).  With
    ``durable=False`` no line is fsynced: for a log that the same process
    reduces and deletes (a replay's temporary log), which no crash leaves
    behind to be read.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        seed: Seed,
        *,
        hold: bool = True,
        durable: bool = True,
    ) -> None:
        if not is_seed(seed):
            raise TypeError("seed must be a str or an int within +-(2**53 - 1)")
        self.path = Path(path)
        self.seed = seed
        self._n = 0
        self._hold = hold
        self._durable = durable
        self._closed = False
        self._fd = open_append(self.path, new=True)
        if not hold:
            os.close(self._fd)
            self._fd = -1

    def append(self, result: AttemptResult) -> int:
        """Record one started attempt; returns its number ``n``."""
        if self._closed:
            raise ValueError(f"{self.path}: the attempt log is closed")
        self._n += 1
        line = compact_line({"seed": self.seed, "n": self._n, "result": result.value})
        fd = self._fd if self._hold else open_append(self.path, new=False)
        try:
            append_line(fd, line, self.path, durable=self._durable)
        finally:
            if not self._hold:
                os.close(fd)
        return self._n

    def close(self) -> None:
        """Close the file; no more lines can be appended."""
        self._closed = True
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> AttemptWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _compact(line: bytes) -> bool:
    """No whitespace outside string literals (a compact object)."""
    in_string = escaped = False
    for byte in line:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:
                escaped = True
            elif byte == 0x22:
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in _WHITESPACE:
            return False
    return True


class _Refusal(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _check_line(raw: bytes, source: str, number: int) -> dict[str, object]:
    where = f"{source}:{number}"
    if not raw:
        raise _Refusal(f"{where}: blank line")
    if not _compact(raw):
        raise _Refusal(f"{where}: not one compact JSON object (whitespace or \\r)")
    try:
        obj = load_object(raw, source=source, line=number)
    except InputError as exc:
        raise _Refusal(str(exc)) from None
    missing = sorted(_LINE_KEYS - obj.keys())
    extra = sorted(obj.keys() - _LINE_KEYS)
    if missing:
        raise _Refusal(f"{where}: missing {', '.join(missing)}")
    if extra:
        raise _Refusal(f"{where}: unknown field {extra[0]!r}")
    if not is_int(obj["n"]):
        raise _Refusal(f"{where}: n must be a JSON integer within +-(2^53-1)")
    if not is_seed(obj["seed"]):
        raise _Refusal(f"{where}: seed must be a JSON string or an integer within +-(2^53-1)")
    if not isinstance(obj["result"], str) or obj["result"] not in _RESULTS:
        raise _Refusal(f"{where}: unknown result {obj['result']!r}")
    return obj


def _same_seed(a: object, b: object) -> bool:
    return type(a) is type(b) and a == b


def reduce_logs(
    paths: Sequence[str | os.PathLike[str]], *, policy: Policy = DEFAULT_POLICY
) -> LogSummary:
    """Reduce the logs of one experiment (one file per worker) into counts.

    Each file is checked on its own (numbered from 1) and the counts are
    summed; every file must carry the same seed.  The reducer only counts:
    whether the count is within the attempt cap is ``admit``'s question.
    Files are opened through :mod:`flakecore.files`: a missing one raises
    :class:`~flakecore.errors.MissingInputError`, a FIFO, device or escaping
    symlink :class:`~flakecore.errors.UnusableInputError`; everything else
    wrong is an ``INCOMPLETE`` summary.
    """
    names = tuple(os.fspath(p) for p in paths)
    attempts = misses = 0
    results: dict[str, int] = {}
    seed: object = None

    def summary(status: LogStatus, *reasons: str) -> LogSummary:
        return LogSummary(
            status=status,
            attempts=attempts,
            misses=misses,
            seed=seed,  # type: ignore[arg-type]
            files=names,
            reasons=reasons,
            results=results,
        )

    if not names:
        return summary(LogStatus.INCOMPLETE, "no log given")
    limit = policy.max_log_lines
    for name in names:
        try:
            with open_stream(name) as fh:
                expected_n = 1
                while raw := fh.readline(MAX_LINE_BYTES + 1):
                    number = expected_n
                    if len(raw) > MAX_LINE_BYTES:
                        return summary(
                            LogStatus.INCOMPLETE,
                            f"{name}:{number}: line over {MAX_LINE_BYTES} bytes",
                        )
                    if attempts >= limit:
                        return summary(
                            LogStatus.INCOMPLETE,
                            f"{name}: more than {plural(limit, 'line')} (policy limit)",
                        )
                    if not raw.endswith(b"\n"):
                        return summary(
                            LogStatus.INCOMPLETE, f"{name}:{number}: last line lacks its newline"
                        )
                    obj = _check_line(raw[:-1], name, number)
                    if obj["n"] != expected_n:
                        return summary(
                            LogStatus.INCOMPLETE,
                            f"{name}:{number}: n is {obj['n']}, expected {expected_n}",
                        )
                    if attempts == 0:
                        seed = obj["seed"]
                    elif not _same_seed(obj["seed"], seed):
                        return summary(
                            LogStatus.INCOMPLETE, f"{name}:{number}: seed differs from the first"
                        )
                    expected_n += 1
                    attempts += 1
                    result = str(obj["result"])
                    results[result] = results.get(result, 0) + 1
                    if result == AttemptResult.MISS.value:
                        misses += 1
                if expected_n == 1:
                    return summary(LogStatus.INCOMPLETE, f"{name}: empty log")
        except _Refusal as refusal:
            return summary(LogStatus.INCOMPLETE, refusal.reason)
        except OSError as exc:
            raise MissingInputError(f"cannot read: {exc.strerror}", source=name) from None
    return summary(LogStatus.COMPLETE)
