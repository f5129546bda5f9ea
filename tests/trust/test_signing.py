"""Signed records with real ed25519 keys: every way a signature must fail, and the honest accept."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import pytest
from gate.support import NOW, TEST_ID, lease_record
from hypothesis import given, settings
from hypothesis import strategies as st
from securesystemslib.dsse import Envelope
from securesystemslib.signer import CryptoSigner

from flakecore.attestation import PAYLOAD_TYPE, PREDICATE_TYPE, statement, statement_bytes
from flakecore.codes import TrustReason
from flakecore.errors import InputError, UsageError
from flakecore.lease import lease_problems
from flakecore.signing import RecordSigner, load_signer, sign_record, verify_signed
from flakecore.trust import TrustedKey, TrustVerdict, require_other_signer
from trust.support import lease_check, make_signer

LEASE = lease_record()


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> dict[str, RecordSigner]:
    """Three real keys: two CI keys the configuration trusts, one the patch author holds."""
    root = tmp_path_factory.mktemp("signing")
    checkout = root / "repo"
    checkout.mkdir()
    return {k: make_signer(root / "keys", k, checkout) for k in ("ci-local", "ci-clean", "agent")}


def trusted(keys: dict[str, RecordSigner]) -> list[TrustedKey]:
    return [keys["ci-local"].key, keys["ci-clean"].key]


def dumps(value: object) -> bytes:
    return json.dumps(value, indent=2).encode()


def verify(
    data: bytes,
    keys: list[TrustedKey],
    *,
    kind: str = "lease",
    check: Callable[[Any], list[str]] = lease_check,
    test_id: str | None = None,
) -> TrustVerdict:
    return verify_signed(
        data, keys=keys, kind=kind, check=check, test_id=test_id, path="lease.json"
    )


def sign_payload(signer: RecordSigner, payload: bytes, payload_type: str = PAYLOAD_TYPE) -> bytes:
    """Sign any bytes with securesystemslib's DSSE: a well-signed envelope around a bad payload."""
    envelope = Envelope(payload, payload_type, {})
    envelope.sign(signer.signer)  # type: ignore[arg-type]
    return dumps(envelope.to_dict())


def test_a_signed_lease_counts(keys: dict[str, RecordSigner]) -> None:
    envelope = sign_record(LEASE, kind="lease", signer=keys["ci-local"])
    verdict = verify(dumps(envelope), trusted(keys))
    assert verdict.reason is TrustReason.SIGNED and verdict.trusted
    assert verdict.record == LEASE
    assert verdict.signers == (keys["ci-local"].key,)
    assert set(envelope) == {"payload", "payloadType", "signatures"}
    assert envelope["payloadType"] == "application/vnd.in-toto+json"
    payload = json.loads(base64.b64decode(str(envelope["payload"])))
    assert payload["_type"] == "https://in-toto.io/Statement/v1"
    assert payload["predicateType"] == PREDICATE_TYPE
    assert payload["subject"][0]["name"] == TEST_ID
    names = [s["name"] for s in payload["subject"][1:]]
    assert names == ["/patch_hash", "/pinned_sha256"]


def test_a_wrong_key_under_the_trusted_id_does_not_verify(keys: dict[str, RecordSigner]) -> None:
    """The configuration lists ci-local with another public key: the signature fails."""
    envelope = dumps(sign_record(LEASE, kind="lease", signer=keys["ci-local"]))
    impostor = TrustedKey(keyid="ci-local", public=keys["agent"].key.public)
    verdict = verify(envelope, [impostor])
    assert verdict.reason is TrustReason.BAD_SIGNATURE and not verdict.trusted


def test_a_tampered_payload_does_not_verify(keys: dict[str, RecordSigner]) -> None:
    envelope = sign_record(LEASE, kind="lease", signer=keys["ci-local"])
    payload = json.loads(base64.b64decode(str(envelope["payload"])))
    payload["predicate"]["expires_at"] = "2099-01-01T00:00:00Z"
    envelope["payload"] = base64.b64encode(statement_bytes(payload)).decode()
    verdict = verify(dumps(envelope), trusted(keys))
    assert verdict.reason is TrustReason.BAD_SIGNATURE


