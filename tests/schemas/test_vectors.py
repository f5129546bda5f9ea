"""The language-neutral vectors (``schemas/tests``) replayed with Python's jsonschema.

``schemas/node/run-vectors.mjs`` replays the same files with Ajv; both must
give the answer each vector records, or the schemas are not one contract.
The vectors are read from the repository (they are the specification), the
schemas from the *installed* package (they are what users get).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator  # type: ignore[import-untyped,unused-ignore]
from referencing import Registry
from referencing.exceptions import NoSuchResource
from referencing.jsonschema import DRAFT202012

from flakecore import validation
from flakecore.jsonio import loads_strict

REPO = Path(__file__).resolve().parents[2]
VECTORS = REPO / "schemas" / "tests"
BASE = "https://flakecore.invalid/schemas/"


def _refuse(uri: str) -> Any:
    raise NoSuchResource(ref=uri)  # type: ignore[call-arg,unused-ignore]


REGISTRY: Registry[Any] = Registry(retrieve=_refuse).with_resources(  # type: ignore[call-arg,unused-ignore]
    (validation.schema_id(k), DRAFT202012.create_resource(validation.load_schema(k)))
    for k in validation.schema_names()
)


def _load(path: Path) -> list[dict[str, Any]]:
    value = loads_strict(path.read_bytes(), source=path.name)
    assert isinstance(value, list)
    return value


def _cases() -> list[Any]:
    cases = []
    for path in sorted(VECTORS.glob("*.json")):
        for group in _load(path):
            for test in group["tests"]:
                cases.append(
                    pytest.param(
                        path.stem,
                        group["schema"],
                        test["data"],
                        test["valid"],
                        id=f"{path.stem}: {group['description']}: {test['description']}",
                    )
                )
    return cases


CASES = _cases()


def test_there_are_vectors_for_every_kind() -> None:
    assert sorted(p.stem for p in VECTORS.glob("*.json")) == list(validation.schema_names())
    assert len(CASES) > 500


@pytest.mark.parametrize("path", sorted(VECTORS.glob("*.json")), ids=lambda p: p.stem)
def test_vector_files_are_shaped_like_the_json_schema_test_suite(path: Path) -> None:
    groups = _load(path)
    assert groups
    answers = set()
    for group in groups:
        assert set(group) == {"description", "schema", "tests"}
        assert group["schema"] == {"$ref": f"{BASE}{path.stem}.v1.json"}
        assert group["tests"], group["description"]
        descriptions = [t["description"] for t in group["tests"]]
        assert len(descriptions) == len(set(descriptions)), group["description"]
        for test in group["tests"]:
            assert set(test) == {"description", "data", "valid"}
            assert isinstance(test["valid"], bool)
            answers.add(test["valid"])
    assert answers == {True, False}, "every kind needs valid and invalid vectors"


@pytest.mark.parametrize("kind", validation.schema_names())
def test_every_field_has_vectors(kind: str) -> None:
    """Each property of the schema is named by at least one vector of its kind."""
    text = " ".join(t["description"] for g in _load(VECTORS / f"{kind}.json") for t in g["tests"])
    missing = [name for name in validation.load_schema(kind)["properties"] if name not in text]
    assert not missing


@pytest.mark.parametrize(("kind", "schema", "data", "valid"), CASES)
def test_vector(kind: str, schema: dict[str, Any], data: Any, valid: bool) -> None:
    validator = Draft202012Validator(schema, registry=REGISTRY)
    errors = [e.message for e in validator.iter_errors(data)]
    assert (not errors) is valid, errors
    # The library's own entry points give the same answer as plain jsonschema.
    assert validation.is_valid(data, kind) is valid
    problems = list(validation.iter_errors(data, kind))
    assert (not problems) is valid
    assert all(p.pointer == "" or p.pointer.startswith("/") for p in problems)


def test_every_identity_class_is_a_vector_ajv_replays_too() -> None:
    """tests/identities.py lists SPEC 8's classes; each is an owner vector, so Ajv sees it."""
    from identities import BLANK, HONEST, NOT_PLAIN

    owners = {
        (test["data"]["owner"], test["valid"])
        for group in _load(VECTORS / "classify-report.json")
        for test in group["tests"]
        if isinstance(test["data"], dict) and isinstance(test["data"].get("owner"), str)
    }
    json_texts = [
        t for _, t, _ in NOT_PLAIN if "\udc80" not in t
    ]  # no JSON file holds a lone surrogate
    assert len(json_texts) == len(NOT_PLAIN) - 1
    for text in [*json_texts, *(t for _, t in BLANK)]:
        assert (text, False) in owners, repr(text)
    for text in HONEST:
        assert (text, True) in owners, text
