"""Valid lease/ledger evidence for the gate tests, and the CLI as a subprocess.

Every helper returns something the gate *accepts*; each test breaks it one
way.  A checker that refuses everything must fail this suite, so every
refusal table has its accepted twin.
"""

from __future__ import annotations

import atexit
import datetime as dt
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from packets import NOW, NOW_TEXT, budget_packet, classify_report

from flakecore.budget import ledger_row
from flakecore.gate.basetrust import RecordTrust
from flakecore.gate.ledger import record_file_name
from flakecore.lease import Roles, build_lease

__all__ = [
    "AUTHOR",
    "DIGEST",
    "HOST",
    "NOW",
    "NOW_TEXT",
    "OTHER_HOST",
    "OWN_OUTPUT",
    "PATCH",
    "REVIEWER",
    "TEST_ID",
    "base_checkout",
    "budget_packet",
    "cli",
    "dump",
    "lease_record",
    "lease_report",
    "listing",
    "on_base",
    "roles",
    "row_record",
    "run_record",
    "store",
]

TEST_ID = "tests/test_x.py::test_sorted"
DIGEST = "8e" * 32
HOST = "img:sha256:" + "a" * 64 + "+nonce:0123456789abcdef"
OTHER_HOST = "img:sha256:" + "a" * 64 + "+nonce:fedcba9876543210"
REVIEWER = "reviewer@example.test"
#: Records in a temporary directory, outside the scored checkout (this one), no keys:
#: the job's own output (docs/trust.md).
OWN_OUTPUT = RecordTrust(checkout=Path(__file__).resolve().parent)
#: The patch under review: its git commit id (64 hex, as in a SHA-256 repository).
PATCH = "f" * 64
AUTHOR = "coding-agent-7"


def _changed(record: dict[str, object], changes: Mapping[str, object]) -> dict[str, object]:
    """``record`` with ``changes`` applied; a value of ``...`` deletes the key."""
    for key, value in changes.items():
        if value is ...:
            record.pop(key, None)
        else:
            record[key] = value
    return record


def lease_report(**changes: object) -> dict[str, object]:
    """A classify report that opens a lease at NOW (expires 7 days later, pinned, canary)."""
    report = classify_report(pinned_sha256=DIGEST, canary="nightly-canary")
    return _changed(report, changes)


def roles(**changes: object) -> Roles:
    """Roles that are apart: host, reviewer and author all differ."""
    values: dict[str, object] = {
        "replay_host": HOST,
        "accepted_by": REVIEWER,
        "patch_author": AUTHOR,
        "patch_hash": PATCH,
        "oracle_version": "oracle-3",
    }
    values.update(changes)
    return Roles(**values)  # type: ignore[arg-type]


def lease_record(**changes: object) -> dict[str, object]:
    """A stored lease valid at NOW, with ``changes`` applied (``...`` deletes a key)."""
    outcome = build_lease(lease_report(), test_id=TEST_ID, roles=roles(), now=NOW)
    assert outcome.record is not None, outcome.reasons
    record = dict(outcome.record)
    return _changed(record, changes)


def row_record(today: dt.date | None = None, **changes: object) -> dict[str, object]:
    """A ledger row valid on NOW's date, with ``changes`` applied."""
    row = ledger_row(budget_packet(test_id=TEST_ID), today=today or NOW.date())
    assert row is not None
    return _changed(row, changes)


def run_record(runner: str, **changes: object) -> dict[str, object]:
    """A complete run record of ``runner`` (``packet``'s input), with ``changes`` applied."""
    record: dict[str, object] = {
        "format": "flakecore.run-record",
        "format_version": "1.0",
        "runner_id": runner,
        "class": "flake_shaped",
        "fixture_hash": "b" * 64,
        "input_hash": "c" * 64,
        "completed": True,
        "property_cohort_passed": True,
    }
    return _changed(record, changes)


def store(directory: Path, record: Mapping[str, object], name: str | None = None) -> Path:
    """Write a record where the gate would: ``<dir>/<sha256(test_id)>.json``."""
    directory.mkdir(parents=True, exist_ok=True)
    test_id = record.get("test_id")
    path = directory / (name or record_file_name(test_id if isinstance(test_id, str) else ""))
    path.write_text(json.dumps(record, indent=2))
    return path


def dump(path: Path, data: object) -> str:
    """Write JSON to ``path`` and return it as a string (for argv)."""
    path.write_text(json.dumps(data))
    return str(path)


def listing(directory: Path) -> dict[str, bytes]:
    """Every file under ``directory`` with its bytes: what "untouched" means exactly."""
    if not directory.exists():
        return {}
    return {
        str(p.relative_to(directory)): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def cli(
    *args: str,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    unset: Sequence[str] = ("GITHUB_STEP_SUMMARY", "FLAKECORE_IMAGE_DIGEST"),
    stdin: int = subprocess.DEVNULL,
    timeout: float | None = None,
) -> subprocess.CompletedProcess[str]:
    """``python -m flakecore ARGS`` as a pipeline runs it."""
    environ = {k: v for k, v in os.environ.items() if k not in unset}
    environ.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "flakecore", *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
        env=environ,
        stdin=stdin,
        timeout=timeout,
    )


@functools.cache
def base_checkout() -> tuple[Path, str]:
    """One reviewed repository per test process (one commit, no [tool.flakecore]).

    The records the tests write live outside it, so they count as the job's
    own output (docs/trust.md), the way CI keeps them in its temporary directory.
    """
    root = Path(tempfile.mkdtemp(prefix="flakecore-base-"))
    atexit.register(shutil.rmtree, root, True)
    git = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@example.test"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "base"], check=True)
    sha = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True)
    return root, sha.stdout.strip()


def on_base(*args: str, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``cli`` run in a reviewed checkout with ``--base`` its commit: a verb that needs a base."""
    root, sha = base_checkout()
    return cli(*args, "--base", sha, cwd=root, env=env)
