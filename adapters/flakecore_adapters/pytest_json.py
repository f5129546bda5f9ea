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

import math
from collections.abc import Iterator
from typing import Any

from flakecore.codes import AttemptFlag, Outcome
from flakecore.errors import InputError
from flakecore.evidence import Attempt, duration_or_none, trusted_source
from flakecore_adapters._common import (
    NO_FLAGS,
    SESSION_ID,
    UNEXPECTED,
    check_id,
    clip,
    duration_from_number,
    incomplete_flags,
)
from flakecore_adapters._drive import attempts_from, lines_from
from flakecore_adapters._flags import Emitter
from flakecore_adapters._input import Reader
from flakecore_adapters._jsonstream import JsonStream
from flakecore_adapters._limits import Limits
from flakecore_adapters._render import HEAD, OUTCOME_KEY, file_prefix, quote, source_json

__all__ = ["iter_attempts", "iter_lines"]

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


_Spec = tuple[Outcome, str, str | None, float | None, frozenset[AttemptFlag]]
_PASS_HEAD = ',"outcome":"pass","native":"passed","attempt":1,"duration_s":'
_PASS_MID = ',"message":null,"flags":[]'
_BATCH = 512  # elements between hand-overs of ready records


_INF = math.inf
#: Far inside the range ``duration_or_none`` keeps (0 to 2**53 - 1 seconds): below it a
#: float duration needs no call.
_SHORT = 1e9


def _duration_text(value: float | None) -> str:
    if type(value) is float and 0.0 <= value < _SHORT:
        return float.__repr__(value)
    value = duration_or_none(value)  # a sum of durations may overflow or leave the range
    return "null" if value is None else float.__repr__(value)


def _may_be_unsound(nodeid: str, escaped: bool, max_id: int) -> bool:
    """Whether ``nodeid`` needs the full id check: the cheap tests first.

    Strict JSON holds no raw C0 character: only an escape, a DEL or a
    non-ASCII character (C1) can make a control.
    """
    return (
        escaped
        or not nodeid.isascii()
        or "\x7f" in nodeid
        or len(nodeid) > max_id
        or nodeid.isspace()
    )


def _plain_pass(test: Any) -> float | None:
    """The total duration of a plain pass, or None for any other test.

    A plain pass: a dict with a non-empty string ``nodeid``, ``outcome``
    ``passed`` and three passed stages without ``crash`` or ``longrepr``,
    whose durations are finite non-negative floats with a sum a record keeps
    (``duration_or_none``): one attempt, pass, ``passed``, no message, that
    total, no flags, as the general stage walk of :func:`_test_attempts`
    decides it (the text lane and that function's shortcut).
    """
    if test.__class__ is not dict:
        return None
    get = test.get
    nodeid = get("nodeid")
    setup = get("setup")
    call = get("call")
    teardown = get("teardown")
    if not (
        get("outcome") == "passed"
        and nodeid.__class__ is str
        and nodeid
        and setup.__class__ is dict
        and call.__class__ is dict
        and teardown.__class__ is dict
        and setup.get("outcome") == "passed"
        and call.get("outcome") == "passed"
        and teardown.get("outcome") == "passed"
        and "crash" not in setup
        and "longrepr" not in setup
        and "crash" not in call
        and "longrepr" not in call
        and "crash" not in teardown
        and "longrepr" not in teardown
    ):
        return None
    first = setup.get("duration")
    second = call.get("duration")
    third = teardown.get("duration")
    if (
        first.__class__ is float
        and second.__class__ is float
        and third.__class__ is float
        and 0.0 <= first < _INF
        and 0.0 <= second < _INF
        and 0.0 <= third < _INF
    ):
        total: float = 0.0 + first + second + third
        if total < _SHORT or duration_or_none(total) == total:
            return total
    return None


