"""pytest-json-report (``--json-report``) to attempts.

One object per test in ``tests``; pytest-rerunfailures overwrites the stage
objects on each rerun, so only the last attempt survives.  A test whose
top-level ``outcome`` is ``rerun`` ran at least once more than recorded: it
becomes a ``fail`` attempt (native ``rerun``) followed by the final attempt
read from its stages.  When the report shows reruns at all
(``summary.rerun`` before ``tests``, or a ``rerun`` test), every failing
test may have lost earlier attempts: those attempts carry the
incomplete-history flag (once the core defines it).  Failed ``collectors``
(a module that failed to import) are ``error`` attempts, never dropped.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from flakecore.codes import AttemptFlag, Outcome
from flakecore.errors import InputError
from flakecore.evidence import Attempt, Source
from flakecore_adapters._common import (
    NO_FLAGS,
    SESSION_ID,
    UNEXPECTED,
    check_id,
    clip,
    duration_from_number,
    incomplete_flags,
)
from flakecore_adapters._flags import Emitter
from flakecore_adapters._input import Reader
from flakecore_adapters._jsonstream import JsonStream
from flakecore_adapters._limits import Limits

__all__ = ["iter_attempts"]

_PASS, _FAIL, _ERROR, _SKIP = Outcome.PASS, Outcome.FAIL, Outcome.ERROR, Outcome.SKIP
_STAGES = ("setup", "call", "teardown")
_TOP = {
    "passed": (_PASS, NO_FLAGS),
    "failed": (_FAIL, NO_FLAGS),
    "error": (_ERROR, NO_FLAGS),
    "skipped": (_SKIP, NO_FLAGS),
    "xfailed": (_SKIP, NO_FLAGS),
    "xpassed": (_PASS, UNEXPECTED),
}


def _stage(test: dict[str, Any], name: str) -> dict[str, Any] | None:
    stage = test.get(name)
    if stage is None:
        return None
    if not isinstance(stage, dict) or not isinstance(stage.get("outcome"), str):
        raise InputError(f'"{name}" is not a stage object with an "outcome"')
    return stage


def _stage_message(stage: dict[str, Any] | None) -> str | None:
    if stage is None:
        return None
    crash = stage.get("crash")
    if isinstance(crash, dict) and isinstance(crash.get("message"), str):
        return str(crash["message"])
    longrepr = stage.get("longrepr")
    return longrepr if isinstance(longrepr, str) and longrepr else None


def _from_stages(stages: list[dict[str, Any] | None]) -> Outcome:
    """Outcome of the last attempt as its stage objects tell it."""
    setup, call, teardown = stages
    if setup is not None and setup["outcome"] == "failed":
        return _ERROR
    if call is not None and call["outcome"] == "failed":
        return _FAIL
    if teardown is not None and teardown["outcome"] == "failed":
        return _ERROR
    if any(s is not None and s["outcome"] == "skipped" for s in (setup, call)):
        return _SKIP
    if any(s is not None and s["outcome"] not in ("passed", "skipped") for s in stages):
        return _ERROR
    return _PASS if call is not None else _ERROR


def _test_attempts(
    test: Any, limits: Limits, lossy: bool
) -> tuple[str, list[tuple[Outcome, str, str | None, float | None, frozenset[AttemptFlag]]]]:
    if not isinstance(test, dict):
        raise InputError('an item of "tests" is not an object')
    nodeid = test.get("nodeid")
    outcome_word = test.get("outcome")
    if not isinstance(nodeid, str) or not nodeid:
        raise InputError('a test lacks a non-empty string "nodeid"')
    if not isinstance(outcome_word, str):
        raise InputError(f'test {nodeid[:200]!r} lacks a string "outcome"')
    stages = [_stage(test, name) for name in _STAGES]
    durations = [duration_from_number(s.get("duration")) for s in stages if s is not None]
    known = [d for d in durations if d is not None]
    duration = sum(known) if known and len(known) == len(durations) else None
    message = next((m for m in map(_stage_message, stages) if m), None)
    message = clip(message, limits.max_message_chars)
    staged = _from_stages(stages)
    if outcome_word == "rerun":
        flags = incomplete_flags()
        return nodeid, [
            (_FAIL, "rerun", None, None, flags),
            (staged, outcome_word, message, duration, flags),
        ]
    mapped = _TOP.get(outcome_word)
    if mapped is None:
        return nodeid, [(_ERROR, outcome_word[:40], message, duration, NO_FLAGS)]
    outcome, flags = mapped
    if outcome is _PASS and staged is not _PASS:
        outcome = _ERROR  # a pass whose stages say otherwise is not a pass
    if lossy and outcome in (_FAIL, _ERROR):
        flags = flags | incomplete_flags()
    return nodeid, [(outcome, outcome_word, message, duration, flags)]


def iter_attempts(reader: Reader, *, limits: Limits, only: str | None = None) -> Iterator[Attempt]:
    """Attempts of a pytest-json-report document, collectors first as written."""
    source = reader.source
    doc = JsonStream(reader, limits)
    emitter = Emitter(source=source, window=limits.reorder_window, only=only)
    add = emitter.add
    if doc.peek() == "":
        raise InputError("empty report", source=source)
    if doc.peek() != "{":
        raise doc.error("the top level of a pytest JSON report must be an object")
    doc.expect("{", "'{'")
    keys: set[str] = set()
    lossy = False
    seen_tests = False
    first = True
    while True:
        if doc.peek() == "}":
            doc.expect("}", "'}'")
            break
        if not first:
            doc.expect(",", "',' or '}'")
        first = False
        key, line = doc.value()
        if not isinstance(key, str):
            raise doc.error("object key must be a string")
        if key in keys:
            raise doc.error(f"duplicate key {key[:80]!r} at the top level")
        keys.add(key)
        doc.expect(":", "':'")
        if key not in ("tests", "collectors"):
            value, _ = doc.value()
            if key == "summary" and isinstance(value, dict):
                rerun = value.get("rerun")
                lossy = lossy or (
                    isinstance(rerun, int) and not isinstance(rerun, bool) and rerun > 0
                )
            continue
        doc.expect("[", f'"{key}" to be an array')
        if doc.peek() == "]":
            doc.expect("]", "']'")
            seen_tests = seen_tests or key == "tests"
            continue
        while True:
            item, line = doc.value()
            try:
                if key == "tests":
                    nodeid, attempts = _test_attempts(item, limits, lossy)
                    check_id(nodeid, limits.max_id_chars, source, line)
                    if attempts[0][1] == "rerun":
                        lossy = True
                    src = Source(file=source, format="pytest-json", line=line, name=nodeid)
                    serial = emitter.element()
                    for outcome, native, message, duration, flags in attempts:
                        out = add(nodeid, serial, outcome, native, src, duration, message, flags)
                        if out is not None:
                            yield out
                else:
                    out = _collector(item, emitter, source, line, limits)
                    if out is not None:
                        yield out
            except InputError as exc:
                if exc.source != "<input>":
                    raise
                raise InputError(exc.message, source=source, line=line) from None
            nxt = doc.peek()
            if nxt == "]":
                doc.expect("]", "']'")
                break
            doc.expect(",", f"',' or ']' in \"{key}\"")
        seen_tests = seen_tests or key == "tests"
    if not doc.at_end():
        raise doc.error("trailing data after the JSON document")
    if not seen_tests:
        raise InputError('not a pytest JSON report: no "tests" array', source=source)
    yield from emitter.flush()


def _collector(
    item: Any, emitter: Emitter, source: str, line: int, limits: Limits
) -> Attempt | None:
    if not isinstance(item, dict):
        raise InputError('an item of "collectors" is not an object')
    nodeid = item.get("nodeid")
    outcome = item.get("outcome")
    if not isinstance(nodeid, str) or not isinstance(outcome, str):
        raise InputError('a collector lacks a string "nodeid" or "outcome"')
    if outcome in ("passed", "skipped"):
        return None
    test_id = check_id(nodeid or SESSION_ID, limits.max_id_chars, source, line)
    longrepr = item.get("longrepr")
    message = clip(longrepr if isinstance(longrepr, str) else None, limits.max_message_chars)
    src = Source(file=source, format="pytest-json", line=line, name=nodeid)
    return emitter.add(
        test_id, emitter.element(), _ERROR, f"collect {outcome[:40]}", src, None, message
    )
