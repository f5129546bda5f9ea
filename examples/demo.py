"""The main job: run every policy on the shipped sample evidence and print each decision.

Each example's expected code was worked out by hand from SPEC's tables; the
demo fails (exit 1) if the installed flakecore disagrees, so it doubles as a
smoke test of the real CLI.  The evaluation time is pinned with ``--now`` so
the sample lease stays inside its window whenever the demo runs.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
NOW = "2026-11-29T12:00:00Z"

#: example file -> (code, exit) expected by SPEC.
EXPECTED: dict[str, tuple[str, int]] = {
    "admit/preexisting-flake.json": ("ACCEPT_PREEXISTING", 0),
    "admit/patch-introduced.json": ("REJECT_PATCH_INTRODUCED", 4),
    "admit/property-drift.json": ("REJECT_PROPERTY_DRIFT", 2),
    "admit/cap-exceeded.json": ("REJECT_BUDGET", 5),
    "decide/eligible.json": ("ELIGIBLE", 0),
    "decide/same-runner.json": ("NOT_DISTINCT_RUNNER", 4),
    "decide/look-alike-runner.json": ("MISSING_FIELD", 2),
    "decide/deterministic.json": ("NOT_FLAKE_SHAPED", 3),
    "decide/clean-run-passed.json": ("CLASS_MISMATCH", 3),
    "budget/flake-candidate.json": ("FLAKE_CANDIDATE", 0),
    "budget/stable-fail.json": ("STABLE_FAIL", 5),
    "budget/fixture-drift.json": ("FIXTURE_DRIFT", 3),
    "budget/short-budget.json": ("INSUFFICIENT_BUDGET", 1),
    "classify/flake-with-lease.json": ("FLAKE", 4),
    "classify/stable-red.json": ("STABLE_RED", 5),
    "classify/permanent-freeze.json": ("FLAKE", 6),
    "classify/property-fails.json": ("PROPERTY", 2),
}


def flakecore(*args: str) -> subprocess.CompletedProcess[str]:
    """Run the installed CLI exactly as a pipeline would."""
    return subprocess.run(
        [sys.executable, "-m", "flakecore", *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=HERE,
    )


def main() -> int:
    """Print every decision; return 1 if any differs from SPEC's expectation."""
    wrong = 0
    for name, (code, exit_code) in EXPECTED.items():
        verb = name.split("/")[0]
        run = flakecore(verb, name, "--json", "--now", NOW)
        decision = json.loads(run.stdout)
        ok = decision["code"] == code and decision["exit"] == exit_code == run.returncode
        wrong += not ok
        mark = "ok " if ok else "BAD"
        print(f"{mark} {verb:8} {name.split('/')[1]:28} exit={run.returncode} {decision['code']}")
        print(f"      {'; '.join(decision['reasons'])}")
    logs = [f"attempts/base-worker-{i}.jsonl" for i in (1, 2)]
    run = flakecore("attempts", *logs)
    mark = "ok " if run.returncode == 0 else "BAD"
    print(f"{mark} attempts two workers' logs: {run.stdout.strip()}")
    wrong += run.returncode != 0
    run = flakecore("attempts", "attempts/truncated.jsonl")
    print(f"{'ok ' if run.returncode == 1 else 'BAD'} attempts truncated log: {run.stdout.strip()}")
    wrong += run.returncode != 1
    flags = flakecore(
        "classify", "--property-verdict", "pass", "--pin-status", "match",
        "--origin-passed", "false", "--replay", "green,green,red,green,green",
        "--owner", "ci-bot", "--expires-at", "2026-12-05T00:00:00Z", "--now", NOW,
    )  # fmt: skip
    print(f"{'ok ' if flags.returncode == 4 else 'BAD'} classify flags: {flags.stdout.strip()}")
    wrong += flags.returncode != 4
    print(f"\n{len(EXPECTED) + 3 - wrong} passed, {wrong} failed")
    return 1 if wrong else 0


if __name__ == "__main__":
    raise SystemExit(main())
