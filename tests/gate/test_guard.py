"""The path-coupling guard on real temporary git repositories (SPEC 3.3)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from flakecore.errors import UsageError
from flakecore.exits import EXIT_GUARD_TRIPPED
from flakecore.gate.config import DEFAULT_FIXTURE_GLOBS
from flakecore.gate.guard import (
    GitError,
    changed_paths,
    guard_paths,
    path_matches,
    run_guard,
)
from gate.support import cli

LEDGER_GLOBS = (".flakecore/ledger/*", ".flakecore/leases/*")
_GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.test",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.test",
    "GIT_CONFIG_NOSYSTEM": "1",
    "HOME": os.devnull,
}


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **_GIT_ENV},
    )
    return done.stdout


def write(repo: Path, path: str, text: str) -> None:
    target = repo / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with a fixture, a test and a ledger row on ``main``; HEAD on ``feature``."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    write(root, "tests/fixtures/data.json", '{"n": 1}\n')
    write(root, "tests/test_x.py", "def test_x():\n    assert True\n")
    write(root, "src/lib.py", "X = 1\n")
    write(root, ".flakecore/ledger/" + "a" * 64 + ".json", "{}\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    git(root, "checkout", "-qb", "feature")
    return root


def commit(repo: Path, changes: dict[str, str | None]) -> None:
    for path, text in changes.items():
        if text is None:
            git(repo, "rm", "-q", path)
        else:
            write(repo, path, text)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "change")


ROW = ".flakecore/ledger/" + "a" * 64 + ".json"
LEASE = ".flakecore/leases/" + "b" * 64 + ".json"

CASES = [
    ("fixture and ledger", {"tests/fixtures/data.json": '{"n": 2}\n', ROW: '{"x": 1}\n'}, True),
    ("test body and lease", {"tests/test_x.py": "def test_x():\n    pass\n", LEASE: "{}\n"}, True),
    ("oracle and deleted row", {"oracle/expected.txt": "42\n", ROW: None}, True),
    ("fixture only", {"tests/fixtures/data.json": '{"n": 2}\n'}, False),
    ("ledger only", {ROW: '{"x": 1}\n'}, False),
    ("lease only", {LEASE: "{}\n"}, False),
    ("code and ledger", {"src/lib.py": "X = 2\n", ROW: '{"x": 1}\n'}, False),
]


@pytest.mark.parametrize(("changes", "tripped"), [pytest.param(c, t, id=i) for i, c, t in CASES])
def test_guard_on_a_real_repository(
    repo: Path, changes: dict[str, str | None], tripped: bool
) -> None:
    commit(repo, changes)
    result = run_guard(
        str(repo), "main", fixture_globs=DEFAULT_FIXTURE_GLOBS, ledger_globs=LEDGER_GLOBS
    )
    assert result.tripped is tripped
    done = cli("guard", "--base", "main", "--repo", str(repo), "--no-config")
    assert done.returncode == (EXIT_GUARD_TRIPPED if tripped else 0), done.stderr
    if tripped:
        assert "TRIPPED" in done.stdout
        for path in changes:
            assert path in done.stdout


def test_guard_sees_changes_since_the_merge_base_only(repo: Path) -> None:
    """``BASE...HEAD``: a ledger edit that landed on main after the branch left is not ours."""
    commit(repo, {"tests/fixtures/data.json": '{"n": 2}\n'})
    git(repo, "checkout", "-q", "main")
    commit(repo, {ROW: '{"main": true}\n'})
    git(repo, "checkout", "-q", "feature")
    assert not run_guard(
        str(repo), "main", fixture_globs=DEFAULT_FIXTURE_GLOBS, ledger_globs=LEDGER_GLOBS
    ).tripped


def test_a_renamed_ledger_file_shows_both_paths(repo: Path) -> None:
    git(repo, "mv", ROW, "tests/fixtures/moved.json")
    git(repo, "commit", "-qm", "move")
    paths = changed_paths(str(repo), "main")
    assert set(paths) == {ROW, "tests/fixtures/moved.json"}
    assert run_guard(
        str(repo), "main", fixture_globs=DEFAULT_FIXTURE_GLOBS, ledger_globs=LEDGER_GLOBS
    ).tripped


def test_odd_file_names_come_through_intact(repo: Path) -> None:
    name = "tests/fixtures/we ird\tname,:\u00e9.json"
    commit(repo, {name: "1\n"})
    assert changed_paths(str(repo), "main") == (name,)


@pytest.mark.parametrize("base", ["no-such-ref", "0" * 40, "main~99"])
def test_bad_base_is_a_failure_never_zero(repo: Path, base: str) -> None:
    with pytest.raises(GitError):
        changed_paths(str(repo), base)
    done = cli("guard", "--base", base, "--repo", str(repo), "--no-config")
    assert done.returncode == 66 and "cannot read the diff" in done.stderr


def test_not_a_repository(tmp_path: Path) -> None:
    done = cli("guard", "--base", "main", "--repo", str(tmp_path), "--no-config")
    assert done.returncode == 66
    done = cli("guard", "--base", "main", "--repo", str(tmp_path / "missing"), "--no-config")
    assert done.returncode == 66


@pytest.mark.parametrize("base", ["--output=out.txt", "-p", "", " main"])
def test_base_that_looks_like_an_option_is_refused(repo: Path, base: str) -> None:
    with pytest.raises(UsageError):
        changed_paths(str(repo), base)
    done = cli("guard", f"--base={base}", "--repo", str(repo), "--no-config")
    assert done.returncode == 64


def test_no_merge_base(repo: Path) -> None:
    git(repo, "checkout", "-q", "--orphan", "island")
    git(repo, "commit", "-qm", "island", "--allow-empty")
    with pytest.raises(GitError):
        changed_paths(str(repo), "main")


def test_git_missing(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(repo))
    with pytest.raises(GitError, match="not installed"):
        changed_paths(str(repo), "main")


def test_flags_replace_the_globs(repo: Path) -> None:
    commit(repo, {"docs/a.md": "a\n", "state/frozen.json": "{}\n"})
    assert cli("guard", "--base", "main", "--repo", str(repo), "--no-config").returncode == 0
    done = cli(
        "guard", "--base", "main", "--repo", str(repo), "--no-config",
        "--fixture-glob", "docs/*", "--ledger-glob", "state/*.json", "--json",
    )  # fmt: skip
    assert done.returncode == EXIT_GUARD_TRIPPED
    assert '"tripped":true' in done.stdout


_MOVED = (
    '[tool.flakecore]\nledger_dir = "state/ledger"\nlease_dir = "state/leases"\n'
    'fixture_globs = ["golden/*"]\n'
)


def test_globs_from_the_base_config(repo: Path) -> None:
    """The base's table says where the ledger is and what a fixture is."""
    git(repo, "checkout", "-q", "main")
    write(repo, "pyproject.toml", _MOVED)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "config")
    git(repo, "checkout", "-q", "feature")
    git(repo, "merge", "-q", "main")
    commit(repo, {"golden/out.txt": "1\n", "state/leases/x.json": "{}\n"})
    done = cli("guard", "--base", "main", "--repo", str(repo), "--json")
    assert done.returncode == EXIT_GUARD_TRIPPED, done.stdout + done.stderr
    source = json.loads(done.stdout)["policy_source"]
    assert source["revision"] == git(repo, "rev-parse", "main").strip()
    assert source["path"] == "pyproject.toml"


