"""TAP 13 and 14 to attempts, with a line-streaming parser of our own.

Why not tap.py: it is tolerant by design (unknown lines become "unknown",
a short run is still a run).  Here a *stream-level defect* -- a plan that
is missing, unfulfilled, out of sequence or contradicted, ``Bail out!``, a
last line without its newline (a cut report), a YAML block that is never
closed -- is listed by an ``error`` pseudo-attempt ``<plan>`` (``"outer >
<plan>"`` inside a subtest) and puts ``stream-defect`` on *every* attempt of
the report (:meth:`Emitter.taint`): a pass read from a cut or contradicted
stream is not evidence.  After ``Bail out!`` every later attempt also
carries ``bailed-out``.  YAML diagnostic blocks are kept as message
text and never parsed as YAML (no aliases, no anchors, no tags); only a few
top-level scalar keys are matched with a line pattern: node's
``failureType`` and ``exitCode``, bats' ``timeout_sec``, ``duration_ms``.

Subtests: TAP 14's (``# Subtest: name``, the child indented by 4 spaces,
then the parent's test point) and the brace form of node-tap's buffered
subtests and Perl's Test2 (the parent's test point first, ending in ``{``,
the child indented by 4 spaces, then ``}`` at the parent's indent).

Test ids: the subtest path -- enclosing subtest names (``# Subtest: name``,
else the parent test point's description) and the description, joined with
``" > "``; a point without description is ``#<number>``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from flakecore.codes import AttemptFlag, Outcome
from flakecore.errors import InputError, LimitError
from flakecore.evidence import Attempt, trusted_attempt, trusted_source
from flakecore_adapters._common import (
    BAILED,
    NO_FLAGS,
    PLAN_ID,
    PSEUDO_HOOK,
    UNEXPECTED,
    check_id,
    clip,
    duration_from_text,
)
from flakecore_adapters._flags import Emitter
from flakecore_adapters._input import CHUNK, Reader, check_prefix
from flakecore_adapters._limits import Limits
from flakecore_adapters._render import HEAD, file_prefix, render, source_json

__all__ = ["iter_attempts", "iter_lines"]

_PASS, _FAIL, _ERROR, _SKIP, _TIMEOUT = (
    Outcome.PASS,
    Outcome.FAIL,
    Outcome.ERROR,
    Outcome.SKIP,
    Outcome.TIMEOUT,
)
_POINT = re.compile(r"(not )?ok(?![^ \t#])(?:[ \t]+([0-9]+)(?![^ \t#]))?(.*)", re.DOTALL)
_PLAN = re.compile(r"1\.\.([0-9]+)[ \t]*(?:#(.*))?", re.DOTALL)
_VERSION = re.compile(r"TAP version ([0-9]+)[ \t]*", re.IGNORECASE)
_SUBTEST = re.compile(r"#[ \t]*Subtest(?::[ \t]*(.*))?", re.DOTALL)
_BAIL = re.compile(r"Bail out!(.*)", re.DOTALL | re.IGNORECASE)
_PRAGMA = re.compile(r"pragma[ \t]+([+-])([A-Za-z0-9_-]+)[ \t]*")
#: The TAP 14 directives, by their stem (tap-parser: ``# SKIPPED``, ``# todo:``), any case.
_DIRECTIVE = re.compile(r"[ \t]*(skip|todo)\S*(?:[ \t]+(.*))?", re.DOTALL | re.IGNORECASE)
#: node-tap's (tap-parser's) ``# time=12.5ms``: not part of the description.
_TIME = re.compile(r"[ \t]*time=((?:[1-9][0-9]*|0)(?:\.[0-9]+)?)(ms|s)[ \t]*", re.IGNORECASE)
#: bats' ``# timeout after 5s`` on a test killed for time.
_BATS_TIMEOUT = re.compile(r"[ \t]*timeout after [0-9]+s[ \t]*")
_YAML_KEY = re.compile(r"(failureType|exitCode|timeout_sec|duration_ms):[ \t]*(.*?)[ \t]*")
_MAX_NUMBER_DIGITS = 15

# Fast lane (text output only): a run of plain passing test points at the top
# level, ``ok N - description`` with a description of printable ASCII without
# '"', '#', '\\' or '{' (so no directive, no escape, no brace subtest, nothing
# to quote) and no surrounding blanks.  Such a line means exactly: pass,
# native "ok", test id = description.  Everything else goes through the line
# state machine.
# The pattern finds the lines and their edges (``[^\n]*`` is a tight loop in
# the regex engine, a character class costs a call per character), and is
# never shown a '#' (the match ends at the next one, found by ``str.find``).
# The other characters are checked once for the whole run: ``bytes.translate``
# turns every byte a plain run may not hold into '#', found by ``bytes.find``.
_RUN = re.compile(r"(?:ok [1-9][0-9]{0,14} - [!-~][^\n]*(?<! )\n)+")
#: A character a plain run may not hold.
_NOT_PLAIN = re.compile(r"[^ !$-\[\]-z|-~\n]")
#: Every ASCII byte a plain run may not hold, as '#'; the others as they are.
_MARK = bytes(ord("#") if _NOT_PLAIN.match(chr(c)) else c for c in range(256))
# Splits "\n" + a run without its last newline into ['', number, description, ...].
_RUN_SPLIT = re.compile(r"\nok ([0-9]+) - ")
#: The known keys in the lines of a YAML block, each after its newline (a literal prefix).
_YAML_KEYS = re.compile(
    r"\n(failureType|exitCode|timeout_sec|duration_ms):[ \t]*(.*?)[ \t]*$", re.MULTILINE
)
#: Per YAML indent, from the newline before a line: the block's ``...`` line (group 1),
#: or a line that is neither blank nor indented that far (it cuts the block short).
_YAML_STOPS: dict[int, re.Pattern[str]] = {}
_BLANK = re.compile(r"[ \t]*")
_RUN_HEAD = HEAD + '"'
_NUMBER_KEY = ',"number":'
_DESCRIPTION_KEY = ',"description":"'
_RUN_TAIL = '"}}\n'


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    return re.sub(r"\\([\\#])", r"\1", text)


def _directive(tail: str) -> tuple[str, str | None] | None:
    """``(word, reason or time)`` when the text after a ``#`` is a directive we know."""
    found = _DIRECTIVE.fullmatch(tail)
    if found is not None:
        return found.group(1).lower(), found.group(2)
    timed = _TIME.fullmatch(tail)
    if timed is not None:  # the reason is the duration in seconds
        milli = timed.group(2).lower() == "ms"
        return "time", repr(float(timed.group(1) + ("e-3" if milli else "")))
    if _BATS_TIMEOUT.fullmatch(tail) is not None:
        return "timeout", None
    return None


