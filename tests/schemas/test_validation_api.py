"""``flakecore.validation``: loading, the three views of validity, pointers, isolation."""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from packets import admit_packet, classify_report
from referencing.exceptions import NoSuchResource, Unresolvable, Unretrievable

import flakecore
from flakecore import validation

REPO = Path(__file__).resolve().parents[2]


def test_schema_names_and_ids() -> None:
    assert "decision" in validation.schema_names()
    assert validation.schema_id("lease") == "https://flakecore.invalid/schemas/lease.v1.json"


def test_load_schema_returns_a_copy() -> None:
    first = validation.load_schema("lease")
    first["properties"].clear()
    assert validation.load_schema("lease")["properties"]
    assert validation.is_valid({}, "lease") is False


def test_schema_bytes_are_the_repository_file() -> None:
    for kind in validation.schema_names():
        assert validation.schema_bytes(kind) == (REPO / "schemas" / f"{kind}.v1.json").read_bytes()


@pytest.mark.parametrize("kind", ["nope", "admit", "schemas/lease", "", "Lease"])
def test_unknown_kinds_are_refused(kind: str) -> None:
    with pytest.raises(validation.UnknownKindError, match="known: admit-packet"):
        validation.load_schema(kind)
    with pytest.raises(LookupError):
        validation.is_valid({}, kind)
    with pytest.raises(validation.UnknownKindError):
        validation.iter_errors({}, kind)  # raised on the call, not on the first next()


def test_three_views_of_validity() -> None:
    good = admit_packet()
    assert validation.is_valid(good, "admit-packet")
    assert list(validation.iter_errors(good, "admit-packet")) == []
    validation.validate(good, "admit-packet")

    bad = admit_packet(base_misses="2", claimed_epoch="epoch-7", Test_id=1)
    assert not validation.is_valid(bad, "admit-packet")
    problems = validation.iter_errors(bad, "admit-packet")
    assert isinstance(problems, Iterator)
    pointers = {p.pointer for p in problems}
    assert pointers == {"/Test_id", "/base_misses", "/claimed_epoch"}
    with pytest.raises(validation.SchemaViolation) as caught:
        validation.validate(bad, "admit-packet")
    assert isinstance(caught.value, ValueError)
    assert caught.value.kind == "admit-packet"
    assert caught.value.problem.pointer in pointers
    assert str(caught.value).startswith("admit-packet record: /")


def test_problems_name_one_field_each() -> None:
    report = classify_report(Owner="x", owner=None)
    del report["replays"]
    problems = {p.pointer: p for p in validation.iter_errors(report, "classify-report")}
    assert problems["/replays"].message == "missing (required)"
    assert problems["/replays"].keyword == "required"
    assert problems["/Owner"].message.endswith("did you mean 'owner'?")
    assert problems["/Owner"].keyword == "additionalProperties"
    assert "/owner" in problems


def test_nested_pointers_and_escaping() -> None:
    report = classify_report()
    report["replays"][2]["passed"] = "true"  # type: ignore[index]
    report["a/b~c"] = 1
    pointers = {p.pointer for p in validation.iter_errors(report, "classify-report")}
    assert pointers == {"/replays/2/passed", "/a~1b~0c"}


def test_problem_messages_stay_on_one_line() -> None:
    hostile = "line one\nline two\r\n" + "x" * 5000
    problems = list(validation.iter_errors(admit_packet(claimed_epoch=hostile), "admit-packet"))
    assert problems
    for problem in problems:
        assert "\n" not in problem.message and "\r" not in problem.message
        assert len(problem.message) <= 300


def test_root_problems() -> None:
    problem = next(validation.iter_errors([1], "decision"))
    assert problem.pointer == ""
    assert str(problem).startswith("(root): ")


def test_kind_of() -> None:
    assert validation.kind_of({"format": "flakecore.lease"}) == "lease"
    assert validation.kind_of({"seed": 1, "n": 1, "result": "pass"}) is None
    for bad in ("flakecore.nope", "lease", "FLAKECORE.lease", None, 1, "flakecore."):
        with pytest.raises(validation.UnknownKindError, match=r"flakecore\.admit-packet"):
            validation.kind_of({"format": bad})


def test_remote_references_are_refused_never_fetched() -> None:
    registry = validation._registry()
    for uri in ("https://json-schema.org/draft/2020-12/schema", "https://example.org/x.json"):
        with pytest.raises((NoSuchResource, Unretrievable, Unresolvable)):
            registry.resolver().lookup(uri)
    # Every shipped schema resolves from the registry itself.
    for kind in validation.schema_names():
        assert registry.resolver().lookup(validation.schema_id(kind)).contents["$id"]


def test_the_module_never_builds_paths_from_file() -> None:
    tree = ast.parse(inspect.getsource(validation))
    names = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    assert "__file__" not in names
    assert "files" in names  # importlib.resources.files


def test_missing_schemas_are_an_error_not_a_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(validation, "_schema_dir", lambda: REPO / "no-such-dir")
    validation.schema_names.cache_clear()
    try:
        with pytest.raises(validation.SchemasMissingError, match="install flakecore"):
            validation.schema_names()
    finally:
        monkeypatch.undo()
        validation.schema_names.cache_clear()
    assert validation.schema_names()


def _python(code: str) -> subprocess.CompletedProcess[str]:
    # -I: never import from the working directory, so the installed package answers.
    return subprocess.run(
        [sys.executable, "-I", "-c", code], capture_output=True, text=True, check=False
    )


def test_importing_never_imports_jsonschema() -> None:
    out = _python(
        "import sys, flakecore, flakecore.validation as v, flakecore.cli; "
        "v.schema_names(); v.load_schema('lease'); v.kind_of({'format': 'flakecore.lease'}); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('jsonschema', 'referencing')))"
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_a_missing_extra_says_how_to_install_it() -> None:
    block = "import sys; sys.modules['jsonschema'] = None; sys.modules['referencing'] = None; "
    out = _python(block + "from flakecore import validation; validation.is_valid({}, 'lease')")
    assert out.returncode != 0
    assert "flakecore.errors.MissingExtra" in out.stderr
    assert "pip install 'flakecore[schemas]'" in out.stderr
    caught = _python(
        block + "from flakecore import validation\n"
        "try:\n    validation.is_valid({}, 'lease')\n"
        "except ImportError as exc:\n    print(type(exc).__name__, exc.extra)"
    )
    assert caught.stdout.strip() == "MissingExtra schemas", caught.stderr
    # Schemas themselves are still readable without the extra.
    out = _python(
        block + "from flakecore import validation; print(len(validation.load_schema('lease')))"
    )
    assert out.returncode == 0, out.stderr


def test_hostile_keys_cannot_forge_output_lines() -> None:
    packet = admit_packet(**{"a\nb\u202ec": 1})
    [problem] = validation.iter_errors(packet, "admit-packet")
    assert problem.pointer == "/a\nb\u202ec"  # exact, for machines
    assert str(problem) == "/a\\nb\\u202ec: unknown field (the schema does not define it)"


def test_fields_a_conditional_forbids_are_named() -> None:
    """classify's lease fields on an admit decision: each one reported at its own pointer."""
    decision = flakecore.admit(admit_packet()).to_json()
    decision.update(greens=1, freeze="no", lease_reasons=[])
    problems = {p.pointer: p for p in validation.iter_errors(decision, "decision")}
    assert set(problems) == {"/greens", "/freeze", "/lease_reasons"}
    assert {p.message for p in problems.values()} == {"not allowed here"}
    with pytest.raises(validation.SchemaViolation, match="decision record: /"):
        validation.validate(decision, "decision")
