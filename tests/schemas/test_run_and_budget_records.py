"""Run records and ``budget.json``: the schemas and the core readers give one answer.

The vectors in ``schemas/tests`` are the specification; here the core's own
readers (``run_record_problems`` for ``packet``, ``budget_evidence`` for
``budget`` and ``ledger apply``) replay them, so a record a non-Python
runner validates is one flakecore reads the same way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from flakecore import validation
from flakecore.codes import BudgetCode
from flakecore.gate.seedrun import BUDGET_RUN_FIELDS, budget_evidence, observation_packet
from flakecore.gate.vote import run_record_problems
from flakecore.jsonio import load_object, loads_strict

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "schemas" / "examples"


def vectors(kind: str) -> list[Any]:
    groups = loads_strict((REPO / "schemas" / "tests" / f"{kind}.json").read_bytes())
    assert isinstance(groups, list)
    return [
        pytest.param(t["data"], t["valid"], id=f"{g['description']}: {t['description']}")
        for g in groups
        for t in g["tests"]
    ]


def example(name: str) -> dict[str, Any]:
    return load_object((EXAMPLES / name).read_bytes(), source=name)


LOCAL = example("valid/run-record-local-flake.json")


@pytest.mark.parametrize(("record", "valid"), vectors("run-record"))
def test_packet_reads_a_run_record_as_its_schema_does(record: Any, valid: bool) -> None:
    """Bound to what the record itself names when that is well-formed, so only shape decides."""
    binding = {k: LOCAL[k] for k in ("test_id", "patch_hash", "oracle_version")}
    if isinstance(record, dict):
        binding |= {k: v for k, v in record.items() if k in binding and isinstance(v, str)}
    assert validation.is_valid(record, "run-record") is valid
    assert (run_record_problems(record, **binding) == []) is valid


@pytest.mark.parametrize(("record", "valid"), vectors("budget-run"))
def test_budget_accepts_every_budget_json_its_schema_accepts(record: Any, valid: bool) -> None:
    assert validation.is_valid(record, "budget-run") is valid
    if valid:
        packet, refused = budget_evidence(record)
        assert refused is None, refused.reasons
        assert packet == record["packet"]


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("format_version",), "2.0"),
        (("notes",), ["x"]),
        (("runs", 0, "retries"), 1),
        (("parent", "ref"), "main"),
        (("head", "digest"), "0" * 64),
        (("runs", 2, "result"), "pass"),
        (("packet", "passes"), 8),
        (("property", "holds"), None),
    ],
)
def test_a_budget_json_that_no_budget_run_wrote_is_refused(
    path: tuple[str | int, ...], value: object
) -> None:
    """The honest twin is the example itself, accepted above; each edit here is refused."""
    record = example("valid/budget-run-flake-candidate.json")
    node: Any = record
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    packet, refused = budget_evidence(record)
    assert refused is not None and refused.code is BudgetCode.INSUFFICIENT_BUDGET
    assert refused.reasons and packet is record


def test_the_budget_run_example_agrees_with_its_own_runs() -> None:
    record = example("valid/budget-run-flake-candidate.json")
    packet, problems = observation_packet(record)
    assert problems == [] and packet == record["packet"]


def test_the_schema_names_the_fields_budget_run_writes() -> None:
    doc = validation.load_schema("budget-run")
    assert tuple(doc["properties"]) == BUDGET_RUN_FIELDS[""]
    for part in ("parent", "head"):
        assert tuple(doc["properties"][part]["properties"]) == BUDGET_RUN_FIELDS[part]
    prop = doc["properties"]["property"]["anyOf"][0]["properties"]
    assert tuple(prop) == BUDGET_RUN_FIELDS["property"]
    assert tuple(doc["properties"]["runs"]["items"]["properties"]) == BUDGET_RUN_FIELDS["runs"]