def test_a_tampered_signature_does_not_verify(keys: dict[str, RecordSigner]) -> None:
    envelope = sign_record(LEASE, kind="lease", signer=keys["ci-local"])
    [signature] = cast(list[dict[str, str]], envelope["signatures"])
    raw = bytearray(base64.b64decode(signature["sig"]))
    raw[0] ^= 1
    signature["sig"] = base64.b64encode(bytes(raw)).decode()
    assert verify(dumps(envelope), trusted(keys)).reason is TrustReason.BAD_SIGNATURE


def test_a_record_re_signed_by_an_untrusted_key(keys: dict[str, RecordSigner]) -> None:
    """The patch author signs its own lease: no key the trusted configuration names."""
    forged = lease_record(expires_at="2026-12-05T12:00:00Z", owner="agent")
    verdict = verify(dumps(sign_record(forged, kind="lease", signer=keys["agent"])), trusted(keys))
    assert verdict.reason is TrustReason.UNTRUSTED_KEY and "agent" in verdict.detail


def test_an_untrusted_key_claiming_a_trusted_id(
    keys: dict[str, RecordSigner], tmp_path: Path
) -> None:
    pem = tmp_path / "agent-as-ci.pem"
    pem.write_bytes(CryptoSigner.generate_ed25519().private_bytes)
    liar = load_signer(keyid="ci-local", checkout=tmp_path / "repo", key_file=str(pem))
    verdict = verify(dumps(sign_record(LEASE, kind="lease", signer=liar)), trusted(keys))
    assert verdict.reason is TrustReason.BAD_SIGNATURE


def test_an_extra_untrusted_signature_is_ignored(keys: dict[str, RecordSigner]) -> None:
    mine = sign_record(LEASE, kind="lease", signer=keys["ci-local"])
    theirs = sign_record(LEASE, kind="lease", signer=keys["agent"])
    mine["signatures"] = [*theirs["signatures"], *mine["signatures"]]  # type: ignore[misc]
    verdict = verify(dumps(mine), trusted(keys))
    assert verdict.reason is TrustReason.SIGNED and verdict.signers == (keys["ci-local"].key,)


def test_a_failing_signature_under_a_trusted_id_refuses_even_beside_a_good_one(
    keys: dict[str, RecordSigner],
) -> None:
    good = sign_record(LEASE, kind="lease", signer=keys["ci-local"])
    other = sign_record(lease_record(owner="x"), kind="lease", signer=keys["ci-clean"])
    good["signatures"] = [*good["signatures"], *other["signatures"]]  # type: ignore[misc]
    assert verify(dumps(good), trusted(keys)).reason is TrustReason.BAD_SIGNATURE


def test_two_trusted_signers(keys: dict[str, RecordSigner]) -> None:
    one = sign_record(LEASE, kind="lease", signer=keys["ci-local"])
    two = sign_record(LEASE, kind="lease", signer=keys["ci-clean"])
    one["signatures"] = [*one["signatures"], *two["signatures"]]  # type: ignore[misc]
    verdict = verify(dumps(one), trusted(keys))
    assert {k.keyid for k in verdict.signers} == {"ci-local", "ci-clean"}


def test_no_trusted_keys_means_no_signed_record_counts(keys: dict[str, RecordSigner]) -> None:
    envelope = dumps(sign_record(LEASE, kind="lease", signer=keys["ci-local"]))
    assert verify(envelope, []).reason is TrustReason.NO_TRUSTED_KEYS


def _envelope(keys: dict[str, RecordSigner]) -> dict[str, Any]:
    return sign_record(LEASE, kind="lease", signer=keys["ci-local"])


