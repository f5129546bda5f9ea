"""The record-free ingest path (``iter_jsonl``) against the object path, byte for byte.

``iter_jsonl`` renders records straight from the parsers' values and takes
fast lanes (TAP runs of plain passing points, JUnit childless testcases,
pytest-json single-attempt tests) that hand whole blocks to the repeat
window.  The object path (``iter_attempts`` + ``write_jsonl``) is the
reference: for every input both must give the same bytes, or both the same
refusal (type and message), and ``counts`` must tally what was written.
"""

from __future__ import annotations

import io
import json
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import flakecore_adapters
import pytest
from flakecore_adapters import tap as tap_module
from hypothesis import given, settings
from hypothesis import strategies as st

from flakecore.errors import InputError

ROOT = Path(__file__).resolve().parent.parent / "fixtures" / "reports"
FIXTURES = sorted(
    path
    for expected in ROOT.glob("*/expected.json")
    for path in (
        expected.parent / report["file"]
        for report in json.loads(expected.read_text(encoding="utf-8"))["reports"]
    )
)
WINDOWS = [None, 1, 2, 3, 7]

Outcome = tuple[str, Any]


def _limits(window: int | None, kw: dict[str, Any]) -> flakecore_adapters.Limits:
    if "limits" in kw:
        limits: flakecore_adapters.Limits = kw.pop("limits")
        return limits
    if window is None:
        return flakecore_adapters.DEFAULT_LIMITS
    return flakecore_adapters.Limits(reorder_window=window)


def objects(data: bytes, fmt: str = "auto", window: int | None = None, **kw: Any) -> Outcome:
    """The reference: Attempt objects, then write_jsonl."""
    out = io.BytesIO()
    try:
        stream = io.BytesIO(data)
        limits = _limits(window, kw)
        attempts = flakecore_adapters.iter_attempts(
            stream, format=fmt, source_name="r", limits=limits, **kw
        )
        flakecore_adapters.write_jsonl(attempts, out)
    except InputError as exc:
        return "error", (type(exc).__name__, str(exc))
    return "ok", out.getvalue()


def lines(data: bytes, fmt: str = "auto", window: int | None = None, **kw: Any) -> Outcome:
    """The fast path, with its counts checked against the bytes it wrote."""
    counts: dict[str, int] = {}
    try:
        stream = io.BytesIO(data)
        limits = _limits(window, kw)
        chunks = list(
            flakecore_adapters.iter_jsonl(
                stream, format=fmt, source_name="r", limits=limits, counts=counts, **kw
            )
        )
    except InputError as exc:
        return "error", (type(exc).__name__, str(exc))
    written = b"".join(chunks)
    assert all(chunk.endswith(b"\n") for chunk in chunks)
    records = [json.loads(row) for row in written.splitlines()]
    tally = Counter(r["outcome"] for r in records)
    tally["flagged"] = sum(bool(r["flags"]) for r in records)
    assert {k: v for k, v in counts.items() if v} == {k: v for k, v in tally.items() if v}
    return "ok", written


def same(data: bytes, fmt: str = "auto", window: int | None = None, **kw: Any) -> Outcome:
    want = objects(data, fmt, window, **dict(kw))
    got = lines(data, fmt, window, **dict(kw))
    assert got == want
    return got


def test_fixtures_exist() -> None:
    assert len(FIXTURES) > 20


@pytest.mark.parametrize("window", WINDOWS)
@pytest.mark.parametrize("path", FIXTURES, ids=[str(p.relative_to(ROOT)) for p in FIXTURES])
def test_every_fixture_gives_the_same_bytes(path: Path, window: int | None) -> None:
    same(path.read_bytes(), window=window)


@pytest.mark.parametrize("path", FIXTURES[:6], ids=[str(p.relative_to(ROOT)) for p in FIXTURES[:6]])
def test_paths_and_test_id_filter(path: Path) -> None:
    whole = b"".join(flakecore_adapters.iter_jsonl(path))
    buffer = io.BytesIO()
    flakecore_adapters.write_jsonl(flakecore_adapters.iter_attempts(path), buffer)
    assert whole == buffer.getvalue()
    first = json.loads(whole.splitlines()[0])["test_id"] if whole else "x"
    same(path.read_bytes(), test_id=first)


# -- TAP fast lane edges ------------------------------------------------------------


def _tap(points: list[str], head: str = "TAP version 14\n", tail: str = "") -> bytes:
    return (head + "".join(points) + tail).encode("utf-8")


