"""Clean-runner vote (docs/leases.md): the 13-field ``decide`` packet from two run records.

Each run (the local one that saw the failure, and the clean one on a
distinct runner) leaves a small *run record*::

    {"format": "flakecore.run-record", "format_version": "1.0",
     "runner_id": "img:<image digest>+nonce:<16 hex>",
     "class": "flake_shaped",          # flake_shaped | deterministic | environment | pass
     "fixture_hash": "<64 hex>",       # sha256 of the fixture the run loaded, hashed after the run
     "input_hash": "<64 hex>",         # sha256 of the minimized input it replayed
     "completed": true,
     "property_cohort_passed": true,   # optional
     "test_id": "...", "patch_hash": "<git commit id>", "oracle_version": "..."}  # optional binding

Only ``format``/``format_version`` and the binding fields are optional in
the sense of "may be absent without meaning anything"; every other absent
field is evidence the run did not give, and the packet field it would fill
is **left out**, never filled from the other run.  A clean run that did not
echo its fixture or input hash therefore yields a packet without
``clean_fixture_hash``/``clean_input_hash``, and ``decide`` says
``CLEAN_RUN_UNAVAILABLE``; copying the local hash would vouch for a load the
clean runner never reported.  A JSON ``null`` counts as absent.

A field that is present but malformed (a non-digest hash, an unknown class,
the string ``"true"``), an unknown field, or a binding field naming another
test, patch or oracle makes the record unusable: :func:`run_record_problems`
lists why and the caller refuses the whole record.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import attrs

from flakecore._fields import MISSING, is_bool, is_nonblank
from flakecore.codes import FailureClass
from flakecore.digest import commit_id_problem, is_digest
from flakecore.identity import runner_id_problem
from flakecore.lease import format_version_ok

__all__ = [
    "DECIDE_PACKET_FORMAT",
    "RUN_RECORD_FIELDS",
    "RUN_RECORD_FORMAT",
    "PacketAssembly",
    "assemble_packet",
    "run_record_problems",
]

#: ``format`` of a run record.
RUN_RECORD_FORMAT: Final = "flakecore.run-record"
#: ``format`` of the packet this module writes.
DECIDE_PACKET_FORMAT: Final = "flakecore.decide-packet"
RUN_RECORD_FIELDS: Final = (
    "format",
    "format_version",
    "runner_id",
    "class",
    "fixture_hash",
    "input_hash",
    "completed",
    "property_cohort_passed",
    "test_id",
    "patch_hash",
    "oracle_version",
)
_CLASSES: Final = frozenset(c.value for c in FailureClass)


def _present(record: Mapping[str, object], name: str) -> bool:
    return record.get(name, MISSING) not in (MISSING, None)


def run_record_problems(
    record: object, *, test_id: str, patch_hash: str, oracle_version: str
) -> list[str]:
    """Why a run record cannot be used at all (empty list: usable, possibly incomplete)."""
    if not isinstance(record, Mapping):
        return ["a run record must be a JSON object"]
    problems: list[str] = []
    name = record.get("format", MISSING)
    if name is not MISSING and name != RUN_RECORD_FORMAT:
        problems.append(f"format is {name!r}, expected {RUN_RECORD_FORMAT!r}")
    version = record.get("format_version", MISSING)
    if version is not MISSING and not format_version_ok(version):
        problems.append(f"format_version {version!r} is not a 1.x version")
    problems += [f"unknown field {k!r}" for k in sorted(set(record) - set(RUN_RECORD_FIELDS))]
    if _present(record, "runner_id") and (problem := runner_id_problem(record["runner_id"])):
        problems.append(f"runner_id {problem}")
    if _present(record, "class") and record["class"] not in _CLASSES:
        problems.append(f"class {record['class']!r} is not one of {sorted(_CLASSES)}")
    for field in ("fixture_hash", "input_hash"):
        if _present(record, field) and not is_digest(record[field]):
            problems.append(f"{field} is not a sha256 digest (64 lowercase hex)")
    for field in ("completed", "property_cohort_passed"):
        if _present(record, field) and not is_bool(record[field]):
            problems.append(f"{field} must be a JSON boolean")
    for field, wanted in (
        ("test_id", test_id),
        ("patch_hash", patch_hash),
        ("oracle_version", oracle_version),
    ):
        if _present(record, field):
            have = record[field]
            if not is_nonblank(have):
                problems.append(f"{field} is blank or not a string")
            elif field == "patch_hash" and (problem := commit_id_problem(field, have)):
                problems.append(problem)
            elif have != wanted:
                problems.append(f"the run is for another {field}: {have!r}, not {wanted!r}")
    return problems


@attrs.frozen(kw_only=True)
class PacketAssembly:
    """The packet, and every field left out with the reason (for stderr and ``--json``)."""

    packet: dict[str, object]
    omitted: tuple[tuple[str, str], ...]

    def to_json(self) -> dict[str, object]:
        """``{"packet": ..., "omitted": {field: why}}``."""
        return {"packet": self.packet, "omitted": dict(self.omitted)}


def assemble_packet(
    local: Mapping[str, object],
    clean: Mapping[str, object],
    *,
    test_id: str,
    patch_hash: str,
    oracle_version: str,
) -> PacketAssembly:
    """Fill the decide packet's 13 fields from two usable run records, leaving out the unproven.

    ``property_cohort_passed`` comes from the clean run; a local run that
    reports ``false`` makes it ``false`` (the cohort did not pass everywhere).
    Call :func:`run_record_problems` first: this function assumes usable records.
    """
    packet: dict[str, object] = {
        "format": DECIDE_PACKET_FORMAT,
        "format_version": "1.0",
        "test_id": test_id,
        "patch_hash": patch_hash,
        "oracle_version": oracle_version,
    }
    omitted: list[tuple[str, str]] = []
    sources = (
        ("fixture_hash", local, "fixture_hash", "the local run did not record fixture_hash"),
        ("minimized_input_hash", local, "input_hash", "the local run did not record input_hash"),
        ("local_runner_id", local, "runner_id", "the local run did not record runner_id"),
        ("clean_runner_id", clean, "runner_id", "the clean run did not record runner_id"),
        ("local_class", local, "class", "the local run did not record its class"),
        ("clean_class", clean, "class", "the clean run did not record its class"),
        ("clean_fixture_hash", clean, "fixture_hash", "the clean run did not echo fixture_hash"),
        ("clean_input_hash", clean, "input_hash", "the clean run did not echo input_hash"),
    )
    for field, record, key, why in sources:
        if _present(record, key):
            packet[field] = record[key]
        else:
            omitted.append((field, why))
    if _present(clean, "property_cohort_passed"):
        cohort = clean["property_cohort_passed"]
        if local.get("property_cohort_passed") is False:
            cohort = False
        packet["property_cohort_passed"] = cohort
    else:
        omitted.append(
            ("property_cohort_passed", "the clean run did not record property_cohort_passed")
        )
    if _present(clean, "completed"):
        packet["clean_run_completed"] = clean["completed"]
    else:
        omitted.append(("clean_run_completed", "the clean run did not record completed"))
    return PacketAssembly(packet=packet, omitted=tuple(omitted))
