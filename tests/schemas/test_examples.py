"""``schemas/examples``: realistic valid records, and invalid ones that each break a rule.

Valid examples come from running the library (so a change in what the core
emits shows up here); invalid ones are named for the rule they break.  Every
example is also run through ``flakecore validate`` as a subprocess, the way a
pipeline would.
"""

from __future__ import annotations

import base64
import datetime as dt
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import flakecore
from flakecore import validation
from flakecore.attestation import statement, statement_bytes
from flakecore.codes import TrustReason
from flakecore.digest import canonical_json_sha256
from flakecore.jsonio import load_object
from flakecore.policy import PolicySource
from flakecore.signing import verify_signed
from flakecore.timeutil import parse_rfc3339
from flakecore.trust import TrustedKey

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "schemas" / "examples"
VALID = sorted((EXAMPLES / "valid").iterdir())
INVALID = sorted((EXAMPLES / "invalid").iterdir())
LINE = re.compile(
    r"^(?P<file>.+?)(?::(?P<line>\d+))?: (?P<pointer>/\S*|\(root\)): (?P<message>.+)$"
)


def kind_for(path: Path) -> str:
    """The kind an example file is named for (the longest kind its name starts with)."""
    kinds = [k for k in validation.schema_names() if path.name.startswith(k + "-")]
    assert kinds, f"{path.name} does not start with a kind"
    return max(kinds, key=len)


def records(path: Path) -> list[dict[str, Any]]:
    data = path.read_bytes()
    if path.suffix == ".jsonl":
        return [
            load_object(line, source=path.name, line=i)
            for i, line in enumerate(data.splitlines(), 1)
        ]
    return [load_object(data, source=path.name)]


def flakecore_cli(*args: str) -> subprocess.CompletedProcess[str]:
    # -I: never import from the working directory, so the installed package answers.
    return subprocess.run(
        [sys.executable, "-I", "-m", "flakecore", *args],
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.parametrize("kind", validation.schema_names())
def test_every_kind_has_valid_and_invalid_examples(kind: str) -> None:
    assert any(kind_for(p) == kind for p in VALID)
    assert any(kind_for(p) == kind for p in INVALID)


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.name)
def test_valid_example(path: Path) -> None:
    kind = kind_for(path)
    for record in records(path):
        assert list(validation.iter_errors(record, kind)) == []
        assert validation.kind_of(record) in (kind, None)


@pytest.mark.parametrize("path", INVALID, ids=lambda p: p.name)
def test_invalid_example(path: Path) -> None:
    kind = kind_for(path)
    assert any(not validation.is_valid(record, kind) for record in records(path))


def test_valid_examples_through_the_cli() -> None:
    named = [p for p in VALID if all("format" in r for r in records(p))]
    out = flakecore_cli("validate", *map(str, named))
    assert (out.returncode, out.stdout) == (0, ""), out.stderr
    assert "0 invalid, 0 unusable" in out.stderr
    for path in sorted(set(VALID) - set(named)):  # no format field: the kind must be given
        out = flakecore_cli("validate", str(path))
        assert out.returncode == 1
        assert out.stdout.startswith(f"{path}") and ": /format: missing" in out.stdout
        out = flakecore_cli("validate", "--kind", kind_for(path), str(path))
        assert (out.returncode, out.stdout) == (0, ""), out.stderr