@pytest.mark.parametrize(
    "body",
    [
        "1..4\nok 1 - a\nok 2 - b\nok 3 - c\nok 4 - d\n",
        "ok 1 - a\nok 2 - b\n1..2\n",  # plan last
        "ok 1 - a\nok 2 - b\n1..2\nok 3 - late\n",  # points after the closing plan
        "1..3\nok 1 - a \nok 2 -  b\nok 3 - c\n",  # blanks at a description's edge
        "1..3\nok 1 - a -  b\nok 2 - b\nok 3 - c\n",
        "1..3\nok 1 - a\nok 3 - c\nok 2 - b\n",  # out of sequence
        "1..3\nok 01 - a\nok 2 - b\nok 3 - c\n",  # leading zero
        "1..3\nok 1 - a\nok 2 - a\nok 3 - a\n",  # repeats inside a run
        "1..4\nok 1 - a\nnot ok 2 - b\nok 3 - c\nok 4 - a\n",
        "1..3\nok 1 - a\nBail out! gone\nok 2 - b\nok 3 - c\n",
        "1..3\nok 1 - a\nok 2 - b\n  ---\n  duration_ms: 12\n  ...\nok 3 - c\n",
        "1..3\nok 1 - a\nok 2 - b\n# comment\n  ---\n  message: x\n  ...\nok 3 - c\n",
        "1..3\nok 1 - a\r\nok 2 - b\r\nok 3 - c\r\n",
        "1..2\n# Subtest: s\n    1..2\n    ok 1 - x\n    ok 2 - y\nok 1 - s\nok 2 - t\n",
        "1..2\n    1..1\n    ok 1 - x\nok 1 - named by parent\nok 2 - t\n",
        "1..3\nok 1 - classMethod\nnot ok 2 - classMethod\nok 3 - c\n",
        "1..2\nok 1 - a\nok 2 - b",  # no final newline
        "1..3\nok 1 - a\n\nok 2 - b\n   \nok 3 - c\n",  # blank lines
        "1..3\nok 1 - a # SKIP\nok 2 - b \\# not a skip\nok 3 - c\n",
        "1..2\nok 1 - \u00e9t\u00e9\nok 2 - b\n",
        "pragma +strict\n1..2\nok 1 - a\nok 2 - b\n",
        "1..3\nok 1 - a\nnot ok 2 - b\n  ---\n  exitCode: 1\n  ...\nok 3 - c\n",
        # refused lines inside a scanned stretch: the lane resumes after each
        "1..5\nok 1 - \u00e9\nok 2 - b\nok 3 - \u00e9\nok 4 - d\nok 5 - e\n",
        "1..4\nok 1 - a\r\nok 2 - b\nok 3 - c\r\nok 4 - d\n",
        '1..4\nok 1 - a"\nok 2 - b\nok 3 - c\\\nok 4 - d\x7f\n',
        # a "{" alone on the next line makes the run's last point a brace subtest's parent
        "1..2\nok 1 - a\nok 2 - parent\n{\n    not ok 1 - child\n    1..1\n}\n",
        "1..2\nok 1 - parent\n{\nok 2 - b\n",
        "1..1\nok 1 - parent\n{ \r\n    ok 1 - child\n    1..1\n}\n",
    ],
)
@pytest.mark.parametrize("window", [None, 1, 2])
def test_tap_fast_lane_matches(body: str, window: int | None) -> None:
    same(_tap([body]), "tap", window)


def test_tap_repeat_beyond_the_window_is_refused_on_both_paths() -> None:
    body = "".join(f"ok {i} - t{i % 5}\n" for i in range(1, 40))
    for window in (2, 3, 4, 5, 6):
        kind, _ = same(_tap([body], tail="1..39\n"), "tap", window)
        assert kind == ("ok" if window >= 5 else "error")


@pytest.mark.parametrize(
    ("body", "window"),
    [
        ("1..9\nok 1 - a\nok 2 - b\nok 3 - c\nok 4 - d\nok 5 - e\nok 6 - f\nok 7 - g\n", 3),
        ("ok 1 - t1\nok 2 - t2\nok 3 - t3\nnot ok 4 - f", 1),  # cut
    ],
)
def test_tap_defect_after_a_run_wider_than_the_window_is_refused_on_both_paths(
    body: str, window: int
) -> None:
    # The run's first records are out of the window when the defect is found: too
    # late to flag them.  The lane's block used to count as emitted only when its
    # last record left, so the text path flagged what the object path refused.
    assert same(_tap([body]), "tap", window)[0] == "error"


def test_tap_long_ids_and_lines_are_limits_on_both_paths() -> None:
    long = "x" * 300
    data = _tap([f"1..2\nok 1 - {long}\nok 2 - b\n"])
    assert same(data, "tap", limits=flakecore_adapters.Limits(max_id_chars=100))[0] == "error"
    got = same(data, "tap", limits=flakecore_adapters.Limits(max_line_bytes=50))
    assert got[0] == "error"


def test_tap_bad_utf8_after_good_lines() -> None:
    data = b"1..3\nok 1 - a\nok 2 - b\nok 3 - \xff\n"
    got = same(data, "tap")
    assert got[0] == "error"
    assert "line 4" in got[1][1] or ":4" in got[1][1]


# -- JUnit fast lane edges ----------------------------------------------------------

