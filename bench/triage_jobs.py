"""``flakecore triage --jobs N`` against ``--jobs 1``: wall-clock ratio on a real repository.

A throwaway git repository holds ``--tests`` red tests, each a plain command
(no pytest start-up to drown the effect) that sleeps ``--sleep`` seconds and
misses on both base and head, so every one is replayed ``attempt_cap``
times (``--attempts``) on base.  The same red run is triaged with
``--jobs 1`` and with each ``--jobs N``, interleaved ``--repeat`` times; the
table shows the median seconds and the ratio to ``--jobs 1``, and checks
that every run printed the same verdicts.

Usage: ``python bench/triage_jobs.py`` (4 tests x 5 attempts of 0.5 s, jobs 1 vs 2).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from flakecore.codes import AttemptResult
from flakecore.logdir import LogDirectory

#: One "test": sleep, then miss (exit 1) -- on base and on head alike.
_TEST = "import sys, time; time.sleep(float(sys.argv[1])); sys.exit(1)"


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def make_repo(root: Path, tests: int, attempts: int, sleep: float) -> tuple[Path, Path]:
    """The repository (base = HEAD) and the plugin-format logs of a red run."""
    repo = root / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "fixtures").mkdir()
    (repo / "fixtures" / "epoch.lock").write_text("epoch 1\n")
    for i in range(tests):
        (repo / "tests" / f"test_{i}.py").write_text("def test():\n    assert False\n")
    command = [sys.executable, "-c", _TEST, str(sleep), "{test_id}", "{seed}"]
    (repo / "pyproject.toml").write_text(
        f"[tool.flakecore]\nattempt_cap = {attempts}\n\n[tool.flakecore.triage]\n"
        f'command = {json.dumps(command)}\nepoch_lock = "fixtures/epoch.lock"\n'
    )
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=b", "-c", "user.email=b@b.invalid", "commit", "-qm", "base")
    logs = root / "logs"
    logs.mkdir()
    writer = LogDirectory(logs, "main", 1)
    for i in range(tests):
        writer.append(f"tests/test_{i}.py::test", AttemptResult.MISS)
    writer.close()
    return repo, logs


def triage(repo: Path, logs: Path, out: Path, jobs: int) -> tuple[float, list[str]]:
    """Seconds for one ``triage --jobs`` run, and its verdicts."""
    env = {**os.environ, "TMPDIR": str(out.parent)}
    start = time.monotonic()
    run = subprocess.run(
        [sys.executable, "-m", "flakecore", "triage", "--base", "main", "--log-dir", str(logs),
         "--out-dir", str(out), "--jobs", str(jobs), "--json"],
        cwd=repo, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    seconds = time.monotonic() - start
    verdicts = [f"{r['test_id']} {r['verdict']}" for r in map(json.loads, run.stdout.splitlines())]
    return seconds, verdicts


def main() -> int:
    """Print the table; 1 when the runs disagree on a verdict."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=4)
    parser.add_argument("--attempts", type=int, default=5)
    parser.add_argument("--sleep", type=float, default=0.5)
    parser.add_argument("--jobs", type=int, nargs="+", default=[2])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="flakecore-bench-") as tmp:
        root = Path(tmp)
        repo, logs = make_repo(root, args.tests, args.attempts, args.sleep)
        seconds: dict[int, list[float]] = {n: [] for n in (1, *args.jobs)}
        seen: set[tuple[str, ...]] = set()
        for r in range(args.repeat):
            for n, runs in seconds.items():
                took, verdicts = triage(repo, logs, root / f"out-{n}-{r}", n)
                runs.append(took)
                seen.add(tuple(verdicts))
    serial = statistics.median(seconds[1])
    print(f"{args.tests} red tests x {args.attempts} attempts of {args.sleep} s, "
          f"median of {args.repeat}:")  # fmt: skip
    for n, runs in seconds.items():
        median = statistics.median(runs)
        print(f"  --jobs {n}: {median:6.2f} s  ratio {serial / median:4.2f}x")
    if len(seen) != 1:
        print("the runs disagree on a verdict")
        return 1
    (same,) = seen
    print(f"  same verdicts in every run: {', '.join(same)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
