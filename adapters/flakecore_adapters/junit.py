"""JUnit XML (Surefire, Gradle, pytest, Jest, mocha, CTest, Bazel, node, ...) to attempts.

Streaming: expat (see :mod:`flakecore_adapters._xml`) reports elements; each
completed ``<testcase>`` with result children is rebuilt as a small
``xml.etree`` element and read through junitparser's ``xunit2.TestCase``
(which models Surefire's ``flakyFailure``/``rerunFailure`` children).  A
childless ``<testcase>`` needs no interpretation and takes a fast path.

Counts come from elements only: ``tests=``/``failures=`` on suites are ignored.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from typing import Any

from junitparser import xunit2

from flakecore.codes import AttemptFlag, Outcome
from flakecore.errors import InputError, LimitError
from flakecore.evidence import Attempt, Source
from flakecore_adapters._common import (
    NO_FLAGS,
    PSEUDO_HOOK,
    UNEXPECTED,
    check_id,
    clip,
    duration_from_text,
)
from flakecore_adapters._flags import Emitter
from flakecore_adapters._input import Reader
from flakecore_adapters._limits import Limits
from flakecore_adapters._xml import feed, hardened_parser

__all__ = ["iter_attempts"]

#: junitparser is untyped; this is the one entry point we call.
_from_elem: Any = xunit2.TestCase.fromelem

_PASS, _FAIL, _ERROR, _SKIP, _TIMEOUT = (
    Outcome.PASS,
    Outcome.FAIL,
    Outcome.ERROR,
    Outcome.SKIP,
    Outcome.TIMEOUT,
)
_RESULT_TAGS = frozenset(
    {"failure", "error", "skipped", "flakyFailure", "flakyError", "rerunFailure", "rerunError"}
)
#: Lower-cased local names that must never be silently ignored: a variant of
#: one of these (``<Failure>``, ``<x:failure>``, ``<TestCase>``) is refused.
_GUARDED = frozenset(
    {
        "failure",
        "error",
        "skipped",
        "flakyfailure",
        "flakyerror",
        "rerunfailure",
        "rerunerror",
        "testcase",
        "testsuite",
        "testsuites",
    }
)
_PASS_STATUS = frozenset({"run", "passed", "pass", "success", "successful", "ok", "completed"})
_SKIP_STATUS = frozenset({"notrun", "disabled", "skipped", "skip", "ignored", "pending"})
_JEST_PSEUDO_CLASS = ("Test execution failure:", "Test suite failed to run")
#: node's test runner puts its failureType into ``type``.
_NODE_ERROR_TYPES = frozenset({"hookFailed", "cancelledByParent"})
_NODE_EXIT = re.compile(r"\bexitCode: [1-9][0-9]*\b")


def _guarded(name: str) -> bool:
    return name.lower().rpartition(":")[2] in _GUARDED


class _Handler:
    """expat callbacks: collect completed testcases, refuse what would hide a result."""

    __slots__ = (
        "cur",
        "cur_depth",
        "depth",
        "done",
        "keep",
        "limits",
        "outer",
        "parser",
        "results",
        "source",
        "suites",
        "tc",
        "tc_depth",
        "tc_line",
        "virtual",
    )

    def __init__(self, parser: Any, source: str, limits: Limits) -> None:
        self.parser = parser
        self.source = source
        self.limits = limits
        self.keep = limits.max_message_chars * 4
        self.depth = 0
        self.outer: list[str] = []
        self.suites: list[str | None] = []
        self.tc: dict[str, str] | None = None
        self.tc_depth = 0
        self.tc_line = 0
        self.results: list[list[Any]] = []
        self.cur: list[Any] | None = None
        self.cur_depth = 0
        self.virtual = False
        self.done: list[tuple[dict[str, str], list[list[Any]], int, str | None]] = []

    def _fail(self, message: str) -> InputError:
        return InputError(
            message,
            source=self.source,
            line=self.parser.CurrentLineNumber,
            column=self.parser.CurrentColumnNumber + 1,
        )

    def start(self, name: str, attrs: dict[str, str]) -> None:
        depth = self.depth + 1
        self.depth = depth
        if depth > self.limits.max_depth:
            raise LimitError(
                f"XML nested deeper than {self.limits.max_depth}",
                source=self.source,
                line=self.parser.CurrentLineNumber,
            )
        if self.tc is None:
            parent = self.outer[-1] if self.outer else ""
            self.outer.append(name)
            if name == "testcase":
                if depth == 1:
                    raise self._fail("not a JUnit report: root element is <testcase>")
                if parent not in ("testsuite", "testsuites"):
                    raise self._fail(f"<testcase> inside <{parent[:40]}>")
                self.tc = attrs
                self.tc_depth = depth
                self.tc_line = self.parser.CurrentLineNumber
                self.results = []
            elif name == "testsuite":
                if depth > 1 and parent not in ("testsuite", "testsuites"):
                    raise self._fail(f"<testsuite> inside <{parent[:40]}>")
                self.suites.append(attrs.get("name"))
            elif name == "testsuites":
                if depth > 1 and parent != "testsuites":
                    raise self._fail(f"<testsuites> inside <{parent[:40]}>")
            elif depth == 1:
                raise self._fail(f"not a JUnit report: root element is <{name[:40]}>")
            elif name in ("failure", "error", "skipped") and parent in ("testsuite", "testsuites"):
                # A result outside any testcase (suite-level): a pseudo-test, never dropped.
                self.outer.pop()
                self.tc = {
                    "name": "<suite>",
                    "classname": self.suites[-1] or "" if self.suites else "",
                }
                self.tc_depth = depth - 1
                self.tc_line = self.parser.CurrentLineNumber
                self.results = []
                self.virtual = True
                self._open_result(name, attrs, depth)
            elif _guarded(name):
                raise self._fail(f"unexpected element <{name[:40]}> outside a testcase")
        elif depth == self.tc_depth + 1:
            if name in _RESULT_TAGS:
                self._open_result(name, attrs, depth)
            elif _guarded(name):
                raise self._fail(f"<{name[:40]}> in a testcase is not a JUnit result element")
        elif _guarded(name):
            raise self._fail(f"<{name[:40]}> nested below a testcase's child is refused")

    def _open_result(self, name: str, attrs: dict[str, str], depth: int) -> None:
        cur: list[Any] = [name, attrs, [], 0]
        self.results.append(cur)
        self.cur = cur
        self.cur_depth = depth
        self.parser.CharacterDataHandler = self.text

    def end(self, name: str) -> None:
        depth = self.depth
        self.depth = depth - 1
        if self.tc is None:
            if self.outer.pop() == "testsuite":
                self.suites.pop()
            return
        if depth == self.cur_depth:
            self.cur = None
            self.cur_depth = 0
            self.parser.CharacterDataHandler = None
            if not self.virtual:
                return
            self.virtual = False
        elif depth != self.tc_depth:
            return
        else:
            self.outer.pop()
        self.done.append(
            (self.tc, self.results, self.tc_line, self.suites[-1] if self.suites else None)
        )
        self.tc = None

    def text(self, data: str) -> None:
        cur = self.cur
        if cur is None:
            return
        size = cur[3]
        cur[3] = size + len(data)
        if size <= self.keep:
            cur[2].append(data)
        elif cur[3] > self.limits.max_text_bytes:
            raise LimitError(
                f"text of one <{cur[0]}> longer than {self.limits.max_text_bytes} characters",
                source=self.source,
                line=self.parser.CurrentLineNumber,
            )


def _message(result: Any, limit: int) -> str | None:
    text = result.message
    if not text:
        body = result.text
        text = body.strip() if body else None
    return clip(text, limit) if text else None


def _final(
    finals: list[Any], name: str, classname: str, limit: int
) -> tuple[Outcome, str, str | None, frozenset[AttemptFlag]]:
    """Outcome of the testcase's own (final) result elements."""
    if not finals:
        return _PASS, "passed", None, NO_FLAGS
    tags = [r._tag for r in finals]
    kinds = set(tags)
    message = next((m for m in (_message(r, limit) for r in finals) if m), None)
    if kinds == {"skipped"}:
        if any(r.type == "todo" for r in finals):  # node: a todo that passed
            return _PASS, "todo", message, UNEXPECTED
        return _SKIP, "skipped", message, NO_FLAGS
    if kinds == {"failure"}:
        types = {r.type for r in finals}
        if "testTimeoutFailure" in types:
            return _TIMEOUT, "failure", message, NO_FLAGS
        if (
            types & _NODE_ERROR_TYPES
            or PSEUDO_HOOK.match(name)
            or classname.startswith(_JEST_PSEUDO_CLASS)
            or ("testCodeFailure" in types and any(_NODE_EXIT.search(r.text or "") for r in finals))
        ):
            return _ERROR, "failure", message, NO_FLAGS
        return _FAIL, "failure", message, NO_FLAGS
    if kinds == {"error"}:
        flags = UNEXPECTED if any(r.type == "UnexpectedSuccess" for r in finals) else NO_FLAGS
        return _ERROR, "error", message, flags
    native = "+".join(tags)
    if "skipped" in kinds and any(r.type == "todo" for r in finals if r._tag == "skipped"):
        return _SKIP, native, message, NO_FLAGS  # node: a failing todo is an expected failure
    # Contradictory results (failure and skipped, failure and error): never a pass or a miss.
    return _ERROR, native, message, NO_FLAGS