_CASES = [
    b'<testcase classname="C" name="a" time="0.5"/>',
    b'<testcase classname=" C " name="b" time="1,5"/>',
    b'<testcase classname="  " name="c"/>',
    b'<testcase name="d" time="NaN"/>',
    b'<testcase classname="q&quot;\\" name="e&lt;&#233;" time="-0"/>',
    b'<testcase classname="C" name="f" status="skipped"/>',
    b'<testcase classname="C" name="g"><failure message="m">t</failure></testcase>',
    b'<testcase classname="C" name="a"/>',
    b'<testcase classname="C" name="h" time="1e3"/>',
    b'<testcase classname="C&#9;x" name="i&#10;j" time=" 2"/>',
    # ASCII that JSON must escape ('"', '\\', DEL) beside ASCII it need not
    b'<testcase classname="q&quot;\\" name="k&lt;&amp;" time="3"/>',
    b'<testcase classname="C" name="del&#127;" time="3"/>',
    b'<testcase classname="C.D" name="l[1-2] (x)" time="3"/>',
]


@pytest.mark.parametrize("window", [None, 1, 2, 3])
def test_junit_fast_lane_matches(window: int | None) -> None:
    body = b"".join(_CASES)
    same(b'<testsuites><testsuite name="s">' + body + b"</testsuite></testsuites>", window=window)
    same(b"<testsuite>" + body + b"</testsuite>", window=window)
    same(b'<testsuites><testsuite name="s">' + body + b"<testcase/></testsuite></testsuites>")


@pytest.mark.parametrize("window", [None, 64])  # within the window: 'C::a' repeats
def test_junit_lane_follows_the_innermost_suite(window: int | None) -> None:
    # The lane is off inside pytest's suite only, and back on once that suite ends.
    kept = b"".join(case for case in _CASES if b"&#9;" not in case and b"&#127;" not in case)

    def body(mark: bytes) -> bytes:  # the same testcases under other names
        return kept.replace(b'name="', b'name="' + mark)

    outcome = same(
        b'<testsuites><testsuite name="o">'
        + body(b"1")
        + b'<testsuite name="pytest">'
        + body(b"2")
        + b'<testcase classname="t.m" name="x" file="t/m.py"/></testsuite>'
        + body(b"3")
        + b'</testsuite><testsuite name="pytest"><testcase classname="C" name="y"/></testsuite>'
        + b'<testcase classname="C" name="z"/></testsuites>',
        window=window,
    )
    assert outcome[0] == "ok", outcome


def test_junit_missing_name_after_plain_passes() -> None:
    body = b'<testsuite><testcase name="a"/><testcase name="b"/><testcase time="1"/></testsuite>'
    assert same(body)[0] == "error"


# -- pytest-json fast lane edges -------------------------------------------------------


def _stage(outcome: str = "passed", duration: object = 0.001, **extra: object) -> dict[str, object]:
    return {"duration": duration, "outcome": outcome, **extra}


def _test(nodeid: str, outcome: str = "passed", **stages: object) -> dict[str, object]:
    test: dict[str, object] = {"nodeid": nodeid, "outcome": outcome}
    test.update({k: _stage() for k in ("setup", "call", "teardown")})
    test.update(stages)
    return test


def test_json_fast_lane_matches() -> None:
    tests = [
        _test("a"),
        _test("b", call=_stage(duration=1)),
        _test("c", call=_stage(duration=1e308), teardown=_stage(duration=1e308)),
        _test("d", call=_stage(duration=-0.0)),
        _test("e", call=_stage(duration=True)),
        _test("f", call=_stage("failed", crash={"message": "boom"})),
        _test("a"),
        _test("g", "xpassed"),
        _test("h", setup=_stage(longrepr="")),
        _test("i", "rerun", call=_stage("failed")),
        _test("j"),
        _test('\u00e9"\\'),
        _test("k", setup=_stage(duration=9007199254740992.0)),  # past what a record keeps
        _test("l", setup=_stage(duration=4e15), call=_stage(duration=5e15)),
    ]
    for window in WINDOWS:
        data = json.dumps({"summary": {}, "tests": tests}).encode()
        same(data, "pytest-json", window)
        collected = {"collectors": [{"nodeid": "m", "outcome": "failed"}], "tests": tests}
        same(json.dumps(collected).encode(), "pytest-json", window)


def test_json_refusal_after_plain_tests_matches() -> None:
    good = ", ".join(json.dumps(_test(f"t{i}")) for i in range(5))
    for bad in ('{"nodeid": 1}', '{"nodeid": "x", "outcome": "passed", "a": 1, "a": 2}', "nan"):
        data = f'{{"tests": [{good}, {bad}]}}'.encode()
        assert same(data, "pytest-json")[0] == "error"
        assert same(data, "pytest-json", 2)[0] == "error"


# -- generated reports ------------------------------------------------------------------

