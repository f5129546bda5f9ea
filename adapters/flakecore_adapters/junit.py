"""JUnit XML (Surefire, Gradle, pytest, Jest, mocha, CTest, Bazel, node, ...) to attempts.

Streaming: expat (see :mod:`flakecore_adapters._xml`) reports elements; each
completed ``<testcase>`` with result children is rebuilt as a small
``xml.etree`` element and read through junitparser's ``xunit2.TestCase``
(which models Surefire's ``flakyFailure``/``rerunFailure`` children).  A
childless ``<testcase>`` needs no interpretation and takes a fast path.

Counts come from elements only: ``tests=``/``failures=`` on suites are ignored.
"""

from __future__ import annotations

import operator
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from typing import Any

from junitparser import junitparser as junitparser_core
from junitparser import xunit2

from flakecore.codes import AttemptFlag, Outcome
from flakecore.errors import InputError, LimitError
from flakecore.evidence import Attempt, trusted_source
from flakecore_adapters._common import (
    NO_FLAGS,
    PSEUDO_HOOK,
    UNEXPECTED,
    check_id,
    clip,
    duration_from_text,
)
from flakecore_adapters._drive import attempts_from, lines_from
from flakecore_adapters._flags import Emitter
from flakecore_adapters._input import Reader
from flakecore_adapters._limits import Limits
from flakecore_adapters._render import HEAD, file_prefix, quote, source_json
from flakecore_adapters._xml import feed, hardened_parser

__all__ = ["iter_attempts", "iter_lines"]

#: junitparser is untyped; this is the one entry point we call.
_from_elem: Any = xunit2.TestCase.fromelem
_FinalResult: Any = junitparser_core.FinalResult
_InterimResult: Any = xunit2.InterimResult

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


#: A completed testcase: (attributes, result children or None, line, innermost suite).
_Done = tuple[dict[str, str], "list[list[Any]] | None", int, "str | None"]


def _handlers(
    parser: Any, source: str, limits: Limits
) -> tuple[Callable[[str, dict[str, str]], None], Callable[[str], None], list[_Done], Any]:
    """expat callbacks: collect completed testcases, refuse what would hide a result.

    Returns ``(start, end, done, depth)``: ``done`` fills with completed
    testcases in document order (the caller empties it), ``depth()`` is the
    current element depth.  Closures, not methods: these run once per element
    and cell variables are cheaper than attribute access.
    """
    max_depth = limits.max_depth
    keep = limits.max_message_chars * 4
    max_text = limits.max_text_bytes
    depth = 0
    outer: list[str] = []
    suites: list[str | None] = []
    suite: str | None = None  # innermost suite name (suites[-1])
    tc: dict[str, str] | None = None
    tc_depth = 0
    tc_line = 0
    results: list[list[Any]] | None = None
    cur: list[Any] | None = None
    cur_depth = 0
    virtual = False
    done: list[_Done] = []

    def fail(message: str) -> InputError:
        return InputError(
            message,
            source=source,
            line=parser.CurrentLineNumber,
            column=parser.CurrentColumnNumber + 1,
        )

    def open_result(name: str, attrs: dict[str, str], at: int) -> None:
        nonlocal results, cur, cur_depth
        cur = [name, attrs, [], 0]
        if results is None:
            results = [cur]
        else:
            results.append(cur)
        cur_depth = at
        parser.CharacterDataHandler = text

    def start(name: str, attrs: dict[str, str]) -> None:
        nonlocal depth, suite, tc, tc_depth, tc_line, results, virtual
        depth += 1
        if depth > max_depth:
            raise LimitError(
                f"XML nested deeper than {max_depth}", source=source, line=parser.CurrentLineNumber
            )
        if tc is None:
            parent = outer[-1] if outer else ""
            outer.append(name)
            if name == "testcase":
                if depth == 1:
                    raise fail("not a JUnit report: root element is <testcase>")
                if parent != "testsuite" and parent != "testsuites":  # noqa: PLR1714 - hot path
                    raise fail(f"<testcase> inside <{parent[:40]}>")
                tc = attrs
                tc_depth = depth
                tc_line = parser.CurrentLineNumber
                results = None
            elif name == "testsuite":
                if depth > 1 and parent not in ("testsuite", "testsuites"):
                    raise fail(f"<testsuite> inside <{parent[:40]}>")
                suite = attrs.get("name")
                suites.append(suite)
            elif name == "testsuites":
                if depth > 1 and parent != "testsuites":
                    raise fail(f"<testsuites> inside <{parent[:40]}>")
            elif depth == 1:
                raise fail(f"not a JUnit report: root element is <{name[:40]}>")
            elif name in ("failure", "error", "skipped") and parent in ("testsuite", "testsuites"):
                # A result outside any testcase (suite-level): a pseudo-test, never dropped.
                outer.pop()
                tc = {"name": "<suite>", "classname": suites[-1] or "" if suites else ""}
                tc_depth = depth - 1
                tc_line = parser.CurrentLineNumber
                results = None
                virtual = True
                open_result(name, attrs, depth)
            elif _guarded(name):
                raise fail(f"unexpected element <{name[:40]}> outside a testcase")
        elif depth == tc_depth + 1:
            if name in _RESULT_TAGS:
                open_result(name, attrs, depth)
            elif _guarded(name):
                raise fail(f"<{name[:40]}> in a testcase is not a JUnit result element")
        elif _guarded(name):
            raise fail(f"<{name[:40]}> nested below a testcase's child is refused")

    def end(name: str) -> None:
        nonlocal depth, suite, tc, cur, cur_depth, virtual
        at = depth
        depth = at - 1
        if tc is None:
            if outer.pop() == "testsuite":
                suites.pop()
                suite = suites[-1] if suites else None
            return
        if at == cur_depth:
            cur = None
            cur_depth = 0
            parser.CharacterDataHandler = None
            if not virtual:
                return
            virtual = False
        elif at != tc_depth:
            return
        else:
            outer.pop()
        done.append((tc, results, tc_line, suite))
        tc = None

    def text(data: str) -> None:
        if cur is None:
            return
        size = cur[3]
        cur[3] = size + len(data)
        if size <= keep:
            cur[2].append(data)
        elif cur[3] > max_text:
            raise LimitError(
                f"text of one <{cur[0]}> longer than {max_text} characters",
                source=source,
                line=parser.CurrentLineNumber,
            )

    def current_depth() -> int:
        return depth

    return start, end, done, current_depth


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
    # junitparser's result and interim_result each walk the case and wrap every
    # child again; one walk, split the same way (their isinstance filters), is
    # half the work and the same lists in the same order.
    entries: list[Any] = list(_from_elem(elem))
    finals = [e for e in entries if isinstance(e, _FinalResult)]
    interims = [e for e in entries if isinstance(e, _InterimResult)]
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
    return attempts_from(_parse, reader, limits=limits, only=only)


