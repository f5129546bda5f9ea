"""JUnit XML (Surefire, Gradle, pytest, Jest, mocha, CTest, Bazel, node, ...) to attempts.

Streaming: expat (see :mod:`flakecore_adapters._xml`) reports elements; each
completed ``<testcase>`` with result children is rebuilt as a small
``xml.etree`` element and read through junitparser's ``xunit2.TestCase``
(which models Surefire's ``flakyFailure``/``rerunFailure`` children).  A
childless ``<testcase>`` needs no interpretation and takes a fast path.

Counts come from elements only: ``tests=``/``failures=`` on suites are ignored.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from typing import Any

from junitparser import junitparser as junitparser_core
from junitparser import xunit2

from flakecore.codes import AttemptFlag, Outcome
from flakecore.errors import InputError, LimitError
from flakecore.evidence import Attempt, duration_or_none, trusted_source
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
from flakecore_adapters._pytest_ids import PYTEST_SUITE, alias, node_id
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
#: one of these (``<Failure>``, ``<x:failure>``, ``<TestCase>``) is refused, and
#: so is one of these with a default namespace (``<failure xmlns="urn:x">``).
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


#: A completed testcase: (its position among the plain passes, attributes,
#: result children or None, line, innermost suite).
_Done = tuple[int, dict[str, str], "list[list[Any]] | None", int, "str | None"]


class _Plain:
    """Plain passes rendered by the ``end`` callback (text output): ids, records, lines."""

    __slots__ = ("ids", "lines", "records")

    def __init__(self) -> None:
        self.ids: list[str] = []
        self.records: list[str] = []
        self.lines: list[int] = []


def _handlers(
    parser: Any, source: str, limits: Limits, plain: _Plain | None
) -> tuple[Callable[[str, dict[str, str]], None], Callable[[str], None], list[_Done], Any]:
    """expat callbacks: collect completed testcases, refuse what would hide a result.

    Returns ``(start, end, done, depth)``: ``done`` fills with completed
    testcases in document order (the caller empties it), ``depth()`` is the
    current element depth.  Closures, not methods: these run once per element
    and cell variables are cheaper than attribute access.

    With ``plain`` (text output), a childless testcase without ``status``
    with a name and a classname (a plain pass) is rendered right here, as
    attempt 1 without flags, into ``plain``; ``done`` then holds the other
    testcases, each with the number of plain passes before it.  Anything
    unusual (no name or classname, blanks around the classname, a long or
    non-ASCII id) leaves a testcase to ``done``, so refusals come in the
    same order as on the object path.
    """
    max_depth = limits.max_depth
    rendering = plain is not None
    ids = plain.ids if plain is not None else []
    records = plain.records if plain is not None else []
    lines = plain.lines if plain is not None else []
    max_id = limits.max_id_chars
    durations: dict[str | None, str] = {}
    # Classnames without blanks around them the lane saw -> (room left for the name, id
    # prefix, the record between line and name) when printable ASCII without '"' and
    # '\\', else _UNKNOWN_CLASS (no room).
    plain_classes: dict[str | None, tuple[int, str, str]] = {}
    line_key = _PASS_MID + file_prefix(source, "junit") + ',"line":'
    tail = _suite_tail(None)  # the end of a record: the innermost suite's name, if any
    keep = limits.max_message_chars * 4
    max_text = limits.max_text_bytes
    depth = 0
    outer: list[str] = []
    suites: list[str | None] = []
    suite: str | None = None  # innermost suite name (suites[-1])
    tc: dict[str, str] | None = None
    tc_depth = 0
    tc_line = 0
    case_at = 0  # the depth a testcase may start at (see _case_depth)
    plain_depth = 0  # tc_depth while the open testcase may be a plain pass (text output), else 0
    lane = rendering  # a plain pass may take the lane: text output, not in pytest's suite
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
        nonlocal results, cur, cur_depth, plain_depth
        plain_depth = 0
        cur = [name, attrs, [], 0]
        if results is None:
            results = [cur]
        else:
            results.append(cur)
        cur_depth = at
        parser.CharacterDataHandler = text

    def start(name: str, attrs: dict[str, str]) -> None:
        # A testcase where one may stand only: every other start is ``begin``'s (fewer cells
        # per call).  At ``case_at`` (a suite's child, within the depth limit) no testcase is
        # open, so without a namespace there is nothing to refuse; ``begin`` refuses any other.
        nonlocal depth, tc, tc_depth, tc_line, results, plain_depth
        depth += 1
        if depth == case_at and name == "testcase" and ("xmlns" not in attrs or not attrs["xmlns"]):
            tc = attrs
            tc_depth = depth
            tc_line = parser.CurrentLineNumber
            results = None
            plain_depth = depth if lane and "status" not in attrs else 0
            return
        begin(name, attrs)

    def too_deep() -> LimitError:
        return LimitError(
            f"XML nested deeper than {max_depth}", source=source, line=parser.CurrentLineNumber
        )

    def begin(name: str, attrs: dict[str, str]) -> None:
        nonlocal suite, tc, tc_depth, tc_line, results, virtual, tail, lane, case_at
        if depth > max_depth:
            raise too_deep()
        if "xmlns" in attrs and attrs["xmlns"] and _guarded(name):
            # In a namespace, <failure> is another vocabulary's element, not JUnit's.
            raise fail(
                f"<{name[:40]}> in the XML namespace {attrs['xmlns'][:80]!r} is not "
                "a JUnit element (namespaced reports are refused)"
            )
        if tc is None and name == "testcase":  # not on ``outer``: nothing in a testcase reads it
            if depth == 1:
                raise fail("not a JUnit report: root element is <testcase>")
            raise fail(f"<testcase> inside <{outer[-1][:40]}>")
        if tc is None:
            parent = outer[-1] if outer else ""
            outer.append(name)
            if name == "testsuite":
                if depth > 1 and parent not in ("testsuite", "testsuites"):
                    raise fail(f"<testsuite> inside <{parent[:40]}>")
                suite = attrs.get("name")
                suites.append(suite)
                tail = _suite_tail(suite)
                lane = rendering and suite != PYTEST_SUITE
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
            case_at = _case_depth(outer, max_depth)
        elif depth == tc_depth + 1:
            if name in _RESULT_TAGS:
                open_result(name, attrs, depth)
            elif _guarded(name):
                raise fail(f"<{name[:40]}> in a testcase is not a JUnit result element")
        elif _guarded(name):
            raise fail(f"<{name[:40]}> nested below a testcase's child is refused")

    def end(name: str) -> None:
        # The plain pass only: every other end is ``rest``'s (fewer cells to copy per call).
        nonlocal depth, tc, plain_depth
        at = depth
        depth = at - 1
        if at == plain_depth:  # the end of a testcase without status or result children
            plain_depth = 0
            # The lane in ``rest``, for a classname it already took: only the name is checked.
            try:  # subscripts: cheaper than get(); a missing attribute or an unseen class or
                # duration takes the lane in rest (which keeps the class and the duration)
                case = tc["name"]  # type: ignore[index] # plain_depth: a testcase is open
                known = plain_classes[tc["classname"]]  # type: ignore[index]
                timed = durations[tc.get("time")]  # type: ignore[union-attr]
            except KeyError:
                case = ""
                known = _UNKNOWN_CLASS
            if (
                len(case) <= known[0]
                and case.isascii()
                and case.isprintable()
                and '"' not in case
                and "\\" not in case
            ):
                test_id = known[1] + case
                records.append(f"{_ID_HEAD}{test_id}{timed}{tc_line}{known[2]}{case}{tail}")
                ids.append(test_id)
                lines.append(tc_line)
                tc = None
                return
        rest(at)

    def rest(at: int) -> None:
        nonlocal suite, tc, cur, cur_depth, virtual, tail, lane, case_at
        if tc is None:
            if outer.pop() == "testsuite":
                suites.pop()
                suite = suites[-1] if suites else None
                tail = _suite_tail(suite)
                lane = rendering and suite != PYTEST_SUITE
            case_at = _case_depth(outer, max_depth)
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
        elif rendering and results is None and "status" not in tc:
            case = tc.get("name")
            classname = tc.get("classname")
            # The usual classname (no blanks around it); the id is written as
            # it is when it needs no escaping, else spliced from the quoted parts
            # (pytest's xunit1 testcases: the node id, quoted whole).
            if case is not None and classname and classname.strip() == classname:
                if classname not in plain_classes:
                    if len(plain_classes) > _CACHE:
                        plain_classes.clear()
                    plain_classes[classname] = (
                        (
                            max_id - len(classname) - 2,
                            classname + "::",
                            f'{_CLASSNAME_KEY}"{classname}"{_NAME_KEY}"',
                        )
                        if classname.isascii()
                        and classname.isprintable()
                        and '"' not in classname
                        and "\\" not in classname
                        else _UNKNOWN_CLASS
                    )
                node = node_id(tc, suite) if suite == PYTEST_SUITE else None
                test_id = node or f"{classname}::{case}"
                # Printable ASCII: no control character, nothing to check.
                if len(test_id) <= max_id and test_id.isascii() and test_id.isprintable():
                    time = tc.get("time")
                    timed = durations.get(time)
                    if timed is None:
                        timed = _timed(time, line_key, durations)
                    if '"' not in test_id and "\\" not in test_id:
                        # Printable ASCII without '"' and '\\' is its own JSON text.
                        records.append(
                            f"{_ID_HEAD}{test_id}{timed}{tc_line}"
                            f'{_CLASSNAME_KEY}"{classname}"{_NAME_KEY}"{case}{tail}'
                        )
                    else:
                        # timed and tail hold the closing quotes of the id and the name
                        quoted = quote(case)[:-1]
                        named = quote(classname)
                        head = quote(node)[:-1] if node else f"{named[:-1]}::{quoted[1:]}"
                        records.append(
                            f"{HEAD}{head}{timed}{tc_line}"
                            f"{_CLASSNAME_KEY}{named}{_NAME_KEY}{quoted}{tail}"
                        )
                    ids.append(test_id)
                    lines.append(tc_line)
                    tc = None
                    return
        done.append((len(ids), tc, results, tc_line, suite))
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


_FINAL_TAGS = frozenset({"failure", "error", "skipped"})


class _Final:
    """A final result child as :func:`_final` reads junitparser's: tag, type, message, text."""

    __slots__ = ("_tag", "message", "text", "type")

    def __init__(self, tag: str, attrs: dict[str, str], text: str | None) -> None:
        self._tag = tag
        self.type = attrs.get("type")
        self.message = attrs.get("message")
        self.text = text