_INTERIM_OUTCOME = {
    "flakyFailure": _FAIL,
    "flakyError": _ERROR,
    "rerunFailure": _FAIL,
    "rerunError": _ERROR,
}


def _detailed(
    attrs: dict[str, str], results: list[list[Any]], name: str, classname: str, limits: Limits
) -> list[tuple[Outcome, str, str | None, float | None, frozenset[AttemptFlag]]]:
    """Attempts of a testcase with result children, read through junitparser."""
    elem = ET.Element("testcase", attrs)
    for tag, rattrs, parts, _size in results:
        sub = ET.SubElement(elem, tag, rattrs)
        sub.text = "".join(parts) or None
    case = _from_elem(elem)
    finals = case.result
    interims = case.interim_result
    limit = limits.max_message_chars
    outcome, native, message, flags = _final(finals, name, classname, limit)
    own = (outcome, native, message, duration_from_text(attrs.get("time")), flags)
    if not interims:
        return [own]
    extra = [
        (
            _INTERIM_OUTCOME[r._tag],
            r._tag,
            _message(r, limit),
            duration_from_text(r._elem.get("time")),
            NO_FLAGS,
        )
        for r in interims
    ]
    flaky = any(isinstance(r, (xunit2.FlakyFailure, xunit2.FlakyError)) for r in interims)
    rerun = any(isinstance(r, (xunit2.RerunFailure, xunit2.RerunError)) for r in interims)
    if flaky and rerun:
        raise InputError("testcase mixes flaky* and rerun* results", line=None)
    if rerun:
        if outcome not in (_FAIL, _ERROR, _TIMEOUT):
            raise InputError("rerunFailure/rerunError without a failing result", line=None)
        return [own, *extra]  # Surefire: the <failure>/<error> is the first run
    return [*extra, own]  # Surefire: flaky runs first, then the final (passing) run


