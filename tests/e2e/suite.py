"""A throwaway repository with a real pytest suite using the plugin, for ``flakecore triage``.

Base: ``test_checksum`` is a seeded flake that base already has (it draws a
value with ``random`` -- which the plugin pins -- and every third value
fails: seed 3 fails, 7 of the 8 committed seeds pass); ``test_total`` and
``test_empty`` pass.  The patch breaks ``mylib.total`` (it drops the last
value): ``test_total`` fails on head only.  ``[tool.flakecore.triage]`` in base names the command that
runs one test with one seed, the epoch lock, and the replay plus the seed
budget as the policies.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import attrs

from e2e.support import git, init_repo, run_in

__all__ = ["FLAKE", "REGRESSION", "SuiteRepo", "make_suite", "pyproject"]

FLAKE = "tests/test_checksum.py::test_checksum"
REGRESSION = "tests/test_total.py::test_total"

_FILES = {
    "pytest.ini": "[pytest]\npythonpath = .\naddopts = -p no:cacheprovider\n",
    ".gitignore": "__pycache__/\n",
    "mylib.py": (
        "def checksum_ok(value):\n"
        "    return value % 3 != 0  # base's own flake: every third value\n\n\n"
        "def total(text):\n"
        '    return sum(int(x) for x in text.split(","))\n'
    ),
    "tests/test_checksum.py": (
        "import random\n\nimport mylib\n\n\n"
        "def test_checksum():\n    assert mylib.checksum_ok(random.randrange(1000))\n"
    ),
    "tests/test_total.py": (
        "import mylib\n\n\n"
        'def test_total():\n    assert mylib.total("1,2,3") == 6\n\n\n'
        'def test_empty():\n    assert mylib.total("0") == 0\n'
    ),
    "fixtures/epoch.lock": "fixture-epoch: 2026-11\n",
}
#: The patch: ``total`` drops the last value (``test_total`` regresses, ``test_empty`` passes).
_BROKEN_TOTAL = (
    "def checksum_ok(value):\n"
    "    return value % 3 != 0  # base's own flake: every third value\n\n\n"
    "def total(text):\n"
    '    return sum(int(x) for x in text.split(",")[:-1])\n'
)


def pyproject(
    python: str = sys.executable, *, policies: Sequence[str] = ("replay", "budget"), extra: str = ""
) -> str:
    """``[tool.flakecore]`` with the triage table for this suite (``extra``: more lines)."""
    command = [python, "-m", "pytest", "-q", "-p", "flakecore_pytest", "{test_id}"]
    command += ["--flakecore-seed", "{seed}"]
    check = [python, "-c", "import sys; open(sys.argv[1]).read()", "{fixture}"]
    return (
        f"[tool.flakecore]\n{extra}\n"
        "[tool.flakecore.triage]\n"
        f"command = {json.dumps(command)}\n"
        'epoch_lock = "fixtures/epoch.lock"\n'
        f"policies = {json.dumps(list(policies))}\n"
        f"property_command = {json.dumps(check)}\n"
    )


@attrs.frozen
class SuiteRepo:
    """The repository (HEAD is the patch), its base SHA, and a private TMPDIR."""

    path: Path
    base: str
    tmp: Path

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """TMPDIR private to the test; plugins load only when named (-p), which is faster."""
        env = {**os.environ, "TMPDIR": str(self.tmp), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
        env.update(extra or {})
        return env

    def run(self, *argv: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        """A command in the repository."""
        return run_in(self.path, argv, self.env(), timeout)

    def pytest(self, *args: str) -> subprocess.CompletedProcess[str]:
        """The suite under the plugin, as the patch's CI runs it."""
        return self.run(sys.executable, "-m", "pytest", "-q", "-p", "flakecore_pytest", *args)

    def flakecore(self, *args: str) -> subprocess.CompletedProcess[str]:
        """The installed CLI."""
        return self.run(sys.executable, "-m", "flakecore", *args)

    def ci_run(self, seed: str = "3") -> tuple[Path, Path]:
        """The patch's red CI run: the plugin's logs and an xunit1 JUnit report."""
        logs, report = self.path.parent / "logs", self.path.parent / "report.xml"
        ran = self.pytest(
            f"--flakecore-log={logs}",
            f"--flakecore-seed={seed}",
            "-o",
            "junit_family=xunit1",
            f"--junitxml={report}",
        )
        assert ran.returncode == 1, ran.stdout + ran.stderr
        return logs, report

    def commit_on_base(self, message: str, *paths: str) -> None:
        """Land ``paths`` (already written) on base in their own commit; the patch rebases."""
        git(self.path, "stash", "push", "-q", "--include-untracked", "--", *paths)
        git(self.path, "switch", "-q", "main")
        git(self.path, "stash", "pop", "-q")
        git(self.path, "add", "--", *paths)
        git(self.path, "commit", "-q", "-m", message)
        git(self.path, "switch", "-q", "patch")
        git(self.path, "rebase", "-q", "main")


def make_suite(
    root: Path,
    *,
    table: str | None = None,
    patch: bool = True,
    patch_files: Mapping[str, str] | None = None,
    base_files: Mapping[str, str] | None = None,
) -> SuiteRepo:
    """Base on ``main`` (``table`` its pyproject, plus ``base_files``); the patch HEAD."""
    path, tmp = root / "repo", root / "tmp"
    tmp.mkdir()
    files = {**_FILES, "pyproject.toml": table or pyproject(), **(base_files or {})}
    base = init_repo(path, files, "base: a seeded flake")
    git(path, "switch", "-q", "-c", "patch")
    if patch:
        (path / "mylib.py").write_text(_BROKEN_TOTAL)
    for name, text in (patch_files or {}).items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    git(path, "add", "-A")
    git(path, "commit", "-q", "--allow-empty", "-m", "patch: total (a regression)")
    return SuiteRepo(path=path, base=base, tmp=tmp)
