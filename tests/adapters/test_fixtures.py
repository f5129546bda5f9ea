"""Every real report under tests/fixtures/reports/*/ against its expected.json.

Folders are discovered at collection time (other people add them); zero
folders is a failure, never a silent pass.  Where the adapter and a fixture
disagree on purpose, the disagreement is listed in KNOWN below with the
reason, and the test asserts the *exact* set of disagreements: a new one
fails, and so does a listed one that went away (update the table then).
"""

from __future__ import annotations

import json
from collections import OrderedDict
from pathlib import Path
from typing import Any

import flakecore_adapters
import pytest

from flakecore.codes import AttemptFlag
from flakecore.errors import InputError

ROOT = Path(__file__).resolve().parent.parent / "fixtures" / "reports"
UP = AttemptFlag.UNEXPECTED_PASS.value
DEFECT = AttemptFlag.STREAM_DEFECT.value

_UNDETECTABLE = "the report carries no trace of it (only the console does)"
_LAST_ONLY = "the report keeps only the last attempt and does not say a rerun happened"
_ANY_REPEAT = (
    "every test id repeated as separate elements is flagged, agreeing or not: "
    "pytest-rerunfailures' childless rerun <testcase>s agree and still hide failures"
)
_NODE_CANCEL = (
    "node's failure type cancelledByParent/hookFailed is an error (the body never ran); "
    "the same run's TAP fixture expects error too"
)

#: (producer, report, test id or "*", aspect) -> reason
KNOWN: dict[tuple[str, str, str, str], str] = {
    ("bazel", "testlogs/pkg/special%3C&%3E%22q%22/test.xml", "*", "input-error"): (
        "Bazel 4 wrote unescaped <&> into attributes: not well-formed XML, refused"
    ),
    ("pytest-junit", "xunit1-reruns.xml", "tests/test_sample.py::test_xpass", "unexpected_pass"): (
        "an XPASS is a childless <testcase>: " + _UNDETECTABLE
    ),
    ("pytest-junit", "xunit2-reruns.xml", "tests.test_sample::test_xpass", "unexpected_pass"): (
        "an XPASS is a childless <testcase>: " + _UNDETECTABLE
    ),
    ("pytest-junit", "xunit2-plain.xml", "tests.test_sample::test_xpass", "unexpected_pass"): (
        "an XPASS is a childless <testcase>: " + _UNDETECTABLE
    ),
    (
        "gradle",
        "TEST-com.example.OuterTest$InnerOne.xml",
        "com.example.OuterTest$InnerOne::innerPasses",
        "flagged",
    ): _ANY_REPEAT,
    (
        "gradle",
        "TEST-com.example.OuterTest$InnerTwo.xml",
        "com.example.OuterTest$InnerTwo::innerFails",
        "flagged",
    ): _ANY_REPEAT,
    ("node-test", "junit.xml", "test::first test under broken before", "outcomes"): _NODE_CANCEL,
    ("node-test", "junit.xml", "test::second test under broken before", "outcomes"): _NODE_CANCEL,
}
_STREAM = (
    "the TAP stream has a stream-level defect (listed by its <plan> pseudo-attempt), so every "
    "record of it carries stream-defect"
)
for _report in ("bats.tap", "bats-tap13.tap"):
    # bats numbers the tests after a failed setup_file as if they ran, and plans them.
    KNOWN[("bats", _report, "*", "stream-defect")] = _STREAM + ": test numbers skip, plan not kept"
for _file in ("tests/braces.test.js", "tests/second.test.js"):
    KNOWN[("node-tap", "runner.tap", _file, "outcomes")] = (
        "a test point whose YAML block has a non-zero exitCode is an error (node:test writes it "
        "for a file that crashed); node-tap's runner writes exitCode: 1 for a file whose tests failed"
    )
KNOWN[("perl-tap", "bail_out.tap", "*", "stream-defect")] = _STREAM + ": Bail out!, plan not kept"
KNOWN[("perl-tap", "dies.tap", "*", "stream-defect")] = _STREAM + ": the script died, plan not kept"
for _report in ("bats-junit.xml", "bats.tap", "bats-tap13.tap"):
    _prefix = {"bats-junit.xml": ("hooks.bats::", "retries.bats::")}.get(_report, ("", ""))
    for _name, _why in (
        ("setup fails", "a failing setup is written as a plain failure: " + _UNDETECTABLE),
        ("teardown fails", "a failing teardown is written as a plain failure: " + _UNDETECTABLE),
    ):
        KNOWN[("bats", _report, _prefix[0] + _name, "flagged")] = _why
    for _name in ("flaky passes on retry", "always fails with retries"):
        KNOWN[("bats", _report, _prefix[1] + _name, "flagged")] = _LAST_ONLY
KNOWN[("bats", "bats-junit.xml", "timeout.bats::times out", "flagged")] = (
    "a timeout is written as a plain <failure>: " + _UNDETECTABLE
)
for _name in ("always_fails", "assertion_fails", "flaky", "times_out"):
    KNOWN[
        (
            "bazel",
            f"testlogs/pkg/{_name}/test_attempts/attempt_1.xml",
            f"pkg/{_name}::pkg/{_name}",
            "flagged",
        )
    ] = "Bazel's generated XML says 'exited with error code': " + _UNDETECTABLE
for _name in ("always_fails", "assertion_fails", "times_out"):
    KNOWN[("bazel", f"testlogs/pkg/{_name}/test.xml", f"pkg/{_name}::pkg/{_name}", "flagged")] = (
        "Bazel's generated XML says 'exited with error code': " + _UNDETECTABLE
    )
