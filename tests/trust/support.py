"""Real git repositories and real ed25519 keys for the trust tests.

A :class:`Checkout` is a repository whose ``main`` is the base (reviewed)
and whose ``feature`` branch is the patch under judgement.  Keys are made
with securesystemslib in the test and written as PEM files *outside* the
checkout, where CI would keep them.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

import attrs
from gate.support import NOW, TEST_ID, lease_record
from securesystemslib.signer import CryptoSigner

from flakecore.gate.ledger import record_file_name
from flakecore.lease import lease_problems
from flakecore.signing import RecordSigner, load_signer

__all__ = [
    "LEASE_PATH",
    "Checkout",
    "lease_bytes",
    "lease_check",
    "make_checkout",
    "make_signer",
]

#: Where the gate keeps the test's lease, relative to the repository top.
LEASE_PATH = f".flakecore/leases/{record_file_name(TEST_ID)}"
#: No user or system configuration, and one identity for every commit.
_GIT = ("git", "-c", "user.name=t", "-c", "user.email=t@example.test", "-c", "core.symlinks=true")
_NO_CONFIG = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}


def lease_bytes(**changes: object) -> bytes:
    """A lease valid at NOW, as the gate writes it."""
    return (json.dumps(lease_record(**changes), indent=2) + "\n").encode()


def lease_check(record: Mapping[str, object]) -> list[str]:
    """What ``lease check`` asks of a lease, at NOW."""
    return lease_problems(record, now=NOW)


@attrs.frozen
class Checkout:
    """A checkout on ``feature``, branched from ``main`` (the base)."""

    top: Path

    def git(self, *args: str) -> str:
        done = subprocess.run(
            [*_GIT, *args],
            cwd=self.top,
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, **_NO_CONFIG},
        )
        return done.stdout

    def write(self, path: str, data: bytes | str) -> Path:
        target = self.top / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, str):
            data = data.encode()
        target.write_bytes(data)
        return target

    def commit(self, message: str = "change") -> str:
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message)
        return self.git("rev-parse", "HEAD").strip()

    @property
    def base(self) -> str:
        return self.git("rev-parse", "main").strip()


def make_checkout(tmp_path: Path, files: Mapping[str, bytes | str]) -> Checkout:
    """``files`` committed on ``main``; HEAD on a new ``feature`` branch at the same commit."""
    top = tmp_path / "repo"
    top.mkdir()
    checkout = Checkout(top=Path(os.path.realpath(top)))
    checkout.git("init", "-q", "-b", "main")
    for path, data in files.items():
        checkout.write(path, data)
    checkout.commit("base")
    checkout.git("checkout", "-q", "-b", "feature")
    return checkout


def make_signer(keys_dir: Path, keyid: str, checkout: Path) -> RecordSigner:
    """A fresh ed25519 key, written as PEM to ``keys_dir`` (outside ``checkout``), then loaded."""
    keys_dir.mkdir(parents=True, exist_ok=True)
    path = keys_dir / f"{keyid}.pem"
    path.write_bytes(CryptoSigner.generate_ed25519().private_bytes)
    path.chmod(0o600)
    return load_signer(keyid=keyid, checkout=checkout, key_file=str(path))
