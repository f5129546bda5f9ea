"""The base replay runs base code: a CI environment that imports the scored checkout is refused.

The sample project is an installable package (``mylib``, setuptools, with a
``pytest11`` entry point) whose tests import it.  On the base commit seed 7
passes; the patch makes it miss.  A CI job that installed the PR checkout
into its venv (``pip install -e .``, ``pip install .``, a ``.pth`` file,
``PYTHONPATH``) and replays the base in that venv imports the *patched*
package from the base worktree's tests: the base "misses" seed 7 and the
freeze is accepted on the patch's own regression.  Each leak is refused
before the first attempt (``REJECT_INCOMPLETE``, naming it); the honest twin
-- a venv that ``--setup`` builds from the base worktree -- replays base code
and decides (``REJECT_PATCH_INTRODUCED`` on seed 7, ``ACCEPT_PREEXISTING``
on seed 3).

The venvs are real (``python -m venv``) and offline: pip, setuptools and
pytest come from this test environment through a ``.pth`` file, and every
install is ``--no-index --no-build-isolation``.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import pytest

from e2e.support import EPOCH_LOCK, PROPERTY_FILE, SampleRepo, git

pytestmark = pytest.mark.e2e

#: Where pytest, pip and setuptools live in this test environment.
TOOLS = sysconfig.get_paths()["purelib"]

_PYPROJECT = """\
[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"

[project]
name = "mylib"
version = "0.1"

[project.entry-points.pytest11]
mylib = "mylib.plugin"
"""
_CODE = "def checksum_ok(seed):\n    return seed % 3 != 0\n"
_REGRESSION = "def checksum_ok(seed):\n    return seed % 3 != 0 and seed % 7 != 0\n"
_FILES = {
    "pytest.ini": "[pytest]\naddopts = -p no:cacheprovider\n",
    "conftest.py": (
        "import pytest\n\n\n"
        "def pytest_addoption(parser):\n"
        '    parser.addoption("--prop-seed", type=int)\n\n\n'
        "@pytest.fixture\n"
        "def seed(request):\n"
        '    return request.config.getoption("--prop-seed")\n'
    ),
    PROPERTY_FILE: "import mylib\n\n\ndef test_property(seed):\n    assert mylib.checksum_ok(seed)\n",
    EPOCH_LOCK: "fixture-epoch: 2026-11\n",
    ".gitignore": "__pycache__/\n*.egg-info/\nbuild/\n.venv/\n",
}
#: Run by --setup inside the base worktree: a venv of its own, the base installed in it.
_SETUP = f"""\
import subprocess, sys, sysconfig
subprocess.run([sys.executable, "-m", "venv", "--without-pip", ".venv"], check=True)
out = subprocess.run([".venv/bin/python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                     check=True, capture_output=True, text=True).stdout.strip()
open(out + "/_tools.pth", "w").write({TOOLS!r} + "\\n")
subprocess.run([".venv/bin/python", "-m", "pip", "install", "-q", "--no-index",
                "--no-build-isolation", "--no-deps", "-e", "."], check=True)
"""


def make_package_repo(root: Path, *, layout: str = "src") -> SampleRepo:
    """The package's repository: base commit, then the patch (HEAD) with the regression."""
    path, tmp = root / "repo", root / "tmp"
    path.mkdir()
    tmp.mkdir()
    package = "src/mylib" if layout == "src" else "mylib"
    pyproject = _PYPROJECT + (
        "" if layout == "src" else '\n[tool.setuptools]\npackages = ["mylib"]\n'
    )
    files = {**_FILES, "pyproject.toml": pyproject, f"{package}/__init__.py": _CODE}
    files[f"{package}/plugin.py"] = '"""A pytest plugin the package ships."""\n'
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.name", "flakecore e2e")
    git(path, "config", "user.email", "e2e@flakecore.invalid")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "base")
    base = git(path, "rev-parse", "HEAD").strip()
    (path / package / "__init__.py").write_text(_REGRESSION)
    git(path, "commit", "-q", "-a", "-m", "patch")
    head = git(path, "rev-parse", "HEAD").strip()
    return SampleRepo(path=path, base=base, head=head, tmp=tmp)


def venv(where: Path) -> Path:
    """A real, empty venv with this environment's tools reachable; returns its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    python = where / "bin" / "python"
    (site_packages(python) / "_tools.pth").write_text(TOOLS + "\n")
    return python


def site_packages(python: Path) -> Path:
    out = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    return Path(out)


def pip_install(python: Path, *args: str) -> None:
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-index", "--no-build-isolation",
         "--no-deps", *args],
        check=True,
    )  # fmt: skip


def replay(
    repo: SampleRepo,
    python: Path | str,
    *,
    seed: str,
    extra: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
) -> tuple[int, dict[str, Any]]:
    command = [str(python), "-m", "pytest", "-q", PROPERTY_FILE, "--prop-seed={seed}"]
    args = repo.replay_args(seed=seed, out=repo.tmp.parent / "freeze.json", command=command)
    args[args.index("--") : args.index("--")] = list(extra)
    run = subprocess.run(
        [sys.executable, "-m", "flakecore", *args],
        cwd=repo.path,
        env=repo.env(env),
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    lines = run.stdout.splitlines()
    assert len(lines) == 1, (run.stdout, run.stderr)
    out = json.loads(lines[0])
    assert isinstance(out, dict)
    return run.returncode, out


def refused(code: int, d: dict[str, Any], *leaks: str) -> None:
    assert (code, d["code"], d["replay"]["attempts"]) == (1, "REJECT_INCOMPLETE", [])
    (reason,) = d["reasons"]
    assert reason.startswith("the base replay would import the scored checkout: "), reason
    for leak in leaks:
        assert leak in reason, reason


@pytest.fixture
def repo(tmp_path: Path) -> SampleRepo:
    return make_package_repo(tmp_path)


def test_an_editable_install_of_the_checkout_is_refused(repo: SampleRepo, tmp_path: Path) -> None:
    python = venv(tmp_path / "ci-venv")
    pip_install(python, "-e", str(repo.path))
    code, d = replay(repo, python, seed="7")
    refused(
        code,
        d,
        f"adds {repo.path}/src to sys.path",
        f"the distribution mylib-0.1 was installed from the scored checkout (direct_url.json: "
        f"file://{repo.path})",
    )
    assert not (tmp_path / "freeze.json").exists()
    repo.assert_clean()


def test_an_editable_finder_mapping_into_the_checkout_is_refused(tmp_path: Path) -> None:
    repo = make_package_repo(tmp_path, layout="flat")
    python = venv(tmp_path / "ci-venv")
    pip_install(python, "-e", str(repo.path))
    code, d = replay(repo, python, seed="7")
    refused(code, d, f"an editable-install finder) maps 'mylib' to {repo.path}/mylib")
    repo.assert_clean()


def test_a_plain_install_from_the_checkout_and_its_pytest11_plugin_are_refused(
    repo: SampleRepo, tmp_path: Path
) -> None:
    python = venv(tmp_path / "ci-venv")
    pip_install(python, str(repo.path))
    installed = site_packages(python) / "mylib-0.1.dist-info" / "entry_points.txt"
    assert "[pytest11]" in installed.read_text()
    code, d = replay(repo, python, seed="7")
    refused(code, d, "the distribution mylib-0.1 was installed from the scored checkout")
    repo.assert_clean()


def test_a_pth_file_or_pythonpath_into_the_checkout_is_refused(
    repo: SampleRepo, tmp_path: Path
) -> None:
    python = venv(tmp_path / "ci-venv")
    (site_packages(python) / "checkout.pth").write_text(f"{repo.path}/src\n")
    code, d = replay(repo, python, seed="7")
    refused(code, d, f"checkout.pth in {site_packages(python)} adds {repo.path}/src to sys.path")
    (site_packages(python) / "checkout.pth").unlink()
    code, d = replay(repo, python, seed="7", env={"PYTHONPATH": f"{repo.path}/src"})
    refused(code, d, f"the PYTHONPATH entry {repo.path}/src is inside the scored checkout")
    # The honest twin: the same venv, PYTHONPATH relative to the base worktree (base code).
    code, d = replay(repo, python, seed="7", env={"PYTHONPATH": "src"})
    assert (code, d["code"]) == (4, "REJECT_PATCH_INTRODUCED")
    repo.assert_clean()


def test_a_venv_inside_the_checkout_is_refused(repo: SampleRepo) -> None:
    python = venv(repo.path / ".venv")  # ignored by git, so the checkout stays clean
    code, d = replay(repo, python, seed="7")
    refused(code, d, f"the command's program {python} is inside the scored checkout")
    repo.assert_clean()


def test_setup_builds_the_base_its_own_environment(repo: SampleRepo, tmp_path: Path) -> None:
    """The honest twin: CI's venv has the checkout, the replay gets the base's own venv."""
    ci = venv(tmp_path / "ci-venv")
    pip_install(ci, "-e", str(repo.path))
    script = tmp_path / "setup_base.py"
    script.write_text(_SETUP)
    setup = ("--setup", shlex.join([str(ci), str(script)]))
    code, d = replay(repo, ".venv/bin/python", seed="7", extra=setup)
    # Base code ran: seed 7 passes on the base, so the patch introduced the miss.
    assert (code, d["code"]) == (4, "REJECT_PATCH_INTRODUCED"), d["reasons"]
    assert [a["result"] for a in d["replay"]["attempts"]] == ["pass", "pass"]
    code, d = replay(repo, ".venv/bin/python", seed="3", extra=setup)
    assert (code, d["code"]) == (0, "ACCEPT_PREEXISTING"), d["reasons"]
    repo.assert_clean()


def test_a_failing_setup_is_incomplete(repo: SampleRepo) -> None:
    setup = ("--setup", shlex.join([sys.executable, "-c", "raise SystemExit(3)"]))
    code, d = replay(repo, sys.executable, seed="3", extra=setup)
    assert (code, d["code"], d["replay"]["attempts"]) == (1, "REJECT_INCOMPLETE", [])
    assert d["reasons"] == [f"--setup failed (exit 3): {setup[1]}"]
    repo.assert_clean()