MALFORMED: list[tuple[str, Callable[[dict[str, Any]], object], TrustReason]] = [
    ("not an object", lambda e: [e], TrustReason.MALFORMED_ENVELOPE),
    ("an unknown field", lambda e: {**e, "extra": 1}, TrustReason.MALFORMED_ENVELOPE),
    (
        "no payloadType",
        lambda e: {k: v for k, v in e.items() if k != "payloadType"},
        TrustReason.MALFORMED_ENVELOPE,
    ),
    (
        "URL-safe base64",
        lambda e: {**e, "payload": e["payload"] + "-_"},
        TrustReason.MALFORMED_ENVELOPE,
    ),
    (
        "padding dropped",
        lambda e: {**e, "payload": e["payload"].rstrip("=") + "A"},
        TrustReason.MALFORMED_ENVELOPE,
    ),
    ("no signatures", lambda e: {**e, "signatures": []}, TrustReason.MALFORMED_ENVELOPE),
    (
        "a key id twice",
        lambda e: {**e, "signatures": e["signatures"] * 2},
        TrustReason.MALFORMED_ENVELOPE,
    ),
    (
        "a signature without keyid",
        lambda e: {**e, "signatures": [{"sig": e["signatures"][0]["sig"]}]},
        TrustReason.MALFORMED_ENVELOPE,
    ),
    (
        "17 signatures",
        lambda e: {**e, "signatures": [{"keyid": f"k{i}", "sig": "AAAA"} for i in range(17)]},
        TrustReason.MALFORMED_ENVELOPE,
    ),
    (
        "payloadType application/json",
        lambda e: {**e, "payloadType": "application/json"},
        TrustReason.WRONG_PAYLOAD_TYPE,
    ),
]


@pytest.mark.parametrize(("mutate", "reason"), [pytest.param(m, r, id=i) for i, m, r in MALFORMED])
def test_malformed_envelopes(
    keys: dict[str, RecordSigner], mutate: Callable[[dict[str, Any]], object], reason: TrustReason
) -> None:
    assert verify(dumps(mutate(_envelope(keys))), trusted(keys)).reason is reason


@pytest.mark.parametrize(
    "data", [b"", b"not json", b'{"payload": "e30=", "payload": "e30="}', b"\xef\xbb\xbf{}"]
)
def test_bytes_that_are_not_an_envelope(keys: dict[str, RecordSigner], data: bytes) -> None:
    assert verify(data, trusted(keys)).reason is TrustReason.MALFORMED_ENVELOPE


def _statement(**changes: object) -> dict[str, Any]:
    value = statement(LEASE, kind="lease")
    value.update(changes)
    return value


BAD_STATEMENTS: list[tuple[str, bytes, TrustReason]] = [
    ("not JSON", b"{", TrustReason.BAD_STATEMENT),
    ("a duplicate key", b'{"_type": 1, "_type": 2}', TrustReason.BAD_STATEMENT),
    (
        "Statement v0.1",
        statement_bytes(_statement(_type="https://in-toto.io/Statement/v0.1")),
        TrustReason.BAD_STATEMENT,
    ),
    ("an extra field", statement_bytes(_statement(predicateVersion=1)), TrustReason.BAD_STATEMENT),
    ("an empty subject", statement_bytes(_statement(subject=[])), TrustReason.BAD_STATEMENT),
    (
        "SLSA's predicate type",
        statement_bytes(_statement(predicateType="https://slsa.dev/provenance/v1")),
        TrustReason.WRONG_PREDICATE_TYPE,
    ),
    (
        "a subject without the evidence digests",
        statement_bytes(_statement(subject=_statement()["subject"][:1])),
        TrustReason.SUBJECT_MISMATCH,
    ),
    (
        "a subject for another test",
        statement_bytes(
            _statement(
                subject=[
                    {**_statement()["subject"][0], "name": "other::test"},
                    *_statement()["subject"][1:],
                ]
            )
        ),
        TrustReason.SUBJECT_MISMATCH,
    ),
    (
        "another record's digest",
        statement_bytes(
            _statement(
                subject=[
                    {**_statement()["subject"][0], "digest": {"sha256": "0" * 64}},
                    *_statement()["subject"][1:],
                ]
            )
        ),
        TrustReason.SUBJECT_MISMATCH,
    ),
    (
        "a predicate that is not an object",
        statement_bytes(_statement(predicate=[LEASE])),
        TrustReason.INVALID_RECORD,
    ),
    (
        "a predicate of another kind",
        statement_bytes(_statement(predicate={**LEASE, "format": "flakecore.run-record"})),
        TrustReason.INVALID_RECORD,
    ),
    (
        "a predicate whose format is a list",
        statement_bytes(_statement(predicate={**LEASE, "format": ["flakecore.lease"]})),
        TrustReason.INVALID_RECORD,
    ),
]


