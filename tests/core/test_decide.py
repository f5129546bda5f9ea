"""``decide``: every row of SPEC 3.2 in order, and "eligible only if all hold"."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from packets import A, B, C, decide_packet

from flakecore import DecideCode, DecidePacket, decide
from flakecore.records import DECIDE_IDENTITY_FIELDS

D = DecideCode
LOCAL = "img:sha256:" + A + "+nonce:0123456789abcdef"
FALLBACK = "img:local-uncontainerized+nonce:0123456789abcdef"

TABLE: list[tuple[str, dict[str, Any], DecideCode, int]] = [
    ("row 9: eligible", {}, D.ELIGIBLE, 0),
    *[(f"row 1: {f} absent", {f: ...}, D.MISSING_FIELD, 2) for f in DECIDE_IDENTITY_FIELDS],
    *[(f"row 1: {f} blank", {f: " \t"}, D.MISSING_FIELD, 2) for f in DECIDE_IDENTITY_FIELDS],
    ("row 1: test_id empty", {"test_id": ""}, D.MISSING_FIELD, 2),
    ("row 1: test_id not a string", {"test_id": 7}, D.MISSING_FIELD, 2),
    ("row 1: 'false' is not a boolean", {"clean_run_completed": "false"}, D.MISSING_FIELD, 2),
    ("row 1: 'true' is not a boolean", {"property_cohort_passed": "true"}, D.MISSING_FIELD, 2),
    ("row 1: unknown class", {"local_class": "FLAKE_SHAPED"}, D.MISSING_FIELD, 2),
    ("row 1: unknown field", {"clean_runner": "x"}, D.MISSING_FIELD, 2),
    ("row 1 before row 2", {"test_id": ..., "clean_run_completed": False}, D.MISSING_FIELD, 2),
    (
        "row 1: fixture hash uppercase on both sides",
        {"fixture_hash": B.upper(), "clean_fixture_hash": B.upper()},
        D.MISSING_FIELD,
        2,
    ),
    ("row 1: patch hash prefixed", {"patch_hash": "sha256:" + A}, D.MISSING_FIELD, 2),
    # SPEC 8: the patch hash is the patch's git commit id, as `git rev-parse HEAD` prints it.
    ("row 9: patch hash a SHA-1 commit id", {"patch_hash": "9" * 40}, D.ELIGIBLE, 0),
    ("row 1: patch hash abbreviated", {"patch_hash": "9" * 7}, D.MISSING_FIELD, 2),
    ("row 1: patch hash upper case", {"patch_hash": "A" * 40}, D.MISSING_FIELD, 2),
    ("row 1: patch hash 41 hex", {"patch_hash": "9" * 41}, D.MISSING_FIELD, 2),
    (
        "row 1: input hash truncated on both sides",
        {"minimized_input_hash": C[:63], "clean_input_hash": C[:63]},
        D.MISSING_FIELD,
        2,
    ),
    ("row 1: echo with a trailing newline", {"clean_input_hash": C + "\n"}, D.MISSING_FIELD, 2),
    ("row 1: echo not a string", {"clean_fixture_hash": 5}, D.MISSING_FIELD, 2),
    ("row 2: clean run not completed", {"clean_run_completed": False}, D.CLEAN_RUN_UNAVAILABLE, 4),
    ("row 2: completion unknown", {"clean_run_completed": ...}, D.CLEAN_RUN_UNAVAILABLE, 4),
    ("row 2: no fixture echo", {"clean_fixture_hash": ...}, D.CLEAN_RUN_UNAVAILABLE, 4),
    ("row 2: blank input echo", {"clean_input_hash": ""}, D.CLEAN_RUN_UNAVAILABLE, 4),
    (
        "row 2 before row 3",
        {"clean_run_completed": False, "clean_runner_id": LOCAL},
        D.CLEAN_RUN_UNAVAILABLE,
        4,
    ),
    ("row 3: same runner", {"clean_runner_id": LOCAL}, D.NOT_DISTINCT_RUNNER, 4),
    # SPEC 8: a runner id outside its grammar is no runner, so a variant of the
    # local id is refused at row 1 before it could count as a "distinct" runner.
    ("row 1: runner id upper case", {"clean_runner_id": LOCAL.upper()}, D.MISSING_FIELD, 2),
    ("row 1: runner id with spaces", {"clean_runner_id": " " + LOCAL + "\n"}, D.MISSING_FIELD, 2),
    (
        "row 1: runner id fullwidth",
        {"clean_runner_id": LOCAL.replace("img", "\uff49mg")},
        D.MISSING_FIELD,
        2,
    ),
    (
        "row 1: runner id zero-width",
        {"clean_runner_id": LOCAL[:5] + "\u200b" + LOCAL[5:]},
        D.MISSING_FIELD,
        2,
    ),
    (
        "row 1: runner id U+2010 for '-'",
        {"local_runner_id": FALLBACK, "clean_runner_id": FALLBACK.replace("-", "\u2010")},
        D.MISSING_FIELD,
        2,
    ),
    ("row 1: local runner id not a runner id", {"local_runner_id": "ci-box-3"}, D.MISSING_FIELD, 2),
    (
        "row 1: runner id with a tag image",
        {"clean_runner_id": "img:ubuntu:24.04+nonce:0123456789abcdef"},
        D.MISSING_FIELD,
        2,
    ),
    (
        "row 3: one fallback runner",
        {"local_runner_id": FALLBACK, "clean_runner_id": FALLBACK},
        D.NOT_DISTINCT_RUNNER,
        4,
    ),
    ("row 9: the honest local fallback is a runner", {"clean_runner_id": FALLBACK}, D.ELIGIBLE, 0),
    (
        "row 3 before row 4",
        {"clean_runner_id": LOCAL, "local_class": "deterministic"},
        D.NOT_DISTINCT_RUNNER,
        4,
    ),
    ("row 4: deterministic", {"local_class": "deterministic"}, D.NOT_FLAKE_SHAPED, 3),
    ("row 4: environment", {"local_class": "environment"}, D.NOT_FLAKE_SHAPED, 3),
    ("row 4: local class absent", {"local_class": ...}, D.NOT_FLAKE_SHAPED, 3),
    ("row 5: clean run passed", {"clean_class": "pass"}, D.CLASS_MISMATCH, 3),
    ("row 5: unstable signature", {"clean_class": "deterministic"}, D.CLASS_MISMATCH, 3),
    ("row 5: clean class absent", {"clean_class": ...}, D.CLASS_MISMATCH, 3),
    ("row 5 before row 6", {"clean_class": "pass", "clean_fixture_hash": A}, D.CLASS_MISMATCH, 3),
    ("row 6: fixture drift", {"clean_fixture_hash": A}, D.FIXTURE_DRIFT, 3),
    ("row 6 before row 7", {"clean_fixture_hash": A, "clean_input_hash": A}, D.FIXTURE_DRIFT, 3),
    ("row 7: input drift", {"clean_input_hash": A}, D.INPUT_DRIFT, 3),
    (
        "row 7 before row 8",
        {"clean_input_hash": A, "property_cohort_passed": False},
        D.INPUT_DRIFT,
        3,
    ),
    ("row 8: cohort failed", {"property_cohort_passed": False}, D.PROPERTY_OWNS_BUG, 3),
    ("row 8: cohort unknown", {"property_cohort_passed": ...}, D.PROPERTY_OWNS_BUG, 3),
]


@pytest.mark.parametrize(
    ("changes", "code", "exit_code"), [r[1:] for r in TABLE], ids=[r[0] for r in TABLE]
)
def test_decide_table(changes: dict[str, Any], code: DecideCode, exit_code: int) -> None:
    decision = decide(decide_packet(**changes))
    assert decision.code is code
    assert decision.exit_code == exit_code
    assert decision.accepted is (code is D.ELIGIBLE)
    assert decision.reasons


def test_typed_packet() -> None:
    packet = DecidePacket(**decide_packet())  # type: ignore[arg-type]
    assert decide(packet).code is D.ELIGIBLE


CONDITIONS = {
    "completed": ("clean_run_completed", True, False),
    "distinct": ("clean_runner_id", "img:sha256:" + A + "+nonce:fedcba9876543210", LOCAL),
    "local_flake": ("local_class", "flake_shaped", "deterministic"),
    "clean_flake": ("clean_class", "flake_shaped", "pass"),
    "fixture": ("clean_fixture_hash", B, A),
    "input": ("clean_input_hash", C, A),
    "cohort": ("property_cohort_passed", True, False),
}


@given(st.fixed_dictionaries({name: st.booleans() for name in CONDITIONS}))
def test_eligible_only_if_every_condition_holds(holds: dict[str, bool]) -> None:
    changes = {
        field: good if holds[name] else bad for name, (field, good, bad) in CONDITIONS.items()
    }
    assert decide(decide_packet(**changes)).accepted is all(holds.values())


NON_STRINGS = st.none() | st.integers() | st.floats() | st.lists(st.booleans(), max_size=2)


@given(st.dictionaries(st.sampled_from(sorted(decide_packet())), NON_STRINGS, min_size=1))
def test_wrong_json_types_never_eligible(changes: dict[str, Any]) -> None:
    assert not decide(decide_packet(**changes)).accepted