def _test_attempts(test: Any, limits: Limits, lossy: bool) -> tuple[str, list[_Spec]]:
    if not isinstance(test, dict):
        raise InputError('an item of "tests" is not an object')
    get = test.get
    nodeid = get("nodeid")
    outcome_word = get("outcome")
    if not isinstance(nodeid, str) or not nodeid:
        raise InputError('a test lacks a non-empty string "nodeid"')
    if not isinstance(outcome_word, str):
        raise InputError(f'test {nodeid[:200]!r} lacks a string "outcome"')
    total = _plain_pass(test)
    if total is not None:  # the common case, decided as the general code below decides it
        return nodeid, [(_PASS, outcome_word, None, total, NO_FLAGS)]
    setup = get("setup")
    call = get("call")
    teardown = get("teardown")
    stages = [setup, call, teardown]
    duration: float | None = 0.0
    message = None
    for name, present in zip(_STAGES, stages, strict=True):
        if present is None:
            continue
        stage = present
        if stage.__class__ is not dict or not isinstance(stage.get("outcome"), str):
            checked = _stage(test, name)  # subclasses and refusals: the general check
            if checked is None:  # pragma: no cover - _stage refuses or returns the stage
                continue
            stage = checked
        seconds = duration_from_number(stage.get("duration"))
        duration = None if seconds is None or duration is None else duration + seconds
        if message is None and ("crash" in stage or "longrepr" in stage):
            message = _stage_message(stage) or None
    if duration is not None and all(s is None for s in stages):
        duration = None  # no stage at all: unknown, not zero
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
    return attempts_from(_parse, reader, limits=limits, only=only)


def iter_lines(
    reader: Reader, *, limits: Limits, only: str | None = None, counts: dict[str, int]
) -> Iterator[list[str]]:
    """The attempt records of a pytest-json-report document as JSON lines, in batches."""
    return lines_from(_parse, reader, limits=limits, only=only, counts=counts)


class _Tests:
    """Attempts of ``tests`` items to the emitter; text output batches single attempts.

    The batch is three lists: ``ids``, ``lines`` and ``specs`` (an attempt, or
    the total duration, a float, of a plain pass: :func:`_plain_pass`);
    ``counts`` counts the attempts among ``specs`` by outcome.
    """

    __slots__ = ("counts", "emitter", "ids", "lines", "prefix", "source", "specs", "text")

    def __init__(self, emitter: Emitter, source: str, *, text: bool) -> None:
        self.emitter = emitter
        self.source = source
        self.text = text
        self.prefix = file_prefix(source, "pytest-json")
        self.ids: list[str] = []
        self.lines: list[int] = []
        self.specs: list[_Spec | float] = []
        self.counts: dict[str, int] = {}

    def src(self, line: int, nodeid: str) -> Any:
        if self.text:
            return source_json(self.prefix, line, None, nodeid)
        return trusted_source(self.source, "pytest-json", line, None, nodeid)

    def add(self, nodeid: str, line: int, attempts: list[_Spec]) -> None:
        if self.text and len(attempts) == 1 and not attempts[0][4]:
            self.ids.append(nodeid)
            self.lines.append(line)
            self.specs.append(attempts[0])
            value = attempts[0][0].value
            self.counts[value] = self.counts.get(value, 0) + 1
            if len(self.ids) >= _BATCH:
                self.flush()
            return
        self.flush()
        emitter = self.emitter
        serial = emitter.element()
        src = self.src(line, nodeid)
        for outcome, native, message, duration, flags in attempts:
            emitter.add(nodeid, serial, line, outcome, native, src, duration, message, flags)

    def flush(self) -> None:
        """Hand the batched single attempts on: as one block, or one by one."""
        if not self.ids:
            return
        ids = self.ids[:]
        lines_at = self.lines[:]
        specs = self.specs[:]
        counts = self.counts
        # In place: the parse loop holds the lists.
        self.ids.clear()
        self.lines.clear()
        self.specs.clear()
        self.counts = {}
        emitter = self.emitter
        first = emitter.claim(ids)
        if first is None:
            for nodeid, line, spec in zip(ids, lines_at, specs, strict=True):
                attempt = (
                    spec if isinstance(spec, tuple) else (_PASS, "passed", None, spec, NO_FLAGS)
                )
                outcome, native, message, duration, flags = attempt
                src = self.src(line, nodeid)
                emitter.add(
                    nodeid, emitter.element(), line, outcome, native, src, duration, message, flags
                )
            return
        tail = ',"source":' + self.prefix + ',"line":'
        passed = _PASS_MID + tail

        def records() -> list[str]:
            out = []
            for nodeid, line, spec in zip(ids, lines_at, specs, strict=True):
                key = quote(nodeid)
                if type(spec) is tuple:
                    outcome, native, message, duration, _flags = spec
                    out.append(
                        f"{HEAD}{key}{OUTCOME_KEY[outcome]}{quote(native)}"
                        f',"attempt":1,"duration_s":{_duration_text(duration)}'
                        f',"message":{"null" if message is None else quote(message)},"flags":[]'
                        f'{tail}{line},"name":{key}}}}}\n'
                    )
                else:
                    out.append(
                        f"{HEAD}{key}{_PASS_HEAD}{float.__repr__(spec)}{passed}"
                        f'{line},"name":{key}}}}}\n'
                    )
            return out

        plain = len(ids) - sum(counts.values())
        if plain:
            counts["pass"] = counts.get("pass", 0) + plain
        emitter.push_block(ids, records, lines_at, first, counts)


