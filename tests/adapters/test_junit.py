"""JUnit XML: outcome mapping, reruns, duplicates and hostile documents."""

from __future__ import annotations

import io
from itertools import pairwise
from typing import Any

import flakecore_adapters
import pytest
from flakecore_adapters import junit
from flakecore_adapters._limits import Limits
from hypothesis import given, settings
from hypothesis import strategies as st

from flakecore.errors import InputError, LimitError
from flakecore.evidence import Attempt


def run(data: bytes, fmt: str = "auto", **kwargs: Any) -> list[Attempt]:
    """All attempts of ``data`` read as format ``fmt``."""
    stream = io.BytesIO(data)
    return list(flakecore_adapters.iter_attempts(stream, format=fmt, source_name="r", **kwargs))


def summary(attempts: list[Attempt]) -> list[tuple[str, str, int, list[str]]]:
    """``(test_id, outcome, attempt, sorted flags)`` per attempt, for exact asserts."""
    return [
        (a.test_id, a.outcome.value, a.attempt, sorted(f.value for f in a.flags)) for a in attempts
    ]


SUITE = b'<testsuite name="s">%s</testsuite>'


def suite(body: bytes) -> bytes:
    return SUITE % body


def test_outcome_mapping() -> None:
    data = suite(
        b'<testcase classname="C" name="p" time="0.5"/>'
        b'<testcase classname="C" name="f"><failure message="boom">trace</failure></testcase>'
        b'<testcase classname="C" name="e"><error message="io"/></testcase>'
        b'<testcase classname="C" name="s"><skipped/></testcase>'
        b'<testcase classname=" " name="bare"><system-out>x</system-out></testcase>'
    )
    attempts = run(data)
    assert summary(attempts) == [
        ("C::p", "pass", 1, []),
        ("C::f", "fail", 1, []),
        ("C::e", "error", 1, []),
        ("C::s", "skip", 1, []),
        ("s::bare", "pass", 1, []),  # a blank classname is the suite's
    ]
    assert attempts[0].duration_s == 0.5
    assert attempts[1].message == "boom"
    assert attempts[1].native == "failure"
    assert attempts[0].source.suite == "s"
    assert attempts[0].source.line == 1


def test_surefire_flaky_and_rerun_children_are_attempts_in_order() -> None:
    data = suite(
        b'<testcase classname="C" name="flaky">'
        b'<flakyFailure message="a1"/><flakyError message="a2"/></testcase>'
        b'<testcase classname="C" name="always"><failure message="m1"/>'
        b'<rerunFailure message="m2"/><rerunError message="m3"/></testcase>'
    )
    attempts = run(data)
    assert summary(attempts) == [
        ("C::flaky", "fail", 1, []),
        ("C::flaky", "error", 2, []),
        ("C::flaky", "pass", 3, []),
        ("C::always", "fail", 1, []),
        ("C::always", "fail", 2, []),
        ("C::always", "error", 3, []),
    ]
    assert [a.native for a in attempts[3:]] == ["failure", "rerunFailure", "rerunError"]
    assert [a.message for a in attempts[3:]] == ["m1", "m2", "m3"]


def test_repeated_id_flags_every_attempt_even_when_outcomes_agree() -> None:
    # pytest-rerunfailures: failed reruns are childless (read as passes).
    data = suite(
        b'<testcase classname="C" name="t"/>' * 2
        + b'<testcase classname="C" name="t"><failure/></testcase>'
        + b'<testcase classname="C" name="u"/>'
    )
    assert summary(run(data)) == [
        ("C::t", "pass", 1, ["conflicting-duplicate"]),
        ("C::t", "pass", 2, ["conflicting-duplicate"]),
        ("C::t", "fail", 3, ["conflicting-duplicate"]),
        ("C::u", "pass", 1, []),
    ]


def test_repeat_beyond_the_window_is_refused_not_half_flagged() -> None:
    body = b'<testcase name="t"/>' + b"".join(b'<testcase name="x%d"/>' % i for i in range(10))
    body += b'<testcase name="t"><failure/></testcase>'
    limits = flakecore_adapters.Limits(reorder_window=4)
    with pytest.raises(InputError, match="repeats"):
        list(flakecore_adapters.iter_attempts(io.BytesIO(suite(body)), limits=limits))
    # A big enough window flags both.
    big = flakecore_adapters.Limits(reorder_window=64)
    got = list(flakecore_adapters.iter_attempts(io.BytesIO(suite(body)), limits=big))
    assert [sorted(f.value for f in a.flags) for a in got if a.test_id == "s::t"] == [
        ["conflicting-duplicate"],
        ["conflicting-duplicate"],
    ]


