"""pytest-json-report and pytest-reportlog: mapping, reruns, strictness."""

from __future__ import annotations

import io
import json
from collections.abc import Mapping, Sequence
from typing import Any

import flakecore_adapters
import pytest

from flakecore.codes import AttemptFlag
from flakecore.errors import InputError
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


def report(tests: Sequence[object], **top: object) -> bytes:
    doc: dict[str, object] = {"created": 1.0, "summary": {}, "collectors": [], "tests": list(tests)}
    doc.update(top)
    return json.dumps(doc).encode()


def case(nodeid: str, outcome: str, **stages: str) -> dict[str, object]:
    body: dict[str, object] = {"nodeid": nodeid, "outcome": outcome}
    for name in ("setup", "call", "teardown"):
        if name in stages:
            body[name] = {"outcome": stages[name], "duration": 0.25}
    return body


PASSED = {"setup": "passed", "call": "passed", "teardown": "passed"}


def test_pytest_json_mapping() -> None:
    data = report(
        [
            case("t::p", "passed", **PASSED),
            case("t::f", "failed", setup="passed", call="failed", teardown="passed"),
            case("t::e", "error", setup="failed", teardown="passed"),
            case("t::s", "skipped", setup="skipped", teardown="passed"),
            case("t::xf", "xfailed", setup="passed", call="skipped", teardown="passed"),
            case("t::xp", "xpassed", **PASSED),
            case("t::lie", "passed", setup="passed", call="failed", teardown="passed"),
        ]
    )
    attempts = run(data)
    assert summary(attempts) == [
        ("t::p", "pass", 1, []),
        ("t::f", "fail", 1, []),
        ("t::e", "error", 1, []),
        ("t::s", "skip", 1, []),
        ("t::xf", "skip", 1, []),
        ("t::xp", "pass", 1, ["unexpected-pass"]),
        ("t::lie", "error", 1, []),
    ]
    assert attempts[0].duration_s == 0.75
    assert [a.native for a in attempts[3:6]] == ["skipped", "xfailed", "xpassed"]


def test_pytest_json_rerun_and_collector_errors() -> None:
    data = report(
        [case("t::flaky", "rerun", **PASSED)],
        collectors=[
            {"nodeid": "", "outcome": "passed", "result": []},
            {
                "nodeid": "t/broken.py",
                "outcome": "failed",
                "longrepr": "ImportError: x",
                "result": [],
            },
        ],
    )
    attempts = run(data)
    incomplete = [AttemptFlag.INCOMPLETE_HISTORY.value]
    assert summary(attempts) == [
        ("t/broken.py", "error", 1, []),
        ("t::flaky", "fail", 1, incomplete),
        ("t::flaky", "pass", 2, incomplete),
    ]
    assert attempts[0].message == "ImportError: x"


@pytest.mark.parametrize(
    ("data", "error"),
    [
        (b"[]", "must be an object"),
        (b'{"tests": [1]}', "not an object"),
        (
            b'{"tests": [{"nodeid": "a", "outcome": "passed", "outcome": "failed"}]}',
            "duplicate key",
        ),
        (b'{"tests": [], "tests": []}', "duplicate key"),
        (b'{"tests": [{"nodeid": "a", "outcome": "passed", "duration": NaN}]}', "NaN"),
        (b'{"tests": [{"nodeid": "a", "outcome": "passed", "x": Infinity}]}', "Infinity"),
        (b'{"tests": [{"nodeid": "a", "outcome": "passed"}', "end of input"),
        (b'{"tests": []} trailing', "trailing"),
        (b'{"summary": {}}', 'no \\"tests\\"'),
        (b'{"tests": {}}', "array"),
        (b'{"tests": [{"outcome": "passed"}]}', "nodeid"),
        (b'\xef\xbb\xbf{"tests": []}', "byte-order"),
        (b'{"tests": [{"nodeid": "\xff", "outcome": "passed"}]}', "UTF-8"),
        (b'{"tests": [{"nodeid": "\\ud800", "outcome": "passed"}]}', "surrogate"),
        (b'{"tests": [{"nodeid": "t.py::a\\u0000b", "outcome": "passed"}]}', "U\\+0000"),
        (b'{"tests": [{"nodeid": "t.py::a\\nb", "outcome": "passed"}]}', "U\\+000A"),
        (b'{"tests": [{"nodeid": "t.py::a\\u007f", "outcome": "passed"}]}', "U\\+007F"),
        (b'{"tests": [{"nodeid": " ", "outcome": "passed"}]}', "blank test id"),
        # DEL and C1 stand raw in strict JSON (only U+0000-U+001F must be escaped)
        (b'{"tests": [{"nodeid": "t.py::a\x7f", "outcome": "passed"}]}', "U\\+007F"),
        (b'{"tests": [{"nodeid": "t.py::a\xc2\x85", "outcome": "failed"}]}', "U\\+0085"),
        (
            b'{"tests": [{"nodeid": "t.py::\xc2\x9b", "outcome": "passed", '
            b'"setup": {"outcome": "passed", "duration": 0.1}, '
            b'"call": {"outcome": "passed", "duration": 0.1}, '
            b'"teardown": {"outcome": "passed", "duration": 0.1}}]}',
            "U\\+009B",
        ),
    ],
)
def test_pytest_json_refusals(data: bytes, error: str) -> None:
    with pytest.raises(InputError, match=error) as info:
        run(data, "pytest-json")
    assert info.value.source == "r"


def test_pytest_json_error_position() -> None:
    data = b'{\n"tests": [\n{"nodeid": "a", "outcome": "passed"},\n{"nodeid": "b", "outcome": "passed", "outcome": 1}\n]}'
    with pytest.raises(InputError) as info:
        run(data, "pytest-json")
    assert info.value.line == 4


