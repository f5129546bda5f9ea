"""The path-coupling guard on real temporary git repositories (SPEC 3.3)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

import pytest

from flakecore.errors import UsageError
from flakecore.exits import EXIT_GUARD_TRIPPED
from flakecore.gate.config import DEFAULT_FIXTURE_GLOBS
from flakecore.gate.guard import (
    GitError,
    changed_entries,
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


def commit(repo: Path, changes: Mapping[str, str | None]) -> None:
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
    elif len(changes) == 1:
        assert "guard: ok -- 1 changed path: " in done.stdout  # not "1 changed paths"
    else:
        assert f"guard: ok -- {len(changes)} changed paths: " in done.stdout


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


@pytest.mark.parametrize(
    ("base", "exit_code", "row"),
    [
        ("main", 0, "|  | guard | OK | accepted | 0 | 1 changed path: 1 fixture/oracle/test, "),
        (
            "no-such-ref",
            66,
            "|  | guard | GIT_FAILED | refused | 66 | guard: cannot read the diff: ",
        ),
    ],
)
def test_guard_github_output_annotates_and_writes_its_row(
    repo: Path, tmp_path: Path, base: str, exit_code: int, row: str
) -> None:
    """The row is built only for --format github: there it is still printed and summarised."""
    commit(repo, {"tests/fixtures/data.json": '{"n": 2}\n'})
    summary = tmp_path / "summary.md"
    done = cli(
        *("guard", "--base", base, "--repo", str(repo), "--no-config", "--format", "github"),
        env={"GITHUB_STEP_SUMMARY": str(summary)},
    )
    assert done.returncode == exit_code, done.stderr
    level = "notice" if exit_code == 0 else "error"
    assert done.stdout.startswith(f"::{level} title=flakecore guard::"), done.stdout
    assert row in summary.read_text()


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


# --------------------------------------------------------------------------- coverage
#
# Each attack moves the ledger, or the policy, where the globs do not look; each honest
# twin is the same diff without the move, and the guard lets it through.

FIXTURE = {"tests/fixtures/data.json": '{"n": 2}\n'}
#: A lease in a folder no ledger glob names.
FORGED = {"elsewhere/" + "b" * 64 + ".json": "{}\n"}
DIRS = (".flakecore/ledger", ".flakecore/leases")


def guard(repo: Path) -> tuple[bool, dict[str, str], tuple[str, ...]]:
    result = run_guard(
        str(repo),
        "main",
        fixture_globs=DEFAULT_FIXTURE_GLOBS,
        ledger_globs=LEDGER_GLOBS,
        ledger_dirs=DIRS,
    )
    done = cli("guard", "--base", "main", "--repo", str(repo), "--no-config")
    assert done.returncode == (EXIT_GUARD_TRIPPED if result.tripped else 0), done.stderr
    return result.tripped, dict(result.ledger_reasons), result.ledger_paths


def symlink(repo: Path, path: str, target: str) -> None:
    (repo / path).parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, repo / path)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "link")


@pytest.mark.parametrize("link", [".flakecore/leases", ".flakecore"])
def test_the_lease_dir_or_its_parent_as_a_symlink_is_a_ledger_path(repo: Path, link: str) -> None:
    if link == ".flakecore":
        git(repo, "rm", "-rq", ".flakecore")
        git(repo, "commit", "-qm", "move the ledger")
    commit(repo, {**FIXTURE, **FORGED})
    symlink(repo, link, "../elsewhere" if "/" in link else "elsewhere")
    tripped, reasons, paths = guard(repo)
    assert tripped and link in paths
    assert reasons[link] == "a symlink: git cannot show what lies behind it"


def test_the_same_diff_without_the_symlink_passes(repo: Path) -> None:
    commit(repo, {**FIXTURE, **FORGED})
    assert guard(repo) == (False, {}, ())


def test_the_lease_dir_as_a_submodule_is_a_ledger_path(repo: Path) -> None:
    commit(repo, FIXTURE)
    head = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{head},.flakecore/leases")
    git(repo, "commit", "-qm", "leases from elsewhere")
    tripped, reasons, _ = guard(repo)
    assert tripped
    assert reasons == {".flakecore/leases": "a submodule: git cannot show what lies behind it"}


def test_a_file_in_place_of_the_lease_dir_is_a_ledger_path(repo: Path) -> None:
    commit(repo, {**FIXTURE, ".flakecore/leases": "not a directory\n"})
    tripped, reasons, _ = guard(repo)
    assert tripped
    assert reasons == {".flakecore/leases": "the ledger/lease directory .flakecore/leases itself"}


@pytest.mark.parametrize(
    "config",
    ["pytest.ini", "setup.cfg", "tox.ini", "pyproject.toml", "pkg/sub/conftest.py"],
)
def test_test_configuration_is_watched_by_default(repo: Path, config: str) -> None:
    body = "[tool.pytest.ini_options]\naddopts = '-p no:randomly'\n"
    commit(repo, {config: body if config.endswith(".toml") else "[pytest]\naddopts = -x\n"})
    assert guard(repo)[0] is False  # the honest twin: configuration alone
    commit(repo, {ROW: '{"x": 2}\n'})
    tripped, _, paths = guard(repo)
    assert tripped and paths == (ROW,)


POLICY = '[project]\nname = "x"\n\n[tool.flakecore]\nattempt_cap = 5\n'


@pytest.fixture
def configured(repo: Path) -> Path:
    git(repo, "checkout", "-q", "main")
    commit(repo, {"pyproject.toml": POLICY})
    git(repo, "checkout", "-q", "feature")
    git(repo, "rebase", "-q", "main")
    return repo


def test_a_diff_that_changes_the_policy_table_is_a_guarded_path(configured: Path) -> None:
    commit(configured, {"pyproject.toml": POLICY.replace("= 5", "= 1000"), **FIXTURE})
    tripped, reasons, paths = guard(configured)
    assert tripped and paths == ("pyproject.toml [tool.flakecore]",)
    assert reasons == {
        "pyproject.toml [tool.flakecore]": "the diff changes the [tool.flakecore] policy table"
    }


@pytest.mark.parametrize(
    "text",
    [
        POLICY.replace("attempt_cap = 5", "# reviewed\nattempt_cap   =   5"),  # same table
        POLICY.replace('"x"', '"y"'),  # outside the table
    ],
    ids=["formatting", "project-name"],
)
def test_the_same_table_is_no_policy_change(configured: Path, text: str) -> None:
    commit(configured, {"pyproject.toml": text, **FIXTURE})
    tripped, reasons, _ = guard(configured)
    assert not tripped and reasons == {}


def test_a_policy_change_alone_does_not_trip(configured: Path) -> None:
    """The pyproject counts as test configuration only when more than the table changed."""
    commit(configured, {"pyproject.toml": POLICY.replace("= 5", "= 3")})
    tripped, _, paths = guard(configured)
    assert not tripped and paths == ("pyproject.toml [tool.flakecore]",)
    commit(configured, {"pyproject.toml": POLICY.replace("= 5", "= 3") + "[tool.pytest]\n"})
    assert guard(configured)[0] is True


def test_an_unreadable_pyproject_counts_as_a_policy_change(configured: Path) -> None:
    commit(configured, {"pyproject.toml": "[tool.flakecore\nbroken"})
    tripped, reasons, _ = guard(configured)
    assert tripped
    assert reasons["pyproject.toml [tool.flakecore]"].startswith(
        "the policy table cannot be compared: HEAD:pyproject.toml: invalid TOML"
    )


def test_any_symlink_in_the_diff_is_a_ledger_path(repo: Path) -> None:
    symlink(repo, "docs/data.json", "../.flakecore/ledger/" + "a" * 64 + ".json")
    assert guard(repo)[0] is False  # the link alone
    commit(repo, FIXTURE)
    tripped, reasons, _ = guard(repo)
    assert tripped and reasons == {
        "docs/data.json": "a symlink: git cannot show what lies behind it"
    }


def test_the_read_in_bulk_is_guard_paths_over_changed_entries(repo: Path) -> None:
    """run_guard decodes the diff at once and keeps no Change per path: the same result."""
    base = git(repo, "rev-parse", "main").strip()
    raw_name = os.fsencode(str(repo)) + b"/tests/caf\xe9_\xff.py"  # not UTF-8
    with open(raw_name, "w") as fh:
        fh.write("x\n")
    os.symlink("src/lib.py", repo / ".flakecore" / "link")
    write(repo, "src/newline\nname.py", "x\n")
    write(repo, ".flakecore/leases/x.json", "{}\n")
    commit(repo, {"tests/test_x.py": None, "docs/fixture_notes.md": "n\n", "conftest.py": "\n"})
    dirs = (".flakecore/ledger", ".flakecore/leases")
    fast = run_guard(
        str(repo), base, fixture_globs=DEFAULT_FIXTURE_GLOBS, ledger_globs=LEDGER_GLOBS,
        ledger_dirs=dirs,
    )  # fmt: skip
    entries = changed_entries(str(repo), base)
    assert {c.link for c in entries} == {None, "symlink"}
    slow = guard_paths(
        base, entries, DEFAULT_FIXTURE_GLOBS, LEDGER_GLOBS, base_sha=fast.base_sha,
        ledger_dirs=dirs,
    )  # fmt: skip
    assert fast == slow
    assert fast.tripped
    assert any("\udcff" in p for p in fast.paths) and "src/newline\nname.py" in fast.paths