def _detailed(
    attrs: dict[str, str], results: list[list[Any]], name: str, classname: str, limits: Limits
) -> list[tuple[Outcome, str, str | None, float | None, frozenset[AttemptFlag]]]:
    """Attempts of a testcase with result children, read through junitparser.

    Final results alone (``failure``, ``error``, ``skipped``: no interim
    ``flaky*``/``rerun*``) need none of junitparser's modelling and are read
    directly, with the same attributes (``tests/adapters/test_junit.py``
    holds both ways to the same attempts).
    """
    if all(result[0] in _FINAL_TAGS for result in results):
        finals = [_Final(tag, rattrs, "".join(parts) or None) for tag, rattrs, parts, _ in results]
        outcome, native, message, flags = _final(finals, name, classname, limits.max_message_chars)
        return [(outcome, native, message, duration_from_text(attrs.get("time")), flags)]
    return _through_junitparser(attrs, results, name, classname, limits)


def _through_junitparser(
    attrs: dict[str, str], results: list[list[Any]], name: str, classname: str, limits: Limits
) -> list[tuple[Outcome, str, str | None, float | None, frozenset[AttemptFlag]]]:
    """:func:`_detailed` for any result children: junitparser's ``xunit2.TestCase``."""
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
    return attempts_from(_parse, reader, limits=limits, only=only, alias=alias(only))