_NAMES = st.sampled_from(["a", "b", "c", "d", "a b", "x\u00e9", 'q"', "t\\", "classMethod", ""])


@st.composite
def _junit_docs(draw: st.DrawFn) -> bytes:
    cases = []
    for _ in range(draw(st.integers(0, 25))):
        name = draw(_NAMES).replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")
        # Classnames the plain-pass lane keeps and those it must not (quote,
        # backslash, non-ASCII, a tab or DEL from a character reference).
        cls = draw(
            st.sampled_from(
                [None, "C", " C ", "", "D.E", "Q&quot;", "B\\", "é", "T&#9;", "T&#9;x", "D&#127;"]
            )
        )
        attrs = f' name="{name}"' if draw(st.integers(0, 20)) else ""
        attrs += "" if cls is None else f' classname="{cls}"'
        time = draw(st.sampled_from([None, "0.1", "1", "x", "-1", "0.25", "9007199254740993"]))
        attrs += "" if time is None else f' time="{time}"'
        status = draw(st.sampled_from([None, None, None, "run", "skipped", "weird"]))
        attrs += "" if status is None else f' status="{status}"'
        kind = draw(st.sampled_from(["plain", "plain", "plain", "failure", "skipped", "flaky"]))
        if kind == "plain":
            cases.append(f"<testcase{attrs}/>")
        elif kind == "flaky":
            cases.append(f'<testcase{attrs}><flakyFailure message="m"/></testcase>')
        else:
            cases.append(f'<testcase{attrs}><{kind} message="m">x</{kind}></testcase>')
    suite = draw(
        st.sampled_from(['<testsuite name="s">', "<testsuite>", '<testsuite name="pytest">'])
    )
    return f"<testsuites>{suite}{''.join(cases)}</testsuite></testsuites>".encode()


@st.composite
def _tap_docs(draw: st.DrawFn) -> bytes:
    rows = []
    number = 0
    for _ in range(draw(st.integers(0, 30))):
        kind = draw(
            st.sampled_from(
                ["ok", "ok", "ok", "ok", "not", "skip", "yaml", "comment", "bail", "sub"]
            )
        )
        number += 1
        desc = draw(_NAMES)
        shown = draw(st.sampled_from([number, number, number, number + 1, 1]))
        if kind == "ok":
            rows.append(f"ok {shown} - {desc}")
        elif kind == "not":
            rows.append(f"not ok {shown} - {desc}")
        elif kind == "skip":
            rows.append(f"ok {shown} - {desc} # SKIP why")
        elif kind == "yaml":
            rows += [f"not ok {shown} - {desc}", "  ---", "  duration_ms: 5", "  a: b", "  ..."]
        elif kind == "comment":
            number -= 1
            rows.append("# note")
        elif kind == "bail":
            number -= 1
            rows.append("Bail out! stop")
        else:
            rows += ["# Subtest: s", "    1..1", "    ok 1 - inner", f"ok {shown} - s"]
    plan = draw(st.sampled_from(["first", "last", "none"]))
    text = "\n".join(rows) + ("\n" if rows else "")
    if plan == "first":
        text = f"1..{number}\n" + text
    elif plan == "last":
        text += f"1..{number}\n"
    return ("TAP version 14\n" + text).encode()


@st.composite
def _json_docs(draw: st.DrawFn) -> bytes:
    tests = []
    for _ in range(draw(st.integers(0, 25))):
        outcome = draw(
            st.sampled_from(["passed", "passed", "passed", "failed", "skipped", "rerun"])
        )
        test = _test(draw(_NAMES) or "n", outcome)
        if draw(st.integers(0, 5)) == 0:
            test["call"] = _stage(draw(st.sampled_from(["passed", "failed", "weird"])))
        if draw(st.integers(0, 8)) == 0:
            del test["teardown"]
        if draw(st.integers(0, 3)) == 0:  # durations the plain-pass lane must hand on
            duration = draw(st.one_of(st.floats(allow_nan=False), st.integers(-2, 2), st.none()))
            test["setup"] = _stage(duration=duration)
        tests.append(test)
    summary = {"rerun": 1} if draw(st.booleans()) else {}
    return json.dumps({"summary": summary, "tests": tests}).encode()


_SETTINGS = settings(max_examples=150, database=None)


@_SETTINGS
@given(doc=_junit_docs(), window=st.sampled_from(WINDOWS))
def test_generated_junit(doc: bytes, window: int | None) -> None:
    same(doc, "junit", window)


@_SETTINGS
@given(doc=_tap_docs(), window=st.sampled_from(WINDOWS))
def test_generated_tap(doc: bytes, window: int | None) -> None:
    same(doc, "tap", window)


@_SETTINGS
@given(doc=_json_docs(), window=st.sampled_from(WINDOWS))
def test_generated_pytest_json(doc: bytes, window: int | None) -> None:
    same(doc, "pytest-json", window)