def iter_attempts(reader: Reader, *, limits: Limits, only: str | None = None) -> Iterator[Attempt]:
    """Attempts of a JUnit XML report, in document order."""
    source = reader.source
    parser = hardened_parser(source)
    handler = _Handler(parser, source, limits)
    parser.StartElementHandler = handler.start
    parser.EndElementHandler = handler.end
    emitter = Emitter(source=source, window=limits.reorder_window, only=only)
    add = emitter.add
    max_id = limits.max_id_chars
    for _ in feed(parser, reader, limits):
        if not handler.done:
            continue
        done = handler.done
        handler.done = []
        for attrs, results, line, suite in done:
            name = attrs.get("name")
            if name is None:
                raise InputError("testcase without a name attribute", source=source, line=line)
            classname = attrs.get("classname")
            stripped = classname.strip() if classname else ""
            test_id = f"{stripped}::{name}" if stripped else name
            if len(test_id) > max_id or not test_id.isascii():
                check_id(test_id, max_id, source, line)
            src = Source(
                file=source, format="junit", line=line, classname=classname, name=name, suite=suite
            )
            serial = emitter.element()
            if not results:
                status = attrs.get("status")
                if status is None or status.lower() in _PASS_STATUS:
                    outcome, native = _PASS, "passed"
                elif status.lower() in _SKIP_STATUS:
                    outcome, native = _SKIP, status[:40]
                else:  # an unknown status is not a pass
                    outcome, native = _ERROR, status[:40]
                out = add(
                    test_id, serial, outcome, native, src, duration_from_text(attrs.get("time"))
                )
                if out is not None:
                    yield out
                continue
            try:
                attempts = _detailed(attrs, results, name, stripped, limits)
            except InputError as exc:
                raise InputError(exc.message, source=source, line=line) from None
            for outcome, native, message, duration, flags in attempts:
                out = add(test_id, serial, outcome, native, src, duration, message, flags)
                if out is not None:
                    yield out
    if handler.depth != 0:  # pragma: no cover - expat reports truncation itself
        raise InputError("truncated XML", source=source)
    yield from emitter.flush()