def iter_lines(
    reader: Reader, *, limits: Limits, only: str | None = None, counts: dict[str, int]
) -> Iterator[list[str]]:
    """The attempt records of a JUnit XML report as JSON lines, in batches."""
    return lines_from(_parse, reader, limits=limits, only=only, counts=counts, alias=alias(only))


_ID_HEAD = HEAD + '"'  # a plain pass's id is its own JSON text
_PASS_HEAD = ',"outcome":"pass","native":"passed","attempt":1,"duration_s":'
_PASS_MID = ',"message":null,"flags":[],"source":'
_CLASSNAME_KEY = ',"classname":'
_NAME_KEY = ',"name":'
_CACHE = 4096  # durations (and classnames) kept rendered
_UNKNOWN_CLASS = (-1, "", "")  # a classname the plain-pass lane cannot take at once


def _timed(time: str | None, line_key: str, durations: dict[str | None, str]) -> str:
    """A plain pass's record from the id's closing quote to its line, kept in ``durations``.

    The quotes around the id and the name's closing quote are in the cached
    pieces (``_ID_HEAD``, this, the suite's tail): fewer pieces per record.
    """
    seconds = duration_or_none(duration_from_text(time))  # as render() keeps it
    value = "null" if seconds is None else float.__repr__(seconds)
    timed = '"' + _PASS_HEAD + value + line_key
    if len(durations) > _CACHE:
        durations.clear()
    durations[time] = timed
    return timed


