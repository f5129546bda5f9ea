"""``flakecore ingest`` as a pipeline runs it: records on stdout or --out, nothing half-written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from terminal import run_on_a_terminal

from flakecore.exits import EXIT_DATAERR, EXIT_NOINPUT, EXIT_USAGE

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "reports"
SUREFIRE = next((FIXTURES / "maven-surefire").rglob("TEST-*.xml"))

TAP = b"TAP version 14\n1..3\nok 1 - a\nnot ok 2 - b\nok 3 - c # SKIP later\n"
JUNIT = b'<testsuite><testcase classname="c" name="t"><failure message="m"/></testcase></testsuite>'


def run(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "flakecore", "ingest", *args],
        input=stdin,
        capture_output=True,
        check=False,
    )


def records(data: bytes) -> list[dict[str, object]]:
    return [json.loads(line) for line in data.splitlines()]


def test_stdin_tap_to_stdout() -> None:
    out = run("-", stdin=TAP)
    assert out.returncode == 0, out.stderr
    got = [(r["test_id"], r["outcome"]) for r in records(out.stdout)]
    assert got == [("a", "pass"), ("b", "fail"), ("c", "skip")]
    assert out.stderr.startswith(b"ingest: 3 attempts from 1 report (")
    assert out.stderr.count(b"\n") == 1


def test_content_sniffing_not_file_names(tmp_path: Path) -> None:
    disguised = tmp_path / "report.json"
    disguised.write_bytes(JUNIT)
    out = run(str(disguised))
    assert out.returncode == 0
    (record,) = records(out.stdout)
    assert record["test_id"] == "c::t"
    assert record["outcome"] == "fail"
    source = record["source"]
    assert isinstance(source, dict)
    assert (source["file"], source["format"]) == (str(disguised), "junit")
    assert (source["classname"], source["name"]) == ("c", "t")


def test_several_reports_and_test_id_filter(tmp_path: Path) -> None:
    tap = tmp_path / "r.tap"
    tap.write_bytes(TAP)
    out = run(str(tap), str(SUREFIRE), "--test-id", "b")
    assert out.returncode == 0
    assert [r["test_id"] for r in records(out.stdout)] == ["b"]
    missing = run(str(tap), "--test-id", "no-such-test")
    assert missing.returncode == EXIT_DATAERR
    assert b"no attempt of test" in missing.stderr


def test_out_is_atomic_and_untouched_on_a_bad_report(tmp_path: Path) -> None:
    good, bad, out = tmp_path / "good.tap", tmp_path / "bad.xml", tmp_path / "out.jsonl"
    good.write_bytes(TAP)
    bad.write_bytes(b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "b">]><testsuite/>')
    assert run(str(good), "--out", str(out)).returncode == 0
    before = out.read_bytes()
    assert len(records(before)) == 3
    failed = run(str(good), str(bad), "--out", str(out))
    assert failed.returncode == EXIT_DATAERR
    assert str(bad).encode() in failed.stderr
    assert b"Traceback" not in failed.stderr
    assert out.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.xml", "good.tap", "out.jsonl"]


def test_stdout_gets_nothing_when_a_later_report_is_unusable(tmp_path: Path) -> None:
    good, gz = tmp_path / "good.tap", tmp_path / "report.xml"
    good.write_bytes(TAP)
    gz.write_bytes(b"\x1f\x8b\x08\x00" + b"\x00" * 20)
    out = run(str(good), str(gz))
    assert out.returncode == EXIT_DATAERR
    assert out.stdout == b""
    assert out.stderr.count(b"\n") == 1


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (("missing.xml",), EXIT_NOINPUT),
        (("-", "-"), EXIT_USAGE),
        (("x", "--report-format", "yaml"), EXIT_USAGE),
        (("x", "--format", "yaml"), EXIT_USAGE),
        (("x", "--format", "github"), EXIT_USAGE),  # annotations on stdout: the records need --out
    ],
)
def test_errors(args: tuple[str, ...], code: int) -> None:
    out = run(*args)
    assert out.returncode == code
    assert out.stdout == b""
    assert b"Traceback" not in out.stderr


def test_the_report_format_is_report_format_and_the_old_spelling_gets_a_hint() -> None:
    assert run("-", "--report-format", "tap", stdin=TAP).returncode == 0
    old = run("-", "--format", "tap", stdin=TAP)
    assert old.returncode == EXIT_USAGE
    assert old.stdout == b"" and old.stderr.count(b"\n") == 1
    assert b"flakecore ingest: argument --format" in old.stderr
    assert b"the format of a test report is --report-format tap" in old.stderr


def test_one_attempt_is_singular() -> None:
    out = run("-", stdin=b"1..1\nok 1 - a\n")
    assert out.stderr.startswith(b"ingest: 1 attempt from 1 report (pass=1; flagged=0)\n")


@pytest.mark.parametrize("form", ["json", "text"])
def test_the_records_are_the_output_in_text_and_json(form: str) -> None:
    out = run("-", "--format", form, stdin=TAP)
    assert out.returncode == 0
    assert [r["test_id"] for r in records(out.stdout)] == ["a", "b", "c"]


def test_with_out_json_prints_one_summary(tmp_path: Path) -> None:
    out_file = tmp_path / "out.jsonl"
    out = run("-", "--format", "json", "--out", str(out_file), stdin=TAP)
    assert out.returncode == 0 and len(records(out_file.read_bytes())) == 3
    assert records(out.stdout) == [
        {"input": ["-"], "out": str(out_file), "test_id": None, "attempts": 3,
         "results": {"fail": 1, "pass": 1, "skip": 1}, "flagged": 0, "exit": 0}
    ]  # fmt: skip


def test_github_output_annotates_and_summarises(tmp_path: Path) -> None:
    summary, out_file = tmp_path / "summary.md", tmp_path / "out.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "flakecore", "ingest", "-", "--format", "github", "--out", out_file],
        input=TAP,
        capture_output=True,
        check=False,
        env={**os.environ, "GITHUB_STEP_SUMMARY": str(summary)},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(
        b"::notice title=flakecore ingest::READ: 3 attempts from 1 report"
    )
    assert len(records(out_file.read_bytes())) == 3
    assert "| ingest | READ | accepted | 0 | 3 attempts from 1 report" in summary.read_text()
    assert f"| {out_file} |" in summary.read_text()


def _on_a_terminal(*args: str) -> tuple[subprocess.CompletedProcess[bytes], str]:
    return run_on_a_terminal([sys.executable, "-m", "flakecore", "ingest", *args])


def test_progress_on_a_terminal_only(tmp_path: Path) -> None:
    tap = tmp_path / "big.tap"
    tap.write_bytes(b"".join(b"ok %d - t%d\n" % (i, i) for i in range(1, 5001)) + b"1..5000\n")
    run_, terminal = _on_a_terminal(str(tap), str(SUREFIRE))
    assert run_.returncode == 0
    assert len(records(run_.stdout)) > 5000
    # Each report ends at 100% with the attempts so far; the summary replaces the line.
    assert f"\ringest: {tap}: 100% of 0.1 MB, 5000 attempts\x1b[K" in terminal
    assert f"\ringest: {SUREFIRE}: 100% of " in terminal
    assert "\r\x1b[Kingest: " in terminal
    piped = run(str(tap))
    assert piped.returncode == 0
    assert b"\r" not in piped.stderr
    assert piped.stderr.count(b"\n") == 1


def test_progress_line_is_cleared_before_an_error(tmp_path: Path) -> None:
    # Records are written (and progress shown) before the NUL far into the file is read.
    bad = tmp_path / "bad.tap"
    bad.write_bytes(b"".join(b"ok %d - t%d\n" % (i, i) for i in range(1, 60001)) + b"\x00\n")
    run_, terminal = _on_a_terminal(str(bad))
    assert run_.returncode == EXIT_DATAERR
    assert run_.stdout == b""
    before, _, error = terminal.partition("flakecore: ")
    assert f"\ringest: {bad}: " in before
    assert before.endswith("\r\x1b[K")  # the error starts on a wiped line
    assert "NUL" in error
