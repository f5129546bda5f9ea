"""Fuzz harnesses shared by atheris (``nox -s fuzz``) and the hypothesis smoke test.

Each harness takes arbitrary bytes and checks the fail-closed invariants:
the only exception allowed is :class:`flakecore.InputError`; a policy never
accepts evidence that breaks its own table; a log reduction never counts more
misses than lines.  A harness that finds a problem raises ``AssertionError``
(or lets the unexpected exception escape), which both engines report.
"""

from __future__ import annotations

import datetime as dt
import io
import os
import tempfile
from collections.abc import Callable, Mapping

import flakecore_adapters

import flakecore
from flakecore import InputError, Outcome, digest

__all__ = ["HARNESSES"]

NOW = dt.datetime(2026, 11, 29, 12, 0, tzinfo=dt.timezone.utc)


def _packet(data: bytes) -> Mapping[str, object] | None:
    try:
        return flakecore.load_object(data, source="fuzz")
    except InputError:
        return None


def fuzz_json(data: bytes) -> None:
    """The strict JSON reader: a value or an InputError, nothing else."""
    message = ""
    try:
        flakecore.loads_strict(data, source="fuzz")
    except InputError as exc:
        message = str(exc)
    assert "\n" not in message


def fuzz_admit(data: bytes) -> None:
    """``admit`` accepts only when SPEC 3.1's accept conditions all hold."""
    packet = _packet(data)
    if packet is None:
        return
    decision = flakecore.admit(packet)
    if decision.accepted:
        assert packet["property_sha256"] == packet["base_property_sha256"]
        assert digest.is_digest(packet["property_sha256"])
        epoch = packet["fixture_epoch"]
        assert epoch == packet["base_fixture_epoch"] == packet["claimed_epoch"]
        attempts, misses = packet["base_attempts"], packet["base_misses"]
        assert type(attempts) is int and type(misses) is int
        assert 1 <= misses <= attempts <= 5


def fuzz_decide(data: bytes) -> None:
    """``decide`` is eligible only when every row of SPEC 3.2 holds."""
    packet = _packet(data)
    if packet is None:
        return
    if flakecore.decide(packet).accepted:
        assert packet["clean_run_completed"] is True
        assert packet["property_cohort_passed"] is True
        assert packet["local_class"] == packet["clean_class"] == "flake_shaped"
        assert packet["clean_fixture_hash"] == packet["fixture_hash"]
        assert packet["clean_input_hash"] == packet["minimized_input_hash"]
        assert not flakecore.same_runner(
            str(packet["local_runner_id"]), str(packet["clean_runner_id"])
        )


def fuzz_budget(data: bytes) -> None:
    """``budget`` opens a candidate only for 1..N-1 passes over N >= 8 distinct seeds."""
    packet = _packet(data)
    if packet is None:
        return
    if flakecore.budget(packet).accepted:
        n, passes, seeds = packet["budget"], packet["passes"], packet["seeds"]
        assert type(n) is int and type(passes) is int and isinstance(seeds, list)
        assert n >= 8 and len(seeds) == n and 1 <= passes <= n - 1
        assert packet["parent_digest"] == packet["head_digest"]
        assert packet["property_holds"] is True


def fuzz_classify(data: bytes) -> None:
    """``classify`` never opens a lease without a full, consistent replay budget."""
    packet = _packet(data)
    if packet is None:
        return
    decision = flakecore.classify(packet, now=NOW)
    if decision.freeze_allowed:
        assert packet["property_verdict"] == "pass"
        assert packet["pin_status"] == "match"
        assert packet["origin_passed"] is False
        replays = packet["replays"]
        assert isinstance(replays, list) and len(replays) >= 5
        assert any(r["passed"] is True for r in replays)
        owner = packet["owner"]
        assert isinstance(owner, str) and owner.strip()


def fuzz_attempt_log(data: bytes) -> None:
    """The log reducer: never more misses than lines, COMPLETE only for newline-ended logs."""
    fd, path = tempfile.mkstemp(suffix=".jsonl")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        summary = flakecore.reduce_logs([path])
    finally:
        os.unlink(path)
    assert summary.misses <= summary.attempts <= data.count(b"\n")
    if summary.complete:
        assert data.endswith(b"\n")
        assert b"\r" not in data


def _report(fmt: str) -> Callable[[bytes], None]:
    """A report parser: records with valid fields, or an InputError; nothing else escapes."""

    def harness(data: bytes) -> None:
        message = ""
        try:
            attempts = list(
                flakecore_adapters.iter_attempts(io.BytesIO(data), format=fmt, source_name="fuzz")
            )
        except InputError as exc:
            attempts, message = [], str(exc)
        assert "\n" not in message
        seen: dict[str, int] = {}
        for attempt in attempts:
            assert isinstance(attempt.outcome, Outcome)
            assert attempt.test_id
            seen[attempt.test_id] = seen.get(attempt.test_id, 0) + 1
            assert attempt.attempt == seen[attempt.test_id]
            flakecore_adapters.attempt_line(attempt)

    harness.__name__ = f"fuzz_{fmt.replace('-', '_')}"
    return harness


HARNESSES: dict[str, Callable[[bytes], None]] = {
    "json": fuzz_json,
    "admit": fuzz_admit,
    "decide": fuzz_decide,
    "budget": fuzz_budget,
    "classify": fuzz_classify,
    "attempt-log": fuzz_attempt_log,
    **{fmt: _report(fmt) for fmt in ("auto", "junit", "pytest-json", "pytest-reportlog", "tap")},
}
