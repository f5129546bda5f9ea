"""``--base`` must name one commit: an attacker's tag named like the base branch is refused.

git resolves ``main`` to ``refs/tags/main`` before ``refs/heads/main`` and
only warns.  Here the patch pushes a tag ``main`` at its own commit: read
the way git reads it, the "base" replay would run the patch and find the
patch's own misses there (``ACCEPT_PREEXISTING`` on seed 7, which only the
patch misses).  Every verb that takes ``--base`` refuses the name as a usage
error (64) that names both refs; the honest spellings (the full ref name, the
full commit id, or ``main`` without the tag) still decide.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from e2e.support import FIXTURE, TEST_ID, SampleRepo, decision, git, make_repo, pytest_command

pytestmark = pytest.mark.e2e


@pytest.fixture
def repo(tmp_path: Path) -> SampleRepo:
    """``main`` at the base commit, the patch checked out on ``pr``."""
    sample = make_repo(tmp_path)
    git(sample.path, "checkout", "-q", "-b", "pr")
    git(sample.path, "branch", "-f", "main", sample.base)
    return sample


def attack(repo: SampleRepo) -> None:
    """The patch author's tag: ``main``, pointing at the patch commit."""
    git(repo.path, "tag", "main", repo.head)


def replay(repo: SampleRepo, tmp_path: Path, base: str, seed: str) -> tuple[int, str, str]:
    args = repo.replay_args(seed=seed, out=tmp_path / "freeze.json")
    args[args.index("--base") + 1] = base
    run = repo.flakecore(*args)
    return run.returncode, run.stdout, run.stderr


def test_a_tag_named_like_the_base_branch_is_a_usage_refusal(
    repo: SampleRepo, tmp_path: Path
) -> None:
    attack(repo)
    code, stdout, stderr = replay(repo, tmp_path, "main", seed="7")
    assert code == 64 and stdout == ""
    assert stderr.count("\n") == 1
    assert "--base 'main' is ambiguous" in stderr
    assert "refs/heads/main" in stderr and "refs/tags/main" in stderr
    assert not (tmp_path / "freeze.json").exists()
    repo.assert_clean()


@pytest.mark.parametrize("spelling", ["refs/heads/main", "full-sha"])
def test_the_exact_spellings_still_decide_and_record_the_full_sha(
    repo: SampleRepo, tmp_path: Path, spelling: str
) -> None:
    attack(repo)
    base = repo.base if spelling == "full-sha" else spelling
    code, stdout, _ = replay(repo, tmp_path, base, seed="7")
    d = json.loads(stdout)
    # Seed 7 only misses on the patch: replayed on the real base, the freeze is refused.
    assert (code, d["code"]) == (4, "REJECT_PATCH_INTRODUCED")
    assert d["packet"]["base_sha"] == d["replay"]["base_sha"] == repo.base
    code, stdout, _ = replay(repo, tmp_path, base, seed="3")
    assert (code, json.loads(stdout)["code"]) == (0, "ACCEPT_PREEXISTING")
    repo.assert_clean()


def test_without_the_tag_the_branch_name_is_exact(repo: SampleRepo, tmp_path: Path) -> None:
    code, stdout, _ = replay(repo, tmp_path, "main", seed="3")
    d = json.loads(stdout)
    assert (code, d["code"], d["packet"]["base_sha"]) == (0, "ACCEPT_PREEXISTING", repo.base)


def test_budget_run_and_guard_refuse_the_ambiguous_base(repo: SampleRepo, tmp_path: Path) -> None:
    attack(repo)
    out = tmp_path / "budget.json"
    budget = [
        "budget-run", "--test-id", TEST_ID, "--base", "main", "--fixture", FIXTURE,
        "--property-cmd", "true {fixture}", "--seeds", "1,2,3,4,5,6,7,8", "--out", str(out),
        "--", *pytest_command(),
    ]  # fmt: skip
    run = repo.flakecore(*budget)
    assert run.returncode == 64 and "ambiguous" in run.stderr and not out.exists()
    run = repo.flakecore("guard", "--base", "main", "--no-config")
    assert run.returncode == 64 and "refs/tags/main" in run.stderr
    # The honest twins: the full ref name decides, and the record names the full SHA.
    budget[budget.index("main")] = "refs/heads/main"
    budget.insert(budget.index("--"), "--json")
    d = decision(repo.flakecore(*budget))
    assert d["record"]["parent"]["commit"] == d["packet"]["opened_against"] == repo.base
    run = repo.flakecore("guard", "--base", "refs/heads/main", "--no-config", "--json")
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["base_sha"] == repo.base
