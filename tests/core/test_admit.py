"""``admit``: every row of SPEC 3.1, in order, and the boundaries of its numbers."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from packets import A, B, C, admit_packet

from flakecore import AdmitCode, AdmitEvidence, Policy, admit, freeze_record

INC, BUD = AdmitCode.REJECT_INCOMPLETE, AdmitCode.REJECT_BUDGET
DRIFT, EPOCH = AdmitCode.REJECT_PROPERTY_DRIFT, AdmitCode.REJECT_FIXTURE_EPOCH
ACCEPT, PATCH = AdmitCode.ACCEPT_PREEXISTING, AdmitCode.REJECT_PATCH_INTRODUCED

# (description, changes to a valid packet, expected code, expected exit)
TABLE: list[tuple[str, dict[str, Any], AdmitCode, int]] = [
    ("row 5: base missed once", {}, ACCEPT, 0),
    ("row 1: base_misses absent", {"base_misses": ...}, INC, 1),
    ("row 1: patch_misses absent", {"patch_misses": ...}, INC, 1),
    ("row 1: base_attempts absent", {"base_attempts": ...}, INC, 1),
    ("row 1: property digest absent", {"property_sha256": ...}, INC, 1),
    ("row 1: claimed epoch absent", {"claimed_epoch": ...}, INC, 1),
    ("row 1: count is a float", {"base_misses": 1.0}, INC, 1),
    ("row 1: count is a bool", {"patch_misses": True}, INC, 1),
    ("row 1: count is a string", {"base_misses": "1"}, INC, 1),
    ("row 1: digest is a number", {"property_sha256": 5}, INC, 1),
    (
        "row 1: digest uppercase",
        {"property_sha256": A.upper(), "base_property_sha256": A.upper()},
        INC,
        1,
    ),
    ("row 1: digest prefixed", {"fixture_epoch": "sha256:" + B}, INC, 1),
    ("row 1: digest trailing newline", {"claimed_epoch": B + "\n"}, INC, 1),
    (
        "row 1: epoch is a name",
        {"fixture_epoch": "2026-q4", "base_fixture_epoch": "2026-q4", "claimed_epoch": "2026-q4"},
        INC,
        1,
    ),
    ("row 1: unknown field", {"base_mises": 3}, INC, 1),
    ("row 1: wrong format", {"format": "flakecore.decide-packet"}, INC, 1),
    ("row 1: other major version", {"format_version": "2.0"}, INC, 1),
    ("row 1: malformed seed", {"seed": 1.5}, INC, 1),
    ("row 1 before row 2", {"base_misses": ..., "base_attempts": 99}, INC, 1),
    ("row 2: attempts bool", {"base_attempts": True}, BUD, 5),
    ("row 2: attempts float", {"base_attempts": 3.0}, BUD, 5),
    ("row 2: attempts string", {"base_attempts": "3"}, BUD, 5),
    ("row 2: attempts zero", {"base_attempts": 0, "base_misses": 0}, BUD, 5),
    ("row 2: attempts over cap", {"base_attempts": 6, "base_misses": 6}, BUD, 5),
    ("row 2: misses after the cap still budget", {"base_attempts": 9, "base_misses": 4}, BUD, 5),
    ("row 2: attempts at cap", {"base_attempts": 5}, ACCEPT, 0),
    ("row 2: attempts 1", {"base_attempts": 1}, ACCEPT, 0),
    ("row 2b: negative misses", {"base_misses": -1}, INC, 1),
    ("row 2b: negative patch misses", {"patch_misses": -1}, INC, 1),
    ("row 2b: misses above attempts", {"base_misses": 4, "base_attempts": 3}, INC, 1),
    ("row 3: property drift", {"base_property_sha256": C}, DRIFT, 2),
    ("row 3 before row 4", {"base_property_sha256": C, "claimed_epoch": C}, DRIFT, 2),
    ("row 4: base epoch differs", {"base_fixture_epoch": C}, EPOCH, 3),
    ("row 4: claim differs", {"claimed_epoch": C}, EPOCH, 3),
    ("row 4 before row 5", {"claimed_epoch": C, "base_misses": 5}, EPOCH, 3),
    ("row 5: base all misses", {"base_misses": 5}, ACCEPT, 0),
    ("row 5 beats patch_misses 0", {"patch_misses": 0}, ACCEPT, 0),
    ("row 6: only the patch missed", {"base_misses": 0}, PATCH, 4),
    ("row 7: nobody missed", {"base_misses": 0, "patch_misses": 0}, BUD, 5),
]


@pytest.mark.parametrize(
    ("changes", "code", "exit_code"), [row[1:] for row in TABLE], ids=[row[0] for row in TABLE]
)
def test_admit_table(changes: dict[str, Any], code: AdmitCode, exit_code: int) -> None:
    decision = admit(admit_packet(**changes))
    assert decision.code is code
    assert decision.exit_code == exit_code
    assert decision.accepted is (code is ACCEPT)
    assert decision.reasons, "every decision names its reason"


def test_miss_floor_is_policy() -> None:
    strict = Policy(min_base_misses=2)
    assert admit(admit_packet(base_misses=1), policy=strict).code is PATCH
    assert admit(admit_packet(base_misses=2), policy=strict).code is ACCEPT
    assert admit(admit_packet(), policy=strict).policy_values == {
        "attempt_cap": 5,
        "min_base_misses": 2,
    }


def test_cap_is_policy() -> None:
    assert admit(admit_packet(base_attempts=6), policy=Policy(attempt_cap=6)).code is ACCEPT
    assert admit(admit_packet(base_attempts=6)).code is BUD


def test_typed_record_takes_the_same_path() -> None:
    fields = admit_packet()
    record = AdmitEvidence(**fields)  # type: ignore[arg-type]
    assert admit(record).code is ACCEPT
    # A record built with a wrong type at run time is judged, not trusted.
    bad = AdmitEvidence(**{**fields, "base_misses": True})  # type: ignore[arg-type]
    assert admit(bad).code is INC


def test_not_a_mapping() -> None:
    assert admit([1, 2, 3]).code is INC  # type: ignore[arg-type]


def test_freeze_record_only_for_accept() -> None:
    record = freeze_record(admit_packet())
    assert record is not None
    assert record["verdict"] == "ACCEPT_PREEXISTING"
    assert record["seed"] == "pinned-seed"
    assert record["base_sha"] == "1" * 40
    assert record["property_sha256"] == record["base_property_sha256"] == A
    assert (record["base_misses"], record["base_attempts"]) == (1, 5)
    assert freeze_record(admit_packet(base_misses=0)) is None
    assert freeze_record(admit_packet(claimed_epoch=C)) is None


REQUIRED = [
    "base_misses",
    "base_attempts",
    "patch_misses",
    "property_sha256",
    "base_property_sha256",
    "fixture_epoch",
    "base_fixture_epoch",
    "claimed_epoch",
]
JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.floats(allow_nan=True),
    st.text(max_size=70),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


@given(field=st.sampled_from(REQUIRED), delete=st.booleans(), junk=JUNK)
def test_removing_or_corrupting_a_required_field_never_accepts(
    field: str, delete: bool, junk: object
) -> None:
    packet = admit_packet(**{field: ... if delete else junk})
    assert not admit(packet).accepted


@given(
    prop=st.sampled_from([A, B, C]),
    base_prop=st.sampled_from([A, B, C]),
    epochs=st.tuples(*[st.sampled_from([A, B, C])] * 3),
    base_misses=st.integers(-2, 8),
    attempts=st.integers(-1, 9),
    patch_misses=st.integers(-2, 8),
)
def test_accept_implies_every_condition(
    prop: str,
    base_prop: str,
    epochs: tuple[str, str, str],
    base_misses: int,
    attempts: int,
    patch_misses: int,
) -> None:
    packet = admit_packet(
        property_sha256=prop,
        base_property_sha256=base_prop,
        fixture_epoch=epochs[0],
        base_fixture_epoch=epochs[1],
        claimed_epoch=epochs[2],
        base_misses=base_misses,
        base_attempts=attempts,
        patch_misses=patch_misses,
    )
    holds = (
        prop == base_prop
        and epochs[0] == epochs[1] == epochs[2]
        and 1 <= attempts <= 5
        and 1 <= base_misses <= attempts
        and patch_misses >= 0
    )
    assert admit(packet).accepted is holds