@_SETTINGS
@given(data=st.data())
def test_mutated_reports(data: st.DataObject) -> None:
    fmt = data.draw(st.sampled_from(["junit", "tap", "pytest-json"]))
    seed = data.draw({"junit": _junit_docs(), "tap": _tap_docs(), "pytest-json": _json_docs()}[fmt])
    at = data.draw(st.integers(0, len(seed)))
    cut = data.draw(st.integers(0, 8))
    junk = data.draw(st.binary(max_size=8))
    same(seed[:at] + junk + seed[at + cut :], "auto", data.draw(st.sampled_from(WINDOWS)))


def test_large_reports_cross_chunks() -> None:
    # Several read chunks, runs split across them, repeats far apart.
    tap = "".join(f"ok {i} - test number {i % 40000}\n" for i in range(1, 50001))
    same(f"TAP version 14\n1..50000\n{tap}".encode(), "tap")
    junit = "".join(
        f'<testcase classname="C{i % 7}" name="n{i}" time="0.{i % 9}"/>' for i in range(30000)
    )
    same(f'<testsuite name="s">{junit}<testcase name="n5"/></testsuite>'.encode(), "junit")
    same(f'<testsuite name="s">{junit}</testsuite>'.encode(), "junit", 40000)


def test_flagged_id_repeating_far_apart_continues_on_both_paths() -> None:
    # "a" is flagged (two points), leaves the window, then comes back: a flagged
    # id may repeat at any distance; the fast lane must not claim it as new.
    rows = ["ok 1 - a", "ok 2 - a"] + [f"ok {i} - t{i}" for i in range(3, 12)] + ["ok 12 - a"]
    rows += [f"ok {i} - u{i}" for i in range(13, 20)]
    data = _tap(["\n".join(rows) + "\n"], tail="1..19\n")
    for window in (1, 2, 3, None):
        kind, out = same(data, "tap", window)
        assert kind == "ok"
        assert isinstance(out, bytes)
        got = [json.loads(r) for r in out.splitlines() if b'"test_id":"a"' in r]
        assert [(r["attempt"], r["flags"]) for r in got] == [
            (1, ["conflicting-duplicate"]),
            (2, ["conflicting-duplicate"]),
            (3, ["conflicting-duplicate"]),
        ]


def test_repeat_of_a_plain_id_inside_a_later_block_is_refused() -> None:
    rows = [f"ok {i} - t{i}" for i in range(1, 30)] + ["ok 30 - t1"]
    rows += [f"ok {i} - v{i}" for i in range(31, 40)]
    data = _tap(["\n".join(rows) + "\n"], tail="1..39\n")
    assert same(data, "tap", 3)[0] == "error"
    assert same(data, "tap", 40)[0] == "ok"


def test_overlong_unfinished_last_line() -> None:
    data = b"1..1\nok 1 - a\n" + b"x" * 100
    got = same(data, "tap", limits=flakecore_adapters.Limits(max_line_bytes=50))
    assert got[0] == "error"
    assert same(b"1..1\nok 1 - a\n", "tap", limits=flakecore_adapters.Limits(max_line_bytes=12))


def test_many_distinct_classnames_times_and_suites() -> None:
    # Past every rendering cache's size (they are bounded).
    suites = "".join(
        f'<testsuite name="s{s}">'
        + "".join(
            f'<testcase classname="C{s}.{i}" name="n{i}" time="{s}.{i:04d}"/>' for i in range(60)
        )
        + "</testsuite>"
        for s in range(90)
    )
    same(f"<testsuites>{suites}</testsuites>".encode(), "junit")


def test_long_pytest_json_batches() -> None:
    tests = [_test(f"t{i}") for i in range(1500)] + [_test("t7")] + [_test("z")]
    same(json.dumps({"tests": tests}).encode(), "pytest-json")
    same(json.dumps({"tests": tests}).encode(), "pytest-json", 2000)


# -- TAP: the lanes against the line state machine on hostile streams ---------------

_TAP_DESCS = st.sampled_from(
    [
        "a",
        "b",
        "a",  # a repeat
        "t x[1-2]",
        "a # b",  # '#' without a directive
        "a#SKIP",
        "a \\# SKIP",
        "a \\\\# SKIP",
        "back\\\\slash",
        'q"uote',
        "tab\there",
        "del\x7f",
        "us\x1f",
        "vt\x0bx",
        "ok 3 - x",
        " lead",
        "trail ",
        "-  dash",
        "- dash",
        "\u00e9t\u00e9",
        "x {",
        "{",
        "}",
        "",
    ]
)
_TAP_TAILS = st.sampled_from(
    [
        "",
        "",
        "",
        " # SKIP",
        " # skip why",
        " # TODO",
        " # todo: later",
        " # time=12.5ms",
        " # time=2s",
        " # timeout after 5s",
        " # other",
        " {",
    ]
)
_YAML_LINES = st.sampled_from(
    [
        "duration_ms: 7",
        "exitCode: 1",
        "exitCode: 0",
        "failureType: testTimeoutFailure",
        "failureType: 'hookFailed'",
        "timeout_sec: 3",
        "message: |",
        "  deep line",
        "",
        "   ",
    ]
)