@pytest.mark.parametrize(
    ("payload", "reason"), [pytest.param(p, r, id=i) for i, p, r in BAD_STATEMENTS]
)
def test_well_signed_bad_statements(
    keys: dict[str, RecordSigner], payload: bytes, reason: TrustReason
) -> None:
    """The signature verifies; the Statement inside is wrong, and is refused for what it is."""
    verdict = verify(sign_payload(keys["ci-local"], payload), trusted(keys))
    assert verdict.reason is reason, verdict


def test_a_well_signed_wrong_payload_type(keys: dict[str, RecordSigner]) -> None:
    envelope = sign_payload(keys["ci-local"], statement_bytes(_statement()), "application/json")
    assert verify(envelope, trusted(keys)).reason is TrustReason.WRONG_PAYLOAD_TYPE


def test_a_signed_record_the_readers_check_refuses(keys: dict[str, RecordSigner]) -> None:
    """A signature vouches for bytes, not for time: an expired lease is still invalid."""
    envelope = dumps(sign_record(LEASE, kind="lease", signer=keys["ci-local"]))
    later = NOW.replace(year=NOW.year + 1)
    verdict = verify(envelope, trusted(keys), check=lambda r: lease_problems(r, now=later))
    assert verdict.reason is TrustReason.INVALID_RECORD and "expires_at" in verdict.detail


def test_a_signed_record_of_another_kind(keys: dict[str, RecordSigner]) -> None:
    run = {"format": "flakecore.run-record", "format_version": "1.0", "test_id": TEST_ID}
    envelope = dumps(sign_record(run, kind="run-record", signer=keys["ci-local"]))
    assert verify(envelope, trusted(keys)).reason is TrustReason.INVALID_RECORD
    verdict = verify(envelope, trusted(keys), kind="run-record", check=lambda r: [])
    assert verdict.reason is TrustReason.SIGNED


def test_the_reader_names_the_test(keys: dict[str, RecordSigner]) -> None:
    envelope = dumps(sign_record(LEASE, kind="lease", signer=keys["ci-local"]))
    assert verify(envelope, trusted(keys), test_id=TEST_ID).reason is TrustReason.SIGNED
    assert (
        verify(envelope, trusted(keys), test_id="other::t").reason is TrustReason.SUBJECT_MISMATCH
    )


def test_a_record_without_its_own_test_id_is_signed_for_one(keys: dict[str, RecordSigner]) -> None:
    freeze = {
        "format": "flakecore.freeze-record",
        "format_version": "1.0",
        "property_sha256": "a" * 64,
    }
    with pytest.raises(UsageError, match="needs a test id"):
        sign_record(freeze, kind="freeze-record", signer=keys["ci-local"])
    envelope = dumps(
        sign_record(freeze, kind="freeze-record", signer=keys["ci-local"], test_id=TEST_ID)
    )
    ok = verify(envelope, trusted(keys), kind="freeze-record", check=lambda r: [], test_id=TEST_ID)
    assert ok.reason is TrustReason.SIGNED
    moved = verify(
        envelope, trusted(keys), kind="freeze-record", check=lambda r: [], test_id="x::y"
    )
    assert moved.reason is TrustReason.SUBJECT_MISMATCH


@pytest.mark.parametrize(
    ("record", "kind", "match"),
    [
        pytest.param(
            {**LEASE, "format": "flakecore.ledger-row"},
            "lease",
            "expected 'flakecore.lease'",
            id="wrong format",
        ),
        pytest.param({**LEASE, "format_version": "2.0"}, "lease", "format_version", id="version 2"),
        pytest.param(
            {**LEASE, "format": "flakecore.decision"}, "decision", "not a kind", id="not signable"
        ),
        pytest.param({**LEASE, "test_id": " "}, "lease", "blank", id="blank test id"),
    ],
)
def test_what_cannot_be_signed(
    keys: dict[str, RecordSigner], record: dict[str, object], kind: str, match: str
) -> None:
    with pytest.raises(UsageError, match=match):
        sign_record(record, kind=kind, signer=keys["ci-local"])
    with pytest.raises(UsageError, match="for test"):
        sign_record(LEASE, kind="lease", signer=keys["ci-local"], test_id="other::t")


