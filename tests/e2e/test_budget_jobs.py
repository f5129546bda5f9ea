"""``budget-run --jobs N``: seeds side by side, and the record one after the other writes.

Each case runs the same budget with ``--jobs 1`` and with ``--jobs 3`` and
compares ``budget.json`` (but the durations) and the decision: the runs in
seed order, the stop at the first run that filled nothing, the packet.  One
test shows that the runs do overlap.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from e2e.support import FIXTURE, TEST_ID, SampleRepo, decision, make_repo

pytestmark = pytest.mark.e2e

PROPERTY = "import sys; sys.exit(0)"
#: argv: SEED.  Seeds that are multiples of 3 miss (exit 1); seed 5 errors (exit 4);
#: every run takes a little while, more for the low seeds, so that they finish out of order.
SEEDED = (
    "import sys, time\n"
    "seed = int(sys.argv[1])\n"
    "time.sleep(0.3 / seed)\n"
    "sys.exit(4 if seed == 5 else 1 if seed % 3 == 0 else 0)\n"
)


def budget(repo: SampleRepo, out: Path, seeds: str, jobs: int, script: str) -> dict[str, Any]:
    run = repo.flakecore(
        "budget-run", "--test-id", TEST_ID, "--base", repo.base, "--fixture", FIXTURE,
        "--property-cmd", shlex.join([sys.executable, "-c", PROPERTY, "{fixture}"]),
        "--seeds", seeds, "--out", str(out), "--json", "--jobs", str(jobs),
        "--", sys.executable, "-c", script, "{seed}",
    )  # fmt: skip
    d = decision(run)
    record = json.loads(out.read_text())
    for entry in [*record["runs"], record["property"]]:
        entry.pop("duration_s")  # the one thing two runs never share
    d.pop("record")
    return {"exit": run.returncode, "decision": d, "record": record}


@pytest.mark.parametrize(
    "seeds",
    [
        "1,2,3,4,6,7,8,9",  # passes and misses: every seed runs
        "1,2,4,5,7,8,10,11",  # seed 5 errors: the record stops there
        "5,1,2,3,4,6,7,8",  # the first seed errors
        "1,2,3,4,6,7,8,5",  # the last one does
    ],
)
def test_the_record_is_the_sequential_one(tmp_path: Path, seeds: str) -> None:
    repo = make_repo(tmp_path)
    one = budget(repo, tmp_path / "one.json", seeds, 1, SEEDED)
    three = budget(repo, tmp_path / "three.json", seeds, 3, SEEDED)
    assert three == one
    listed = [int(s) for s in seeds.split(",")]
    stop = listed.index(5) + 1 if 5 in listed else len(listed)
    assert [r["seed"] for r in one["record"]["runs"]] == listed[:stop]


def test_the_runs_overlap(tmp_path: Path) -> None:
    """Each run waits until another one has started: only runs side by side can all pass."""
    marks = tmp_path / "started"
    marks.mkdir()
    script = (
        "import os, sys, time\n"
        f"marks = {str(marks)!r}\n"
        "open(os.path.join(marks, sys.argv[1]), 'w').close()\n"
        "for _ in range(200):\n"
        "    if len(os.listdir(marks)) >= 2:\n"
        "        sys.exit(0)\n"
        "    time.sleep(0.05)\n"
        "sys.exit(4)\n"
    )
    repo = make_repo(tmp_path)
    done = budget(repo, tmp_path / "b.json", "1,2,3,4,5,6,7,8", 2, script)
    assert [r["result"] for r in done["record"]["runs"]] == ["pass"] * 8


def test_jobs_must_be_positive(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    run = repo.flakecore(
        "budget-run", "--test-id", TEST_ID, "--base", repo.base, "--fixture", FIXTURE,
        "--property-cmd", "true {fixture}", "--out", str(tmp_path / "b.json"), "--jobs", "0",
        "--", "true", "{seed}",
    )  # fmt: skip
    assert run.returncode == 64
    assert "--jobs must be 1 or more" in run.stderr