def _split(rest: str) -> tuple[str, str | None, str | None]:
    """``(description, directive word or None, reason)`` of a test point's tail.

    Only a known directive ends the description; any other ``#`` is part of
    it (``not ok 1 - foo # bar`` is test ``foo # bar``).  The directive
    follows the first unescaped ``#`` (Perl's TAP::Parser: ``word#skip`` is a
    SKIP), or else the first unescaped ``#`` after a blank (tap-parser:
    ``a#b # SKIP`` is a SKIP of ``a#b``): a directive either reader sees is
    one.  ``\\#`` and ``\\\\`` are escapes.
    """
    first = spaced = -1
    at = rest.find("#")
    while at >= 0:
        slashes = at - len(rest[:at].rstrip("\\"))
        if slashes % 2 == 0:  # a '#' after an odd number of backslashes is escaped
            if first < 0:
                first = at
            if at == 0 or rest[at - 1] in " \t":
                spaced = at
                break
        at = rest.find("#", at + 1)
    found = None
    for at in (first, spaced):
        if at >= 0:
            found = _directive(rest[at + 1 :])
            if found is not None:
                rest = rest[:at]
                break
    desc = rest.strip()
    if desc.startswith("-"):
        desc = desc[1:].strip()
    directive, reason = found if found is not None else (None, None)
    return _unescape(desc), directive, reason


def _brace(rest: str) -> tuple[str, bool]:
    """A test point's tail without the ``{`` that opens a brace subtest, and whether it had one.

    As tap-parser reads it: a ``{`` that ends the line (blanks were stripped).
    """
    return (rest[:-1], True) if rest.endswith("{") else (rest, False)


class _Frame:
    """One (sub)test stream: its plan, its count, its name."""

    __slots__ = (
        "count",
        "failed",
        "level",
        "name",
        "plan",
        "plan_at_end",
        "problems",
        "skip_all",
    )

    def __init__(self, level: int, name: str | None) -> None:
        self.level = level
        self.name = name
        self.plan: int | None = None
        self.plan_at_end = False
        self.skip_all = False
        self.count = 0
        self.failed = False
        self.problems: list[str] = []


