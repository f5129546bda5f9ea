"""Every attempt ends completely: nothing an attempt started outlives it (SPEC 8).

The attack, as reproduced on the released CLI: each seed run forks a child
that calls ``setsid()`` (leaving the run's process group) and forks again;
that grandchild waits until ``budget-run`` has written ``budget.json``
(``STABLE_FAIL``: every seed missed) and rewrites its packet to
``passes: 4``; ``ledger apply`` then wrote a ``FLAKE_CANDIDATE`` row.

Now every attempt runs under its own reaper (the subreaper of the attempt),
so the grandchild is dead before the run's result is read, and ``ledger
apply`` recomputes the code from the record's own runs, so the rewrite would
be refused even if it happened.  Each refusal has its honest twin.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from e2e.support import FIXTURE, TEST_ID, SampleRepo, decision, make_repo, pytest_command

pytestmark = pytest.mark.e2e

#: argv: OUT PIDS SEED.  A setsid grandchild that waits for OUT and rewrites its packet;
#: the run itself waits until the grandchild has written its pid, then misses (exit 1).
_ATTACK = r"""
import json, os, sys, time
out, pids, seed = sys.argv[1:4]
ready_r, ready_w = os.pipe()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        with open(os.path.join(pids, f"{seed}-{os.getpid()}"), "w") as fh:
            fh.write(str(os.getpid()))
        os.write(ready_w, b"x")
        for _ in range(2400):
            if os.path.exists(out):
                break
            time.sleep(0.05)
        time.sleep(0.2)
        record = json.load(open(out))
        record.setdefault("packet", record)["passes"] = 4
        open(out, "w").write(json.dumps(record))
        os._exit(0)
    os._exit(0)
os.read(ready_r, 1)
sys.exit(1)
"""
#: argv: PIDS SEED.  Leaves a setsid grandchild, then kills its own reaper (same uid: it can).
_KILL_THE_REAPER = r"""
import os, signal, sys, time
pids, seed = sys.argv[1:3]
ready_r, ready_w = os.pipe()
if os.fork() == 0:
    os.setsid()
    with open(os.path.join(pids, seed), "w") as fh:
        fh.write(str(os.getpid()))
    os.write(ready_w, b"x")
    time.sleep(600)
    os._exit(0)