def test_lying_suite_counters_are_ignored() -> None:
    data = (
        b'<testsuites tests="0" failures="0"><testsuite tests="0" failures="0" errors="0">'
        b'<testcase name="a"><failure/></testcase><testcase name="b"/>'
        b"</testsuite></testsuites>"
    )
    assert summary(run(data)) == [("a", "fail", 1, []), ("b", "pass", 1, [])]


def test_nested_suites_and_bazel_style_without_classname() -> None:
    data = (
        b'<testsuites><testsuite name="outer"><testsuite name="inner">'
        b'<testcase name="//pkg:t" status="run"><error message="exited with error code 1"/>'
        b'</testcase></testsuite><testcase name="after"/></testsuite></testsuites>'
    )
    attempts = run(data)
    assert summary(attempts) == [
        ("inner:://pkg:t", "error", 1, []),
        ("outer::after", "pass", 1, []),
    ]
    assert [a.source.suite for a in attempts] == ["inner", "outer"]


def test_ids_fall_back_to_the_enclosing_suite_and_are_never_blank() -> None:
    three = b"".join(
        b'<testsuite name="S%d"><testcase classname="" name="A"/></testsuite>' % n for n in range(3)
    )
    attempts = run(b"<testsuites>" + three + b"</testsuites>")
    assert summary(attempts) == [
        ("S0::A", "pass", 1, []),
        ("S1::A", "pass", 1, []),
        ("S2::A", "pass", 1, []),
    ]
    # Directly under <testsuites> (node) there is no suite: the name alone.
    assert [a.test_id for a in run(b'<testsuites><testcase name="A"/></testsuites>')] == ["A"]
    for blank in (
        b'<testsuite><testcase classname="" name=""/></testsuite>',
        b'<testsuite name=" "><testcase classname=" " name=" "><failure/></testcase></testsuite>',
        b'<testsuites><testcase name="&#9;"/></testsuites>',
    ):
        with pytest.raises(InputError, match="blank test id"):
            run(blank)


def test_namespace_declarations_that_put_no_junit_element_in_a_namespace_are_fine() -> None:
    """Surefire declares xsi on the root; an empty default namespace is no namespace."""
    for attrs in (
        b' xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:noNamespaceSchemaLocation="a.xsd"',
        b' xmlns=""',
    ):
        data = b'<testsuite name="s"%s><testcase classname="c" name="t"><failure/></testcase></testsuite>'
        assert summary(run(data % attrs)) == [("c::t", "fail", 1, [])]


@pytest.mark.parametrize(
    "name",
    [b"a&#10;b", b"a&#9;b", b"a&#13;", b"\xc2\x85x", b"\xc2\x9f"],
    ids=["LF", "TAB", "CR", "NEL", "C1"],
)
def test_control_characters_in_ids_are_refused(name: bytes) -> None:
    for body in (
        b'<testcase classname="C" name="%s"/>' % name,  # the plain-pass lane
        b'<testcase classname="C" name="%s"><failure/></testcase>' % name,
    ):
        with pytest.raises(InputError, match="control character"):
            run(suite(body))


@pytest.mark.parametrize(
    ("time", "expected"),
    [(b"1,5", None), (b"NaN", None), (b"-1", None), (b"inf", None), (b"1_0", None), (b"2.5", 2.5)],
)
def test_durations(time: bytes, expected: float | None) -> None:
    (attempt,) = run(suite(b'<testcase name="t" time="%s"/>' % time))
    assert attempt.duration_s == expected


@pytest.mark.parametrize(
    ("status", "outcome"),
    [(b"run", "pass"), (b"disabled", "skip"), (b"notrun", "skip"), (b"weird", "error")],
)
def test_status_of_childless_testcase(status: bytes, outcome: str) -> None:
    (attempt,) = run(suite(b'<testcase name="t" status="%s"/>' % status))
    assert attempt.outcome.value == outcome


@pytest.mark.parametrize(
    "body",
    [
        b'<testcase name="t"><failure/><skipped/></testcase>',
        b'<testcase name="t"><error/><failure/></testcase>',
    ],
)
def test_contradictory_results_are_errors_never_passes(body: bytes) -> None:
    (attempt,) = run(suite(body))
    assert attempt.outcome.value == "error"


