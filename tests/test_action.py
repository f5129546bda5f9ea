"""The composite GitHub Action, run locally the way a runner runs it.

``action.yml`` has one step, ``bash "$GITHUB_ACTION_PATH/action/run.sh"``; here
that script runs with the ``GITHUB_*`` variables a runner sets, against the
installed flakecore (``install: false``), and the annotations, the step
summary, the ``exit-code`` output and the exit status are checked.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "action" / "run.sh"
EXAMPLES = ROOT / "examples" / "decide"


def run_action(tmp_path: Path, verb: str, args: list[str], **inputs: str) -> tuple[int, str, Path]:
    """Run the action's step; returns (exit status, stdout, the GITHUB_OUTPUT file)."""
    output = tmp_path / "github_output"
    summary = tmp_path / "step_summary.md"
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "GITHUB_ACTIONS": "true",
        "GITHUB_ACTION_PATH": str(ROOT),
        "GITHUB_WORKSPACE": str(tmp_path),
        "GITHUB_OUTPUT": str(output),
        "GITHUB_STEP_SUMMARY": str(summary),
        "RUNNER_TEMP": str(tmp_path),
        "FLAKECORE_VERB": verb,
        "FLAKECORE_ARGS": "\n".join(args),
        "FLAKECORE_PYTHON": sys.executable,
        "FLAKECORE_INSTALL": "false",
    }
    env.update(inputs)
    done = subprocess.run(
        ["bash", str(SCRIPT)],
        check=False,
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done.returncode, done.stdout, output


WORKFLOWS = ROOT / "examples" / "github-actions"


@pytest.mark.parametrize("name", ["flakecore-gate.yml", "flakecore-accept.yml"])
def test_the_documented_workflows_are_the_linted_files(name: str) -> None:
    """docs/github-actions.md shows each workflow whole; the lint session checks the files."""
    doc = (ROOT / "docs" / "github-actions.md").read_text(encoding="utf-8")
    text = (WORKFLOWS / name).read_text(encoding="utf-8")
    assert f"```yaml\n{text}```\n" in doc


def test_action_yml_runs_exactly_the_tested_script() -> None:
    text = (ROOT / "action.yml").read_text(encoding="utf-8")
    assert 'run: bash "$GITHUB_ACTION_PATH/action/run.sh"' in text
    assert text.count("run:") == 1  # no other inline shell that these tests would miss
    assert "${{ inputs." not in text.split("run:")[1]  # inputs reach bash only via env


@pytest.mark.parametrize(
    ("packet", "status", "level", "code"),
    [
        ("eligible.json", 0, "::notice", "ELIGIBLE"),
        ("deterministic.json", 3, "::error", "NOT_FLAKE_SHAPED"),
        ("same-runner.json", 4, "::error", "NOT_DISTINCT_RUNNER"),
    ],
)
def test_verdicts_become_annotations_a_summary_and_the_exit_code(
    tmp_path: Path, packet: str, status: int, level: str, code: str
) -> None:
    rc, out, output = run_action(tmp_path, "decide", [str(EXAMPLES / packet)])
    assert rc == status
    assert out.startswith(level) and code in out
    assert output.read_text() == f"exit-code={status}\n"
    summary = (tmp_path / "step_summary.md").read_text()
    assert code in summary and summary.count("\n|") >= 2  # header, rule, one row


def test_arguments_are_never_shell_code(tmp_path: Path) -> None:
    hostile = f"$(touch {tmp_path}/pwned) `touch {tmp_path}/pwned2`; touch {tmp_path}/pwned3"
    rc, _, _ = run_action(tmp_path, "decide", [hostile])
    assert rc == 66  # one argument: a file of that (odd) name, which does not exist
    assert not any(tmp_path.glob("pwned*"))


def test_arguments_keep_their_spaces_and_a_two_word_verb_works(tmp_path: Path) -> None:
    spaced = tmp_path / "a packet.json"
    spaced.write_bytes((EXAMPLES / "eligible.json").read_bytes())
    rc, out, _ = run_action(tmp_path, "decide", [str(spaced)])
    assert rc == 0, out
    rc, _, _ = run_action(tmp_path, "schema show", [])
    assert rc == 64  # `schema show` is no verb: a usage error, never 0


def test_an_empty_verb_only_installs(tmp_path: Path) -> None:
    rc, out, output = run_action(tmp_path, "", [])
    assert rc == 0 and out == ""
    assert output.read_text() == "exit-code=0\n"


def test_a_bad_install_input_is_a_usage_error(tmp_path: Path) -> None:
    rc, out, output = run_action(tmp_path, "decide", ["x"], FLAKECORE_INSTALL="maybe")
    assert rc == 64
    assert out.startswith("::error")
    assert not output.exists()