os.read(ready_r, 1)
os.kill(os.getppid(), signal.SIGKILL)
sys.exit(1)
"""
PROPERTY = "import sys; sys.exit(0)"
SEEDS = "1,2,3,4,5,6,7,8"


def budget_args(repo: SampleRepo, out: Path, command: list[str]) -> list[str]:
    return [
        "budget-run", "--test-id", TEST_ID, "--base", repo.base, "--fixture", FIXTURE,
        "--property-cmd", shlex.join([sys.executable, "-c", PROPERTY, "{fixture}"]),
        "--seeds", SEEDS, "--out", str(out), "--json", "--", *command,
    ]  # fmt: skip


def assert_all_dead(pids: Path, expected: int) -> None:
    found = sorted(pids.iterdir())
    assert len(found) == expected
    for file in found:
        with pytest.raises(ProcessLookupError):
            os.kill(int(file.read_text()), 0)


def ledger_apply(repo: SampleRepo, ledger: Path, record: Path) -> tuple[int, dict[str, Any]]:
    run = repo.flakecore(
        "ledger", "apply", "--dir", str(ledger), str(record), "--today", "2026-11-30",
        "--no-config", "--json",
    )  # fmt: skip
    out = json.loads(run.stdout)
    assert isinstance(out, dict)
    return run.returncode, out


def test_a_setsid_grandchild_dies_with_its_seed_run(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    out, pids, ledger = tmp_path / "budget.json", tmp_path / "pids", tmp_path / "ledger"
    pids.mkdir()
    command = [sys.executable, "-c", _ATTACK, str(out), str(pids), "{seed}"]
    run = repo.flakecore(*budget_args(repo, out, command))
    d = decision(run)
    assert (run.returncode, d["code"]) == (5, "STABLE_FAIL")
    # All eight grandchildren were killed and reaped before the record was written.
    assert_all_dead(pids, 8)
    written = json.loads(out.read_text())
    assert written == d["record"] and written["packet"]["passes"] == 0
    code, applied = ledger_apply(repo, ledger, out)
    assert (code, applied["action"], applied["decision"]["code"]) == (5, "untouched", "STABLE_FAIL")
    assert not ledger.exists() or not any(ledger.iterdir())


def test_a_rewritten_packet_is_refused_and_the_honest_record_applied(tmp_path: Path) -> None:
    """The second line: even a rewrite that got through is refused by ``ledger apply``."""
    repo = make_repo(tmp_path)  # HEAD misses seeds 3, 6 and 7 of 1..8
    out, ledger = tmp_path / "budget.json", tmp_path / "ledger"
    run = repo.flakecore(*budget_args(repo, out, pytest_command()))
    assert decision(run)["code"] == "FLAKE_CANDIDATE"
    honest = json.loads(out.read_text())
    assert honest["packet"]["passes"] == 5
    tampered = tmp_path / "tampered.json"
    forged = {**honest, "runs": [{**r, "result": "miss"} for r in honest["runs"]]}
    tampered.write_text(json.dumps(forged))  # all runs missed, the packet still says 5 of 8
    code, applied = ledger_apply(repo, ledger, tampered)
    assert (code, applied["action"], applied["decision"]["code"]) == (
        1,
        "refused",
        "INSUFFICIENT_BUDGET",
    )
    assert applied["decision"]["reasons"] == [
        "the record disagrees with its own runs: passes is 5 but the record gives 0",
        "the record disagrees with its own runs: its code is FLAKE_CANDIDATE but its runs "
        "give STABLE_FAIL",
    ]
    assert not ledger.exists()
    code, applied = ledger_apply(repo, ledger, out)
    assert (code, applied["action"]) == (0, "wrote")
    assert applied["row"]["passes"] == 5 and applied["row"]["opened_against"] == repo.base


def test_a_killed_reaper_leaves_nothing_behind_either(tmp_path: Path) -> None:
    """The command kills its own reaper: flakecore, the second subreaper, ends the rest."""
    repo = make_repo(tmp_path)
    pids = tmp_path / "pids"
    pids.mkdir()
    command = [sys.executable, "-c", _KILL_THE_REAPER, str(pids), "{seed}"]
    out = tmp_path / "freeze.json"
    run = repo.flakecore(*repo.replay_args(seed="3", out=out, command=command, attempts=1))
    d = decision(run)
    assert (run.returncode, d["code"]) == (1, "REJECT_INCOMPLETE")
    assert d["reasons"] == [
        "the command could not start: the attempt's reaper ended without a report"
    ]
    assert_all_dead(pids, 1)
    assert not out.exists()
    repo.assert_clean()


def test_a_replay_attempt_cannot_outlive_itself_either(tmp_path: Path) -> None:
    """The same grandchild in a base replay: dead before the freeze record is written."""
    repo = make_repo(tmp_path)
    out, pids = tmp_path / "freeze.json", tmp_path / "pids"
    pids.mkdir()
    command = [sys.executable, "-c", _ATTACK, str(out), str(pids), "{seed}"]
    run = repo.flakecore(*repo.replay_args(seed="3", out=out, command=command, attempts=2))
    d = decision(run)
    # Both attempts miss (exit 1): the base already missed, the record is written.
    assert (run.returncode, d["code"]) == (0, "ACCEPT_PREEXISTING")
    assert_all_dead(pids, 2)
    record = json.loads(out.read_text())
    assert record["base_misses"] == 2 and "passes" not in record
    repo.assert_clean()


#: Two attempts side by side under one second line (``adopt_orphans``), as ``triage --jobs 2``
#: runs them: one attempt kills its own reaper and leaves a child behind; another attempt's
#: child, and a plain child of flakecore's own (a git command, say), run meanwhile.
_SIDE_BY_SIDE = r"""
import os, subprocess, sys, threading
from pathlib import Path
from flakecore.gate.runtime import adopt_orphans, run_command

marks = Path(sys.argv[1])
assert adopt_orphans()
slow_child = ("import subprocess, sys, time; "
              "subprocess.run([sys.executable, '-c', 'import time; time.sleep(1.5)']); "
              f"open({str(marks / 'attempt-child-done')!r}, 'w').close()")
killer = ("import os, signal, subprocess, sys, time; time.sleep(0.3); "
          "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']); "
          "os.kill(os.getppid(), signal.SIGKILL)")
results = {}

def attempt(name, code):
    results[name] = run_command([sys.executable, "-c", code], cwd=marks, timeout_s=60)

def own():
    done = subprocess.run([sys.executable, "-c", "import time; time.sleep(1.5)"])
    results["own"] = done.returncode

threads = [threading.Thread(target=attempt, args=("slow", slow_child)),
           threading.Thread(target=own)]
for t in threads:
    t.start()
attempt("killer", killer)
for t in threads:
    t.join()
print(results["slow"].returncode, results["slow"].containment_failure is None,
      results["own"], results["killer"].containment_failure is None,
      results["killer"].start_error)
"""


def test_attempts_side_by_side_never_end_each_others_processes(tmp_path: Path) -> None:
    """The second-line sweep of one attempt spares other attempts and flakecore's own children."""
    run = subprocess.run(
        [sys.executable, "-I", "-c", _SIDE_BY_SIDE, str(tmp_path)],
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    slow_exit, slow_contained, own_exit, killer_contained, killer_error = run.stdout.split(" ", 4)
    # The other attempt's child lived to finish; so did flakecore's own child (exit 0).
    assert (slow_exit, slow_contained, own_exit) == ("0", "True", "0")
    assert (tmp_path / "attempt-child-done").exists()
    # The attempt that killed its reaper was ended by the second line, and says so.
    assert killer_contained == "True"
    assert "reaper ended without a report" in killer_error
