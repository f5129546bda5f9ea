"""CI output: workflow-command escaping, annotations, the step summary table."""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import pytest
from packets import budget_packet, classify_report, decide_packet

from flakecore.cli._github import (
    SummaryRow,
    annotation,
    append_step_summary,
    escape_data,
    escape_property,
    markdown_cell,
    summary_markdown,
)
from gate.support import NOW_TEXT, cli, dump, lease_record, on_base, store


@pytest.mark.parametrize(
    ("text", "data", "prop"),
    [
        ("plain", "plain", "plain"),
        ("100%", "100%25", "100%25"),
        ("a\nb", "a%0Ab", "a%0Ab"),
        ("a\r\nb", "a%0D%0Ab", "a%0D%0Ab"),
        ("k:v,w", "k:v,w", "k%3Av%2Cw"),
        ("%0A", "%250A", "%250A"),
        ("tests/t.py::test[a,b]", "tests/t.py::test[a,b]", "tests/t.py%3A%3Atest[a%2Cb]"),
    ],
)
def test_escaping_follows_the_workflow_command_rules(text: str, data: str, prop: str) -> None:
    assert escape_data(text) == data
    assert escape_property(text) == prop


def test_annotation_shape() -> None:
    assert annotation("error", "boom") == "::error::boom"
    assert (
        annotation("notice", "ok\n", title="t: x", file="a,b.json")
        == "::notice file=a%2Cb.json,title=t%3A x::ok%0A"
    )
    with pytest.raises(ValueError, match="level"):
        annotation("debug", "x")


@pytest.mark.parametrize(
    ("text", "cell"),
    [
        ("a|b", "a\\|b"),
        ("a\nb", "a<br>b"),
        ("a\r\nb\rc", "a<br>b<br>c"),
        ("<script>&", "&lt;script&gt;&amp;"),
        ("back\\|slash", "back\\\\\\|slash"),
    ],
)
def test_markdown_cells_cannot_add_columns_or_rows(text: str, cell: str) -> None:
    assert markdown_cell(text) == cell


def test_summary_table() -> None:
    refused = SummaryRow(
        test="t|1",
        policy="budget",
        code="STABLE_FAIL",
        exit=5,
        reason="a\nb",
        evidence="f",
        refused=True,
    )
    accepted = attrs.evolve(refused, code="FLAKE_CANDIDATE", exit=0, refused=False)
    text = summary_markdown("flakecore budget", [refused, accepted])
    lines = text.splitlines()
    assert lines[2] == "| test | policy | code | verdict | exit | reason | evidence |"
    assert lines[3] == "|---|---|---|---|---|---|---|"
    assert lines[4] == "| t\\|1 | budget | STABLE_FAIL | refused | 5 | a<br>b | f |"
    assert lines[5] == "| t\\|1 | budget | FLAKE_CANDIDATE | accepted | 0 | a<br>b | f |"
    assert text.endswith("\n\n")


def test_step_summary_only_when_set(tmp_path: Path) -> None:
    assert append_step_summary("t", [], environ={}) is None
    target = tmp_path / "summary.md"
    assert append_step_summary("t", [], environ={"GITHUB_STEP_SUMMARY": str(target)}) is None
    assert append_step_summary("u", [], environ={"GITHUB_STEP_SUMMARY": str(target)}) is None
    assert target.read_text().count("| test | policy |") == 2, "appended, never overwritten"
    error = append_step_summary("t", [], environ={"GITHUB_STEP_SUMMARY": str(tmp_path)})
    assert error is not None and "GITHUB_STEP_SUMMARY" in error


def _lines(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if line]


