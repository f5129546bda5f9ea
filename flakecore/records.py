"""Typed evidence records, one per packet kind (docs/schemas.md).

They are conveniences for Python callers: every policy also takes the plain
JSON mapping, and a record is judged by converting it back to that mapping,
so both paths meet the same strict checks (a record built with a wrong type
at run time is refused, not trusted because it came from Python).  The
policies load this module only for a caller that passes a record
(:func:`flakecore._fields.wire_form`); the field names and ``Seed`` live in
:mod:`flakecore._fields`, which builds no class.
"""

from __future__ import annotations

import attrs

from flakecore._fields import (
    ADMIT_FIELDS,
    BUDGET_FIELDS,
    CLASSIFY_FIELDS,
    DECIDE_FIELDS,
    DECIDE_IDENTITY_FIELDS,
    Seed,
)

__all__ = [
    "ADMIT_FIELDS",
    "BUDGET_FIELDS",
    "CLASSIFY_FIELDS",
    "DECIDE_FIELDS",
    "DECIDE_IDENTITY_FIELDS",
    "AdmitEvidence",
    "BudgetPacket",
    "ClassifyReport",
    "DecidePacket",
    "Replay",
    "Seed",
]


def _as_list(_: type, __: attrs.Attribute[object], value: object) -> object:
    """JSON has arrays, not tuples: the policies judge the wire form."""
    return list(value) if isinstance(value, tuple) else value


def _wire(record: attrs.AttrsInstance, kind: str) -> dict[str, object]:
    data: dict[str, object] = {"format": f"flakecore.{kind}", "format_version": "1.0"}
    for key, value in attrs.asdict(record, value_serializer=_as_list).items():
        if value is not None:
            data[key] = value
    return data


@attrs.frozen(kw_only=True)
class AdmitEvidence:
    """Base-replay evidence for :func:`flakecore.admit` (docs/policies.md)."""

    base_misses: int
    base_attempts: int
    patch_misses: int
    property_sha256: str
    base_property_sha256: str
    fixture_epoch: str
    base_fixture_epoch: str
    claimed_epoch: str
    property_id: str | None = None
    seed: Seed | None = None
    base_sha: str | None = None

    def to_json(self) -> dict[str, object]:
        """The wire packet (schemas/admit-packet.v1.json)."""
        return _wire(self, "admit-packet")


@attrs.frozen(kw_only=True)
class DecidePacket:
    """Clean-runner vote packet for :func:`flakecore.decide` (docs/policies.md)."""

    test_id: str
    patch_hash: str
    fixture_hash: str
    minimized_input_hash: str
    oracle_version: str
    local_runner_id: str
    clean_runner_id: str
    local_class: str
    clean_class: str
    clean_fixture_hash: str
    clean_input_hash: str
    property_cohort_passed: bool
    clean_run_completed: bool

    def to_json(self) -> dict[str, object]:
        """The wire packet (schemas/decide-packet.v1.json)."""
        return _wire(self, "decide-packet")


@attrs.frozen(kw_only=True)
class BudgetPacket:
    """Seed-budget observation for :func:`flakecore.budget` (docs/policies.md).

    ``property_holds`` is None when the property was not scored, ``passes``
    None when the seed runs never started.
    """

    test_id: str
    parent_digest: str
    head_digest: str
    property_holds: bool | None
    seeds: tuple[Seed, ...]
    passes: int | None
    budget: int
    opened_against: str | None = None

    def to_json(self) -> dict[str, object]:
        """The wire packet (schemas/budget-packet.v1.json)."""
        data = _wire(self, "budget-packet")
        data["property_holds"] = self.property_holds
        data["passes"] = self.passes
        return data


@attrs.frozen(kw_only=True)
class Replay:
    """One replay of a failing test: green (``passed``) or red."""

    attempt_id: str
    passed: bool
    exit_code: int | None = None
    duration_s: float | None = None


@attrs.frozen(kw_only=True)
class ClassifyReport:
    """Evidence for :func:`flakecore.classify` (docs/policies.md).

    ``budget`` defaults to the policy's replay budget; ``pinned_sha256`` and
    ``canary`` are carried into the lease.
    """

    property_verdict: str | None
    pin_status: str | None
    origin_passed: bool | None
    replays: tuple[Replay, ...] | None
    owner: str | None = None
    expires_at: str | None = None
    budget: int | None = None
    pinned_sha256: str | None = None
    canary: str | None = None

    def to_json(self) -> dict[str, object]:
        """The wire report (schemas/classify-report.v1.json); None fields are left out."""
        data = _wire(self, "classify-report")
        if self.replays is not None:
            data["replays"] = [attrs.asdict(r) for r in self.replays]
        return data