def test_the_patch_cannot_move_the_globs(repo: Path) -> None:
    """The same table in the patch itself is not policy: the default globs still trip."""
    write(repo, "pyproject.toml", '[tool.flakecore]\nfixture_globs = ["nothing"]\n')
    commit(repo, {"tests/fixtures/data.json": '{"n": 2}\n', ".flakecore/leases/x.json": "{}\n"})
    done = cli("guard", "--base", "main", "--repo", str(repo))
    assert done.returncode == EXIT_GUARD_TRIPPED, done.stdout + done.stderr
    assert "differs from base" in done.stderr


GLOBS = [
    ("tests/fixtures/a.json", "tests/*", True),
    ("tests/fixtures/a.json", "tests/fixtures/*.json", True),
    ("src/tests/a.json", "tests/*", False),
    ("deep/dir/conftest.py", "conftest.py", True),
    ("deep/dir/conftest.py", "dir/conftest.py", False),
    ("pkg/test_mod.py", "test_*.py", True),
    ("Tests/a.json", "tests/*", False),
    ("a/oracle/b.txt", "*oracle*", True),
]


@pytest.mark.parametrize(("path", "glob", "matches"), GLOBS)
def test_glob_semantics(path: str, glob: str, matches: bool) -> None:
    assert path_matches(path, glob) is matches


def test_a_ledger_under_tests_is_a_ledger_path_only() -> None:
    result = guard_paths("main", ["tests/ledger/x.json"], ["tests/*"], ["tests/ledger/*"])
    assert result.ledger_paths == ("tests/ledger/x.json",) and result.fixture_paths == ()
    assert not result.tripped