def test_a_key_file_inside_the_checkout_is_refused(tmp_path: Path) -> None:
    checkout = tmp_path / "repo"
    (checkout / ".ci").mkdir(parents=True)
    inner = checkout / ".ci" / "key.pem"
    inner.write_bytes(CryptoSigner.generate_ed25519().private_bytes)
    with pytest.raises(UsageError, match="inside the scored checkout"):
        load_signer(keyid="ci-local", checkout=checkout, key_file=str(inner))
    outside_link = tmp_path / "key.pem"
    outside_link.symlink_to(inner)
    with pytest.raises(UsageError, match="inside the scored checkout"):
        load_signer(keyid="ci-local", checkout=checkout, key_file=str(outside_link))
    real = tmp_path / "real.pem"
    inner.rename(real)
    inner.symlink_to(real)
    with pytest.raises(UsageError, match="inside the scored checkout"):
        load_signer(keyid="ci-local", checkout=checkout, key_file=str(inner))
    assert (
        load_signer(keyid="ci-local", checkout=checkout, key_file=str(real)).key.keyid == "ci-local"
    )


def test_a_key_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    signer = CryptoSigner.generate_ed25519()
    monkeypatch.setenv("FLAKECORE_SIGNING_KEY", signer.private_bytes.decode())
    loaded = load_signer(keyid="ci-local", checkout=tmp_path, key_env="FLAKECORE_SIGNING_KEY")
    assert loaded.key.public == signer.public_key.keyval["public"]
    envelope = dumps(sign_record(LEASE, kind="lease", signer=loaded))
    assert verify(envelope, [loaded.key]).reason is TrustReason.SIGNED
    monkeypatch.setenv("FLAKECORE_SIGNING_KEY", " ")
    with pytest.raises(UsageError, match="holds no signing key"):
        load_signer(keyid="ci-local", checkout=tmp_path, key_env="FLAKECORE_SIGNING_KEY")
    monkeypatch.delenv("FLAKECORE_SIGNING_KEY")
    with pytest.raises(UsageError, match="holds no signing key"):
        load_signer(keyid="ci-local", checkout=tmp_path, key_env="FLAKECORE_SIGNING_KEY")


def test_what_is_not_a_signing_key(tmp_path: Path) -> None:
    checkout = tmp_path / "repo"
    pem = tmp_path / "k.pem"
    cases = {
        "not PEM": b"ed25519:" + b"1a" * 32,
        "an ECDSA key": CryptoSigner.generate_ecdsa().private_bytes,
    }
    for what, data in cases.items():
        pem.write_bytes(data)
        with pytest.raises(InputError) as caught:
            load_signer(keyid="ci", checkout=checkout, key_file=str(pem))
        assert str(pem) in str(caught.value), what
    with pytest.raises(InputError, match="no such file"):
        load_signer(keyid="ci", checkout=checkout, key_file=str(tmp_path / "missing.pem"))
    with pytest.raises(UsageError, match="key id"):
        load_signer(keyid="ci key", checkout=checkout, key_file=str(pem))
    with pytest.raises(UsageError, match="exactly one"):
        load_signer(keyid="ci", checkout=checkout)
    with pytest.raises(UsageError, match="exactly one"):
        load_signer(keyid="ci", checkout=checkout, key_file=str(pem), key_env="X")


def test_an_encrypted_key_is_refused(tmp_path: Path) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    pem = tmp_path / "locked.pem"
    pem.write_bytes(
        Ed25519PrivateKey.generate().private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"pass"),
        )
    )
    with pytest.raises(InputError, match="unencrypted PEM"):
        load_signer(keyid="ci", checkout=tmp_path / "repo", key_file=str(pem))


def _signed_by(keys: dict[str, RecordSigner], *names: str) -> TrustVerdict:
    envelope = sign_record(LEASE, kind="lease", signer=keys[names[0]])
    for name in names[1:]:
        more = sign_record(LEASE, kind="lease", signer=keys[name])
        envelope["signatures"] = [*envelope["signatures"], *more["signatures"]]  # type: ignore[misc]
    return verify(dumps(envelope), trusted(keys))


