"""Valid lease/ledger evidence for the gate tests, and the CLI as a subprocess.

Every helper returns something the gate *accepts*; each test breaks it one
way.  A checker that refuses everything must fail this suite, so every
refusal table has its accepted twin.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from packets import NOW, NOW_TEXT, budget_packet, classify_report

from flakecore.budget import ledger_row
from flakecore.gate.ledger import record_file_name
from flakecore.lease import Roles, build_lease

__all__ = [
    "AUTHOR",
    "DIGEST",
    "HOST",
    "NOW",
    "NOW_TEXT",
    "OTHER_HOST",
    "PATCH",
    "REVIEWER",
    "TEST_ID",
    "budget_packet",
    "cli",
    "dump",
    "lease_record",
    "lease_report",
    "listing",
    "roles",
    "row_record",
    "store",
]

TEST_ID = "tests/test_x.py::test_sorted"
DIGEST = "8e" * 32
HOST = "img:sha256:" + "a" * 64 + "+nonce:0123456789abcdef"
OTHER_HOST = "img:sha256:" + "a" * 64 + "+nonce:fedcba9876543210"
REVIEWER = "reviewer@example.test"
#: The patch under review: its git commit id (64 hex, as in a SHA-256 repository).
PATCH = "f" * 64
AUTHOR = "coding-agent-7"


def lease_report(**changes: object) -> dict[str, object]:
    """A classify report that opens a lease at NOW (expires 7 days later, pinned, canary)."""
    report = classify_report(pinned_sha256=DIGEST, canary="nightly-canary")
    for key, value in changes.items():
        if value is ...:
            report.pop(key, None)
        else:
            report[key] = value
    return report


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
    for key, value in changes.items():
        if value is ...:
            record.pop(key, None)
        else:
            record[key] = value
    return record


def row_record(today: dt.date | None = None, **changes: object) -> dict[str, object]:
    """A ledger row valid on NOW's date, with ``changes`` applied."""
    row = ledger_row(budget_packet(test_id=TEST_ID), today=today or NOW.date())
    assert row is not None
    for key, value in changes.items():
        if value is ...:
            row.pop(key, None)
        else:
            row[key] = value
    return row


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