for _name in (
    "assertion_fails",
    "crashes",
    "times_out",
    "flaky",
    "always_fails",
    "setup_fails",
    "needs_setup",
    "unexpected_pass",
    "missing_program",
):
    KNOWN[("ctest", "ctest-junit.xml", f"{_name}::{_name}", "flagged")] = (
        "ctest --repeat keeps one <testcase> and no crash/timeout detail: " + _UNDETECTABLE
    )
KNOWN[
    (
        "gradle",
        "TEST-com.example.BeforeFailsTest.xml",
        "com.example.BeforeFailsTest::afterBrokenSetup",
        "flagged",
    )
] = "a failing @Before is written as a plain <failure>: " + _UNDETECTABLE
KNOWN[("gradle", "TEST-com.example.CalcTest.xml", "com.example.CalcTest::timesOut", "flagged")] = (
    "a JUnit 4 timeout is written as a plain <failure>; timeouts are never guessed from text"
)
for _report in ("junit.xml", "junit-suite-errors.xml"):
    KNOWN[("jest-junit", _report, "sample is a todo::sample is a todo", "flagged")] = (
        "test.todo is a childless <testcase>: " + _UNDETECTABLE
    )
    for _name in ("retried flaky: fails on the first attempt only", "retried always fails"):
        KNOWN[("jest-junit", _report, f"{_name}::{_name}", "flagged")] = _LAST_ONLY
for _report in ("junit.xml", "junit-include-pending.xml"):
    KNOWN[
        (
            "mocha-junit",
            _report,
            "flaky: fails on the first attempt only::sample retried flaky: fails on the first attempt only",
            "flagged",
        )
    ] = _LAST_ONLY
    KNOWN[("mocha-junit", _report, "always fails::sample retried always fails", "flagged")] = (
        _LAST_ONLY
    )
KNOWN[
    (
        "maven-surefire",
        "TEST-com.example.SampleTest.xml",
        "com.example.SampleTest::timesOut",
        "flagged",
    )
] = "a TimeoutException <error> is an error; timeouts are never guessed from exception text"
KNOWN[
    (
        "maven-surefire-junit4",
        "TEST-com.example.SampleTest.xml",
        "com.example.SampleTest::timesOut",
        "flagged",
    )
] = "a TestTimedOutException <error> is an error; timeouts are never guessed from exception text"


def _reports() -> list[tuple[str, dict[str, Any]]]:
    found: list[tuple[str, dict[str, Any]]] = []
    for expected in sorted(ROOT.glob("*/expected.json")):
        data = json.loads(expected.read_text(encoding="utf-8"))
        for report in data["reports"]:
            found.append((expected.parent.name, report))
    return found


REPORTS = _reports()


def test_fixture_folders_exist() -> None:
    assert REPORTS, f"no fixture folder with an expected.json under {ROOT}"


def _is_pseudo(test_id: str) -> bool:
    return test_id.endswith(flakecore_adapters.PLAN_ID) or test_id == flakecore_adapters.SESSION_ID


@pytest.mark.parametrize(
    ("producer", "report"), REPORTS, ids=[f"{p}/{r['file']}" for p, r in REPORTS]
)
def test_report_matches_expected(producer: str, report: dict[str, Any]) -> None:
    name = report["file"]
    path = ROOT / producer / name
    known = {key[2:]: why for key, why in KNOWN.items() if key[:2] == (producer, name)}
    if ("*", "input-error") in known:
        with pytest.raises(InputError):
            list(flakecore_adapters.iter_attempts(path, format="auto"))
        return
    attempts = list(flakecore_adapters.iter_attempts(path, format="auto"))
    defective = {a.test_id for a in attempts if AttemptFlag.STREAM_DEFECT in a.flags}
    if defective:  # then every record carries it: compare the other flags
        assert defective == {a.test_id for a in attempts}
        assert known.pop(("*", "stream-defect"), None), (
            f"{name}: a stream-level defect not in KNOWN"
        )
    by_id: OrderedDict[str, list[Any]] = OrderedDict()
    for attempt in attempts:
        by_id.setdefault(attempt.test_id, []).append(attempt)
    mismatches: set[tuple[str, str]] = set()
    expected_ids = set()
    for test in report["tests"]:
        test_id = test["test_id"]
        expected_ids.add(test_id)
        got = by_id.get(test_id)
        if got is None:
            mismatches.add((test_id, "missing"))
            continue
        assert [a.attempt for a in got] == list(range(1, len(got) + 1))
        if [a.outcome.value for a in got] != test["outcomes"]:
            mismatches.add((test_id, "outcomes"))
        other = [{f.value for f in a.flags} - {UP, DEFECT} for a in got]
        if test.get("flagged") and not all(a.flags - {AttemptFlag.STREAM_DEFECT} for a in got):
            mismatches.add((test_id, "flagged"))
        if not test.get("flagged") and any(other):
            mismatches.add((test_id, "flagged"))
        has_up = any(AttemptFlag.UNEXPECTED_PASS in a.flags for a in got)
        if has_up != bool(test.get("unexpected_pass")):
            mismatches.add((test_id, "unexpected_pass"))
    for test_id, got in by_id.items():
        if test_id in expected_ids:
            continue
        if _is_pseudo(test_id) and all(a.outcome.value == "error" for a in got):
            continue  # documented pseudo-attempts (unfulfilled plan, unfinished session)
        mismatches.add((test_id, "extra"))
    listed = {(tid, aspect) for tid, aspect in known}
    assert mismatches == listed, {
        "new disagreements": sorted(mismatches - listed),
        "listed but gone": sorted(listed - mismatches),
    }
