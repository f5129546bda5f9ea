"""Valid base packets that each test then breaks one way (imported by the tests)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

#: The repository checkout the tests live in (fixtures, schemas, examples).
REPO = Path(__file__).resolve().parents[1]

A = "a" * 64
B = "b" * 64
C = "c" * 64
NOW = dt.datetime(2026, 11, 29, 12, 0, tzinfo=dt.timezone.utc)
NOW_TEXT = "2026-11-29T12:00:00Z"


def admit_packet(**changes: object) -> dict[str, object]:
    """A packet that ``admit`` accepts, with ``changes`` applied (``...`` deletes a key)."""
    packet: dict[str, object] = {
        "base_misses": 1,
        "base_attempts": 5,
        "patch_misses": 1,
        "property_sha256": A,
        "base_property_sha256": A,
        "fixture_epoch": B,
        "base_fixture_epoch": B,
        "claimed_epoch": B,
        "property_id": "prop_sorted",
        "seed": "pinned-seed",
        "base_sha": "1" * 40,
    }
    return _apply(packet, changes)


def decide_packet(**changes: object) -> dict[str, object]:
    """A packet that ``decide`` finds eligible, with ``changes`` applied."""
    packet: dict[str, object] = {
        "test_id": "tests/test_x.py::test_sorted",
        "patch_hash": A,
        "fixture_hash": B,
        "minimized_input_hash": C,
        "oracle_version": "oracle-3",
        "local_runner_id": "img:sha256:" + A + "+nonce:0123456789abcdef",
        "clean_runner_id": "img:sha256:" + A + "+nonce:fedcba9876543210",
        "local_class": "flake_shaped",
        "clean_class": "flake_shaped",
        "clean_fixture_hash": B,
        "clean_input_hash": C,
        "property_cohort_passed": True,
        "clean_run_completed": True,
    }
    return _apply(packet, changes)


def budget_packet(**changes: object) -> dict[str, object]:
    """A ``FLAKE_CANDIDATE`` seed-budget packet, with ``changes`` applied."""
    packet: dict[str, object] = {
        "test_id": "tests/test_x.py::test_sorted",
        "parent_digest": A,
        "head_digest": A,
        "property_holds": True,
        "seeds": [11, 23, 47, 71, 97, 131, 173, 211],
        "passes": 5,
        "budget": 8,
        "opened_against": "2" * 40,
    }
    return _apply(packet, changes)


def replays(pattern: str) -> list[dict[str, object]]:
    """Replays from a pattern like ``"ggrgg"`` (g = green, r = red)."""
    return [
        {
            "attempt_id": f"r{i}",
            "passed": ch == "g",
            "exit_code": 0 if ch == "g" else 1,
            "duration_s": 0.5,
        }
        for i, ch in enumerate(pattern, start=1)
    ]


def classify_report(**changes: object) -> dict[str, object]:
    """A report that ``classify`` calls FLAKE with a valid lease at NOW."""
    report: dict[str, object] = {
        "property_verdict": "pass",
        "pin_status": "match",
        "origin_passed": False,
        "replays": replays("ggrgg"),
        "owner": "ci-bot",
        "expires_at": "2026-12-06T12:00:00Z",
    }
    return _apply(report, changes)


def _apply(packet: dict[str, object], changes: dict[str, object]) -> dict[str, object]:
    for key, value in changes.items():
        if value is ...:
            packet.pop(key, None)
        else:
            packet[key] = value
    return packet