def _parse(reader: Reader, limits: Limits, emitter: Emitter, *, text: bool) -> Iterator[None]:
    """Feed every attempt to ``emitter``; yields whenever records may be ready."""
    source = reader.source
    doc = JsonStream(reader, limits)
    tests = _Tests(emitter, source, text=text)
    batch_ids, batch_lines, batch_specs = tests.ids, tests.lines, tests.specs
    if doc.peek() == "":
        raise InputError("empty report", source=source)
    if doc.peek() != "{":
        raise doc.error("the top level of a pytest JSON report must be an object")
    doc.expect("{", "'{'")
    keys: set[str] = set()
    lossy = False
    seen_tests = False
    first = True
    seen = 0
    max_id = limits.max_id_chars
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
        where = f'"{key}"'
        try:
            for item, line in doc.items(where):
                try:
                    if key == "tests":
                        total = _plain_pass(item) if text else None
                        if total is not None:  # the general code below, for a plain pass
                            nodeid = item["nodeid"]
                            if _may_be_unsound(nodeid, doc.escaped, max_id):
                                check_id(nodeid, max_id, source, line)
                            # No length check: the flush every _BATCH tests below bounds it.
                            batch_ids.append(nodeid)
                            batch_lines.append(line)
                            batch_specs.append(total)
                        else:
                            nodeid, attempts = _test_attempts(item, limits, lossy)
                            if _may_be_unsound(nodeid, doc.escaped, max_id):
                                check_id(nodeid, max_id, source, line)
                            first_attempt = attempts[0]
                            if first_attempt[1] == "rerun":
                                lossy = True
                            tests.add(nodeid, line, attempts)
                    else:
                        tests.flush()
                        _collector(item, emitter, source, line, limits, tests.src)
                except InputError as exc:
                    if exc.source != "<input>":
                        raise
                    raise InputError(exc.message, source=source, line=line) from None
                seen += 1
                if seen % _BATCH == 0:
                    tests.flush()
                    emitter.ready()
                    yield
        except InputError:
            tests.flush()  # the attempts before the refusal come first, as in the object path
            raise
        tests.flush()
        seen_tests = seen_tests or key == "tests"
    if not doc.at_end():
        raise doc.error("trailing data after the JSON document")
    if not seen_tests:
        raise InputError('not a pytest JSON report: no "tests" array', source=source)
    emitter.finish()
    yield


def _collector(  # noqa: PLR0917
    item: Any,
    emitter: Emitter,
    source: str,
    line: int,
    limits: Limits,
    src: Any,
) -> None:
    if not isinstance(item, dict):
        raise InputError('an item of "collectors" is not an object')
    nodeid = item.get("nodeid")
    outcome = item.get("outcome")
    if not isinstance(nodeid, str) or not isinstance(outcome, str):
        raise InputError('a collector lacks a string "nodeid" or "outcome"')
    if outcome in ("passed", "skipped"):
        return
    test_id = check_id(nodeid or SESSION_ID, limits.max_id_chars, source, line)
    longrepr = item.get("longrepr")
    message = clip(longrepr if isinstance(longrepr, str) else None, limits.max_message_chars)
    emitter.add(
        test_id,
        emitter.element(),
        line,
        _ERROR,
        f"collect {outcome[:40]}",
        src(line, nodeid),
        None,
        message,
    )