class _Point:
    """A test point waiting for its YAML block and diagnostics."""

    __slots__ = (
        "child_failed",
        "desc",
        "directive",
        "extra",
        "frames",
        "indent",
        "line",
        "not_ok",
        "number",
        "seconds",
        "yaml",
        "yaml_size",
    )

    def __init__(self) -> None:
        self.frames: tuple[_Frame, ...] = ()
        self.not_ok = False
        self.number = 0
        self.desc = ""
        self.directive: str | None = None
        self.line = 0
        self.indent = 0
        self.yaml: list[str] = []
        self.yaml_size = 0
        self.extra: dict[str, str] = {}
        self.child_failed: str | None = None
        self.seconds: float | None = None  # node-tap's "# time=" directive


class _Parser:
    """Line-driven TAP state machine; attempts come out through the emitter."""

    def __init__(self, source: str, limits: Limits, emitter: Emitter, *, text: bool) -> None:
        self.source = source
        self.limits = limits
        self.emitter = emitter
        self.text = text  # sources as JSON text and the fast lanes, or Source objects
        self.prefix = file_prefix(source, "tap")
        #: A plain pass's record from its test id to its line, before and after ``Bail out!``.
        self.mids = tuple(
            '","outcome":"pass","native":"ok","attempt":1,"duration_s":null,"message":null,'
            f'"flags":[{flags}],"source":{self.prefix},"line":'
            for flags in ("", '"bailed-out"')
        )
        self.frames = [_Frame(0, "")]
        self.announce: tuple[int, str] | None = None
        self.point: _Point | None = None
        self.in_yaml = False
        self.bailed = False
        self.strict = False
        self.lines_seen = 0
        self.held: list[tuple[tuple[_Frame, ...], list[Any]]] = []
        self.braces: list[_Point] = []  # brace subtests open, innermost last
        #: The fast lane's last stretch of ``feed``'s text: (start, end, its bytes with every
        #: character a plain run may not hold as '#', or None when it is not ASCII).
        self.scan: tuple[int, int, bytes | None] | None = None

    # -- emission ---------------------------------------------------------------
    def _emit(self, frames: tuple[_Frame, ...], spec: list[Any]) -> None:
        # (The root frame is always named: a top-level point skips the walk.)
        if self.held or (len(frames) > 1 and any(f.name is None for f in frames)):
            self.held.append((frames, spec))
            if len(self.held) > self.limits.max_open_tests:
                raise LimitError(
                    "too many attempts waiting for the name of an unnamed subtest",
                    source=self.source,
                    line=spec[1],
                )
            return
        self._push(frames, spec)

    def _release(self) -> None:
        held = self.held
        done = 0
        for frames, spec in held:
            if any(f.name is None for f in frames):
                break
            self._push(frames, spec)
            done += 1
        del held[:done]

    def _push(self, frames: tuple[_Frame, ...], spec: list[Any]) -> None:
        leaf, line, number, desc, outcome, native, duration, message, flags = spec
        path = tuple(str(f.name) for f in frames[1:]) if len(frames) > 1 else ()
        test_id = " > ".join((*path, leaf)) if path else leaf
        check_id(test_id, self.limits.max_id_chars, self.source, line)
        src: Any
        if self.text:
            src = source_json(self.prefix, line, None, None, None, number, desc or None, path)
        else:
            src = trusted_source(
                self.source, "tap", line, None, None, None, number, desc or None, path
            )
        emitter = self.emitter
        emitter.add(
            test_id, emitter.element(), line, outcome, native, src, duration, message, flags
        )

    def _defect(self, frame: _Frame, problem: str, line: int | None) -> None:
        """A stream-level defect: listed by ``frame``'s ``<plan>`` pseudo-attempt, and
        ``stream-defect`` on every attempt of the report."""
        frame.problems.append(problem)
        self.emitter.taint(problem, line)

    # -- frames -----------------------------------------------------------------
    def _open_to(self, level: int) -> None:
        while len(self.frames) - 1 < level:
            depth = len(self.frames)
            if depth > self.limits.max_depth:
                raise LimitError(
                    f"subtests nested deeper than {self.limits.max_depth}",
                    source=self.source,
                    line=self.lines_seen,
                )
            name = None
            if self.announce is not None and self.announce[0] == depth - 1:
                name = self.announce[1]
                self.announce = None
            self.frames.append(_Frame(depth, name))

    def _close_to(self, level: int, parent: _Point | None) -> None:
        """Close frames deeper than ``level``; ``parent`` is the point that closes the last one."""
        while len(self.frames) - 1 > level:
            frame = self.frames.pop()
            self._check_plan(frame)
            outer = self.frames[-1]
            bad = frame.failed or bool(frame.problems)
            if len(self.frames) - 1 == level and parent is not None:
                if frame.name is None:
                    frame.name = parent.desc or f"#{parent.number}"
                    self._release()
                if bad:
                    parent.child_failed = "its subtest failed"
            elif bad:
                outer.failed = True

    def _check_plan(self, frame: _Frame) -> None:
        problems = frame.problems
        if frame.plan is None:
            problems.append("no plan")
        elif frame.skip_all and frame.count:
            problems.append(f"plan 1..0 (skip all) but {frame.count} test points")
        elif frame.count != frame.plan:
            problems.append(f"planned {frame.plan} tests, ran {frame.count}")
        if not problems:
            return
        self.emitter.taint(problems[-1], self.lines_seen or None)
        frames = (*self.frames[: frame.level], frame)
        spec = [
            PLAN_ID,
            self.lines_seen or None,
            None,
            "",
            _ERROR,
            "plan",
            None,
            clip("; ".join(problems), self.limits.max_message_chars),
            BAILED if self.bailed else NO_FLAGS,
        ]
        self._emit(frames, spec)

    # -- points -------------------------------------------------------------------
    def _finish_point(self) -> None:
        point = self.point
        if point is None:
            return
        self.point = None
        frame = point.frames[-1]
        directive = point.directive
        extra = point.extra
        flags: frozenset[AttemptFlag] = NO_FLAGS
        if directive == "skip":
            outcome, native = _SKIP, ("not ok # SKIP" if point.not_ok else "ok # SKIP")
        elif directive == "todo":
            if point.not_ok:
                outcome, native = _SKIP, "not ok # TODO"
            else:
                outcome, native, flags = _PASS, "ok # TODO", UNEXPECTED
        elif not point.not_ok:
            outcome, native = _PASS, "ok"
            if point.child_failed:
                outcome, native = _ERROR, "ok (contradicted by its subtest)"
        elif directive == "timeout" or "timeout_sec" in extra:
            outcome, native = _TIMEOUT, "not ok # timeout" if directive else "not ok"
        else:
            outcome, native = _FAIL, "not ok"
            failure = extra.get("failureType", "").strip("'\"")
            exit_code = extra.get("exitCode", "").strip("'\"")
            if failure == "testTimeoutFailure":
                outcome = _TIMEOUT
            elif (
                failure in ("hookFailed", "cancelledByParent")
                or exit_code not in ("", "0", "~", "null")
                or (point.desc and PSEUDO_HOOK.match(point.desc))
            ):
                outcome = _ERROR
        if outcome is _FAIL or outcome is _ERROR or outcome is _TIMEOUT:
            frame.failed = True
        if self.bailed:
            flags = flags | BAILED
        duration = point.seconds
        if "duration_ms" in extra:
            ms = duration_from_text(extra["duration_ms"])
            duration = None if ms is None else ms / 1000.0
        message = None
        if point.yaml and outcome is not _PASS:
            message = clip("\n".join(point.yaml), self.limits.max_message_chars)
        leaf = point.desc or f"#{point.number}"
        spec = [
            leaf,
            point.line,
            point.number,
            point.desc,
            outcome,
            native,
            duration,
            message,
            flags,
        ]
        self._emit(point.frames, spec)

    def _test_point(self, level: int, match: re.Match[str], line: int) -> None:
        frame = self.frames[-1]
        not_ok, number_text, rest = match.groups()
        point = _Point()
        frame.count += 1
        if number_text is None:
            number = frame.count
        else:
            if len(number_text) > _MAX_NUMBER_DIGITS:
                raise InputError("test number out of range", source=self.source, line=line)
            number = int(number_text)
            if number != frame.count:
                self._defect(
                    frame, f"test number {number} out of sequence (expected {frame.count})", line
                )
        if frame.plan is not None and frame.plan_at_end:
            self._defect(frame, f"test point {number} after the closing plan", line)
        rest, brace = _brace(rest)
        desc, directive, reason = _split(rest)
        if directive == "time":
            point.seconds = float(str(reason))
            directive = None
        point.frames = tuple(self.frames)
        point.not_ok = not_ok is not None
        point.number = number
        point.desc = desc
        point.directive = directive
        point.line = line
        point.indent = level * 4
        if brace:
            self._open_brace(point)
            return
        self.point = point

    def _open_brace(self, point: _Point) -> None:
        """``point`` is the parent of a brace subtest: its child follows, one level deeper."""
        level = point.indent // 4
        self.braces.append(point)
        self.announce = (level, point.desc or f"#{point.number}")
        self._open_to(level + 1)

    def _end_brace(self) -> None:
        """The innermost brace subtest is over: its parent point waits for a YAML block."""
        self._finish_point()
        parent = self.braces.pop()
        self._close_to(parent.indent // 4, parent)
        self.point = parent

    def _unclosed_brace(self, number: int | None) -> None:
        """The innermost brace subtest ends without its ``}`` line (a stream-level defect)."""
        parent = self.braces[-1]
        where = f"before line {number}" if number is not None else "at the end of the report"
        self._defect(
            parent.frames[-1],
            f"the brace subtest of the test point at line {parent.line} is not closed {where}",
            number,
        )
        self._end_brace()

    def _braces(self, spaces: int, body: str, number: int) -> bool:
        """Open or close brace subtests at this line; True when it was a brace line.

        ``{`` alone at the pending point's indent makes it a parent (node-tap
        writes it after the parent's YAML block); ``}`` at the innermost
        parent's indent closes it.  A test point, plan
        or ``# Subtest`` at or left of that indent, or an outer ``}``, means
        the brace was never closed.
        """
        braces = self.braces
        if body == "{":  # node-tap: "{" on its own line, after the parent's YAML block
            point = self.point
            if point is None or spaces != point.indent:
                return False
            self.point = None
            self._open_brace(point)
            return True
        if not braces:
            return False
        if body == "}":
            while braces and spaces < braces[-1].indent:
                self._unclosed_brace(number)
            if braces and spaces == braces[-1].indent:
                self._end_brace()
                return True
            return False
        if spaces <= braces[-1].indent and (
            _POINT.fullmatch(body) or _PLAN.fullmatch(body) or _SUBTEST.fullmatch(body)
        ):
            while braces and spaces <= braces[-1].indent:
                self._unclosed_brace(number)
        return False

    # -- lines ----------------------------------------------------------------------
    def line(self, text: str, number: int) -> None:
        self.lines_seen = number
        if self.in_yaml:
            point = self.point
            assert point is not None
            indent = point.indent + 2
            inside = text[:indent].strip(" ") == ""
            if inside or _BLANK.fullmatch(text):
                if inside and text[indent:].rstrip() == "...":
                    self.in_yaml = False
                    return
                body = text[indent:] if inside else ""
                if point.yaml_size < self.limits.max_message_chars * 4:
                    point.yaml.append(body)
                    point.yaml_size += len(body) + 1
                key = _YAML_KEY.fullmatch(body)
                if key is not None:
                    point.extra[key.group(1)] = key.group(2)
                return
            self._unclosed_yaml(number)  # a line less indented than the block ends it
        stripped = text.lstrip(" ")
        spaces = len(text) - len(stripped)
        body = stripped.rstrip(" \t")
        if not body:
            return
        point = self.point
        if point is not None and spaces == point.indent + 2 and body == "---" and not point.yaml:
            self.in_yaml = True
            return
        if (self.braces or body == "{") and self._braces(spaces, body, number):
            return
        if spaces % 4:
            if point is not None and body.startswith("#"):
                return
            if _POINT.fullmatch(body) is not None:
                # Another reader may count this line as a test point: never ignore it silently.
                self._defect(
                    self.frames[-1],
                    f"line {number}: a test point indented by {spaces} spaces "
                    "(not a multiple of 4)",
                    number,
                )
            self._unknown(text, number)
            return
        level = spaces // 4
        if body.startswith("#"):
            sub = _SUBTEST.fullmatch(body)
            if sub is not None:
                self._finish_point()
                self._close_to(level, None)
                name = (sub.group(1) or "").strip()
                self.announce = (level, _unescape(name)) if name else None
            return
        match = _POINT.fullmatch(body)
        if match is not None:
            self._finish_point()
            if len(self.frames) - 1 > level:
                self._close_to_parent(level, match, number)
                return
            self._open_to(level)
            self._test_point(level, match, number)
            return
        self._finish_point()
        plan = _PLAN.fullmatch(body)
        if plan is not None:
            self._close_to(level, None)
            self._open_to(level)
            self._plan(plan, number)
            return
        bail = _BAIL.fullmatch(body)
        if bail is not None:
            self.bailed = True
            reason = bail.group(1).strip()
            self._defect(
                self.frames[0],
                f"line {number}: Bail out!" + (f" {reason[:200]}" if reason else ""),
                number,
            )
            return
        version = _VERSION.fullmatch(body)
        if version is not None:
            if number != 1 or level:
                self._unknown(text, number)
            elif version.group(1) not in ("13", "14"):
                raise InputError(
                    f"unsupported TAP version {version.group(1)[:10]}",
                    source=self.source,
                    line=number,
                )
            return
        pragma = _PRAGMA.fullmatch(body)
        if pragma is not None:
            if pragma.group(2) == "strict":
                self.strict = pragma.group(1) == "+"
            return
        self._unknown(text, number)

    def _unclosed_yaml(self, number: int | None) -> None:
        """The YAML block of the pending point ends without its ``...`` line."""
        point = self.point
        assert point is not None
        self.in_yaml = False
        where = f"before line {number}" if number is not None else "at the end of the report"
        self._defect(
            point.frames[-1],
            f"the YAML block of the test point at line {point.line} is not closed {where}",
            number,
        )

    def _close_to_parent(self, level: int, match: re.Match[str], number: int) -> None:
        """A test point that closes the subtest(s) below it is their parent."""
        _not_ok, number_text, rest = match.groups()
        parent = _Point()
        parent.desc = _split(_brace(rest)[0])[0]
        if number_text is not None and len(number_text) <= _MAX_NUMBER_DIGITS:
            parent.number = int(number_text)
        else:
            parent.number = self.frames[level].count + 1
        self._close_to(level, parent)
        self._test_point(level, match, number)
        point = self.point if self.point is not None else self.braces[-1]
        point.child_failed = parent.child_failed

    def _plan(self, match: re.Match[str], line: int) -> None:
        frame = self.frames[-1]
        count_text, comment = match.groups()
        if frame.plan is not None:
            self._defect(frame, f"line {line}: more than one plan", line)
            return
        if len(count_text) > _MAX_NUMBER_DIGITS:
            raise InputError("plan out of range", source=self.source, line=line)
        frame.plan = int(count_text)
        frame.plan_at_end = frame.count > 0
        if frame.plan == 0:
            frame.skip_all = True
        if comment is not None:
            directive = _DIRECTIVE.fullmatch(comment)
            if directive is not None and directive.group(1).lower() == "skip" and frame.plan != 0:
                self._defect(frame, "SKIP directive on a plan that is not 1..0", line)

    def _unknown(self, text: str, number: int) -> None:
        self._finish_point()
        if self.strict:
            raise InputError(
                f"not a TAP line under 'pragma +strict': {text.strip()[:60]!r}",
                source=self.source,
                line=number,
            )

    # -- blocks of lines ----------------------------------------------------------
    def feed(self, text: str, number: int) -> int:
        """Complete lines (``text`` ends with a newline); returns the last line number."""
        pos = 0
        end = len(text)
        fast = self.text
        plain_until = 0  # lines before this position go one by one (a run the lane refused)
        sharp = -1  # the first '#' at or after a run's start (``end``: none)
        self.scan = None
        line = self.line
        while pos < end:
            if fast:
                if self.in_yaml:
                    # The lane looks back at the newline before a line: the first line
                    # of a block of text goes alone.
                    if pos:
                        pos, number = self._yaml(text, pos, number)
                        continue
                elif pos >= plain_until and text.startswith("ok ", pos):
                    if sharp < pos:
                        sharp = text.find("#", pos)
                        if sharp < 0:
                            sharp = end
                    # (A line that holds the '#' is not plain: no run starts there.)
                    done = (
                        self._run(text, pos, number, sharp)
                        if text.find("\n", pos, sharp) >= 0
                        else None
                    )
                    if done is not None:
                        pos, number, plain_until = done
                        continue
            nl = text.index("\n", pos)
            body = text[pos:nl]
            pos = nl + 1
            number += 1
            line(body[:-1] if body.endswith("\r") else body, number)
        return number

    def _run(self, text: str, pos: int, number: int, sharp: int) -> tuple[int, int, int] | None:
        """The fast lane over a run of plain passing points at ``pos``, if there is one.

        ``sharp`` is the position of the first '#' at or after ``pos``: no plain
        line holds one, so the run ends before its line.

        Returns ``(position, line number, plain_until)`` after the lines it
        took, or None when the line at ``pos`` is not plain.  Plain lines
        the lane cannot take (numbering off, an id seen before) are left to
        the state machine: ``plain_until`` is then the end of the run.
        """
        frames = self.frames
        root = frames[0]
        if len(frames) != 1 or self.held or (root.plan is not None and root.plan_at_end):
            return None
        scan = self.scan
        if scan is not None and scan[0] <= pos < scan[1]:
            # A later line of the stretch scanned last: its lines keep their shape
            # and their marks (a stretch is never scanned twice: a report whose
            # every line is refused stays linear).
            base, stop, marked = scan
        else:
            match = _RUN.match(text, pos, sharp)
            if match is None:
                return None
            base = pos
            stop = match.end()
            run = text[pos:stop]
            marked = run.encode("ascii").translate(_MARK) if run.isascii() else None
            self.scan = (base, stop, marked)
        if marked is not None:
            bad = marked.find(b"#", pos - base)
            bad = bad if bad < 0 else base + bad
        else:
            found = _NOT_PLAIN.search(text, pos, stop)
            bad = -1 if found is None else found.start()
        if bad >= 0:  # the run ends before the line that holds the first one
            stop = text.rfind("\n", pos, bad) + 1
            if not stop:
                return None
        parts = _RUN_SPLIT.split("\n" + text[pos : stop - 1])
        # The run's last point is finished (no YAML block can follow) only by a
        # next line that is not blank, not a comment, not "  ---" and not a "{"
        # (alone on its line, it makes the point a brace subtest's parent).
        after = text[stop : stop + 1]
        size = len(parts) // 2
        take = size if after and after not in " \t\r\n#{" else size - 1
        if take < 1:
            return None
        if take < size:
            del parts[-2:]
            taken = text.rindex("\n", pos, stop - 1) + 1
        else:
            taken = stop
        count = root.count
        numbers = parts[1::2]
        descs = parts[2::2]
        limit = self.limits.max_id_chars
        if numbers != list(map(str, range(count + 1, count + take + 1))) or (
            stop - pos > limit and max(map(len, descs)) > limit  # a shorter run holds no long id
        ):
            return pos, number, taken
        self._finish_point()  # the first line of the run finishes the pending point
        if self.held:
            return pos, number, taken
        emitter = self.emitter
        first = emitter.claim(descs)
        if first is None:
            return pos, number, taken
        bailed = self.bailed
        mid = self.mids[bailed]
        at = range(number + 1, number + take + 1)

        def lines() -> list[str]:
            return [
                f"{_RUN_HEAD}{desc}{mid}{line}{_NUMBER_KEY}{num}{_DESCRIPTION_KEY}{desc}{_RUN_TAIL}"
                for line, num, desc in zip(at, numbers, descs, strict=True)
            ]

        counts = {"pass": take, "flagged": take} if bailed else {"pass": take}
        emitter.push_block(descs, lines, at, first, counts)
        root.count = count + take
        number += take
        self.lines_seen = number
        return taken, number, 0

    def _yaml(self, text: str, pos: int, number: int) -> tuple[int, int]:
        """The lines of a YAML block at ``pos`` at once, as :meth:`line` reads them one by one."""
        point = self.point
        assert point is not None
        indent = point.indent + 2
        stops = _YAML_STOPS.get(indent)
        if stops is None:
            spaces = "{" + str(indent) + "}"
            stops = _YAML_STOPS[indent] = re.compile(
                "\n(?:( " + spaces + r"\.\.\.[^\S\n]*$)|(?! " + spaces + r"|[ \t\r]*$))",
                re.MULTILINE,
            )
        # One search (text[pos - 1] is a newline), so it never reads past the block.
        end = stops.search(text, pos - 1)
        stop = len(text) if end is None else end.start() + 1
        found = end if end is not None and end.group(1) is not None else None
        cut = end if end is not None and found is None else None  # a less indented line
        if stop > pos:
            lines = text[pos - 1 : stop - 1]  # each line after its newline
            pad = "\n" + " " * indent
            if "\r" not in lines and lines.count(pad) == lines.count("\n"):
                joined = lines.replace(pad, "\n")  # every line indented: bodies at C speed
                bodies = joined[1:].split("\n")
            else:
                raw = lines[1:].split("\n")
                if "\r" in lines:
                    raw = [r[:-1] if r.endswith("\r") else r for r in raw]
                bodies = [r[indent:] if r[:indent].strip(" ") == "" else "" for r in raw]
                joined = "\n" + "\n".join(bodies)
            number += len(bodies)
            self.lines_seen = number
            cap = self.limits.max_message_chars * 4
            yaml = point.yaml
            if point.yaml_size + len(joined) - len(bodies[-1]) - 1 < cap:
                yaml += bodies  # the size before the last body is under the cap: all are kept
                point.yaml_size += len(joined)
            else:
                for body in bodies:
                    if point.yaml_size >= cap:
                        break
                    yaml.append(body)
                    point.yaml_size += len(body) + 1
            if ":" in joined:
                extra = point.extra
                for key in _YAML_KEYS.finditer(joined):
                    extra[key.group(1)] = key.group(2)
        if cut is not None:
            self._unclosed_yaml(number + 1)
            return stop, number
        if found is None:
            return len(text), number
        number += 1
        self.lines_seen = number
        self.in_yaml = False
        return text.index("\n", stop) + 1, number

    def cut(self, number: int) -> None:
        """The report's last line has no newline: it was cut (the line is still read)."""
        self._defect(self.frames[0], f"line {number} has no newline: the report was cut", number)

    def end(self) -> None:
        if self.in_yaml:
            self._unclosed_yaml(None)
        while self.braces:
            self._unclosed_brace(None)
        self._finish_point()
        self._close_to(0, None)
        root = self.frames[0]
        self._check_plan(root)
        if self.held:
            # Unnamed subtests whose parent never came: name them by position.
            for frames, _spec in self.held:
                for frame in frames:
                    if frame.name is None:
                        frame.name = "<unnamed subtest>"
            self._release()


def _parse(reader: Reader, limits: Limits, parser: _Parser) -> Iterator[None]:
    """Feed the report to ``parser`` a chunk of complete lines at a time; yields after each.

    Refused here: compressed/UTF-16/32 input, a BOM, NUL, invalid UTF-8 (after
    the lines before it were read), lines over ``max_line_bytes``.
    """
    source = reader.source
    max_line = limits.max_line_bytes
    rest = b""
    number = 0
    first = True
    while True:
        chunk = reader.read(CHUNK)
        if first:
            check_prefix(chunk, source)
            if chunk.startswith(b"\xef\xbb\xbf"):
                raise InputError("byte-order mark before TAP", source=source, line=1)
            first = False
        if not chunk:
            break
        data = rest + chunk if rest else chunk
        if b"\x00" in chunk:
            raise InputError(
                "NUL byte in TAP",
                source=source,
                line=number + data.count(b"\n", 0, data.index(b"\x00")) + 1,
            )
        cut = data.rfind(b"\n") + 1
        rest = data[cut:]
        if cut:
            number = _feed(parser, data[:cut] if rest else data, number, max_line)
        if len(rest) > max_line:
            raise LimitError(f"line longer than {max_line} bytes", source=source, line=number + 1)
        yield
    if rest:
        try:
            text = rest.decode("utf-8")
        except UnicodeDecodeError:
            raise InputError("invalid UTF-8", source=source, line=number + 1) from None
        parser.cut(number + 1)
        parser.line(text[:-1] if text.endswith("\r") else text, number + 1)
    yield


def _feed(parser: _Parser, block: bytes, number: int, max_line: int) -> int:
    """Complete lines (``block`` ends with a newline) to the parser; returns the last line."""
    source = parser.source
    if len(block) > max_line:  # only then can one line be too long: check each
        lines = block.split(b"\n")
        lines.pop()
        for raw in lines:
            if len(raw) > max_line:
                raise LimitError(
                    f"line longer than {max_line} bytes", source=source, line=number + 1
                )
            number = _decode(parser, raw + b"\n", number)
        return number
    return _decode(parser, block, number)


def _decode(parser: _Parser, block: bytes, number: int) -> int:
    source = parser.source
    try:
        text = block.decode("utf-8")
    except UnicodeDecodeError as exc:
        good = block.rfind(b"\n", 0, exc.start) + 1
        if good:
            number = parser.feed(block[:good].decode("utf-8"), number)
        raise InputError("invalid UTF-8", source=source, line=number + 1) from None
    return parser.feed(text, number)


def iter_attempts(reader: Reader, *, limits: Limits, only: str | None = None) -> Iterator[Attempt]:
    """Attempts of a TAP stream, test points in stream order, pseudo-attempts where due."""
    emitter = Emitter(
        source=reader.source, window=limits.reorder_window, only=only, build=trusted_attempt
    )
    parser = _Parser(reader.source, limits, emitter, text=False)
    for _ in _parse(reader, limits, parser):
        emitter.ready()
        if emitter.out:
            yield from emitter.out
            emitter.out.clear()
    parser.end()
    emitter.finish()
    yield from emitter.out
    emitter.out.clear()


def iter_lines(
    reader: Reader, *, limits: Limits, only: str | None = None, counts: dict[str, int]
) -> Iterator[list[str]]:
    """The attempt records of a TAP stream as JSON lines, in batches (same order and bytes)."""
    emitter = Emitter(
        source=reader.source, window=limits.reorder_window, only=only, build=render, counts=counts
    )
    parser = _Parser(reader.source, limits, emitter, text=True)
    for _ in _parse(reader, limits, parser):
        emitter.ready()
        if emitter.out:
            yield emitter.out
            emitter.out = []
    parser.end()
    emitter.finish()
    yield emitter.out
    emitter.out = []
