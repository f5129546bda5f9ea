"""Records the gate writes validate against the shipped schemas (and the bad ones do not).

A non-Python runner reads leases and ledger rows with only ``schemas/``; a
record flakecore writes that its own schema refuses would split the contract.
Runs against the installed package (``flakecore.validation`` reads the
schemas the wheel ships, never the checkout).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from flakecore import validation
from flakecore.lease import lease_problems
from gate.support import (
    AUTHOR,
    HOST,
    NOW,
    NOW_TEXT,
    OTHER_HOST,
    PATCH,
    REVIEWER,
    TEST_ID,
    budget_packet,
    cli,
    dump,
    lease_record,
    lease_report,
    row_record,
)


def problems(record: object, kind: str) -> list[str]:
    return [str(p) for p in validation.iter_errors(record, kind)]


def test_built_lease_validates() -> None:
    assert problems(lease_record(), "lease") == []
    assert problems(lease_record(patch_hash=..., oracle_version=...), "lease") == []


def test_built_row_validates() -> None:
    assert problems(row_record(), "ledger-row") == []


@pytest.mark.parametrize(
    "changes",
    [
        {"owner": " "},
        {"expires_at": "2026-12-01T00:00:00"},
        {"accepted_by": ""},
        {"replay_host": "laptop"},
        {"renewed": True},
        {"canary": ...},
        {"patch_author": ...},
    ],
)
def test_schema_and_checker_agree_on_structural_refusals(changes: dict[str, object]) -> None:
    """What the schema can say, it says too: these are refused by both."""
    record = lease_record(**changes)
    assert problems(record, "lease")
    assert lease_problems(record, now=NOW)


def test_cli_writes_schema_valid_records(tmp_path: Path) -> None:
    report = dump(tmp_path / "report.json", lease_report())
    done = cli(
        "lease", "open", "--report", report, "--test-id", TEST_ID, "--replay-host", HOST,
        "--accepted-by", REVIEWER, "--patch-author", AUTHOR, "--now", NOW_TEXT,
        "--dir", str(tmp_path / "leases"), "--no-config",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    (lease,) = (tmp_path / "leases").iterdir()
    assert problems(json.loads(lease.read_text()), "lease") == []

    packet = dump(tmp_path / "budget.json", budget_packet(test_id=TEST_ID))
    done = cli("ledger", "apply", "--dir", str(tmp_path / "ledger"), packet, "--now", NOW_TEXT,
               "--no-config")  # fmt: skip
    assert done.returncode == 0
    (row,) = (tmp_path / "ledger").iterdir()
    assert problems(json.loads(row.read_text()), "ledger-row") == []


def test_assembled_packet_validates(tmp_path: Path) -> None:
    def run(runner: str) -> str:
        record = {"runner_id": runner, "class": "flake_shaped", "fixture_hash": "b" * 64,
                  "input_hash": "c" * 64, "completed": True, "property_cohort_passed": True}  # fmt: skip
        return dump(tmp_path / f"{runner[-4:]}.json", record)

    out = tmp_path / "packet.json"
    done: subprocess.CompletedProcess[str] = cli(
        "packet", "--test-id", TEST_ID, "--patch-hash", PATCH, "--oracle-version", "o",
        "--local", run(HOST), "--clean", run(OTHER_HOST), "--out", str(out), "--no-config",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert problems(json.loads(out.read_text()), "decide-packet") == []
