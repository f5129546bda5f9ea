"""Base-only trust on real repositories: a record counts only as base's own bytes at base's path."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from flakecore.codes import TrustReason
from flakecore.errors import GitError, InputError, UsageError
from flakecore.gate.basetrust import trusted_by_base
from trust.support import LEASE_PATH, Checkout, lease_bytes, make_checkout

LEASE = lease_bytes()


@pytest.fixture
def checkout(tmp_path: Path) -> Checkout:
    """Base holds a reviewed lease; the feature branch starts identical."""
    return make_checkout(tmp_path, {LEASE_PATH: LEASE, "docs/copy.json": LEASE, "src/x.py": ""})


def test_a_lease_base_holds_byte_for_byte_counts(checkout: Checkout) -> None:
    checkout.write("src/x.py", "X = 1\n")
    checkout.commit("unrelated change")
    verdict = trusted_by_base(checkout.top, checkout.base, LEASE_PATH)
    assert (verdict.reason, verdict.trusted, verdict.data) == (
        TrustReason.BASE_IDENTICAL,
        True,
        LEASE,
    )
    assert checkout.base[:12] in verdict.detail


def test_a_lease_the_diff_adds_is_refused_with_that_reason(checkout: Checkout) -> None:
    path = ".flakecore/leases/" + "0" * 64 + ".json"
    checkout.write(path, LEASE)
    checkout.commit("a lease written by the patch")
    verdict = trusted_by_base(checkout.top, checkout.base, path)
    assert (verdict.reason, verdict.trusted, verdict.data) == (TrustReason.NOT_IN_BASE, False, None)
    assert "adds it" in verdict.detail


@pytest.mark.parametrize(
    "changed",
    [
        pytest.param(lease_bytes(owner="someone-else"), id="another owner"),
        pytest.param(LEASE.replace(b"  ", b"    "), id="same record, other whitespace"),
        pytest.param(LEASE + b"\n", id="one more newline"),
    ],
)
def test_a_lease_the_diff_changes_is_refused(checkout: Checkout, changed: bytes) -> None:
    checkout.write(LEASE_PATH, changed)
    verdict = trusted_by_base(checkout.top, checkout.base, LEASE_PATH)
    assert verdict.reason is TrustReason.CHANGED_SINCE_BASE and not verdict.trusted
    assert "changed it" in verdict.detail


def test_a_lease_directory_replaced_by_a_symlink_is_not_the_same_path(checkout: Checkout) -> None:
    """The issue's attack: ``.flakecore/leases`` committed as a link to another folder."""
    elsewhere = checkout.top / "docs" / "leases"
    elsewhere.mkdir()
    (elsewhere / Path(LEASE_PATH).name).write_bytes(LEASE)
    leases = checkout.top / ".flakecore" / "leases"
    (leases / Path(LEASE_PATH).name).unlink()
    leases.rmdir()
    leases.symlink_to("../docs/leases")
    checkout.commit("move the leases")
    verdict = trusted_by_base(checkout.top, checkout.base, LEASE_PATH)
    assert verdict.reason is TrustReason.SYMLINK and ".flakecore/leases" in verdict.detail


def test_a_lease_file_that_is_a_symlink_to_base_identical_bytes(checkout: Checkout) -> None:
    target = checkout.top / LEASE_PATH
    target.unlink()
    target.symlink_to("../../docs/copy.json")
    verdict = trusted_by_base(checkout.top, checkout.base, LEASE_PATH)
    assert verdict.reason is TrustReason.SYMLINK


def test_a_path_that_is_a_symlink_in_base_is_refused(tmp_path: Path) -> None:
    checkout = make_checkout(tmp_path, {"docs/copy.json": LEASE})
    link = checkout.top / LEASE_PATH
    link.parent.mkdir(parents=True)
    checkout.git("checkout", "-q", "main")
    link.symlink_to("../../docs/copy.json")
    checkout.commit("a linked lease in base")
    checkout.git("checkout", "-q", "feature")
    checkout.git("reset", "-q", "--hard", "main")
    link.unlink()
    link.write_bytes(b"../../docs/copy.json")  # the link's own bytes, as a regular file
    verdict = trusted_by_base(checkout.top, checkout.base, LEASE_PATH)
    assert verdict.reason is TrustReason.SYMLINK and "in base" in verdict.detail


def test_a_gitlink_in_base_is_not_a_file(checkout: Checkout) -> None:
    checkout.git("checkout", "-q", "main")
    checkout.git("update-index", "--add", "--cacheinfo", f"160000,{checkout.base},vendor/x.json")
    checkout.git("commit", "-q", "-m", "a submodule where a record would be")
    checkout.git("checkout", "-q", "feature")
    checkout.write("vendor/x.json", LEASE)
    verdict = trusted_by_base(checkout.top, checkout.base, "vendor/x.json")
    assert verdict.reason is TrustReason.NOT_A_FILE and "gitlink" in verdict.detail


def test_a_record_inside_a_submodule_checkout_is_not_this_repository(checkout: Checkout) -> None:
    nested = Checkout(top=checkout.top / ".flakecore" / "leases")
    nested.git("init", "-q")
    verdict = trusted_by_base(checkout.top, checkout.base, LEASE_PATH)
    assert verdict.reason is TrustReason.NOT_A_FILE and "submodule" in verdict.detail


def test_a_fifo_or_a_directory_is_not_a_file(checkout: Checkout) -> None:
    target = checkout.top / LEASE_PATH
    target.unlink()
    os.mkfifo(target)
    assert trusted_by_base(checkout.top, checkout.base, LEASE_PATH).reason is TrustReason.NOT_A_FILE
    target.unlink()
    target.mkdir()
    assert trusted_by_base(checkout.top, checkout.base, LEASE_PATH).reason is TrustReason.NOT_A_FILE


@pytest.mark.parametrize(
    "path", ["../repo/" + LEASE_PATH, "/etc/hostname", ".git/config", "", ".", "a/../../b"]
)
def test_paths_outside_the_repository(checkout: Checkout, path: str) -> None:
    verdict = trusted_by_base(checkout.top, checkout.base, path)
    assert verdict.reason is TrustReason.OUTSIDE_REPOSITORY and not verdict.trusted


def test_a_missing_record_is_an_input_error_and_a_ref_must_be_resolved(checkout: Checkout) -> None:
    with pytest.raises(InputError, match="no such file"):
        trusted_by_base(checkout.top, checkout.base, ".flakecore/leases/none.json")
    with pytest.raises(UsageError, match="full commit id"):
        trusted_by_base(checkout.top, "main", LEASE_PATH)
    with pytest.raises(UsageError, match="full commit id"):
        trusted_by_base(checkout.top, checkout.base[:12], LEASE_PATH)


def test_a_blob_the_repository_lacks_is_a_git_error_not_a_verdict(checkout: Checkout) -> None:
    """The twin of the first test: base's object for the lease deleted from the repository."""
    oid = checkout.git("rev-parse", f"{checkout.base}:{LEASE_PATH}").strip()
    (checkout.top / ".git" / "objects" / oid[:2] / oid[2:]).unlink()
    with pytest.raises(GitError, match=oid):
        trusted_by_base(checkout.top, checkout.base, LEASE_PATH)


def test_a_subdirectory_of_the_checkout_finds_the_same_top(checkout: Checkout) -> None:
    verdict = trusted_by_base(checkout.top / "src", checkout.base, LEASE_PATH)
    assert verdict.reason is TrustReason.BASE_IDENTICAL