def iter_lines(
    reader: Reader, *, limits: Limits, only: str | None = None, counts: dict[str, int]
) -> Iterator[list[str]]:
    """The attempt records of a JUnit XML report as JSON lines, in batches."""
    return lines_from(_parse, reader, limits=limits, only=only, counts=counts)


_PASS_HEAD = ',"outcome":"pass","native":"passed","attempt":1,"duration_s":'
_PASS_MID = ',"message":null,"flags":[],"source":'
_CLASSNAME_KEY = ',"classname":'
_NAME_KEY = ',"name":'
_CACHE = 4096  # entries of each rendering cache (durations, classnames, suites)
_LINE = operator.itemgetter(2)  # the line of a completed testcase


def _classname_parts(classname: str | None) -> tuple[str, str, str]:
    """``(test id prefix, record start up to the quoted name, source members up to the name)``.

    ``quote()`` escapes character by character, so the quoted test id is the
    quoted ``classname::`` spliced to the quoted name.
    """
    stripped = classname.strip() if classname else ""
    prefix = stripped + "::" if stripped else ""
    head = HEAD + quote(prefix)[:-1] if prefix else HEAD + '"'
    members = "" if classname is None else _CLASSNAME_KEY + quote(classname)
    return prefix, head, members + _NAME_KEY


