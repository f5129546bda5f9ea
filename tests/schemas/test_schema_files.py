"""The schema files themselves: house rules, and agreement with the core's vocabulary.

The schemas are written by hand, so these tests are what keeps them honest:
every object closed (``additionalProperties: false``), every field titled and
described, every enum equal to the core enum it mirrors, the shared ``$defs``
identical in every file, and no rule that one language's regex engine reads
differently from another's.
"""

from __future__ import annotations

import datetime as dt
import enum
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import flakecore
from flakecore import (
    AdmitCode,
    Attempt,
    AttemptFlag,
    AttemptResult,
    BudgetCode,
    ClassifyClass,
    DecideCode,
    FailureClass,
    LogStatus,
    Outcome,
    PolicyName,
    Source,
    attestation,
    validation,
)
from flakecore.exits import ADMIT_EXIT, BUDGET_EXIT, CLASSIFY_EXIT, DECIDE_EXIT
from flakecore.gate.config import POLICY_KEYS
from flakecore.gate.vote import RUN_RECORD_FIELDS
from flakecore.policy import PolicySource
from flakecore.records import (
    ADMIT_FIELDS,
    BUDGET_FIELDS,
    CLASSIFY_FIELDS,
    DECIDE_FIELDS,
    DECIDE_IDENTITY_FIELDS,
    Replay,
)

REPO = Path(__file__).resolve().parents[2]
KINDS = (
    "admit-packet",
    "attempt-line",
    "attempt-record",
    "attempts-summary",
    "budget-packet",
    "budget-run",
    "classify-report",
    "decide-packet",
    "decision",
    "freeze-record",
    "lease",
    "ledger-row",
    "log-index-line",
    "record-statement",
    "run-record",
    "signed-record",
    "triage-result",
)
#: Records flakecore writes must name their format; input packets may leave it out.
EMITTED = (
    "attempt-record",
    "attempts-summary",
    "budget-run",
    "decision",
    "freeze-record",
    "lease",
    "ledger-row",
    "triage-result",
)
PACKETS = ("admit-packet", "budget-packet", "classify-report", "decide-packet")
FORMAT_KEYS = {"format", "format_version"}
#: Foreign formats (in-toto Statement, DSSE envelope): their fields are their standards', not ours.
FOREIGN = ("record-statement", "signed-record")
#: The one open object: a Statement's predicate is a record that the referenced schema closes.
OPEN = {("record-statement", "/properties/predicate")}
NOW = dt.datetime(2026, 11, 29, 12, 0, tzinfo=dt.timezone.utc)


def schema(kind: str) -> dict[str, Any]:
    return validation.load_schema(kind)


def props(kind: str) -> dict[str, Any]:
    value = schema(kind)["properties"]
    assert isinstance(value, dict)
    return value


