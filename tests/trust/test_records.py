"""One reader for stored records: base-identical, or signed by a trusted key, or refused with why."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gate.support import NOW, TEST_ID, lease_record

from flakecore.codes import TrustReason
from flakecore.gate.basetrust import read_trusted_record
from flakecore.lease import lease_problems
from flakecore.signing import RecordSigner, sign_record
from flakecore.trust import TrustedKey, TrustVerdict
from trust.support import LEASE_PATH, Checkout, lease_bytes, lease_check, make_checkout, make_signer

ADDED = ".flakecore/leases/" + "0" * 64 + ".json"


@pytest.fixture
def checkout(tmp_path: Path) -> Checkout:
    return make_checkout(tmp_path, {LEASE_PATH: lease_bytes(), "src/x.py": ""})


@pytest.fixture
def ci(tmp_path: Path, checkout: Checkout) -> RecordSigner:
    return make_signer(tmp_path / "keys", "ci-local", checkout.top)


def read(checkout: Checkout, path: str, keys: list[TrustedKey]) -> TrustVerdict:
    return read_trusted_record(
        checkout.top, checkout.base, path, keys=keys, kind="lease", check=lease_check
    )


def envelope_bytes(signer: RecordSigner, **changes: object) -> bytes:
    return json.dumps(sign_record(lease_record(**changes), kind="lease", signer=signer)).encode()


def test_an_unsigned_lease_the_diff_adds_is_refused(checkout: Checkout, ci: RecordSigner) -> None:
    checkout.write(ADDED, lease_bytes())
    checkout.commit("a hand-written lease")
    for keys in ([], [ci.key]):
        verdict = read(checkout, ADDED, keys)
        assert verdict.reason is TrustReason.NOT_IN_BASE and verdict.record is None
        assert verdict.detail.endswith("and it is not signed")


def test_honest_twin_the_same_lease_in_base_counts(checkout: Checkout) -> None:
    verdict = read(checkout, LEASE_PATH, [])
    assert verdict.reason is TrustReason.BASE_IDENTICAL
    assert verdict.record == lease_record()


def test_an_unsigned_change_to_a_base_lease_is_refused(
    checkout: Checkout, ci: RecordSigner
) -> None:
    checkout.write(LEASE_PATH, lease_bytes(owner="someone-else"))
    verdict = read(checkout, LEASE_PATH, [ci.key])
    assert verdict.reason is TrustReason.CHANGED_SINCE_BASE and "not signed" in verdict.detail


def test_a_signed_lease_the_diff_adds_counts(checkout: Checkout, ci: RecordSigner) -> None:
    checkout.write(ADDED, envelope_bytes(ci))
    checkout.commit("a lease CI signed")
    verdict = read(checkout, ADDED, [ci.key])
    assert verdict.reason is TrustReason.SIGNED and verdict.record == lease_record()
    assert read(checkout, ADDED, []).reason is TrustReason.NO_TRUSTED_KEYS


def test_a_lease_the_patch_signed_itself_is_refused(
    checkout: Checkout, ci: RecordSigner, tmp_path: Path
) -> None:
    agent = make_signer(tmp_path / "agent-keys", "agent", checkout.top)
    checkout.write(ADDED, envelope_bytes(agent))
    assert read(checkout, ADDED, [ci.key]).reason is TrustReason.UNTRUSTED_KEY


def test_a_base_identical_envelope_opens_without_a_key(tmp_path: Path) -> None:
    """Review vouched for it; its record is still the one the reader checks."""
    keys_dir = tmp_path / "keys"
    signer = make_signer(keys_dir, "retired", tmp_path / "repo")
    checkout = make_checkout(tmp_path, {LEASE_PATH: envelope_bytes(signer)})
    verdict = read(checkout, LEASE_PATH, [])
    assert verdict.reason is TrustReason.BASE_IDENTICAL and verdict.record == lease_record()


def test_a_base_identical_lease_is_still_checked(checkout: Checkout) -> None:
    later = NOW.replace(year=NOW.year + 1)
    verdict = read_trusted_record(
        checkout.top,
        checkout.base,
        LEASE_PATH,
        keys=[],
        kind="lease",
        check=lambda r: lease_problems(r, now=later),
    )
    assert verdict.reason is TrustReason.INVALID_RECORD and "expires_at" in verdict.detail


def test_a_signed_lease_behind_a_symlink_is_refused(checkout: Checkout, ci: RecordSigner) -> None:
    outside = checkout.write("docs/signed.json", envelope_bytes(ci))
    link = checkout.top / ADDED
    link.symlink_to(outside)
    assert read(checkout, ADDED, [ci.key]).reason is TrustReason.SYMLINK


def test_a_base_identical_file_that_is_not_a_record(tmp_path: Path) -> None:
    checkout = make_checkout(tmp_path, {LEASE_PATH: "not json\n", "b.json": "[1]\n"})
    assert read(checkout, LEASE_PATH, []).reason is TrustReason.INVALID_RECORD
    assert read(checkout, "b.json", []).reason is TrustReason.INVALID_RECORD


def test_the_record_is_the_bytes_that_were_judged(checkout: Checkout) -> None:
    verdict = read(checkout, LEASE_PATH, [])
    assert verdict.data == lease_bytes()
    assert verdict.record is not None and verdict.record["test_id"] == TEST_ID