def test_pseudo_tests_are_errors() -> None:
    data = suite(
        b'<testcase classname="C" name="classMethod"><failure/></testcase>'
        b'<testcase classname="x" name="&quot;before all&quot; hook for &quot;a&quot;"><failure/></testcase>'
        b'<testcase classname=" Test execution failure: hooks" name="n"><failure/></testcase>'
        b'<testcase classname="C" name=""><error/></testcase>'
    )
    assert [a.outcome.value for a in run(data)] == ["error"] * 4


def test_suite_level_failure_is_a_pseudo_test() -> None:
    data = b'<testsuite name="S"><failure message="suite setup broke"/><testcase name="t"/></testsuite>'
    assert summary(run(data)) == [("S::<suite>", "fail", 1, []), ("S::t", "pass", 1, [])]


def test_node_todo_semantics() -> None:
    data = suite(
        b'<testcase name="passing todo"><skipped type="todo"/></testcase>'
        b'<testcase name="failing todo"><skipped type="todo"/><failure/></testcase>'
    )
    assert summary(run(data)) == [
        ("s::passing todo", "pass", 1, ["unexpected-pass"]),
        ("s::failing todo", "skip", 1, []),
    ]


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (
            b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;">]>'
            b"<testsuite><testcase name='&lol2;'/></testsuite>",
            "DOCTYPE",
        ),
        (b'<!DOCTYPE t SYSTEM "http://example.invalid/x.dtd"><testsuite/>', "DOCTYPE"),
        (b'<testsuite><testcase name="&xxe;"/></testsuite>', "not well-formed"),
        (b'<?xml version="1.0" encoding="UTF-7"?><testsuite/>', "UTF-7"),
        (b'<?xml version="1.0" encoding="UTF-16"?><testsuite/>', "UTF-16"),
        (b"\xff\xfe<\x00t\x00/\x00>\x00", "UTF-16"),
        (b"\x1f\x8b\x08\x00rest", "gzip"),
        (b"", "empty"),
        (b"   \n", "no element found"),
        (b'<testsuite><testcase name="t"/>', "not well-formed"),
        (b'<testsuite><testcase name="a\x00"/></testsuite>', "NUL"),
        (b'<testsuite><testcase name="t"><Failure/></testcase></testsuite>', "Failure"),
        (
            b'<testsuite><testcase name="t"><x:failure xmlns:x="u"/></testcase></testsuite>',
            "x:failure",
        ),
        (b'<testsuite><TestCase name="t"><failure/></TestCase></testsuite>', "TestCase"),
        (
            b'<testsuite xmlns="urn:x"><testcase name="t"><failure/></testcase></testsuite>',
            "namespace",
        ),
        (
            b'<testsuite><testcase name="t" xmlns="urn:x"><failure/></testcase></testsuite>',
            "namespace",
        ),
        (
            b'<testsuite><testcase name="t"><failure xmlns="urn:x"/></testcase></testsuite>',
            "namespace",
        ),
        (b'<testsuites xmlns="urn:x"><testsuite/></testsuites>', "namespace"),
        (b'<x:testsuite xmlns:x="urn:x"><x:testcase name="t"/></x:testsuite>', "root element"),
        (
            b'<testsuite xmlns:x="u"><x:testcase name="t"><x:failure/></x:testcase></testsuite>',
            "x:testcase",
        ),
        (
            b'<testsuite><testcase name="t"><system-out><failure/></system-out></testcase></testsuite>',
            "nested",
        ),
        (b"<html><body/></html>", "not a JUnit report"),
        (b'<testsuite><testcase classname="c"/></testsuite>', "without a name"),
        (
            b'<testsuite><testcase name="t"><flakyFailure/><rerunFailure/></testcase></testsuite>',
            "mixes",
        ),
        (
            b'<testsuite><testcase name="t"><rerunFailure/></testcase></testsuite>',
            "without a failing",
        ),
    ],
)
def test_hostile_documents_are_refused(data: bytes, match: str) -> None:
    with pytest.raises(InputError, match=match) as info:
        run(data, "junit")
    assert info.value.source == "r"
    assert "\n" not in str(info.value)


def test_billion_laughs_is_refused_before_expansion() -> None:
    ents = b"".join(
        b'<!ENTITY l%d "%s">' % (i, b"&l%d;" % (i - 1) * 10 if i else b"lol") for i in range(10)
    )
    data = b"<!DOCTYPE r [" + ents + b"]><testsuite><testcase name='&l9;'/></testsuite>"
    with pytest.raises(InputError, match="DOCTYPE") as info:
        run(data)
    assert info.value.line == 1


