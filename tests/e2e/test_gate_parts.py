"""The gate's pieces without git: judges, seed parsing, fixture digests, placeholders.

The end-to-end tests run these through the CLI; here each refusal the
report judge can make is pinned one by one, with a fake reader, because a
real runner cannot be made to produce every defect on demand.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

import pytest

from flakecore.codes import AttemptFlag, AttemptResult, Outcome
from flakecore.errors import InputError, UsageError
from flakecore.evidence import Attempt, Source
from flakecore.gate.replay import ExitStatusJudge, IncompleteAttempt, ReportJudge
from flakecore.gate.runtime import CommandRun, substitute
from flakecore.gate.seedrun import fixture_digest, parse_seeds

pytestmark = pytest.mark.e2e

ID = "tests.test_prop::test_property"


def ran(returncode: int | None, *, timed_out: bool = False, error: str | None = None) -> CommandRun:
    return CommandRun(
        argv=("x",), returncode=returncode, timed_out=timed_out, duration_s=0.1, start_error=error
    )


def attempt(
    outcome: Outcome, *, test_id: str = ID, flags: frozenset[AttemptFlag] = frozenset()
) -> Attempt:
    return Attempt(
        test_id=test_id,
        outcome=outcome,
        native=outcome.value,
        attempt=1,
        source=Source(file="report.xml", format="junit"),
        flags=flags,
    )


@pytest.mark.parametrize(
    ("run", "result"),
    [
        (ran(0), AttemptResult.PASS),
        (ran(1), AttemptResult.MISS),
        (ran(2), AttemptResult.ERROR),
        (ran(5), AttemptResult.ERROR),
        (ran(-9), AttemptResult.ERROR),
        (ran(None, timed_out=True), AttemptResult.TIMEOUT),
    ],
)
def test_exit_status_judge(run: CommandRun, result: AttemptResult, tmp_path: Path) -> None:
    assert ExitStatusJudge().judge(run, tmp_path) is result


def test_exit_status_judge_refuses_a_command_that_never_started(tmp_path: Path) -> None:
    with pytest.raises(IncompleteAttempt, match="could not start"):
        ExitStatusJudge().judge(ran(None, error="nope: No such file"), tmp_path)


def _judge(*records: Attempt, error: Exception | None = None) -> ReportJudge:
    def read(path: Path) -> Iterable[Attempt]:
        assert path.name == "report.xml"
        if error is not None:
            raise error
        return records

    return ReportJudge(report="report.xml", test_id=ID, read=read)


@pytest.mark.parametrize(
    ("outcome", "returncode", "result"),
    [
        (Outcome.FAIL, 1, AttemptResult.MISS),
        (Outcome.PASS, 0, AttemptResult.PASS),
        (Outcome.PASS, 1, AttemptResult.PASS),  # another test failed
        (Outcome.ERROR, 1, AttemptResult.ERROR),
        (Outcome.SKIP, 0, AttemptResult.SKIP),
    ],
)
def test_report_judge_maps_the_one_record(
    tmp_path: Path, outcome: Outcome, returncode: int, result: AttemptResult
) -> None:
    (tmp_path / "report.xml").write_text("<testsuite/>")
    judge = _judge(attempt(outcome), attempt(Outcome.FAIL, test_id="other::test"))
    assert judge.judge(ran(returncode), tmp_path) is result


@pytest.mark.parametrize(
    ("judge", "returncode", "message"),
    [
        (_judge(), 1, "has no record for"),
        (_judge(attempt(Outcome.FAIL), attempt(Outcome.PASS)), 1, "has 2 records for"),
        (
            _judge(attempt(Outcome.PASS, flags=frozenset({AttemptFlag.UNEXPECTED_PASS}))),
            0,
            "is flagged: unexpected-pass",
        ),
        (_judge(attempt(Outcome.FAIL)), 0, "says fail for .* but the command exited 0"),
        (_judge(error=InputError("not XML", source="report.xml")), 1, "is unusable: report.xml"),
    ],
    ids=["no-record", "several-records", "flagged", "exit-0-but-fail", "unreadable"],
)
def test_report_judge_refusals(
    tmp_path: Path, judge: ReportJudge, returncode: int, message: str
) -> None:
    (tmp_path / "report.xml").write_text("<testsuite/>")
    with pytest.raises(IncompleteAttempt, match=message):
        judge.judge(ran(returncode), tmp_path)


def test_report_judge_deletes_the_stale_report_and_ignores_it_on_timeout(tmp_path: Path) -> None:
    report = tmp_path / "report.xml"
    report.write_text("<testsuite/>")
    judge = _judge(attempt(Outcome.PASS))
    judge.prepare(tmp_path)
    assert not report.exists()
    with pytest.raises(IncompleteAttempt, match=r"no report at report\.xml"):
        judge.judge(ran(0), tmp_path)
    assert judge.judge(ran(None, timed_out=True), tmp_path) is AttemptResult.TIMEOUT


def test_parse_seeds() -> None:
    assert parse_seeds("11, 23,-4,0,abc,007") == (11, 23, -4, 0, "abc", "007")
    with pytest.raises(UsageError, match="empty seed"):
        parse_seeds("1,,2")


def test_fixture_digest_is_canonical_for_json_and_raw_otherwise() -> None:
    assert fixture_digest(b'{"b": 1, "a": [1, 2]}\n') == fixture_digest(b'{"a":[1,2],"b":1}')
    assert fixture_digest(b'{"a":1}')[1] == "canonical-json"
    dup = b'{"a": 1, "a": 2}'
    assert fixture_digest(dup) == (hashlib.sha256(dup).hexdigest(), "file")
    assert fixture_digest(b"a,b\n1,2\n") == (hashlib.sha256(b"a,b\n1,2\n").hexdigest(), "file")


def test_substitute_is_plain_text() -> None:
    assert substitute(["x", "--seed={seed}", '{"k": "{seed}"}', "{other}"], seed="3") == (
        "x",
        "--seed=3",
        '{"k": "3"}',
        "{other}",
    )
