"""Smoke run of the benchmark (``nox -s bench`` runs it at full size).

Tiny reports, one repeat: this proves the script still generates every
format, runs every measurement and prints a row and a verdict for each, not
any speed (timed assertions have no place in the suite).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "bench" / "run.py"
ROW = re.compile(
    r"^(junit|pytest-json|tap) +(.+?) +([0-9.]+) +[0-9,]+ .* ([0-9.]+) +[0-9.]+ +([0-9.]+)$"
)


def test_bench_prints_every_row_and_verdict(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--testcases", "300", "--repeat", "1", "--dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    rows = {(m[1], m[2]) for m in map(ROW.match, proc.stdout.splitlines()) if m}
    assert rows == {
        ("junit", "bare junit"),
        ("junit", "ingest (iter_jsonl)"),
        ("junit", "floor (no checks)"),
        ("junit", "floor + far-repeat"),
        ("junit", "objects (iter_attempts)"),
        ("pytest-json", "bare pytest-json"),
        ("pytest-json", "bare pytest-json-stdlib"),
        ("pytest-json", "ingest (iter_jsonl)"),
        ("pytest-json", "objects (iter_attempts)"),
        ("tap", "bare tap"),
        ("tap", "ingest (iter_jsonl)"),
        ("tap", "floor (no checks)"),
        ("tap", "floor + far-repeat"),
        ("tap", "objects (iter_attempts)"),
    }
    assert proc.stdout.count("target: <=") == 3
    # Every run wrote its records and removed them: only the reports remain.
    assert sorted(p.suffix for p in tmp_path.iterdir()) == [".json", ".tap", ".xml"]

    # The floor skips the checks, not the work: one record per test, with the
    # ingest's test ids, in order (else it would be a floor below the real one).
    for fmt, suffix in (("tap", ".tap"), ("junit", ".xml")):
        report = tmp_path / f"bench-300{suffix}"
        ids: dict[str, list[str]] = {}
        for mode in ("floor", "floor-far", "ingest"):
            out = tmp_path / f"{mode}.jsonl"
            subprocess.run(
                [sys.executable, str(BENCH), "--child", mode, fmt, str(report), str(out)],
                check=True,
                capture_output=True,
                timeout=120,
            )
            ids[mode] = [json.loads(line)["test_id"] for line in out.read_text().splitlines()]
        assert len(ids["floor"]) == 300
        assert ids["floor"] == ids["floor-far"] == ids["ingest"], fmt

    # The far-repeat floor really checks: a report that repeats an id is refused.
    dup = {
        "tap": "1..3\nok 1 - a\nok 2 - b\nok 3 - a\n",
        "junit": '<testsuite><testcase classname="c" name="a"/>\n'
        '<testcase classname="c" name="b"/>\n<testcase classname="c" name="a"/></testsuite>\n',
    }
    for fmt, text in dup.items():
        report = tmp_path / f"dup.{fmt}"
        report.write_text(text)
        for mode, refused in (("floor", False), ("floor-far", True)):
            proc = subprocess.run(
                [
                    sys.executable,
                    str(BENCH),
                    "--child",
                    mode,
                    fmt,
                    str(report),
                    str(tmp_path / "o"),
                ],
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
            assert (proc.returncode != 0) is refused, (fmt, mode, proc.stderr)
            assert ("repeated test id" in proc.stderr) is refused, (fmt, mode)


GATE_BENCH = BENCH.with_name("verbs.py")
GATE_ROWS = [
    "flakecore --version",
    "flakecore decide FILE (one packet)",
    "python -c 'import attrs'",
    *(
        f"{p} - {f} x200"
        for p in ("admit", "decide", "budget", "classify")
        for f in ("(text)", "--json")
    ),
    "lease check x50 (base)",
    "lease check x50 (signed)",
    "guard, 200 changed paths",
    "budget-run --jobs 2, 8 x 0.05 s",
    "replay, 5 attempts, 20 files",
]


def test_gate_bench_prints_every_row_with_its_floor() -> None:
    """Every goal row runs and did the same work as its floor (the bench stops otherwise)."""
    proc = subprocess.run(
        [sys.executable, str(GATE_BENCH), "--small"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    for name in GATE_ROWS:
        row = next((line for line in lines if line.startswith(name + " ")), None)
        assert row is not None, (name, proc.stdout)
        assert re.search(
            r" [0-9.]+x +[0-9.]+x  (goal <= [0-9.]+x: (met|MISSED)|\(context\))$", row
        ) or (re.search(r" [+-][0-9]+ms +[+-][0-9]+ms  goal <= \+100 ms: (met|MISSED)$", row)), row