def test_deep_nesting_is_a_limit_error() -> None:
    data = b"<testsuite>" + b"<a>" * 300 + b"</a>" * 300 + b"</testsuite>"
    with pytest.raises(LimitError, match="deeper"):
        run(data)


def test_giant_token_is_refused_without_holding_it() -> None:
    limits = flakecore_adapters.Limits(max_token_bytes=100_000)
    data = b'<testsuite><testcase name="' + b"x" * 1_000_000 + b'"/></testsuite>'
    with pytest.raises(LimitError, match="token"):
        list(flakecore_adapters.iter_attempts(io.BytesIO(data), limits=limits))


def test_truncation_points_at_the_line() -> None:
    data = b'<testsuite>\n<testcase name="a"/>\n<testcase name="b">\n<failure'
    with pytest.raises(InputError) as info:
        run(data)
    assert info.value.line == 4


def test_unexpected_success_keeps_error_and_flags_it() -> None:
    (attempt,) = run(suite(b'<testcase name="t"><error type="UnexpectedSuccess"/></testcase>'))
    assert summary([attempt]) == [("s::t", "error", 1, ["unexpected-pass"])]


def test_message_is_bounded() -> None:
    (attempt,) = run(
        suite(b'<testcase name="t"><failure>' + b"y" * 100_000 + b"</failure></testcase>")
    )
    assert attempt.message is not None
    assert len(attempt.message) == 2000


_WORDS = st.sampled_from(
    [
        "",
        "x",
        "todo",
        "testTimeoutFailure",
        "hookFailed",
        "cancelledByParent",
        "testCodeFailure",
        "UnexpectedSuccess",
        "exitCode: 1",
        "  boom  ",
        "exitCode: 0",
    ]
)
_RESULT_ATTRS = st.dictionaries(st.sampled_from(["type", "message", "time", "other"]), _WORDS)
_RESULTS = st.lists(
    st.tuples(
        st.sampled_from(["failure", "error", "skipped"]),
        _RESULT_ATTRS,
        st.lists(_WORDS, max_size=3),
    ),
    min_size=1,
    max_size=4,
)


@settings(max_examples=400, deadline=None)
@given(
    results=_RESULTS,
    name=st.sampled_from(["t", "classMethod", 'x "before each" hook', "setup_file failed"]),
    classname=st.sampled_from(["C", "Test suite failed to run", ""]),
    time=st.sampled_from([None, "0.5", "x"]),
    limit=st.sampled_from([3, 2000]),
)
def test_final_results_read_directly_match_junitparser(
    results: list[tuple[str, dict[str, str], list[str]]],
    name: str,
    classname: str,
    time: str | None,
    limit: int,
) -> None:
    """The direct read of failure/error/skipped children is junitparser's reading."""
    attrs = {"name": name} if time is None else {"name": name, "time": time}
    children = [[tag, rattrs, parts, 0] for tag, rattrs, parts in results]
    limits = Limits(max_message_chars=limit)
    fast = junit._detailed(attrs, children, name, classname, limits)
    assert fast == junit._through_junitparser(attrs, children, name, classname, limits)


@given(
    st.lists(st.sampled_from(["testsuites", "testsuite", "properties"]), max_size=6),
    st.integers(min_value=1, max_value=8),
    st.booleans(),
)
@settings(max_examples=200, deadline=None)
def test_a_testcase_stands_only_in_a_suite_within_the_depth_limit(
    outer: list[str], max_depth: int, after_suite_failure: bool
) -> None:
    """The one-compare start of a testcase (``case_at``) agrees with the rules it skips.

    A ``<testcase>`` is read exactly when every element around it may hold
    the next one, its parent is a suite and it is within ``max_depth``; any
    other is refused.
    """
    chain = ["testsuites", *outer]
    case = b'<testcase classname="c" name="t"/>'
    if after_suite_failure:
        case = b"<failure/>" + case  # a suite-level result opens and closes first
    body = case
    for name in reversed(chain):
        body = b"<%s>%s</%s>" % (name.encode(), body, name.encode())
    allowed = {"testsuites": ("testsuites",), "testsuite": ("testsuites", "testsuite")}
    fits = all(
        parent in allowed.get(child, ("testsuites", "testsuite"))
        for parent, child in pairwise(chain)
    )
    limits = Limits(max_depth=max_depth)
    if fits and chain[-1] != "properties" and len(chain) + 1 <= max_depth:
        ids = [(a.test_id, a.outcome.value) for a in run(body, "junit", limits=limits)]
        assert ids[-1] == ("c::t", "pass")
    else:
        with pytest.raises(InputError):
            run(body, "junit", limits=limits)
