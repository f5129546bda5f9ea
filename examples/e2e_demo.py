"""The main job, end to end: a throwaway git repository, real pytest runs, real decisions.

It first runs ``demo.py`` (all four policies on the sample packets), then
builds a repository in a temporary directory whose base commit already has a
seed-dependent flake (every third seed misses) and whose patch commit adds a
regression (every seventh seed misses too), and runs the installed CLI
against it exactly as a CI job would:

- ``flakecore replay --seed 3``: the base misses too -> ``ACCEPT_PREEXISTING``
  (attempts judged from pytest's JUnit report, through the adapters);
- ``flakecore replay --seed 7``: only the patch misses -> ``REJECT_PATCH_INTRODUCED``
  (attempts judged from pytest's exit status);
- ``flakecore budget-run --seeds 1,...,8``: 5 of 8 seeds pass -> ``FLAKE_CANDIDATE``.

It exits 1 if any decision, exit code or file differs from what SPEC says,
or if a worktree is left behind.  Needs git and pytest on the machine.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

PROPERTY_FILE = "tests/test_prop.py"
EPOCH_LOCK = "fixtures/epoch.lock"
FIXTURE = "fixtures/data.json"
TEST_ID = "tests.test_prop::test_property"

FILES = {
    "pytest.ini": "[pytest]\naddopts = -p no:cacheprovider\n",
    ".gitignore": "__pycache__/\n*.xml\n",
    "conftest.py": (
        "import pytest\n\n\n"
        "def pytest_addoption(parser):\n"
        '    parser.addoption("--prop-seed", type=int, required=True)\n\n\n'
        "@pytest.fixture\n"
        "def seed(request):\n"
        '    return request.config.getoption("--prop-seed")\n'
    ),
    "mylib.py": "def checksum_ok(seed):\n    return seed % 3 != 0  # the base's own flake\n",
    PROPERTY_FILE: (
        "import mylib\n\n\ndef test_property(seed):\n    assert mylib.checksum_ok(seed)\n"
    ),
    EPOCH_LOCK: "fixture-epoch: 2026-11 (generator v3)\n",
    FIXTURE: '{"values": [1, 2, 3]}\n',
}
REGRESSION = "def checksum_ok(seed):\n    return seed % 3 != 0 and seed % 7 != 0  # the patch\n"
PYTEST = [sys.executable, "-m", "pytest", "-q", PROPERTY_FILE, "--prop-seed={seed}"]
SORTED = "import json, sys; v = json.load(open(sys.argv[1]))['values']; sys.exit(v != sorted(v))"


def git(repo: Path, *args: str) -> str:
    """git in the demo repository; any failure stops the demo."""
    return subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, check=True
    ).stdout.strip()


def make_repo(repo: Path) -> str:
    """The base commit (a pre-existing flake), then the patch commit; returns the base SHA."""
    repo.mkdir()
    git(repo, "init", "-q")
    git(repo, "config", "user.name", "flakecore demo")
    git(repo, "config", "user.email", "demo@flakecore.invalid")
    git(repo, "config", "commit.gpgsign", "false")
    for name, text in FILES.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base: a flaky checksum")
    base = git(repo, "rev-parse", "HEAD")
    (repo / "mylib.py").write_text(REGRESSION)
    git(repo, "commit", "-q", "-am", "patch: tighten the checksum (a regression)")
    return base


def flakecore(repo: Path, env: dict[str, str], *args: str) -> tuple[int, dict[str, object]]:
    """Run the installed CLI in the repository; returns (exit, the --json decision)."""
    run = subprocess.run(
        [sys.executable, "-m", "flakecore", *args],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    try:
        decision = json.loads(run.stdout)
    except json.JSONDecodeError:
        print(run.stdout + run.stderr, file=sys.stderr)
        decision = {"code": "<no decision>", "reasons": []}
    return run.returncode, decision


def replay_args(repo: Path, base: str, seed: str, out: Path, *extra: str) -> list[str]:
    """A ``flakecore replay`` command line for the honest claim on this repository."""
    epoch = hashlib.sha256((repo / EPOCH_LOCK).read_bytes()).hexdigest()
    return [
        "replay", "--base", base, "--seed", seed, "--attempts", "3",
        "--property-file", PROPERTY_FILE, "--epoch-lock", EPOCH_LOCK, "--claimed-epoch", epoch,
        "--patch-misses", "1", "--test-id", TEST_ID, "--out", str(out), "--json", *extra,
        "--", *PYTEST,
    ]  # fmt: skip


def check(label: str, got: tuple[int, dict[str, object]], code: str, exit_code: int) -> bool:
    """Print one decision; True when it is the expected one."""
    status, decision = got
    ok = decision.get("code") == code and status == exit_code
    reasons = decision.get("reasons")
    print(f"{'ok ' if ok else 'BAD'} {label:44} exit={status} {decision.get('code')}")
    if isinstance(reasons, list):
        print(f"      {'; '.join(str(r) for r in reasons)}")
    return ok


def main() -> int:
    """Run the policy demo, then the end-to-end one; 1 if anything differs."""
    print("== the four policies on the sample packets (examples/demo.py)", flush=True)
    policies = subprocess.run([sys.executable, str(HERE / "demo.py")], check=False)
    wrong = int(policies.returncode != 0)
    print("\n== end to end: a throwaway repository with a seeded flaky pytest property", flush=True)
    with tempfile.TemporaryDirectory(prefix="flakecore-demo-") as tmp:
        root = Path(tmp)
        repo = root / "repo"
        base = make_repo(repo)
        (root / "tmp").mkdir()
        env = {**os.environ, "TMPDIR": str(root / "tmp"), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
        accept_out, reject_out = root / "freeze-3.json", root / "freeze-7.json"
        report = ("--report", "report.xml", "--report-format", "junit")
        args = replay_args(repo, base, "3", accept_out, *report)
        args.append("--junitxml=report.xml")
        results = [
            check(
                "replay seed 3 (base misses too; JUnit report)",
                flakecore(repo, env, *args),
                "ACCEPT_PREEXISTING",
                0,
            ),
            accept_out.is_file(),
        ]
        if accept_out.is_file():
            record = json.loads(accept_out.read_text())
            print(f"      freeze record: seed={record['seed']!r} base_misses=", end="")
            print(f"{record['base_misses']}/{record['base_attempts']} verdict={record['verdict']}")
        results += [
            check(
                "replay seed 7 (only the patch misses)",
                flakecore(repo, env, *replay_args(repo, base, "7", reject_out)),
                "REJECT_PATCH_INTRODUCED",
                4,
            ),
            not reject_out.exists(),
        ]
        budget_args = [
            "budget-run", "--test-id", TEST_ID, "--base", base, "--fixture", FIXTURE,
            "--property-cmd", shlex.join([sys.executable, "-c", SORTED, "{fixture}"]),
            "--seeds", "1,2,3,4,5,6,7,8", "--out", str(root / "budget.json"), "--json",
            "--", *PYTEST,
        ]  # fmt: skip
        results.append(
            check(
                "budget-run seeds 1..8 (5 of 8 pass)",
                flakecore(repo, env, *budget_args),
                "FLAKE_CANDIDATE",
                0,
            )
        )
        worktrees = git(repo, "worktree", "list", "--porcelain").count("worktree ")
        leftovers = list((root / "tmp").iterdir())
        results.append(worktrees == 1 and not leftovers)
        print(
            f"{'ok ' if results[-1] else 'BAD'} worktrees removed: {worktrees} left (the checkout)"
        )
    wrong += results.count(False)
    print(f"\n{'all decisions as expected' if not wrong else f'{wrong} unexpected'}")
    return 1 if wrong else 0


if __name__ == "__main__":
    raise SystemExit(main())
