"""pytest's JUnit under the node id; every other JUnit keeps ``classname::name``."""

from __future__ import annotations

import io
import json
from pathlib import Path

import flakecore_adapters
import pytest


def _xml(suite: str, *cases: str) -> bytes:
    return (
        f'<testsuites><testsuite name="{suite}">{"".join(cases)}</testsuite></testsuites>'.encode()
    )


INHERITED = (
    '<testcase classname="tests.test_b.TestB" name="test_inherited" file="tests/base.py" line="3"/>'
)
PLAIN = (
    '<testcase classname="tests.test_a.TestA" name="test_x[1]" file="tests/test_a.py" line="9"/>'
)
FAILED = '<testcase classname="tests.test_a" name="test_y" file="tests/test_a.py"><failure message="m"/></testcase>'
XUNIT2 = '<testcase classname="tests.test_a.TestA" name="test_x[1]" time="0.1"/>'


def _ids(data: bytes, test_id: str | None = None) -> list[str]:
    """The ids on both paths (objects and text), which must agree."""
    objects = [
        a.test_id for a in flakecore_adapters.iter_attempts(io.BytesIO(data), test_id=test_id)
    ]
    text = b"".join(flakecore_adapters.iter_jsonl(io.BytesIO(data), test_id=test_id))
    assert [json.loads(line)["test_id"] for line in text.splitlines()] == objects
    return objects


@pytest.mark.parametrize(
    ("suite", "cases", "ids"),
    [
        (
            "pytest",
            [PLAIN, FAILED],
            ["tests/test_a.py::TestA::test_x[1]", "tests/test_a.py::test_y"],
        ),
        # A method inherited from another file: file and classname disagree; no guess.
        ("pytest", [INHERITED], ["tests.test_b.TestB::test_inherited"]),
        # xunit2 has no file: the JUnit id.
        ("pytest", [XUNIT2], ["tests.test_a.TestA::test_x[1]"]),
        # Another producer's suite keeps the JUnit convention, file attribute or not.
        ("other", [PLAIN, FAILED], ["tests.test_a.TestA::test_x[1]", "tests.test_a::test_y"]),
    ],
)
def test_ids(suite: str, cases: list[str], ids: list[str]) -> None:
    assert _ids(_xml(suite, *cases)) == ids


@pytest.mark.parametrize("suite", ["pytest", "other"])
@pytest.mark.parametrize("case", [XUNIT2, INHERITED])
def test_a_node_id_matches_the_junit_form_and_the_record_carries_the_node_id(
    suite: str, case: str
) -> None:
    node_id = (
        "tests/test_a.py::TestA::test_x[1]"
        if case is XUNIT2
        else "tests/test_b.py::TestB::test_inherited"
    )
    data = _xml(suite, case, FAILED)
    assert _ids(data, node_id) == [node_id]
    junit = (
        "tests.test_a.TestA::test_x[1]" if case is XUNIT2 else "tests.test_b.TestB::test_inherited"
    )
    assert _ids(data, junit) == [junit]  # the JUnit id still selects it, under that id
    assert _ids(data, "tests/test_a.py::TestA::test_x[2]") == []


def test_two_testcases_of_one_junit_form_are_both_kept_and_flagged() -> None:
    # Two node ids can share one JUnit form (tests/a/b.py::T::t and tests/a/b/T.py::t):
    # a node id then selects both, and the repeat is flagged, never a silent pick.
    data = _xml(
        "pytest",
        '<testcase classname="tests.a.b.T" name="t"/>',
        '<testcase classname="tests.a.b.T" name="t"/>',
    )
    got = list(flakecore_adapters.iter_attempts(io.BytesIO(data), test_id="tests/a/b.py::T::t"))
    assert [(a.test_id, a.attempt) for a in got] == [
        ("tests/a/b.py::T::t", 1),
        ("tests/a/b.py::T::t", 2),
    ]
    assert all(a.flags for a in got)


def test_pytest_json_ids_are_never_aliased() -> None:
    report = {"tests": [{"nodeid": "tests.test_a.TestA::test_x[1]", "outcome": "passed"}]}
    data = json.dumps(report).encode()
    assert [
        a.test_id
        for a in flakecore_adapters.iter_attempts(
            io.BytesIO(data), test_id="tests/test_a.py::TestA::test_x[1]"
        )
    ] == []


IDS = Path(__file__).resolve().parents[1] / "fixtures" / "reports" / "pytest-ids"


@pytest.mark.parametrize("report", ["xunit1.xml", "xunit2.xml", "report.json", "reportlog.jsonl"])
def test_both_paths_give_the_same_bytes_for_node_ids(report: str) -> None:
    # xunit1's plain passes take the text path's fast lane with their node id (quoted
    # whole when it needs escaping: q"uote, back\slash): byte for byte the object path.
    text = b"".join(flakecore_adapters.iter_jsonl(IDS / report))
    objects = io.BytesIO()
    flakecore_adapters.write_jsonl(flakecore_adapters.iter_attempts(IDS / report), objects)
    assert text == objects.getvalue()
    assert b'"test_id":"tests/test_ids.py::test_param[q\\"uote]"' in text or report == "xunit2.xml"
