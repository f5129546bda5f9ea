"""Run docs/tutorial.md for real: every file it shows is written, every command it shows runs.

Blocks are read in order: a fenced block whose info string names a file
(```` ```python file=mylib.py ````) is written there; a ```` ```sh ```` block
is run one line at a time with ``bash`` in the tutorial's repository, and
each command must exit as its trailing ``# exit N`` says (0 without one).
Other blocks (output, CI YAML) are prose.  The ``pip install`` line is
skipped (flakecore is installed already) unless ``--wheel WHEEL`` names the
wheel to install in its place.

    python examples/tutorial.py [--wheel WHEEL] [--workdir DIR] [--transcript FILE]

Prints each command and the end of its output; exits 1 if any command exited
otherwise than the tutorial says.  ``--transcript`` writes every command,
exit and output as JSON, for tests to look closer.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

TUTORIAL = Path(__file__).resolve().parent.parent / "docs" / "tutorial.md"
_FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
_EXIT = re.compile(r"\s+# exit (\d+)$")
_SHOWN = 8


class Step(NamedTuple):
    """One file to write, or one command with the exit the tutorial expects.

    (Standard library only: this runs before the tutorial installs anything.)
    """

    file: str | None = None
    text: str = ""
    command: str | None = None
    exit: int = 0


def steps(markdown: str) -> Iterator[Step]:
    """The tutorial's files and commands, in order."""
    for info, body in _FENCE.findall(markdown):
        words = info.split()
        named = [w.removeprefix("file=") for w in words if w.startswith("file=")]
        if named:
            yield Step(file=named[0], text=body)
        elif words[:1] == ["sh"]:
            for line in body.splitlines():
                if not line.strip() or line.lstrip().startswith("#"):
                    continue
                found = _EXIT.search(line)
                command = line[: found.start()] if found else line
                yield Step(command=command, exit=int(found[1]) if found else 0)


def _environment(workdir: Path) -> dict[str, str]:
    """The tutorial's shell: this Python's scripts first, a git identity, a private TMPDIR."""
    tmp = workdir / "tmp"
    tmp.mkdir(exist_ok=True)
    bindir = str(Path(sys.executable).parent)
    who = {"GIT_AUTHOR_NAME": "Tutorial", "GIT_COMMITTER_NAME": "Tutorial"}
    who |= {"GIT_AUTHOR_EMAIL": "tutorial@flakecore.invalid"}
    who |= {"GIT_COMMITTER_EMAIL": "tutorial@flakecore.invalid"}
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    return {
        **inherited,
        **who,
        "PATH": bindir + os.pathsep + os.environ.get("PATH", ""),
        "TMPDIR": str(tmp),
        "GIT_CONFIG_GLOBAL": os.devnull,
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }


def _install(command: str, wheel: str | None) -> str | None:
    """The tutorial's ``pip install`` line: the given wheel instead of the index, or skipped."""
    if wheel is None:
        return None
    return command.replace("'flakecore[all]'", f"'{wheel}[all]'").replace(
        " install ", " install -q "
    )


def run(workdir: Path, wheel: str | None, transcript: list[dict[str, object]]) -> int:
    """Every step in ``workdir/repo``; returns how many commands exited unexpectedly."""
    repo = workdir / "repo"
    repo.mkdir(parents=True)
    env = _environment(workdir)
    wrong = 0
    for step in steps(TUTORIAL.read_text(encoding="utf-8")):
        if step.file is not None:
            (repo / step.file).parent.mkdir(parents=True, exist_ok=True)
            (repo / step.file).write_text(step.text, encoding="utf-8")
            print(f"-- wrote {step.file}", flush=True)
            continue
        assert step.command is not None
        command = step.command
        if "pip install" in command:
            installed = _install(command, wheel)
            if installed is None:
                print(f"$ {command}\n   (skipped: flakecore is installed already)", flush=True)
                continue
            command = installed
        done = subprocess.run(
            ["bash", "-c", command],
            cwd=repo,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            check=False,
        )
        ok = done.returncode == step.exit
        wrong += not ok
        output = (done.stdout + done.stderr).rstrip().splitlines()
        print(f"$ {command}", flush=True)
        for line in output[-_SHOWN:]:
            print(f"   {line}")
        mark = "ok " if ok else "BAD"
        print(f"   {mark} exit={done.returncode} (the tutorial says {step.exit})", flush=True)
        transcript.append(
            {"command": command, "exit": done.returncode, "expected": step.exit,
             "stdout": done.stdout, "stderr": done.stderr}
        )  # fmt: skip
    return wrong


def main(argv: list[str] | None = None) -> int:
    """Run the tutorial in ``--workdir`` (default: a temporary directory, removed after)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheel", help="install this wheel where the tutorial says pip install")
    parser.add_argument("--workdir", type=Path, help="keep the repository here (must not exist)")
    parser.add_argument("--transcript", type=Path, help="write every command's result as JSON")
    args = parser.parse_args(argv)
    transcript: list[dict[str, object]] = []
    if args.workdir is not None:
        wrong = run(args.workdir.resolve(), args.wheel, transcript)
    else:
        with tempfile.TemporaryDirectory(prefix="flakecore-tutorial-") as tmp:
            wrong = run(Path(tmp), args.wheel, transcript)
    if args.transcript is not None:
        args.transcript.write_text(json.dumps(transcript, indent=1), encoding="utf-8")
    verdict = "every command exited as docs/tutorial.md says" if not wrong else f"{wrong} did not"
    print(f"\n{verdict}")
    return 1 if wrong else 0


if __name__ == "__main__":
    raise SystemExit(main())
