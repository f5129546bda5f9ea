"""Attempt logs under concurrency: parallel workers, a reader during writes, killed writers.

The reduced result must be exact or INCOMPLETE, never a dropped pass with a
kept miss: whenever a reduction is COMPLETE its counts equal those of a
prefix of what each worker meant to write.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from flakecore import LogStatus, reduce_logs

#: Each worker writes this sequence (misses and passes interleaved).
SEQUENCE = ["miss", "pass", "pass", "error", "miss", "skip", "pass", "timeout"] * 25

WORKER = """
import os, sys, time
from flakecore import AttemptResult, AttemptWriter
path, delay = sys.argv[1], float(sys.argv[2])
seq = {seq!r}
hold = sys.argv[3] if len(sys.argv) > 3 else None  # pause half-way until this file exists
with AttemptWriter(path, seed="shared-seed") as writer:
    for n, word in enumerate(seq):
        if hold and n == len(seq) // 2:
            open(hold + ".paused", "w").close()
            deadline = time.monotonic() + 60
            while not os.path.exists(hold) and time.monotonic() < deadline:
                time.sleep(0.005)
        writer.append(AttemptResult(word))
        if delay:
            time.sleep(delay)
"""

#: A careless writer that emits each line in two writes, as a killed process might leave it.
SPLIT_WRITER = """
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
for n, word in enumerate({seq!r}, start=1):
    line = ('{{"seed":"shared-seed","n":%d,"result":"%s"}}\\n' % (n, word)).encode()
    os.write(fd, line[:10]); time.sleep(0.0005); os.write(fd, line[10:])
"""


def spawn(script: str, *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", script.format(seq=SEQUENCE), *args])


def is_prefix_count(results: dict[str, int], attempts: int) -> bool:
    return Counter(SEQUENCE[:attempts]) == Counter(results)


def test_parallel_workers_reduce_exactly(tmp_path: Path) -> None:
    paths = [tmp_path / f"worker-{i}.jsonl" for i in range(4)]
    procs = [spawn(WORKER, str(p), "0") for p in paths]
    assert [p.wait(timeout=60) for p in procs] == [0, 0, 0, 0]
    summary = reduce_logs(paths)
    assert summary.status is LogStatus.COMPLETE
    assert summary.attempts == 4 * len(SEQUENCE)
    assert summary.misses == 4 * SEQUENCE.count("miss")


def test_reader_during_writes_sees_a_prefix_or_incomplete(tmp_path: Path) -> None:
    path = tmp_path / "worker.jsonl"
    hold = tmp_path / "go"
    proc = spawn(WORKER, str(path), "0.001", str(hold))
    seen_complete = 0
    while proc.poll() is None:
        if not hold.exists() and Path(f"{hold}.paused").exists():
            # The writer waits between two lines: this reading must be complete.
            summary = reduce_logs([path])
            assert summary.complete and summary.attempts == len(SEQUENCE) // 2
            seen_complete += 1
            hold.touch()
        if path.exists():
            summary = reduce_logs([path])
            if summary.complete:
                seen_complete += 1
                assert is_prefix_count(summary.results, summary.attempts)
            else:
                assert summary.reasons
    assert proc.returncode == 0 and hold.exists()  # the paused reading was taken
    final = reduce_logs([path])
    assert final.complete
    assert final.attempts == len(SEQUENCE)
    assert seen_complete > 0


def test_killed_writers_leave_a_prefix_or_incomplete(tmp_path: Path) -> None:
    for i, (script, delay) in enumerate([(WORKER, 0.001), (SPLIT_WRITER, 0.0)] * 4):
        path = tmp_path / f"killed-{i}.jsonl"
        args = (str(path), str(delay)) if script is WORKER else (str(path),)
        proc = spawn(script, *args)
        deadline = time.monotonic() + 60  # a loaded machine starts the writer late
        while not path.exists() and proc.poll() is None:
            assert time.monotonic() < deadline
            time.sleep(0.005)
        time.sleep(0.01 * i)  # killed at a different point of its writing each time
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        summary = reduce_logs([path])
        if summary.complete:
            assert is_prefix_count(summary.results, summary.attempts)
            assert summary.misses == SEQUENCE[: summary.attempts].count("miss")
        else:
            assert summary.status is LogStatus.INCOMPLETE


def test_one_file_holding_two_workers_is_refused(tmp_path: Path) -> None:
    paths = [tmp_path / f"w{i}.jsonl" for i in range(2)]
    for p in [spawn(WORKER, str(p), "0") for p in paths]:
        assert p.wait(timeout=60) == 0
    merged = tmp_path / "merged.jsonl"
    merged.write_bytes(paths[0].read_bytes() + paths[1].read_bytes())
    assert reduce_logs([merged]).status is LogStatus.INCOMPLETE
    assert reduce_logs(paths).complete