@pytest.mark.parametrize("path", INVALID, ids=lambda p: p.name)
def test_invalid_examples_through_the_cli(path: Path) -> None:
    args = ["--kind", kind_for(path)] if path.suffix == ".jsonl" else []  # lines carry no format
    out = flakecore_cli("validate", *args, str(path))
    assert out.returncode == 1, out.stderr
    problems = out.stdout.splitlines()
    assert problems
    for line in problems:
        match = LINE.match(line)
        assert match, line
        assert match["file"] == str(path)
        assert (match["line"] is not None) is (path.suffix == ".jsonl")


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("admit-packet-epoch-name.json", [": /claimed_epoch: "]),
        ("admit-packet-string-count.json", [": /base_misses: '2' is not of type 'integer'"]),
        (
            "decide-packet-string-boolean.json",
            [": /property_cohort_passed: 'false' is not of type 'boolean'"],
        ),
        (
            "classify-report-misspelt-field.json",
            [": /Owner: unknown field (the schema does not define it); did you mean 'owner'?"],
        ),
        (
            "classify-report-naive-expiry.json",
            [": /expires_at: '2026-12-10T00:00:00' does not match"],
        ),
        (
            "attempt-line-unknown-result.jsonl",
            [":2: /result: 'MISS' is not one of", ":3: /retry: unknown field"],
        ),
        ("lease-uppercase-digest.json", [": /pinned_sha256: ", ": /replay_host: "]),
        ("decision-accepted-reject.json", [": /code: 'ACCEPT_PREEXISTING' was expected"]),
    ],
)
def test_invalid_examples_name_their_fields(name: str, expected: list[str]) -> None:
    path = EXAMPLES / "invalid" / name
    args = ["--kind", "attempt-line"] if path.suffix == ".jsonl" else []
    out = flakecore_cli("validate", *args, str(path))
    for fragment in expected:
        assert any(fragment in line for line in out.stdout.splitlines()), (fragment, out.stdout)


def _example(name: str) -> dict[str, Any]:
    [record] = records(EXAMPLES / "valid" / name)
    return record


def test_valid_examples_are_what_the_library_emits() -> None:
    """Realistic, not hand-tuned: recompute the emitted examples from the example packets."""
    packet = _example("admit-packet-preexisting-flake.json")
    decision = _example("decision-admit-accept.json")
    decision.pop("input")
    assert flakecore.admit(packet).to_json() == decision
    assert flakecore.freeze_record(packet) == _example("freeze-record-preexisting-flake.json")

    sourced = _example("decision-admit-policy-from-base.json")
    sourced.pop("input")
    recorded = sourced["policy_source"]
    assert isinstance(recorded, dict)
    source = PolicySource(
        revision=recorded["revision"],
        path=recorded["path"],
        sha256=canonical_json_sha256({"attempt_cap": 5, "min_base_misses": 1, "max_lease_days": 7}),
        scored_tree_differs=True,
    )
    assert flakecore.admit(packet).with_policy_source(source).to_json() == sourced

    budget = _example("budget-packet-flake-candidate.json")
    row = _example("ledger-row-flake-candidate.json")
    today = dt.date.fromisoformat(str(row["expires_on"])) - flakecore.DEFAULT_POLICY.max_lease
    assert flakecore.ledger_row(budget, today=today) == row

    report = _example("classify-report-flake-with-lease.json")
    verdict = _example("decision-classify-flake.json")
    verdict.pop("input")
    policy_values = verdict["policy_values"]
    assert isinstance(policy_values, dict)
    now = parse_rfc3339(str(policy_values["now"]))
    assert flakecore.classify(report, now=now).to_json() == verdict


#: The public half of the throwaway key that signed ``signed-record-lease.json``
#: (flakecore.signing.sign_record over ``lease-flake.json``); the private half was discarded.
EXAMPLE_KEY = TrustedKey.parse(
    "example-ci", "ed25519:c10b8ec4ac6a8dbde229bc29b342f9761e9048b1cfe52dc2fa9f7048d86a85be"
)


def test_the_signed_example_is_a_real_signature_over_the_example_lease() -> None:
    lease = _example("lease-flake.json")
    envelope = (EXAMPLES / "valid" / "signed-record-lease.json").read_bytes()
    verdict = verify_signed(envelope, keys=[EXAMPLE_KEY], kind="lease", check=lambda r: [])
    assert verdict.reason is TrustReason.SIGNED, verdict
    assert verdict.record == lease
    payload = statement(lease, kind="lease")
    assert _example("record-statement-lease.json") == payload
    assert load_object(envelope)["payload"] == base64.b64encode(statement_bytes(payload)).decode()
