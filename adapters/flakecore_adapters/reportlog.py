"""pytest-reportlog (``--report-log``) JSON Lines to attempts.

Every line goes through :func:`flakecore.jsonio.loads_strict`.  Only
``TestReport`` lines make attempts: one attempt is a setup/call/teardown run
of one nodeid (pytest-rerunfailures writes every rerun, with outcome
``rerun`` on the phase that failed, so each rerun is its own attempt).  A run
of reruns and its final attempt form one element; the same nodeid appearing
again after a final attempt is a repeated element and is flagged.  Failed
``CollectReport`` lines are ``error`` attempts.  A run whose log ends without
``SessionFinish`` (killed, crashed, truncated) gets an ``error`` pseudo-attempt
``<session>``; an attempt cut off before its teardown is an ``error``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from flakecore.codes import AttemptFlag, Outcome
from flakecore.errors import InputError, LimitError
from flakecore.evidence import Attempt, trusted_source
from flakecore.jsonio import loads_strict
from flakecore_adapters._common import (
    NO_FLAGS,
    SESSION_ID,
    UNEXPECTED,
    check_id,
    clip,
    duration_from_number,
)
from flakecore_adapters._drive import attempts_from, lines_from
from flakecore_adapters._flags import Emitter
from flakecore_adapters._input import CHUNK, Reader, check_prefix
from flakecore_adapters._limits import Limits
from flakecore_adapters._render import file_prefix, source_json

__all__ = ["iter_attempts", "iter_lines"]

_PASS, _FAIL, _ERROR, _SKIP = Outcome.PASS, Outcome.FAIL, Outcome.ERROR, Outcome.SKIP
_WHEN = frozenset({"setup", "call", "teardown"})


def _lines(reader: Reader, limits: Limits) -> Iterator[tuple[int, bytes]]:
    """``(line number, line without its newline)``; blank lines and overlong lines refused."""
    source = reader.source
    rest = b""
    number = 0
    first = True
    while True:
        chunk = reader.read(CHUNK)
        if first:
            check_prefix(chunk, source)
            first = False
        if not chunk:
            break
        parts = (rest + chunk).split(b"\n")
        rest = parts.pop()
        if len(rest) > limits.max_line_bytes:
            raise LimitError(
                f"line longer than {limits.max_line_bytes} bytes", source=source, line=number + 1
            )
        for raw in parts:
            number += 1
            if len(raw) > limits.max_line_bytes:
                raise LimitError(
                    f"line longer than {limits.max_line_bytes} bytes", source=source, line=number
                )
            yield number, raw
    if rest:
        yield number + 1, rest


def _message(report: dict[str, Any], limit: int) -> str | None:
    longrepr = report.get("longrepr")
    text: object = None
    if isinstance(longrepr, str):
        text = longrepr
    elif isinstance(longrepr, dict):
        crash = longrepr.get("reprcrash")
        if isinstance(crash, dict):
            text = crash.get("message")
    elif isinstance(longrepr, list) and len(longrepr) == 3:
        text = longrepr[2]  # a skip: [path, lineno, reason]
    return clip(text, limit) if isinstance(text, str) and text else None


class _Run:
    """One attempt being assembled from its phase reports."""

    __slots__ = ("duration", "line", "message", "phases", "wasxfail")

    def __init__(self, line: int) -> None:
        self.line = line
        self.phases: dict[str, str] = {}
        self.message: str | None = None
        self.duration: float | None = 0.0
        self.wasxfail = False

    def result(self) -> tuple[Outcome, str, frozenset[AttemptFlag], bool]:
        """``(outcome, native word, flags, was it a rerun)``."""
        setup = self.phases.get("setup")
        call = self.phases.get("call")
        teardown = self.phases.get("teardown")
        rerun = "rerun" in self.phases.values()
        if setup in ("failed", "rerun"):
            return _ERROR, "rerun" if setup == "rerun" else "error", NO_FLAGS, rerun
        if teardown in ("failed", "rerun"):
            return _ERROR, "rerun" if teardown == "rerun" else "error", NO_FLAGS, rerun
        if setup == "skipped" and call is None:
            return _SKIP, "skipped", NO_FLAGS, rerun
        if call == "rerun":
            return _FAIL, "rerun", NO_FLAGS, rerun
        if call == "failed":
            return _FAIL, "failed", NO_FLAGS, rerun
        if call == "skipped":
            return _SKIP, "xfailed" if self.wasxfail else "skipped", NO_FLAGS, rerun
        if call == "passed" and setup in (None, "passed") and teardown in (None, "passed"):
            if self.wasxfail:
                return _PASS, "xpassed", UNEXPECTED, rerun
            return _PASS, "passed", NO_FLAGS, rerun
        return _ERROR, f"setup={setup} call={call} teardown={teardown}", NO_FLAGS, rerun


def iter_attempts(reader: Reader, *, limits: Limits, only: str | None = None) -> Iterator[Attempt]:
    """Attempts of a pytest-reportlog file, in the order their teardown was logged."""
    return attempts_from(_parse, reader, limits=limits, only=only)


def iter_lines(
    reader: Reader, *, limits: Limits, only: str | None = None, counts: dict[str, int]
) -> Iterator[list[str]]:
    """The attempt records of a pytest-reportlog file as JSON lines, in batches."""
    return lines_from(_parse, reader, limits=limits, only=only, counts=counts)


def _parse(reader: Reader, limits: Limits, emitter: Emitter, *, text: bool) -> Iterator[None]:
    """Feed every attempt to ``emitter``; yields whenever records may be ready."""
    source = reader.source
    prefix = file_prefix(source, "pytest-reportlog")
    runs: dict[str, _Run] = {}
    chains: dict[str, int] = {}  # nodeid -> element serial of an unfinished rerun chain
    finished = False
    last_line = 0
    limit = limits.max_message_chars

    def src(line: int | None, name: str | None) -> Any:
        if text:
            return source_json(prefix, line, None, name)
        return trusted_source(source, "pytest-reportlog", line, None, name)

    def close(nodeid: str, run: _Run, *, cut: bool = False) -> None:
        outcome, native, flags, rerun = run.result()
        message = run.message
        if cut:
            outcome, native = _ERROR, "incomplete"
            message = "the log ended before this test's teardown"
        serial = chains.pop(nodeid, None)
        if serial is None:
            serial = emitter.element()
        if rerun and not cut:
            chains[nodeid] = serial
            if len(chains) > limits.max_open_tests:
                raise LimitError("too many unfinished rerun chains", source=source, line=run.line)
        emitter.add(
            nodeid,
            serial,
            run.line,
            outcome,
            native,
            src(run.line, nodeid),
            run.duration,
            message,
            flags,
        )

    for number, line in _lines(reader, limits):
        if number % 1024 == 0:
            emitter.ready()
            yield
        last_line = number
        obj = loads_strict(line[:-1] if line.endswith(b"\r") else line, source=source, line=number)
        if not isinstance(obj, dict):
            raise InputError("a report-log line must be a JSON object", source=source, line=number)
        kind = obj.get("$report_type")
        if not isinstance(kind, str):
            raise InputError('line lacks a string "$report_type"', source=source, line=number)
        if finished:
            raise InputError("line after SessionFinish", source=source, line=number)
        if kind == "SessionFinish":
            finished = True
            continue
        if kind == "CollectReport":
            outcome = obj.get("outcome")
            nodeid = obj.get("nodeid")
            if not isinstance(outcome, str) or not isinstance(nodeid, str):
                raise InputError(
                    'CollectReport lacks "outcome" or "nodeid"', source=source, line=number
                )
            if outcome in ("passed", "skipped"):
                continue
            test_id = check_id(nodeid or SESSION_ID, limits.max_id_chars, source, number)
            emitter.add(
                test_id,
                emitter.element(),
                number,
                _ERROR,
                f"collect {outcome[:40]}",
                src(number, nodeid),
                None,
                _message(obj, limit),
            )
            continue
        if kind != "TestReport":
            continue
        nodeid = obj.get("nodeid")
        when = obj.get("when")
        outcome = obj.get("outcome")
        if not isinstance(nodeid, str) or not nodeid:
            raise InputError('TestReport lacks a non-empty "nodeid"', source=source, line=number)
        if when not in _WHEN or not isinstance(outcome, str):
            raise InputError(
                'TestReport lacks a valid "when" or "outcome"', source=source, line=number
            )
        check_id(nodeid, limits.max_id_chars, source, number)
        run = runs.get(nodeid)
        if run is not None and (when == "setup" or when in run.phases):
            # A new attempt began before the previous one logged its teardown.
            del runs[nodeid]
            close(nodeid, run, cut=True)
            run = None
        if run is None:
            run = runs[nodeid] = _Run(number)
            if len(runs) > limits.max_open_tests:
                raise LimitError(
                    "too many tests started but not finished", source=source, line=number
                )
        run.phases[when] = outcome
        if obj.get("wasxfail") is not None:
            run.wasxfail = True
        if run.message is None and outcome in ("failed", "rerun", "skipped"):
            run.message = _message(obj, limit)
        duration = duration_from_number(obj.get("duration"))
        run.duration = None if duration is None or run.duration is None else run.duration + duration
        if when == "teardown":
            del runs[nodeid]
            close(nodeid, run)
    for nodeid, run in list(runs.items()):
        close(nodeid, run, cut=True)
    if not finished:
        emitter.add(
            SESSION_ID,
            emitter.element(),
            last_line or None,
            _ERROR,
            "no SessionFinish",
            src(last_line or None, None),
            None,
            "the report log ends without SessionFinish: the run did not finish",
        )
    emitter.finish()
    yield