class _Cases:
    """Testcases to the emitter.

    Text output renders a childless testcase without ``status`` (a plain
    pass) itself, as attempt 1 without flags, and hands a run of them over as
    one block when :meth:`Emitter.claim` agrees that each is the first attempt
    of a new id; otherwise they go through :meth:`Emitter.add` like any other.
    """

    __slots__ = (
        "classes",
        "durations",
        "emitter",
        "ids",
        "limits",
        "prefix",
        "rendered",
        "source",
        "suites",
        "text",
    )

    def __init__(self, emitter: Emitter, source: str, limits: Limits, *, text: bool) -> None:
        self.emitter = emitter
        self.source = source
        self.limits = limits
        self.text = text
        self.prefix = file_prefix(source, "junit")
        # Plain passes waiting for their block: ids and rendered lines.
        self.ids: list[str] = []
        self.rendered: list[str] = []
        self.durations: dict[str | None, str] = {}
        self.suites: dict[str | None, str] = {}
        self.classes: dict[str | None, tuple[str, str, str]] = {}

    def src(self, line: int, classname: str | None, name: str, suite: str | None) -> Any:
        if self.text:
            return source_json(self.prefix, line, classname, name, suite)
        return trusted_source(self.source, "junit", line, classname, name, suite)

    def take(self, done: list[_Done]) -> None:
        """Every completed testcase of one chunk, in document order."""
        if self.text:
            self._take_text(done)
            return
        for attrs, results, line, suite in done:
            self._case(attrs, results, line, suite)

    def _take_text(self, done: list[_Done]) -> None:
        """:meth:`take` for text output: plain passes are rendered here, inline."""
        source = self.source
        max_id = self.limits.max_id_chars
        ids = self.ids
        rendered = self.rendered
        classes = self.classes
        durations = self.durations
        suites = self.suites
        line_key = _PASS_MID + self.prefix + ',"line":'
        first = 0  # position in ``done`` of the first waiting plain pass
        at = -1
        try:
            for item in done:
                at += 1
                attrs, results, line, suite = item
                if results is not None or "status" in attrs:
                    if ids:
                        self.flush(done[first:at])
                    self._case(attrs, results, line, suite)
                    continue
                # A plain pass: its id and its record, rendered now.
                try:
                    name = attrs["name"]
                except KeyError:
                    raise InputError(
                        "testcase without a name attribute", source=source, line=line
                    ) from None
                try:
                    classname: str | None = attrs["classname"]
                except KeyError:
                    classname = None
                parts = classes.get(classname)
                if parts is None:
                    parts = _classname_parts(classname)
                    if len(classes) > _CACHE:
                        classes.clear()
                    classes[classname] = parts
                test_id = parts[0] + name if parts[0] else name
                if len(test_id) > max_id or not test_id.isascii():
                    check_id(test_id, max_id, source, line)
                try:
                    time: str | None = attrs["time"]
                except KeyError:
                    time = None
                timed = durations.get(time)
                if timed is None:
                    seconds = duration_from_text(time)
                    value = "null" if seconds is None else float.__repr__(seconds)
                    timed = _PASS_HEAD + value + line_key
                    if len(durations) > _CACHE:
                        durations.clear()
                    durations[time] = timed
                tail = suites.get(suite)
                if tail is None:
                    tail = ("" if suite is None else ',"suite":' + quote(suite)) + "}}\n"
                    if len(suites) > _CACHE:
                        suites.clear()
                    suites[suite] = tail
                if not ids:
                    first = at
                ids.append(test_id)
                quoted = quote(name)
                rendered.append(f"{parts[1]}{quoted[1:]}{timed}{line}{parts[2]}{quoted}{tail}")
        except InputError:
            if ids:  # the attempts before the refusal come first, as in the object path
                self.flush(done[first:at])
            raise
        if ids:
            self.flush(done[first:])

    def _case(
        self, attrs: dict[str, str], results: list[list[Any]] | None, line: int, suite: str | None
    ) -> None:
        """Any testcase, through :meth:`Emitter.add`."""
        source = self.source
        limits = self.limits
        emitter = self.emitter
        name = attrs.get("name")
        if name is None:
            raise InputError("testcase without a name attribute", source=source, line=line)
        classname = attrs.get("classname")
        stripped = classname.strip() if classname else ""
        test_id = f"{stripped}::{name}" if stripped else name
        max_id = limits.max_id_chars
        if len(test_id) > max_id or not test_id.isascii():
            check_id(test_id, max_id, source, line)
        if not results:
            status = attrs.get("status")
            if status is None or status.lower() in _PASS_STATUS:
                outcome, native = _PASS, "passed"
            elif status.lower() in _SKIP_STATUS:
                outcome, native = _SKIP, status[:40]
            else:  # an unknown status is not a pass
                outcome, native = _ERROR, status[:40]
            emitter.add(
                test_id,
                emitter.element(),
                line,
                outcome,
                native,
                self.src(line, classname, name, suite),
                duration_from_text(attrs.get("time")),
            )
            return
        try:
            attempts = _detailed(attrs, results, name, stripped, limits)
        except InputError as exc:
            raise InputError(exc.message, source=source, line=line) from None
        serial = emitter.element()
        src = self.src(line, classname, name, suite)
        for outcome, native, message, duration, flags in attempts:
            emitter.add(test_id, serial, line, outcome, native, src, duration, message, flags)

    def flush(self, items: list[_Done]) -> None:
        """Hand the waiting plain passes (``items``) on: as one block, or one by one."""
        ids = self.ids[:]
        lines = self.rendered[:]
        self.ids.clear()  # in place: take() holds the list
        self.rendered.clear()
        emitter = self.emitter
        first = emitter.claim(ids)
        if first is not None:
            # Keep only the line numbers (for errors): no containers held in the window.
            numbers = list(map(_LINE, items))
            emitter.push_block(ids, lines, numbers, first, {"pass": len(ids)})
            return
        for attrs, results, line, suite in items:
            self._case(attrs, results, line, suite)


def _parse(reader: Reader, limits: Limits, emitter: Emitter, *, text: bool) -> Iterator[None]:
    """Feed every attempt to ``emitter``; yields whenever records may be ready."""
    source = reader.source
    parser = hardened_parser(source)
    start, end, done, depth = _handlers(parser, source, limits)
    parser.StartElementHandler = start
    parser.EndElementHandler = end
    cases = _Cases(emitter, source, limits, text=text)
    for _ in feed(parser, reader, limits):
        if done:
            batch = done[:]
            done.clear()
            cases.take(batch)
        emitter.ready()
        yield
    if depth() != 0:  # pragma: no cover - expat reports truncation itself
        raise InputError("truncated XML", source=source)
    emitter.finish()
    yield
