"""Which Python a replay command uses, and which of its options change the search path.

Real files in a temporary directory (executables, ``#!`` scripts), no mocks:
the rule is the one docs/gate.md states, table by table.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from flakecore.gate.isolation import Interpreter, command_interpreter


@pytest.fixture
def bin_dir(tmp_path: Path) -> Path:
    """A PATH with a python3, a console script, an env script and a shell script."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(sys.executable)
    (bin_dir / "python3.99").symlink_to(sys.executable)
    scripts = {
        "pytest": f"#!{bin_dir}/python3.99\nimport sys\n",
        "tool": "#!/usr/bin/env -S python3 -I\nimport sys\n",
        "runner": '#!/bin/sh\nexec python3 "$@"\n',
    }
    for name, text in scripts.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    return bin_dir


CASES = [
    (["python3", "-m", "pytest"], "python3", frozenset()),
    (["python3", "-I", "-m", "pytest"], "python3", frozenset("I")),
    (["python3", "-sSE", "script.py"], "python3", frozenset("sSE")),
    (["python3", "-W", "error", "-s", "-c", "pass"], "python3", frozenset("s")),
    (["python3", "-Xdev", "-E", "x.py", "-I"], "python3", frozenset("E")),  # -I is x.py's
    (["python3", "-c", "import x", "-S"], "python3", frozenset()),
    (["pytest", "-q"], "python3.99", frozenset()),
    (["tool"], "python3", frozenset("I")),
    (["runner", "-m", "pytest"], "python3", frozenset()),  # not a Python: the PATH python3
    (["bin/python3.99"], "python3.99", frozenset()),  # relative to the working directory
]


@pytest.mark.parametrize(("argv", "name", "flags"), CASES)
def test_the_interpreter_rule(
    bin_dir: Path, argv: list[str], name: str, flags: frozenset[str]
) -> None:
    found = command_interpreter(argv, {"PATH": str(bin_dir)}, bin_dir.parent)
    assert found == Interpreter(os.path.join(bin_dir, name), flags)


def test_no_python_on_the_path_means_nothing_to_probe(tmp_path: Path) -> None:
    assert command_interpreter(["make", "test"], {"PATH": str(tmp_path)}, tmp_path) is None


@pytest.mark.parametrize("path", ["bin", "./bin", "elsewhere:bin", "bin:"])
def test_a_relative_path_entry_is_the_commands_directorys(
    bin_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    """Not flakecore's working directory, where another ``bin/python3`` waits."""
    ours = tmp_path / "ours"
    (ours / "bin").mkdir(parents=True)
    (ours / "bin" / "python3").symlink_to(sys.executable)
    monkeypatch.chdir(ours)
    found = command_interpreter(["python3", "-m", "pytest"], {"PATH": path}, bin_dir.parent)
    assert found == Interpreter(os.path.join(bin_dir, "python3"))


def test_an_empty_path_entry_is_the_commands_directory(bin_dir: Path) -> None:
    found = command_interpreter(["python3.99"], {"PATH": ":/nonexistent"}, bin_dir)
    assert found == Interpreter(os.path.join(bin_dir, "python3.99"))