def test_policy_verb_github_output(tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    hostile = "tests/t.py::x\n::error::forged|cell"
    files = [
        dump(tmp_path / "ok.json", budget_packet()),
        dump(tmp_path / "bad.json", budget_packet(test_id=hostile, passes=0)),
        str(tmp_path / "missing.json"),
    ]
    done = cli("budget", *files, "--format", "github", "--no-config",
               env={"GITHUB_STEP_SUMMARY": str(summary)})  # fmt: skip
    assert done.returncode == 5
    lines = _lines(done.stdout)
    assert len(lines) == 3, "one annotation per packet, none forged"
    assert lines[0].startswith("::notice file=") and "FLAKE_CANDIDATE" in lines[0]
    assert lines[1].startswith("::error file=") and "STABLE_FAIL" in lines[1]
    assert "%0A" in lines[1] and "x%0A%3A%3Aerror%3A%3Aforged" in lines[1]
    assert lines[2].startswith("::error file=") and "missing.json" in lines[2]
    table = summary.read_text().splitlines()
    rows = [line for line in table if line.startswith("| ") and not line.startswith("| test |")]
    assert len(rows) == 3
    assert all(row.count(" | ") == 6 for row in rows), rows
    assert [row.split(" | ")[3:5] for row in rows] == [
        ["accepted", "0"],
        ["refused", "5"],
        ["refused", "66"],
    ]
    assert "forged\\|cell" in rows[1] and "<br>" in rows[1]


def test_github_rows_carry_the_lease_refusal(tmp_path: Path) -> None:
    """A FLAKE whose lease is refused says why the lease is refused, not only the class."""
    summary = tmp_path / "summary.md"
    files = [
        dump(tmp_path / "ok.json", classify_report()),
        dump(tmp_path / "far.json", classify_report(expires_at="2027-06-01T00:00:00Z")),
    ]
    done = cli("classify", *files, "--now", NOW_TEXT, "--format", "github", "--no-config",
               env={"GITHUB_STEP_SUMMARY": str(summary)})  # fmt: skip
    assert done.returncode == 4, "the first packet's exit: a FLAKE whose lease may open"
    ok, far = _lines(done.stdout)
    assert ok.startswith("::notice ") and "more than" not in ok
    assert far.startswith("::error ") and "expires_at is more than 14 days away" in far
    rows = _lines(summary.read_text())[3:]  # after the heading, the header and the rule
    cells = [row.split(" | ") for row in rows]
    assert [c[3:5] for c in cells] == [["accepted", "4"], ["refused", "6"]]
    assert "more than 14 days away" in cells[1][5] and "more than" not in cells[0][5]


def test_github_without_summary_variable_prints_annotations_only(tmp_path: Path) -> None:
    done = cli("decide", dump(tmp_path / "d.json", decide_packet()), "--format", "github",
               "--no-config")  # fmt: skip
    assert done.returncode == 0
    assert done.stdout.startswith("::notice ") and "ELIGIBLE" in done.stdout


def test_unwritable_summary_turns_success_into_74_never_the_reverse(tmp_path: Path) -> None:
    env = {"GITHUB_STEP_SUMMARY": str(tmp_path)}  # a directory: cannot append
    ok = dump(tmp_path / "ok.json", decide_packet())
    done = cli("decide", ok, "--format", "github", "--no-config", env=env)
    assert done.returncode == 74 and "GITHUB_STEP_SUMMARY" in done.stderr
    bad = dump(tmp_path / "bad.json", decide_packet(clean_class="pass"))
    assert cli("decide", bad, "--format", "github", "--no-config", env=env).returncode == 3


def test_lease_check_github(tmp_path: Path) -> None:
    leases = tmp_path / "leases"
    store(leases, lease_record(expires_at="2026-11-29T12:00:00Z"))
    summary = tmp_path / "summary.md"
    done = on_base("lease", "check", str(leases), "--now", NOW_TEXT, "--format", "github",
                   env={"GITHUB_STEP_SUMMARY": str(summary)})  # fmt: skip
    assert done.returncode == 8
    (line,) = _lines(done.stdout)
    assert line.startswith("::error file=") and "INVALID" in line
    assert "not after now" in summary.read_text()


def test_json_and_format_must_agree(tmp_path: Path) -> None:
    packet = dump(tmp_path / "d.json", decide_packet())
    assert cli("decide", packet, "--json", "--format", "text").returncode == 64
    assert cli("decide", packet, "--json", "--format", "json").returncode == 0
    assert cli("decide", packet, "--format", "yaml").returncode == 64
    done = cli("decide", packet, "--format", "json", "--no-config")
    assert json.loads(done.stdout)["code"] == "ELIGIBLE"