@st.composite
def _tap_hostile(draw: st.DrawFn) -> tuple[bytes, int | None]:
    """A TAP stream of hostile lines (at any indent) and a read chunk size for it."""
    rows: list[str] = []
    number = 0
    for _ in range(draw(st.integers(0, 40))):
        indent = draw(st.sampled_from(["", "", "", "", "    ", "    ", "        ", "  "]))
        kind = draw(
            st.sampled_from(
                ["ok"] * 8
                + ["not", "yaml", "yaml", "plan", "comment", "subtest", "brace", "close", "bail"]
                + ["blank", "junk", "pragma", "version", "open", "parent"]
            )
        )
        number += 1
        shown = draw(st.sampled_from([str(number)] * 4 + [str(number + 1), "0" + str(number), ""]))
        word = "ok" if kind != "not" and draw(st.integers(0, 5)) else "not ok"
        point = f"{word} {shown} - {draw(_TAP_DESCS)}{draw(_TAP_TAILS)}".replace("  - ", " - ")
        if kind in ("ok", "not"):
            rows.append(indent + point)
        elif kind == "parent":  # node-tap's brace subtest: the "{" alone after its parent
            rows += [indent + point, indent + "{"]
        elif kind == "yaml":
            rows.append(indent + point)
            rows.append(indent + "  ---")
            rows += [indent + "  " + line for line in draw(st.lists(_YAML_LINES, max_size=4))]
            ending = draw(st.sampled_from(["  ...", "  ...", "  ...  ", "", "ok 99 - cut"]))
            rows.append(indent + ending)
        elif kind == "plan":
            count = draw(st.sampled_from([number - 1, number, 0, 3]))
            rows.append(f"{indent}1..{max(count, 0)}" + draw(st.sampled_from(["", " # SKIP x"])))
            number -= 1
        else:
            number -= 1
            rows.append(
                indent
                + {
                    "comment": "# note",
                    "subtest": draw(st.sampled_from(["# Subtest: s", "# Subtest", "# Subtest: a"])),
                    "brace": "{",
                    "close": "}",
                    "bail": "Bail out! stop",
                    "blank": "",
                    "junk": "what is this",
                    "pragma": draw(st.sampled_from(["pragma +strict", "pragma -strict"])),
                    "version": "TAP version 13",
                    "open": "ok 7 - parent {",
                }[kind]
            )
    newline = draw(st.sampled_from(["\n", "\n", "\r\n"]))
    cut = draw(st.integers(0, 4)) == 0  # the last line without its newline
    text = newline.join(rows) + ("" if cut or not rows else newline)
    head = draw(st.sampled_from(["TAP version 14\n", "", f"TAP version 14\n1..{number}\n"]))
    chunk = draw(st.sampled_from([None, 1, 2, 3, 7, 16, 64]))
    return (head + text).encode(), chunk


@contextmanager
def _reads_of(size: int | None) -> Iterator[None]:
    """TAP read in chunks of ``size`` bytes (None: the default chunk)."""
    names = vars(tap_module)
    saved = names["CHUNK"]
    names["CHUNK"] = saved if size is None else size
    try:
        yield
    finally:
        names["CHUNK"] = saved


@_SETTINGS
@given(
    doc=_tap_hostile(),
    window=st.sampled_from(WINDOWS),
    message=st.sampled_from([None, None, 1, 3, 10]),  # YAML kept up to 4x this
)
def test_hostile_tap_same_on_both_paths(
    doc: tuple[bytes, int | None], window: int | None, message: int | None
) -> None:
    """Every answer of the text lanes is the line state machine's, wherever a read ends."""
    data, chunk = doc
    limits = flakecore_adapters.Limits(
        reorder_window=window or flakecore_adapters.DEFAULT_LIMITS.reorder_window,
        max_message_chars=message or flakecore_adapters.DEFAULT_LIMITS.max_message_chars,
    )
    with _reads_of(chunk):
        same(data, "tap", limits=limits)


def test_yaml_block_cut_at_the_start_of_a_read_chunk() -> None:
    # The YAML lane looks back at the newline before a line: a block cut by the
    # first line of a chunk used to swallow that line on the text path.
    with _reads_of(1):
        kind, out = same(b"1..2\nnot ok 1 - a\n  ---\n  x: 1\nok 2 - b\n", "tap")
    assert kind == "ok"
    assert isinstance(out, bytes)
    assert b'"test_id":"b"' in out


# -- generators that reach the fast lanes ----------------------------------------------
# The strategies above are mostly the slow paths: the TAP lane wants runs of
# consecutively numbered plain points, JUnit's wants childless testcases at a
# suite's child depth, pytest-json's check shortcut wants tests with and without
# escapes.  These build such inputs on purpose and end them in every way.

