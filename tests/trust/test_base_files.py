"""``lease check`` reads base's side of a directory in bulk; each verdict is the one-file verdict.

:func:`flakecore.gate.basetrust.base_files` reads base's entries with one
``git ls-tree`` per directory and their bytes with one ``git cat-file
--batch``.  Inside it, every record must be judged exactly as
:func:`~flakecore.gate.ledger.check_file` judges it alone: the oracle here
is ``check_file`` outside any read-ahead, one git call per question.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from gate.support import NOW
from hypothesis import given, settings
from hypothesis import strategies as st

from flakecore.gate import basetrust, nofollow
from flakecore.gate.basetrust import RecordTrust
from flakecore.gate.ledger import RecordCheck, check_directory, check_file, record_file_name
from flakecore.signing import sign_record
from trust.support import lease_bytes, make_checkout, make_signer

pytestmark = pytest.mark.e2e

LEASES = ".flakecore/leases"
_RECORD = re.compile(r"[0-9a-f]{64}\.json")


def _name(test_id: str) -> str:
    return f"{LEASES}/{record_file_name(test_id)}"


def _alone(directory: Path, trust: RecordTrust) -> list[RecordCheck]:
    """The record files of ``directory``, each judged alone (no read-ahead)."""
    assert not basetrust._ENTRIES and not basetrust._BLOBS
    return [
        check_file(str(directory / name), trust=trust, now=NOW)
        for name in sorted(os.listdir(directory))
        if _RECORD.fullmatch(name) and not (directory / name).is_dir()
    ]


def test_every_kind_of_entry_is_judged_as_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    same = {_name(f"t::same{i}"): lease_bytes(test_id=f"t::same{i}") for i in range(5)}
    base_files = {
        **same,
        _name("t::changed"): lease_bytes(test_id="t::changed"),
        _name("t::resized"): lease_bytes(test_id="t::resized"),
        _name("t::gone"): lease_bytes(test_id="t::gone"),
        _name("t::was-link"): lease_bytes(test_id="t::was-link"),
    }
    checkout = make_checkout(tmp_path, base_files)
    top = checkout.top
    # The patch: one changed in place (same size), one rewritten longer, one added,
    # one signed and added, one replaced by a link, one deleted, one a directory.
    changed = bytearray(base_files[_name("t::changed")])
    changed[changed.index(b"t::changed")] = ord("T")
    checkout.write(_name("t::changed"), bytes(changed))
    checkout.write(_name("t::resized"), lease_bytes(test_id="t::resized") + b" ")
    checkout.write(_name("t::added"), lease_bytes(test_id="t::added"))
    signer = make_signer(tmp_path / "keys", "ci", top)
    record = json.loads(lease_bytes(test_id="t::signed"))
    checkout.write(_name("t::signed"), json.dumps(sign_record(record, kind="lease", signer=signer)))
    (top / _name("t::was-link")).unlink()
    (top / _name("t::was-link")).symlink_to(record_file_name("t::same0"))
    (top / _name("t::gone")).unlink()
    (top / LEASES / ("0" * 64 + ".json")).mkdir()
    checkout.write(f"{LEASES}/notes.txt", "not a record")
    trust = RecordTrust(checkout=top, base=checkout.base, keys=(signer.key,))
    directory = top / LEASES
    alone = _alone(directory, trust)
    trace = tmp_path / "git-trace"
    monkeypatch.setenv("GIT_TRACE", str(trace))
    bulk = {c.path: c for c in check_directory(str(directory), trust=trust, now=NOW)}
    calls = [line.split("built-in: git ", 1)[1] for line in trace.read_text().splitlines()
             if "built-in: git " in line]  # fmt: skip
    assert [c.split()[0] for c in calls if "ls-tree" in c or "cat-file" in c] == [
        "ls-tree",
        "cat-file",
    ]  # one listing of the directory, one batch of blobs: nothing per file
    assert [bulk[c.path] for c in alone] == alone
    assert len(bulk) == len(alone) + 2  # the directory and the stray file, reported too
    valid = {c.test_id for c in alone if c.valid}
    assert valid == {*(f"t::same{i}" for i in range(5)), "t::signed"}
    assert not basetrust._ENTRIES and not basetrust._BLOBS  # nothing kept after the block
    assert not nofollow.WALKED  # and every directory fd it held is closed
    assert not basetrust._PLACES


@pytest.mark.parametrize("shape", ["link", "submodule", "plain"])
def test_a_directory_walked_once_refuses_as_each_file_alone(tmp_path: Path, shape: str) -> None:
    """The read-ahead walks to a directory once; a link or a submodule on the way still refuses."""
    files = {_name(f"t::r{i}"): lease_bytes(test_id=f"t::r{i}") for i in range(3)}
    checkout = make_checkout(tmp_path, files)
    top = checkout.top
    for name, data in files.items():
        checkout.write(name.replace(LEASES, "elsewhere"), data)
    if shape == "link":  # .flakecore/leases -> ../elsewhere: base's bytes, the patch's path
        os.rename(top / LEASES, tmp_path / "moved")
        (top / LEASES).symlink_to("../elsewhere")
    elif shape == "submodule":
        (top / ".flakecore" / ".git").write_text("gitdir: elsewhere\n")
    trust = RecordTrust(checkout=top, base=checkout.base)
    written = str(top / LEASES)
    alone = [
        check_file(os.path.join(written, n), trust=trust, now=NOW)
        for n in sorted(os.listdir(top / LEASES))
        if _RECORD.fullmatch(n)
    ]
    bulk = check_directory(written, trust=trust, now=NOW)
    assert bulk == alone
    assert all(c.valid for c in bulk) is (shape == "plain")
    assert not nofollow.WALKED


#: Base's bytes of each record file of the hypothesis test: what kinds a directory holds.
_BASE_KINDS = {
    "valid": lease_bytes(test_id="t::valid"),
    "other-name": lease_bytes(test_id="t::elsewhere"),
    "expired": lease_bytes(test_id="t::expired", expires_at="2020-01-01T00:00:00Z"),
    "list": b"[1, 2]\n",
    "not-json": b"{not json\n",
    "duplicate": b'{"format": "flakecore.lease", "format": "flakecore.lease"}\n',
    "envelope": b'{"payloadType": "x", "payload": "", "signatures": []}\n',
}
#: What the patch leaves at a path base holds: each way the one-path reading refuses.
_VARIANTS = ("same", "other", "longer", "flipped", "link", "directory", "gone", "fifo")


def _patched(top: Path, name: str, variant: str, data: bytes, other: str) -> None:
    path = top / LEASES / name
    if path.is_dir() and not path.is_symlink():
        path.rmdir()
    elif os.path.lexists(path):
        path.unlink()  # a file, a link or a FIFO
    if variant == "same":
        path.write_bytes(data)
    elif variant == "other":
        path.write_bytes(_BASE_KINDS["valid"] if data != _BASE_KINDS["valid"] else b"{}\n")
    elif variant == "longer":
        path.write_bytes(data + b" ")
    elif variant == "flipped":
        path.write_bytes(data[:1] + bytes([data[1] ^ 1]) + data[2:])
    elif variant == "link":
        path.symlink_to(other)
    elif variant == "directory":
        path.mkdir()
    elif variant == "fifo":
        os.mkfifo(path)


@pytest.fixture(scope="module")
def held_checkout(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, RecordTrust]:
    tmp = tmp_path_factory.mktemp("held")
    files = {_name(f"t::{kind}"): data for kind, data in _BASE_KINDS.items()}
    checkout = make_checkout(tmp, files)
    return checkout.top, RecordTrust(checkout=checkout.top, base=checkout.base)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.sampled_from(_VARIANTS), min_size=len(_BASE_KINDS), max_size=len(_BASE_KINDS)))
def test_a_record_read_ahead_is_judged_as_alone(
    held_checkout: tuple[Path, RecordTrust], variants: list[str]
) -> None:
    """The read-ahead's one-read check of a base-held record (``_held_verdict``) is the slow one.

    Each file base holds is left as base's bytes or changed by the patch in
    one of the ways the one-path reading refuses; every verdict (its bytes
    and record included) is the one ``check_file`` gives the file alone.
    """
    top, trust = held_checkout
    names = [record_file_name(f"t::{kind}") for kind in _BASE_KINDS]
    for name, variant, data in zip(names, variants, _BASE_KINDS.values(), strict=True):
        _patched(top, name, variant, data, names[0] if name != names[0] else names[1])
    directory = top / LEASES
    alone = _alone(directory, trust)
    bulk = {c.path: c for c in check_directory(str(directory), trust=trust, now=NOW)}
    assert [bulk[c.path] for c in alone] == alone

    def held(checks: list[RecordCheck]) -> list[object]:
        return [(c.trust.data, c.trust.record) if c.trust else None for c in checks]

    assert held([bulk[c.path] for c in alone]) == held(alone)  # bytes and record too
    assert not basetrust._HELD and not nofollow.WALKED