def _case_depth(outer: list[str], max_depth: int) -> int:
    """Where a testcase may start: a suite's child within the depth limit (0: nowhere).

    ``outer`` holds every open element while no testcase is open.
    """
    at = len(outer) + 1
    return at if outer and outer[-1] in ("testsuite", "testsuites") and at <= max_depth else 0


def _suite_tail(suite: str | None) -> str:
    """The end of a plain pass's record: the name's closing quote, the suite's name, if any,
    and the closing braces."""
    return '"' + ("" if suite is None else ',"suite":' + quote(suite)) + "}}\n"


class _Cases:
    """Testcases to the emitter.

    Text output: the plain passes the ``end`` callback rendered go over as
    one block per run between other testcases, when :meth:`Emitter.claim`
    agrees that each is the first attempt of a new id; otherwise (and for
    every other testcase) they go through :meth:`Emitter.add`.
    """

    __slots__ = ("emitter", "limits", "plain", "prefix", "source", "text")

    def __init__(self, emitter: Emitter, source: str, limits: Limits, plain: _Plain | None) -> None:
        self.emitter = emitter
        self.source = source
        self.limits = limits
        self.text = plain is not None
        self.plain = plain
        self.prefix = file_prefix(source, "junit")

    def src(self, line: int, classname: str | None, name: str, suite: str | None) -> Any:
        if self.text:
            return source_json(self.prefix, line, classname, name, suite)
        return trusted_source(self.source, "junit", line, classname, name, suite)

    def take(self, done: list[_Done]) -> None:
        """Every completed testcase of one chunk, in document order."""
        plain = self.plain
        if plain is None:
            for _, attrs, results, line, suite in done:
                self._case(attrs, results, line, suite)
            return
        taken = 0
        for before, attrs, results, line, suite in done:
            if before > taken:
                self._block(plain, taken, before)
                taken = before
            self._case(attrs, results, line, suite)
        if len(plain.ids) > taken:
            self._block(plain, taken, len(plain.ids))
        plain.ids.clear()
        plain.records.clear()
        plain.lines.clear()

    def _block(self, plain: _Plain, start: int, stop: int) -> None:
        """Plain passes ``start:stop``: as one block, or one by one."""
        emitter = self.emitter
        ids = plain.ids[start:stop]
        first = emitter.claim(ids)
        records = plain.records[start:stop]
        lines = plain.lines[start:stop]
        if first is not None:
            emitter.push_block(ids, records, lines, first, {"pass": len(ids)})
            return
        for test_id, record, line in zip(ids, records, lines, strict=True):
            # The record holds the source object and the duration as rendered.
            src = record[record.index(',"source":') + 10 : -2]
            duration = json.loads(record)["duration_s"]
            emitter.add(test_id, emitter.element(), line, _PASS, "passed", src, duration)

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
        # A blank classname is the enclosing suite's: three tests named "A" in
        # three suites are three tests.
        part = stripped or (suite.strip() if suite else "")
        test_id = node_id(attrs, suite) or (f"{part}::{name}" if part else name)
        test_id = check_id(test_id, limits.max_id_chars, source, line)
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


def _parse(reader: Reader, limits: Limits, emitter: Emitter, *, text: bool) -> Iterator[None]:
    """Feed every attempt to ``emitter``; yields whenever records may be ready."""
    source = reader.source
    parser = hardened_parser(source)
    plain = _Plain() if text else None
    start, end, done, depth = _handlers(parser, source, limits, plain)
    parser.StartElementHandler = start
    parser.EndElementHandler = end
    cases = _Cases(emitter, source, limits, plain)
    for _ in feed(parser, reader, limits):
        if done or (plain is not None and plain.ids):
            batch = done[:]
            done.clear()
            cases.take(batch)
        emitter.ready()
        yield
    if depth() != 0:  # pragma: no cover - expat reports truncation itself
        raise InputError("truncated XML", source=source)
    emitter.finish()
    yield