def test_a_clean_runner_is_a_different_key(keys: dict[str, RecordSigner]) -> None:
    local, clean = _signed_by(keys, "ci-local"), _signed_by(keys, "ci-clean")
    assert require_other_signer(clean, other_than=local) is clean
    both = _signed_by(keys, "ci-local", "ci-clean")
    assert require_other_signer(both, other_than=local) is both
    same = require_other_signer(_signed_by(keys, "ci-local"), other_than=local)
    assert same.reason is TrustReason.SAME_SIGNER and "ci-local" in same.detail
    assert require_other_signer(clean, other_than=both).reason is TrustReason.SAME_SIGNER


def test_one_key_under_two_ids_is_one_runner(keys: dict[str, RecordSigner]) -> None:
    local = _signed_by(keys, "ci-local")
    alias = TrustedKey(keyid="ci-local-2", public=keys["ci-local"].key.public)
    clean = TrustVerdict(path="clean.json", reason=TrustReason.SIGNED, detail="", signers=(alias,))
    assert require_other_signer(clean, other_than=local).reason is TrustReason.SAME_SIGNER


def test_a_clean_run_that_is_not_signed_is_not_a_different_key(
    keys: dict[str, RecordSigner],
) -> None:
    local = _signed_by(keys, "ci-local")
    base = TrustVerdict(path="clean.json", reason=TrustReason.BASE_IDENTICAL, detail="")
    assert require_other_signer(base, other_than=local).reason is TrustReason.NOT_SIGNED
    clean = _signed_by(keys, "ci-clean")
    assert require_other_signer(clean, other_than=base).reason is TrustReason.NOT_SIGNED
    refused = verify(b"{}", trusted(keys))
    assert require_other_signer(refused, other_than=local) is refused


@settings(max_examples=150)
@given(position=st.integers(min_value=0), byte=st.integers(min_value=0, max_value=255))
def test_no_single_byte_change_yields_another_trusted_record(position: int, byte: int) -> None:
    """Invariant: any one-byte edit of a signed lease is refused, or still yields the same lease."""
    data = bytearray(SIGNED_FOR_FUZZ)
    data[position % len(data)] = byte
    verdict = verify(bytes(data), [FUZZ_SIGNER.key])
    assert not verdict.trusted or verdict.record == LEASE


FUZZ_SIGNER = RecordSigner(
    key=TrustedKey(
        keyid="fuzz",
        public=(_s := CryptoSigner.generate_ed25519("fuzz")).public_key.keyval["public"],
    ),
    signer=_s,
)
SIGNED_FOR_FUZZ = dumps(sign_record(LEASE, kind="lease", signer=FUZZ_SIGNER))


def test_the_core_imports_and_refuses_clearly_without_securesystemslib() -> None:
    """Without the sign extra: everything imports, nothing of it loads, a signing call says why."""
    code = """
import sys
sys.modules["securesystemslib"] = None
sys.modules["cryptography"] = None
import flakecore, flakecore.attestation, flakecore.signing, flakecore.trust
import flakecore.gate.basetrust, flakecore.gate.policy_source
from flakecore.errors import MissingExtra
from flakecore.signing import load_signer, verify_signed
from flakecore.trust import TrustedKey
assert not any(m.startswith(("securesystemslib", "cryptography")) and sys.modules[m] for m in sys.modules)
try:
    load_signer(keyid="ci", checkout="/nonexistent", key_env="PATH")
except MissingExtra as exc:
    print("load:", exc)
key = TrustedKey(keyid="ci", public="1a" * 32)
envelope = b'{"payload": "e30=", "payloadType": "application/vnd.in-toto+json", "signatures": [{"keyid": "ci", "sig": "AAAA"}]}'
try:
    verify_signed(envelope, keys=[key], kind="lease", check=lambda r: [])
except MissingExtra as exc:
    print("verify:", exc.extra)
print(verify_signed(envelope, keys=[], kind="lease", check=lambda r: []).reason.value)
"""
    done = subprocess.run(
        [sys.executable, "-I", "-c", code], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "load: signing and verifying records needs the optional 'sign' extra "
        "(securesystemslib is not installed): pip install 'flakecore[sign]'",
        "verify: sign",
        "NO_TRUSTED_KEYS",
    ]