#: How often a generated id is an odd one (1 in n; 0: never).
_ODDS = st.sampled_from([0, 0, 3, 10, 40])


def _odd(draw: st.DrawFn, odds: int, odd: st.SearchStrategy[str], usual: str) -> str:
    """``usual``, or one time in ``odds`` an odd value (an id seen a little before, or ``odd``)."""
    if not odds or draw(st.integers(0, odds - 1)):
        return usual
    return draw(st.one_of(odd, st.just(usual[:-1] or usual)))


#: Descriptions that end a plain run or that it must refuse (ids: a repeat, a pseudo-id).
_RUN_ODD = st.sampled_from(
    [
        "a",
        "a b",
        "x}",
        "-x",
        "- y",
        "d -",
        "ok 3 - z",
        "<plan>",
        "a\tb",
        "tail ",
        "a \\# b",
        "e\\",
        'q"',
        "br {",
        "del\x7f",
        "\u00e9",
        "nel\x85",
        "a  b",
        "~|}",
    ]
)
#: What a run ends in (``{n}``: the next test number; several lines joined by "\n").
_RUN_ENDS = st.sampled_from(
    [
        "not ok {n} - f",
        "# comment",
        "    # indented comment",
        "ok {n} - s # SKIP why",
        "ok {n} - s # skip",
        "not ok {n} - t # TODO later",
        "ok {n} - t # TODO",
        "ok {n} - d # time=5ms",
        "  ---\n  duration_ms: 5\n  ...",
        "  ---\n  exitCode: 1\n  ...",
        "  ---\n  duration_ms: 5",  # never closed
        "{\n    1..1\n    not ok 1 - child\n}",
        "{\n    1..1\n    ok 1 - child\n}",
        "{",
        "ok {n} - parent {{\n    1..1\n    not ok 1 - c\n}}",
        "    1..1\n    not ok 1 - sub",
        "# Subtest: s\n    1..1\n    ok 1 - inner",
        "Bail out! stop",
        "1..{n}",
        "1..0",
        "",
        "   ",
        "\t",
        "junk",
        "pragma +strict",
        "}",
        "ok {n}",
        "ok {n} -",
        "ok {n} - \\# x",
        "ok 0{n} - lead",
        "ok {n} - x\r",
    ]
)


@st.composite
def _tap_runs(draw: st.DrawFn) -> tuple[bytes, int | None]:
    """Runs of consecutive plain points, each ended by one kind of line; a read chunk size."""
    rows: list[str] = []
    number = 0
    odd = draw(_ODDS)
    head = draw(st.sampled_from(["TAP version 14", "", "1..{total}", "TAP version 13\n1..3"]))
    for _ in range(draw(st.integers(1, 6))):
        for _ in range(draw(st.one_of(st.integers(1, 8), st.integers(20, 120)))):
            number += 1
            shown = number if draw(st.integers(0, 30)) else number + draw(st.sampled_from([-1, 1]))
            rows.append(f"ok {shown} - {_odd(draw, odd, _RUN_ODD, f't{number}')}")
        end = draw(_RUN_ENDS).replace("{n}", str(number + 1))
        if end.startswith(("ok ", "not ok ")) or "parent" in end:
            number += 1
        rows.append(end.replace("{{", "{").replace("}}", "}"))
    newline = draw(st.sampled_from(["\n", "\n", "\n", "\r\n"]))
    text = newline.join(rows) + newline
    if draw(st.integers(0, 5)) == 0:
        text = text[: -len(newline)]  # cut: the last line without its newline
    if head:
        text = head.replace("{total}", str(number)) + "\n" + text
    chunk = draw(st.sampled_from([None, None, 5, 16, 17, 64, 100, 1000]))
    return text.encode("utf-8"), chunk


@_SETTINGS
@given(doc=_tap_runs(), window=st.sampled_from(WINDOWS))
def test_tap_runs_same_on_both_paths(doc: tuple[bytes, int | None], window: int | None) -> None:
    data, chunk = doc
    with _reads_of(chunk):
        want, got = objects(data, "tap", window), lines(data, "tap", window)
    if want[0] == got[0] == "error":
        # Both refuse, by the same type; a report with two defects (a far repeat and no
        # plan) may be refused for either one first.
        assert got[1][0] == want[1][0], (got, want)
    else:
        assert got == want


_XML_NAMES = st.sampled_from(
    ["a", "b", "a", "n x", "q&quot;", "b\\s", "\u00e9", "c&#127;", "d&#133;", "e&#9;", "", " "]
)
_XML_CLASSES = st.sampled_from(
    ["C", "D.E", " C", "C ", "", "Q&quot;", "B\\", "\u00e9", "T&#9;x", "x&#127;"]
)
_XML_TIMES = st.sampled_from(
    [None, "0.5", "1", "1e3", "nan", "NaN", "-0", "inf", "-inf", "1e400", "9" * 30, " 2", "1,5"]
)


