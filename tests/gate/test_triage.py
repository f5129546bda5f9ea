"""Which tests of a run are red, and what ``triage`` decides before any replay: tables.

The logs are written by the plugin's own writer (:class:`LogDirectory`), the
report records are the adapters' ``Attempt`` objects; every row that is
decided without a replay goes through :func:`run_triage` on a real git
repository with a judge that fails the test if it is ever asked.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flakecore.codes import AttemptFlag, AttemptResult, Outcome, TriageVerdict
from flakecore.evidence import Attempt, Source
from flakecore.exits import TRIAGE_EXIT, TRIAGE_NOTHING_RED, triage_exit
from flakecore.gate.config import parse_table
from flakecore.gate.replay import Judge
from flakecore.gate.triage import RedTest, TriageRequest, find_red_tests, run_triage
from flakecore.logdir import LogDirectory, read_log_dir
from flakecore.policy import DEFAULT_POLICY
from flakecore.records import Seed

TEST = "tests/test_x.py::test_y"
TABLE = {
    "triage": {
        "command": ["python", "-m", "pytest", "{test_id}", "--flakecore-seed", "{seed}"],
        "epoch_lock": "epoch.lock",
    }
}


def logs(
    where: Path, runs: Mapping[str, Sequence[AttemptResult]], seed: Seed = 3
) -> dict[str, list[Path]]:
    where.mkdir()
    writer = LogDirectory(where, "main", seed)
    for test_id, results in runs.items():
        for result in results:
            writer.append(test_id, result)
    writer.close()
    return {t: list(p) for t, p in read_log_dir(where).items()}


def attempt(outcome: Outcome, test_id: str = TEST, **flags: AttemptFlag) -> Attempt:
    source = Source(file="report.xml", format="junit")
    return Attempt(test_id=test_id, outcome=outcome, native=outcome.value, attempt=1,
                   source=source, flags=frozenset(flags.values()))  # fmt: skip


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    (path / "epoch.lock").write_text("epoch 1\n")
    for args in (
        ["init", "-q"],
        ["add", "-A"],
        ["-c", "user.name=t", "-c", "user.email=t@t.invalid", "commit", "-qm", "base"],
    ):
        subprocess.run(["git", *args], cwd=path, check=True, capture_output=True)  # fmt: skip
    return path


def never(test_id: str) -> Judge:
    raise AssertionError(f"{test_id} was replayed, but the evidence alone decides it")


def decide(repo: Path, red: list[RedTest], **table: object) -> list[tuple[str, TriageVerdict, str]]:
    config = parse_table({**TABLE, **table})
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, check=True
    )
    request = TriageRequest(checkout=repo, base_sha=head.stdout.strip(), config=config,
                            red=tuple(red), out_dir=repo.parent / "out")  # fmt: skip
    return [(v.test_id, v.verdict, v.reasons[0]) for v in run_triage(request, judge_for=never)]


M, E, P, S, T = (AttemptResult.MISS, AttemptResult.ERROR, AttemptResult.PASS,
                 AttemptResult.SKIP, AttemptResult.TIMEOUT)  # fmt: skip

#: logs, report records -> the verdict before any replay, and words of its reason.
DECIDED = [
    ({TEST: [E]}, [], TriageVerdict.REJECT_ERROR, "never a flake candidate"),
    ({TEST: [M, T]}, [], TriageVerdict.REJECT_ERROR, "1 timeout"),
    ({}, [attempt(Outcome.ERROR, "tests/test_x.py")], TriageVerdict.REJECT_ERROR, "1 error"),
    ({}, [attempt(Outcome.FAIL)], TriageVerdict.REJECT_INCOMPLETE, "no pinned seed"),
    ({TEST: [P]}, [attempt(Outcome.FAIL)], TriageVerdict.REJECT_INCOMPLETE, "disagree"),
    ({TEST: [M]}, [attempt(Outcome.FAIL, f=AttemptFlag.CONFLICTING_DUPLICATE)],
     TriageVerdict.REJECT_INCOMPLETE, "flagged: conflicting-duplicate"),
    ({"tests.test_x::test_y": [M]}, [], TriageVerdict.REJECT_INCOMPLETE, "not a pytest node id"),
    ({"../x.py::t": [M]}, [], TriageVerdict.REJECT_INCOMPLETE, "not a pytest node id"),
    ({"-p evil::t": [M]}, [], TriageVerdict.REJECT_INCOMPLETE, "not a pytest node id"),
    ({"x.py::t[{seed}]": [M]}, [], TriageVerdict.REJECT_INCOMPLETE, "not a pytest node id"),
]  # fmt: skip


@pytest.mark.parametrize(("runs", "records", "verdict", "why"), DECIDED)
def test_what_the_evidence_alone_decides(
    repo: Path, tmp_path: Path, runs: dict[str, list[AttemptResult]], records: list[Attempt],
    verdict: TriageVerdict, why: str,
) -> None:  # fmt: skip
    found = find_red_tests(logs(tmp_path / "logs", runs), [("report.xml", records)],
                           policy=DEFAULT_POLICY)  # fmt: skip
    ((_, got, reason),) = decide(repo, found)
    assert got is verdict and why in reason


def test_a_seed_whose_text_reads_back_as_another_seed_is_incomplete(
    repo: Path, tmp_path: Path
) -> None:
    found = find_red_tests(
        logs(tmp_path / "logs", {TEST: [M]}, seed="123"), [], policy=DEFAULT_POLICY
    )
    ((_, got, reason),) = decide(repo, found)
    assert got is TriageVerdict.REJECT_INCOMPLETE and "cannot be pinned again" in reason


def test_green_tests_are_not_red_and_an_incomplete_log_is(tmp_path: Path) -> None:
    found = logs(tmp_path / "logs", {"a.py::t": [P], "b.py::t": [S], "c.py::t": [M, P], TEST: [P]})
    (tmp_path / "logs" / found[TEST][0].name).write_bytes(b'{"seed":3,"n":1,"result":"pass"}')
    red = find_red_tests(found, [], policy=DEFAULT_POLICY)
    assert [(t.test_id, bool(t.problems)) for t in red] == [("c.py::t", False), (TEST, True)]
    assert red[0].seed == 3 and red[1].seed is None


def test_more_red_tests_than_the_limit_is_a_regression_and_nothing_runs(
    repo: Path, tmp_path: Path
) -> None:
    runs = {f"tests/test_{i}.py::t": [M] for i in range(3)}
    found = find_red_tests(logs(tmp_path / "logs", runs), [], policy=DEFAULT_POLICY)
    verdicts = decide(repo, found, max_red_tests=2)
    assert [v for _, v, _ in verdicts] == [TriageVerdict.REJECT_TOO_MANY_RED] * 3
    assert "3 red tests, more than max_red_tests=2" in verdicts[0][2]
    assert not (repo.parent / "out").exists()


def test_the_run_exits_with_its_most_serious_verdict() -> None:
    assert triage_exit([]) == TRIAGE_NOTHING_RED == 11
    assert triage_exit([TriageVerdict.ACCEPT_PREEXISTING] * 3) == 0
    ordered = list(TRIAGE_EXIT)
    for i, worst in enumerate(ordered):
        assert triage_exit(ordered[i:]) == TRIAGE_EXIT[worst]
    assert len(set(TRIAGE_EXIT.values())) == len(TRIAGE_EXIT) == len(TriageVerdict)


@given(st.lists(st.sampled_from(TriageVerdict), min_size=1))
def test_a_run_exits_0_only_when_every_red_test_was_accepted(verdicts: list[TriageVerdict]) -> None:
    accepted = all(v is TriageVerdict.ACCEPT_PREEXISTING for v in verdicts)
    assert (triage_exit(verdicts) == 0) is accepted


def test_a_junit_xunit2_id_is_the_one_logged_node_id_it_mangles_from(tmp_path: Path) -> None:
    found = logs(tmp_path / "logs", {TEST: [M], "tests/test_x/py.py::t": [P]})
    red = find_red_tests(
        found, [("report.xml", [attempt(Outcome.FAIL, "tests.test_x::test_y")])],
        policy=DEFAULT_POLICY,
    )  # fmt: skip
    assert [(t.test_id, t.reports, t.problems) for t in red] == [(TEST, ("report.xml",), ())]
