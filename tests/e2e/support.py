"""A throwaway git repository with a seeded flaky property, and the CLI run against it.

The sample project is tiny but real: ``mylib.checksum_ok`` misses for every
third seed on the base commit already (a pre-existing flake), and the patch
commit adds a regression that misses for every seventh seed too.  The
property test reads its seed from ``--prop-seed`` (or ``PROP_SEED``), so
``{seed}`` in the replay command pins it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from flakecore import validation

__all__ = [
    "EPOCH_LOCK",
    "PROPERTY_FILE",
    "SORTED",
    "TEST_ID",
    "SampleRepo",
    "budget_args",
    "decision",
    "git",
    "init_repo",
    "make_repo",
    "pytest_command",
    "run_in",
]

PROPERTY_FILE = "tests/test_prop.py"
EPOCH_LOCK = "fixtures/epoch.lock"
FIXTURE = "fixtures/data.json"
#: The property's id as the JUnit adapter names it (``classname::name``).
TEST_ID = "tests.test_prop::test_property"

_FILES: dict[str, str] = {
    "pytest.ini": "[pytest]\naddopts = -p no:cacheprovider\n",
    "conftest.py": (
        "import os\n\nimport pytest\n\n\n"
        "def pytest_addoption(parser):\n"
        '    parser.addoption("--prop-seed", type=int, default=None)\n\n\n'
        "@pytest.fixture\n"
        "def seed(request):\n"
        '    value = request.config.getoption("--prop-seed")\n'
        '    return int(os.environ["PROP_SEED"]) if value is None else value\n'
    ),
    "mylib.py": (
        "def checksum_ok(seed):\n"
        '    """A pre-existing, seed-dependent flake: every third seed misses."""\n'
        "    return seed % 3 != 0\n"
    ),
    PROPERTY_FILE: (
        "import mylib\n\n\ndef test_property(seed):\n    assert mylib.checksum_ok(seed)\n"
    ),
    EPOCH_LOCK: "fixture-epoch: 2026-11 (generator v3)\n",
    FIXTURE: '{"values": [1, 2, 3], "unit": "ms"}\n',
    ".gitignore": "__pycache__/\n*.xml\n",
}

#: The property: the fixture's values are sorted (exit 0 holds, 1 fails).
SORTED = "import json, sys; v = json.load(open(sys.argv[1]))['values']; sys.exit(v != sorted(v))"

#: The patch: a regression that misses for every seventh seed as well.
_REGRESSION = (
    "def checksum_ok(seed):\n"
    '    """A pre-existing, seed-dependent flake: every third seed misses."""\n'
    "    return seed % 3 != 0 and seed % 7 != 0  # the patch's regression\n"
)


def run_in(
    cwd: Path, argv: Sequence[str], env: Mapping[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    """``argv`` in ``cwd`` with ``env``, its output captured as text; never raises on exit."""
    return subprocess.run(
        list(argv), cwd=cwd, env=dict(env), capture_output=True, text=True, check=False,
        timeout=timeout,
    )  # fmt: skip


def git(repo: Path, *args: str) -> str:
    """Run git in ``repo`` (no global config needed) and return stdout."""
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True)
    return done.stdout


def pytest_command(*extra: str) -> list[str]:
    """The property run as a replay COMMAND: the real pytest, the seed pinned."""
    return [sys.executable, "-m", "pytest", "-q", PROPERTY_FILE, "--prop-seed={seed}", *extra]


@attrs.frozen
class SampleRepo:
    """The repository, its two commits, and a private TMPDIR for the CLI."""

    path: Path
    base: str
    head: str
    tmp: Path

    @property
    def claimed_epoch(self) -> str:
        """sha256 of the epoch lock as committed (what an honest claim names)."""
        return hashlib.sha256((self.path / EPOCH_LOCK).read_bytes()).hexdigest()

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """The CLI's environment: TMPDIR private to this test, so leftovers show."""
        env = dict(os.environ)
        env["TMPDIR"] = str(self.tmp)
        # The inner pytest needs no plugins; autoloading them costs most of its start-up.
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
        env.update(extra or {})
        return env

    def flakecore(
        self, *args: str, timeout: float = 120, env: Mapping[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run the installed CLI in the repository, as a pipeline would (``env`` added)."""
        argv = [sys.executable, "-m", "flakecore", *args]
        return run_in(self.path, argv, self.env(env), timeout)

    def replay_args(
        self,
        *,
        seed: str,
        out: Path,
        command: Sequence[str] | None = None,
        attempts: int = 2,
        patch: Sequence[str] = ("--patch-misses", "1"),
        extra: Sequence[str] = (),
    ) -> list[str]:
        """``replay`` arguments for the usual claim on this repository."""
        return [
            "replay",
            "--base", self.base,
            "--seed", seed,
            "--attempts", str(attempts),
            "--property-file", PROPERTY_FILE,
            "--epoch-lock", EPOCH_LOCK,
            "--claimed-epoch", self.claimed_epoch,
            *patch,
            "--out", str(out),
            "--json",
            *extra,
            "--",
            *(pytest_command() if command is None else command),
        ]  # fmt: skip

    def worktrees(self) -> list[str]:
        """Paths ``git worktree list`` shows (the main checkout first)."""
        out = git(self.path, "worktree", "list", "--porcelain")
        return [line.split(" ", 1)[1] for line in out.splitlines() if line.startswith("worktree ")]

    def assert_clean(self) -> None:
        """No worktree but the main one is registered, and nothing is left in TMPDIR."""
        assert self.worktrees() == [str(self.path)]
        assert sorted(p.name for p in self.tmp.iterdir()) == []
        assert not (self.path / ".git" / "worktrees").exists() or not any(
            (self.path / ".git" / "worktrees").iterdir()
        )


def init_repo(path: Path, files: Mapping[str, str], message: str) -> str:
    """A new repository on ``main`` holding ``files`` in one commit; returns its SHA."""
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.name", "flakecore e2e")
    git(path, "config", "user.email", "e2e@flakecore.invalid")
    git(path, "config", "commit.gpgsign", "false")
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", message)
    return git(path, "rev-parse", "HEAD").strip()


def make_repo(
    root: Path,
    *,
    regression: bool = True,
    fixture_on_head: str | None = None,
    base_files: Mapping[str, str] | None = None,
) -> SampleRepo:
    """Create the sample repository: a base commit, then the patch commit (HEAD).

    ``base_files`` adds files to the base commit (a reviewed ``pyproject.toml``).
    """
    path, tmp = root / "repo", root / "tmp"
    tmp.mkdir()
    base = init_repo(path, {**_FILES, **(base_files or {})}, "base: a flaky checksum")
    if regression:
        (path / "mylib.py").write_text(_REGRESSION)
    if fixture_on_head is not None:
        (path / FIXTURE).write_text(fixture_on_head)
    git(path, "commit", "-q", "--allow-empty", "-a", "-m", "patch")
    head = git(path, "rev-parse", "HEAD").strip()
    return SampleRepo(path=path, base=base, head=head, tmp=tmp)


def decision(run: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """The one JSON decision a ``--json`` run printed (``Any``: tests index into it freely)."""
    lines = run.stdout.splitlines()
    assert len(lines) == 1, (run.stdout, run.stderr)
    value = json.loads(lines[0])
    assert isinstance(value, dict)
    # Every decision the gathering verbs print is also a valid decision record.
    problems = [str(p) for p in validation.iter_errors(value, "decision")]
    assert problems == [], problems
    return value


def budget_args(
    repo: SampleRepo,
    out: Path,
    *,
    seeds: str | None,
    prop: str = SORTED,
    command: list[str] | None = None,
) -> list[str]:
    """``budget-run`` arguments for the sample's fixture and property (``--json``)."""
    return [
        "budget-run",
        "--test-id", TEST_ID,
        "--base", repo.base,
        "--fixture", FIXTURE,
        "--property-cmd", shlex.join([sys.executable, "-c", prop, "{fixture}"]),
        *(["--seeds", seeds] if seeds is not None else []),
        "--out", str(out),
        "--json",
        "--",
        *(pytest_command() if command is None else command),
    ]  # fmt: skip