def defining_nodes(node: Any, where: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Subschemas that *define* a value (root, properties, items, $defs, anyOf branches).

    Conditional refinements (``if``/``then``/``else``/``not``/``contains``) only
    narrow a value already defined elsewhere, so the house rules skip them.
    """
    if not isinstance(node, dict):
        return
    yield where, node
    for name, sub in node.get("properties", {}).items():
        yield from defining_nodes(sub, f"{where}/properties/{name}")
    for name, sub in node.get("$defs", {}).items():
        yield from defining_nodes(sub, f"{where}/$defs/{name}")
    if "items" in node:
        yield from defining_nodes(node["items"], f"{where}/items")
    for i, sub in enumerate(node.get("anyOf", [])):
        yield from defining_nodes(sub, f"{where}/anyOf/{i}")


def all_nodes(node: Any, where: str = "") -> Iterator[tuple[str, Any]]:
    """Every subschema position (keys of a ``properties`` map are names, not keywords)."""
    if isinstance(node, dict):
        yield where, node
        for key, value in node.items():
            if key in ("properties", "$defs"):
                for name, sub in value.items():
                    yield from all_nodes(sub, f"{where}/{key}/{name}")
            elif key in ("enum", "const", "required", "examples"):
                continue
            else:
                yield from all_nodes(value, f"{where}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from all_nodes(value, f"{where}/{i}")


def test_the_shipped_kinds() -> None:
    assert validation.schema_names() == KINDS


def test_repository_files_are_the_kinds() -> None:
    on_disk = sorted(p.name for p in (REPO / "schemas").glob("*.json"))
    assert on_disk == sorted(f"{k}.v1.json" for k in KINDS)


@pytest.mark.parametrize("kind", KINDS)
def test_dialect_id_and_metaschema(kind: str) -> None:
    from jsonschema import Draft202012Validator  # type: ignore[import-untyped,unused-ignore]

    doc = schema(kind)
    assert doc["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert doc["$id"] == f"https://flakecore.invalid/schemas/{kind}.v1.json"
    assert doc["$id"] == validation.schema_id(kind)
    Draft202012Validator.check_schema(doc)


@pytest.mark.parametrize("kind", KINDS)
def test_every_object_is_closed_and_every_field_documented(kind: str) -> None:
    doc = schema(kind)
    for key in ("title", "description"):
        assert isinstance(doc.get(key), str) and doc[key].strip(), f"{kind}: no {key}"
    for where, node in defining_nodes(doc):
        if node.get("type") == "object" or "properties" in node:
            assert node.get("type") == "object", f"{kind}{where}: an object without type"
            closed = node.get("additionalProperties") is False
            assert closed is ((kind, where) not in OPEN), f"{kind}{where}: not closed"
            assert node.get("properties"), f"{kind}{where}: a free-form object"
            for name in node.get("required", []):
                assert name in node["properties"], f"{kind}{where}: requires undefined {name}"
            for name, sub in node["properties"].items():
                for key in ("title", "description"):
                    text = sub.get(key) if isinstance(sub, dict) else None
                    assert isinstance(text, str) and text.strip(), f"{kind}{where}/{name}: {key}"
    for name, sub in doc.get("$defs", {}).items():
        assert sub.get("title") and sub.get("description"), f"{kind}: $defs/{name} undocumented"


@pytest.mark.parametrize("kind", KINDS)
def test_refs_stay_in_the_shipped_schemas_and_no_format_keyword(kind: str) -> None:
    for where, node in all_nodes(schema(kind)):
        if not isinstance(node, dict):
            continue
        ref = node.get("$ref")
        if ref is not None and not ref.startswith("#/$defs/"):
            # Only to another shipped schema, by its $id: a runner with the files resolves it.
            assert ref.removeprefix(validation.SCHEMA_BASE) in {
                f"{k}.v1.json" for k in KINDS if k != kind
            }, f"{kind}{where}: $ref {ref!r} leaves the schemas"
        elif ref is not None:
            assert ref.removeprefix("#/$defs/") in schema(kind)["$defs"]
        # Validators ignore "format" by default, so a rule spelt that way would be no rule.
        assert "format" not in node, f"{kind}{where}"


@pytest.mark.parametrize("kind", KINDS)
def test_anchored_patterns_are_closed_against_a_trailing_newline(kind: str) -> None:
    """Python's ``$`` also matches before a final newline; ECMAScript's does not."""
    for where, node in all_nodes(schema(kind)):
        if not isinstance(node, dict) or "pattern" not in node:
            continue
        pattern = node["pattern"]
        re.compile(pattern)
        assert "\\d" not in pattern and "\\s" not in pattern and "\\w" not in pattern, (
            f"{kind}{where}: \\d, \\s and \\w mean different things in Python and ECMAScript"
        )
        if pattern.endswith("$"):
            # Fixed length: a trailing newline makes the string one too long.
            assert node.get("minLength") == node.get("maxLength") is not None, f"{kind}{where}"
        elif "$" in pattern:
            assert pattern.endswith("$(?!\\n)"), f"{kind}{where}: {pattern}"


def test_shared_definitions_are_identical_in_every_file() -> None:
    seen: dict[str, tuple[str, Any]] = {}
    for kind in KINDS:
        for name, definition in schema(kind).get("$defs", {}).items():
            if name in seen:
                first, value = seen[name]
                assert definition == value, f"$defs/{name} differs between {first} and {kind}"
            else:
                seen[name] = (kind, definition)
    assert {"digest", "formatVersion", "nonBlank", "timestamp", "replay"} <= set(seen)


def test_the_blank_class_is_pythons_whitespace() -> None:
    """nonBlank spells out str.isspace() so that ECMAScript's \\s does not decide."""
    pattern = schema("admit-packet")["$defs"]["nonBlank"]["pattern"]
    whitespace = [chr(c) for c in range(0x110000) if chr(c).isspace()]
    assert all(re.search(pattern, ch) is None for ch in whitespace)
    assert re.search(pattern, "\u200b") and re.search(pattern, "\ufeff")
    for ch in whitespace:
        assert (ch.strip() == "") is (re.search(pattern, ch) is None)


@pytest.mark.parametrize(
    "kind", [k for k in KINDS if k not in ("attempt-line", "log-index-line", *FOREIGN)]
)
def test_format_fields(kind: str) -> None:
    doc, fields = schema(kind), props(kind)
    assert fields["format"]["const"] == f"flakecore.{kind}"
    assert fields["format_version"]["$ref"] == "#/$defs/formatVersion"
    required = set(doc.get("required", []))  # a run record may hold no field at all
    if kind in EMITTED:
        assert required >= FORMAT_KEYS
    else:
        assert not required & FORMAT_KEYS


def test_signed_records_use_the_cores_names() -> None:
    """The envelope and Statement constants, and the kinds a predicate may be, are the core's."""
    assert props("signed-record")["payloadType"]["const"] == attestation.PAYLOAD_TYPE
    assert props("record-statement")["_type"]["const"] == attestation.STATEMENT_TYPE
    assert props("record-statement")["predicateType"]["const"] == attestation.PREDICATE_TYPE
    predicate = props("record-statement")["predicate"]
    kinds = list(attestation.SIGNABLE_KINDS)
    assert predicate["properties"]["format"]["enum"] == [f"flakecore.{k}" for k in kinds]
    referenced = [rule["then"]["$ref"] for rule in predicate["allOf"]]
    assert referenced == [validation.schema_id(k) for k in kinds if k in KINDS]
    items = props("signed-record")["signatures"]
    assert items["maxItems"] == attestation.MAX_SIGNATURES


def test_attempt_line_is_exactly_seed_n_result() -> None:
    doc = schema("attempt-line")
    assert set(doc["properties"]) == {"seed", "n", "result"}
    assert set(doc["required"]) == {"seed", "n", "result"}


def test_packet_fields_are_the_wire_names() -> None:
    """SPEC 6: these names are the cross-language contract; the core lists them too."""
    assert set(props("admit-packet")) == set(ADMIT_FIELDS) | FORMAT_KEYS
    assert set(props("decide-packet")) == set(DECIDE_FIELDS) | FORMAT_KEYS
    assert set(props("budget-packet")) == set(BUDGET_FIELDS) | FORMAT_KEYS
    assert set(props("classify-report")) == set(CLASSIFY_FIELDS) | FORMAT_KEYS
    assert set(DECIDE_IDENTITY_FIELDS) <= set(schema("decide-packet")["required"])
    assert set(props("run-record")) == set(RUN_RECORD_FIELDS)
    replay = schema("classify-report")["$defs"]["replay"]
    assert set(replay["properties"]) == {a.name for a in Replay.__attrs_attrs__}
    assert schema("lease")["$defs"]["replay"] == replay


def test_emitted_record_fields_are_what_the_core_writes() -> None:
    attempt = Attempt(
        test_id="t",
        outcome=Outcome.PASS,
        native="passed",
        attempt=1,
        source=Source(file="f", format="junit"),
    )
    assert set(props("attempt-record")) == set(attempt.to_json())
    source = props("attempt-record")["source"]["properties"]
    assert set(source) == {a.name for a in Source.__attrs_attrs__}
    summary = flakecore.reduce_logs([]).to_json()
    assert set(props("attempts-summary")) == set(summary)
    decision = flakecore.classify({}, now=NOW).with_policy_source(PolicySource()).to_json()
    # The CLI adds where the packet came from and any input error; the verbs
    # that gather evidence themselves (replay, budget-run) add what they saw.
    cli = {"input", "error", "packet", "replay", "record"}
    assert set(props("decision")) == set(decision) | cli


def test_enums_equal_the_core_enums() -> None:
    def values(members: type[enum.Enum]) -> list[object]:
        return [m.value for m in members]

    assert props("decide-packet")["local_class"]["enum"] == values(FailureClass)
    assert props("decide-packet")["clean_class"]["enum"] == values(FailureClass)
    assert props("attempt-line")["result"]["enum"] == values(AttemptResult)
    assert props("run-record")["class"]["enum"] == [*values(FailureClass), None]
    run = props("budget-run")["runs"]["items"]["properties"]
    assert run["result"]["enum"] == values(AttemptResult)
    assert (
        props("budget-run")["parent"]["properties"]["digest_kind"]["$ref"] == "#/$defs/digestKind"
    )
    assert props("attempt-record")["outcome"]["enum"] == values(Outcome)
    assert props("attempt-record")["flags"]["items"]["enum"] == values(AttemptFlag)
    assert props("attempts-summary")["status"]["enum"] == values(LogStatus)
    assert list(props("attempts-summary")["results"]["properties"]) == values(AttemptResult)
    assert props("decision")["policy"]["enum"] == values(PolicyName)
    overrides = props("decision")["policy_source"]["properties"]["overrides"]["items"]["enum"]
    assert overrides == list(POLICY_KEYS)
    every = {c.value for e in (AdmitCode, DecideCode, BudgetCode, ClassifyClass) for c in e}
    assert set(props("decision")["code"]["enum"]) == every
    assert props("lease")["class"]["const"] == ClassifyClass.FLAKE.value
    assert props("freeze-record")["verdict"]["const"] == AdmitCode.ACCEPT_PREEXISTING.value
    assert props("ledger-row")["code"]["const"] == BudgetCode.FLAKE_CANDIDATE.value


def _policy_rule(policy: PolicyName) -> dict[str, Any]:
    for rule in schema("decision")["allOf"]:
        condition = rule.get("if", {}).get("properties", {}).get("policy", {})
        if condition.get("const") == policy.value:
            then = rule["then"]
            assert isinstance(then, dict)
            return then
    raise AssertionError(f"no rule for {policy.value}")


@pytest.mark.parametrize(
    ("policy", "codes", "table"),
    [
        (PolicyName.ADMIT, AdmitCode, ADMIT_EXIT),
        (PolicyName.DECIDE, DecideCode, DECIDE_EXIT),
        (PolicyName.BUDGET, BudgetCode, BUDGET_EXIT),
        (PolicyName.CLASSIFY, ClassifyClass, CLASSIFY_EXIT),
    ],
)
def test_decision_codes_per_policy(policy: PolicyName, codes: Any, table: Any) -> None:
    rule = _policy_rule(policy)
    assert set(rule["properties"]["code"]["enum"]) == {c.value for c in codes}
    accepting = rule["allOf"][0]["then"]["properties"]
    code = codes(accepting["code"]["const"])
    assert table[code] == accepting["exit"]["const"]


@pytest.mark.parametrize("policy", list(PolicyName))
def test_decision_policy_values_per_policy(policy: PolicyName) -> None:
    judges: dict[PolicyName, Callable[[], flakecore.Decision[Any]]] = {
        PolicyName.ADMIT: lambda: flakecore.admit({}),
        PolicyName.DECIDE: lambda: flakecore.decide({}),
        PolicyName.BUDGET: lambda: flakecore.budget({}),
        PolicyName.CLASSIFY: lambda: flakecore.classify({}, now=NOW),
    }
    decision = judges[policy]()
    names = set(decision.policy_values)
    pv = _policy_rule(policy)["properties"]["policy_values"]
    assert set(pv.get("propertyNames", {}).get("enum", [])) == names
    known = set(props("decision")["policy_values"]["properties"])
    assert names <= known
    policy_fields = {a.name for a in flakecore.Policy.__attrs_attrs__}
    assert known <= policy_fields | {"now"}


def test_decision_error_exits_are_the_input_exits() -> None:
    from flakecore.exits import EXIT_DATAERR, EXIT_NOINPUT

    rule = schema("decision")["allOf"][-1]
    assert set(rule["if"]["required"]) == {"error"}
    assert set(rule["then"]["properties"]["exit"]["enum"]) == {EXIT_DATAERR, EXIT_NOINPUT}


def test_schema_files_are_plain_ascii_json() -> None:
    """ASCII with escapes: invisible characters in a pattern are spelt so a reviewer sees them."""
    for path in (REPO / "schemas").glob("*.v1.json"):
        raw = path.read_bytes()
        assert raw.isascii(), path.name
        assert raw.endswith(b"\n") and not raw.startswith(b"\xef\xbb\xbf")
        json.loads(raw)


MAX_SAFE = 2**53 - 1


@pytest.mark.parametrize("kind", KINDS)
def test_every_number_is_bounded_for_javascript(kind: str) -> None:
    """SPEC 8: every integer and number is within +-(2**53 - 1), so Ajv and Python read one value."""
    for where, node in all_nodes(schema(kind)):
        if not isinstance(node, dict):
            continue
        types = node.get("type")
        types = types if isinstance(types, list) else [types]
        if "integer" in types or "number" in types:
            low, high = node.get("minimum"), node.get("maximum")
            assert isinstance(low, int) and low >= -MAX_SAFE, f"{kind}{where}: no minimum"
            assert isinstance(high, int) and high <= MAX_SAFE, f"{kind}{where}: no maximum"
        if "const" in node or "enum" in node:
            values = node.get("enum", [node.get("const")])
            assert all(not isinstance(v, int) or abs(v) <= MAX_SAFE for v in values), where


IDENTITY_FIELDS = {
    "lease": ("owner", "accepted_by", "patch_author"),
    "classify-report": ("owner",),
}
RUNNER_FIELDS = {"lease": ("replay_host",), "decide-packet": ("local_runner_id", "clean_runner_id")}


def test_identity_and_runner_fields_use_the_shared_definitions() -> None:
    for kind, names in IDENTITY_FIELDS.items():
        for name in names:
            assert props(kind)[name]["$ref"] == "#/$defs/identity", (kind, name)
    for kind, names in RUNNER_FIELDS.items():
        for name in names:
            assert props(kind)[name]["$ref"] == "#/$defs/runnerId", (kind, name)
    identity_users = {k for k in KINDS if "identity" in schema(k).get("$defs", {})}
    assert identity_users == set(IDENTITY_FIELDS)


def _identity_pattern() -> str:
    pattern = schema("lease")["$defs"]["identity"]["pattern"]
    assert isinstance(pattern, str)
    return pattern


@given(st.text())
@example("bot\n")
@example("   ")
@example("\uff42ot")
def test_the_identity_pattern_is_the_core_rule(text: str) -> None:
    """One rule in two places: $defs/identity and flakecore.identity agree on every text."""
    from flakecore.identity import is_identity

    assert (re.search(_identity_pattern(), text) is not None) is is_identity(text)


def test_the_runner_id_pattern_is_the_core_grammar() -> None:
    from flakecore.identity import is_runner_id

    pattern = schema("lease")["$defs"]["runnerId"]["pattern"]
    local = "img:sha256:" + "a" * 64 + "+nonce:0123456789abcdef"
    for text in (
        local,
        "img:" + "b" * 64 + "+nonce:0123456789abcdef",
        "img:local-uncontainerized+nonce:0123456789abcdef",
        local.upper(),
        local + "\n",
        " " + local,
        local.replace("img", "\uff49mg"),
        "img:local\u2010uncontainerized+nonce:0123456789abcdef",
        "img:ubuntu:24.04+nonce:0123456789abcdef",
    ):
        assert (re.search(pattern, text) is not None) is is_runner_id(text), repr(text)