def test_pytest_json_streams_across_chunks() -> None:
    tests = [case(f"t::n{i}" + "x" * 500, "passed", **PASSED) for i in range(3000)]
    attempts = run(report(tests, summary={"passed": 3000}))
    assert len(attempts) == 3000
    assert attempts[-1].test_id.startswith("t::n2999")


def lines(*objs: Mapping[str, object]) -> bytes:
    return b"".join(json.dumps(o).encode() + b"\n" for o in objs)


START = {"pytest_version": "9", "$report_type": "SessionStart"}
FINISH = {"exitstatus": 0, "$report_type": "SessionFinish"}


def rep(nodeid: str, when: str, outcome: str, **extra: object) -> dict[str, object]:
    return {
        "nodeid": nodeid,
        "when": when,
        "outcome": outcome,
        "duration": 0.1,
        "$report_type": "TestReport",
        **extra,
    }


def phases(nodeid: str, call: str, **extra: object) -> list[dict[str, object]]:
    return [
        rep(nodeid, "setup", "passed"),
        rep(nodeid, "call", call, **extra),
        rep(nodeid, "teardown", "passed"),
    ]


def test_reportlog_reruns_are_attempts() -> None:
    data = lines(
        START,
        *phases("t::flaky", "rerun"),
        *phases("t::flaky", "passed"),
        rep("t::setup", "setup", "rerun"),
        rep("t::setup", "teardown", "passed"),
        rep("t::setup", "setup", "failed"),
        rep("t::setup", "teardown", "passed"),
        *phases("t::xp", "passed", wasxfail="bug"),
        *phases("t::xf", "skipped", wasxfail="bug"),
        rep("t::td", "setup", "passed"),
        rep("t::td", "call", "passed"),
        rep("t::td", "teardown", "failed"),
        {
            "nodeid": "t/bad.py",
            "outcome": "failed",
            "longrepr": "boom",
            "$report_type": "CollectReport",
        },
        FINISH,
    )
    attempts = run(data)
    assert summary(attempts) == [
        ("t::flaky", "fail", 1, []),
        ("t::flaky", "pass", 2, []),
        ("t::setup", "error", 1, []),
        ("t::setup", "error", 2, []),
        ("t::xp", "pass", 1, ["unexpected-pass"]),
        ("t::xf", "skip", 1, []),
        ("t::td", "error", 1, []),
        ("t/bad.py", "error", 1, []),
    ]
    assert attempts[0].native == "rerun"


def test_reportlog_repeated_final_attempts_are_flagged() -> None:
    data = lines(START, *phases("t::a", "passed"), *phases("t::a", "failed"), FINISH)
    assert summary(run(data)) == [
        ("t::a", "pass", 1, ["conflicting-duplicate"]),
        ("t::a", "fail", 2, ["conflicting-duplicate"]),
    ]


def test_reportlog_unfinished_run() -> None:
    data = lines(START, *phases("t::a", "passed"), rep("t::b", "setup", "passed"))
    assert summary(run(data)) == [
        ("t::a", "pass", 1, []),
        ("t::b", "error", 1, []),
        ("<session>", "error", 1, []),
    ]


@pytest.mark.parametrize(
    ("data", "error"),
    [
        (
            b'{"$report_type": "SessionStart"}\n{"a": 1, "a": 2, "$report_type": "TestReport"}\n',
            "duplicate",
        ),
        (b'{"$report_type": "SessionStart"}\n[1]\n', "object"),
        (b'{"$report_type": "SessionStart"}\n{"x": NaN, "$report_type": "X"}\n', "NaN"),
        (b'{"$report_type": "SessionStart"}\n\n', "JSON"),
        (
            b'{"$report_type": "SessionStart"}\n{"nodeid": "a", "when": "later", "outcome": "passed", "$report_type": "TestReport"}\n',
            "when",
        ),
        (
            b'{"$report_type": "SessionFinish"}\n{"$report_type": "SessionStart"}\n',
            "after SessionFinish",
        ),
        (
            b'{"$report_type": "SessionStart"}\n{"nodeid": "a\\u0000", "when": "setup", "outcome": "passed", "$report_type": "TestReport"}\n',
            "U\\+0000",
        ),
        (
            b'{"$report_type": "SessionStart"}\n{"nodeid": "a\\t", "outcome": "failed", "longrepr": "x", "result": [], "$report_type": "CollectReport"}\n',
            "control character",
        ),
    ],
)
def test_reportlog_refusals(data: bytes, error: str) -> None:
    with pytest.raises(InputError, match=error) as info:
        run(data, "pytest-reportlog")
    assert info.value.line == 2


@pytest.mark.parametrize("before", ["", "a\\\\b"], ids=["no escape before", "an escape before"])
def test_pytest_json_control_in_a_nodeid_far_into_the_report(before: str) -> None:
    """The nodeid check runs only for tests whose JSON text has an escape: across chunks too."""
    tests = [{"nodeid": "t.py::first" + before, "outcome": "passed"}]
    tests += [{"nodeid": f"t.py::ok{i}", "outcome": "passed"} for i in range(20_000)]  # > a chunk
    tests.append({"nodeid": "t.py::bad\u0001", "outcome": "passed"})
    data = json.dumps({"tests": tests}).encode()
    for reader in (flakecore_adapters.iter_attempts, flakecore_adapters.iter_jsonl):
        with pytest.raises(InputError, match="U\\+0001"):
            list(reader(io.BytesIO(data), format="pytest-json"))