@st.composite
def _junit_case(draw: st.DrawFn, serial: int, odds: int) -> str:
    name = _odd(draw, odds, _XML_NAMES, f"t{serial}")
    attrs = [f'name="{name}"'] if not odds or draw(st.integers(0, 60)) else []
    cls = _odd(draw, odds, _XML_CLASSES, "C") if not odds or draw(st.integers(0, 20)) else None
    if cls is not None:
        attrs.append(f'classname="{cls}"')
    time = draw(_XML_TIMES)
    if time is not None:
        attrs.append(f'time="{time}"')
    extra = draw(
        st.sampled_from([""] * 6 + [' status="run"', ' status="skipped"', ' xmlns=""', ' file="f"'])
    )
    draw(st.randoms()).shuffle(attrs)
    body = draw(
        st.sampled_from(
            ["/>"] * 8
            + [
                "></testcase>",
                "><system-out>o</system-out></testcase>",
                "><properties><property name='a' value='b'/></properties></testcase>",
                "><skipped/></testcase>",
                '><failure message="m">x</failure></testcase>',
                "><error/></testcase>",
                '><flakyFailure message="m"/></testcase>',
            ]
            + (
                ["><system-out><failure/></system-out></testcase>", "><testcase/></testcase>"]
                if not draw(st.integers(0, 20))
                else []
            )
        )
    )
    return f"<testcase {' '.join(attrs)}{extra}{body}"


@st.composite
def _junit_lanes(draw: st.DrawFn) -> bytes:
    """Runs of childless testcases in (nested) suites, among every other kind of testcase."""
    serial = 0
    odds = draw(_ODDS)

    def suite(depth: int) -> str:
        nonlocal serial
        parts = []
        for _ in range(draw(st.integers(0, 4))):
            if depth < 3 and draw(st.integers(0, 4)) == 0:
                parts.append(suite(depth + 1))
                continue
            for _ in range(draw(st.integers(1, 12))):
                serial += 1
                parts.append(draw(_junit_case(serial, odds)))
        name = draw(st.sampled_from(['name="s"', 'name="pytest"', "", 'name="s&#233;"']))
        return f"<testsuite {name}>{''.join(parts)}</testsuite>"

    root = draw(st.sampled_from(["testsuites"] * 4 + ["testsuite"] * 3 + ["ns"]))
    body = "".join(suite(1) for _ in range(draw(st.integers(1, 3))))
    if root == "testsuite":
        return (
            body.encode()
            if body.count("<testsuite ") == 1
            else f"<testsuites>{body}</testsuites>".encode()
        )
    if root == "ns":
        return f'<testsuites xmlns="urn:x">{body}</testsuites>'.encode()
    stray = draw(st.sampled_from(["", "", "", "", "<testcase name='stray'/>", "<failure/>"]))
    return f"<testsuites>{body}{stray}</testsuites>".encode()


@_SETTINGS
@given(doc=_junit_lanes(), window=st.sampled_from(WINDOWS))
def test_junit_lanes_same_on_both_paths(doc: bytes, window: int | None) -> None:
    same(doc, "junit", window)


_JSON_ODD = st.sampled_from(
    [
        "a/b.py::c",
        "t.py::\u00e9",
        't.py::q"',
        "t.py::b\\s",
        "t.py::del\x7f",
        "t.py::nel\x85",
        "t.py::c\x01",
        "t.py::tab\t",
        " ",
        "t.py::\ud800",
        "t.py::\u2028",
        "t.py::\u00ad",
    ]
)


@st.composite
def _json_lanes(draw: st.DrawFn) -> bytes:
    """Runs of plain passes among other tests, each test's JSON text with or without escapes."""
    texts = []
    odds = draw(_ODDS)
    for serial in range(draw(st.integers(0, 40))):
        test = _test(_odd(draw, odds, _JSON_ODD, f"t.py::t{serial}"))
        if draw(st.integers(0, 4)) == 0:
            test["outcome"] = draw(st.sampled_from(["failed", "skipped", "rerun", "xfailed"]))
            test["call"] = _stage(draw(st.sampled_from(["passed", "failed"])))
        if draw(st.integers(0, 6)) == 0:
            test["setup"] = _stage(duration=draw(st.sampled_from([0, -1.0, 1e308, None, "x"])))
        text = json.dumps(test, ensure_ascii=draw(st.booleans()))
        if draw(st.integers(0, 5)) == 0:
            text = text.replace("/", "\\/")  # an escape that changes nothing
        texts.append(text)
    return ('{"summary": {}, "tests": [' + ", ".join(texts) + "]}").encode("utf-8", "surrogatepass")


@_SETTINGS
@given(doc=_json_lanes(), window=st.sampled_from(WINDOWS))
def test_json_lanes_same_on_both_paths(doc: bytes, window: int | None) -> None:
    same(doc, "pytest-json", window)
