"""``[tool.flakecore.trust.keys]``: the one nested table, parsed strictly; flags recorded in the source."""

from __future__ import annotations

import pytest

from flakecore.digest import canonical_json_sha256
from flakecore.errors import UsageError
from flakecore.gate.config import parse_table
from flakecore.policy import EMPTY_TABLE_SHA256
from flakecore.trust import TrustedKey

PUB_A = "ed25519:" + "1a" * 32
PUB_B = "ed25519:" + "2b" * 32


def test_keys_parse_sorted_by_id() -> None:
    config = parse_table({"trust": {"keys": {"ci-clean": PUB_B, "ci-local": PUB_A}}})
    assert [k.keyid for k in config.trusted_keys] == ["ci-clean", "ci-local"]
    assert [str(k) for k in config.trusted_keys] == [PUB_B, PUB_A]
    assert config.trusted_keys[1] == TrustedKey(keyid="ci-local", public="1a" * 32)


def test_an_empty_trust_table_names_no_key() -> None:
    assert parse_table({"trust": {}}).trusted_keys == ()
    assert parse_table({"trust": {"keys": {}}}).trusted_keys == ()


BAD = [
    ("trust not a table", {"trust": "ci-local"}, r"\[tool.flakecore.trust\] must be a table"),
    ("unknown key in trust", {"trust": {"keys": {}, "require": True}}, "unknown key 'require'"),
    ("keys not a table", {"trust": {"keys": [PUB_A]}}, "keys must be a table"),
    ("a key id with a space", {"trust": {"keys": {"ci local": PUB_A}}}, "key id"),
    ("a key id starting with a dot", {"trust": {"keys": {".ci": PUB_A}}}, "key id"),
    ("a key id of 65 characters", {"trust": {"keys": {"k" * 65: PUB_A}}}, "key id"),
    ("a non-ASCII key id", {"trust": {"keys": {"c\u0456": PUB_A}}}, "key id"),
    ("no key type", {"trust": {"keys": {"ci": "1a" * 32}}}, "ed25519:<64 lowercase hex>"),
    ("another key type", {"trust": {"keys": {"ci": "rsa:" + "1a" * 32}}}, "ed25519:"),
    ("upper-case hex", {"trust": {"keys": {"ci": "ed25519:" + "1A" * 32}}}, "ed25519:"),
    ("63 hex digits", {"trust": {"keys": {"ci": PUB_A[:-1]}}}, "ed25519:"),
    ("a trailing newline", {"trust": {"keys": {"ci": PUB_A + "\n"}}}, "ed25519:"),
    ("a key as a table", {"trust": {"keys": {"ci": {"public": PUB_A}}}}, "ed25519:"),
    ("one key under two ids", {"trust": {"keys": {"a": PUB_A, "b": PUB_A}}}, "one public key"),
    ("another nested table", {"policy": {"attempt_cap": 5}}, "unknown key 'policy'"),
]


@pytest.mark.parametrize(("table", "match"), [pytest.param(t, m, id=i) for i, t, m in BAD])
def test_bad_trust_tables_are_usage_errors(table: dict[str, object], match: str) -> None:
    with pytest.raises(UsageError, match=match):
        parse_table(table)


def test_the_source_records_the_tables_canonical_digest() -> None:
    table = {"max_lease_days": 7, "attempt_cap": 4}
    assert parse_table(table).source.sha256 == canonical_json_sha256(table)
    assert parse_table(dict(reversed(table.items()))).source.sha256 == canonical_json_sha256(table)
    assert parse_table({}).source.sha256 == EMPTY_TABLE_SHA256 != canonical_json_sha256(table)


def test_flags_are_named_in_the_source() -> None:
    config = parse_table({"attempt_cap": 4}, path="pyproject.toml", revision="1" * 40)
    flagged = config.with_policy({"max_lease_days": 3}).with_policy({"attempt_cap": 2})
    assert flagged.policy.attempt_cap == 2 and flagged.policy.max_lease_days == 3
    assert flagged.source.overrides == ("attempt_cap", "max_lease_days")
    assert flagged.source.revision == "1" * 40
    assert flagged.source.sha256 == config.source.sha256
    assert config.with_policy({}).source.overrides == ()
