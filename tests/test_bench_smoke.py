"""Smoke run of the benchmark (``nox -s bench`` runs it at full size).

Tiny reports, one repeat: this proves the script still generates every
format, runs every measurement and prints a row and a verdict for each, not
any speed (timed assertions have no place in the suite).
"""

from __future__ import annotations

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
        ("junit", "objects (iter_attempts)"),
        ("pytest-json", "bare pytest-json"),
        ("pytest-json", "bare pytest-json-stdlib"),
        ("pytest-json", "ingest (iter_jsonl)"),
        ("pytest-json", "objects (iter_attempts)"),
        ("tap", "bare tap"),
        ("tap", "ingest (iter_jsonl)"),
        ("tap", "floor (render+write)"),
        ("tap", "objects (iter_attempts)"),
    }
    assert proc.stdout.count("target: <=") == 3
    # Every run wrote its records and removed them: only the reports remain.
    assert sorted(p.suffix for p in tmp_path.iterdir()) == [".json", ".tap", ".xml"]
