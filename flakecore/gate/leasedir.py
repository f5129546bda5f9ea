"""The leases of a lease directory that count (docs/trust.md), for a test runner to obey.

A lease lets one test's failure stop failing the run until it expires
(docs/pytest.md), so a runner must know that the patch did not write it.
Every file of the directory is judged, and each must count or the whole run
is refused -- an expired, forged, untrusted or malformed lease is never
skipped.  A lease counts as every stored record does
(:func:`flakecore.gate.basetrust.read_record_file`): in the scored checkout,
when the base revision holds it byte for byte (it landed in its own reviewed
commit) or a key of the trusted configuration signed it; outside the
checkout, signed, or CI's own file.  And it must be valid *now*
(:func:`flakecore.lease.lease_problems`: not expired, inside the policy's
window, roles apart) and stored under its own test's file name.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

import attrs

from flakecore.errors import FlakecoreError, InputError
from flakecore.gate.basetrust import RecordTrust, read_record_file
from flakecore.gate.config import GateConfig
from flakecore.gate.ledger import record_file_name
from flakecore.lease import lease_problems
from flakecore.signing import RecordProblems
from flakecore.trust import TrustVerdict

__all__ = ["LeaseRefused", "TrustedLease", "trusted_leases"]

_NAME: Final = re.compile(r"[0-9a-f]{64}\.json")


class LeaseRefused(FlakecoreError):
    """A file of the lease directory does not count; the run must not go on."""


@attrs.frozen(kw_only=True)
class TrustedLease:
    """One lease that counts: whose test it frees, until when, and why it is trusted."""

    test_id: str
    owner: str
    expires_at: str
    path: str
    verdict: TrustVerdict

    def describe(self, directory: str) -> str:
        """``flakecore lease (owner team-search, expires 2026-12-05T00:00:00Z): DIR/<file>``."""
        where = os.path.join(directory, os.path.basename(self.path))
        return f"flakecore lease (owner {self.owner}, expires {self.expires_at}): {where}"


def _check(name: str, now: dt.datetime, config: GateConfig) -> RecordProblems:
    def check(record: Mapping[str, object]) -> Sequence[str]:
        problems = lease_problems(record, now=now, policy=config.policy)
        test_id = record.get("test_id")
        if isinstance(test_id, str) and record_file_name(test_id) != name:
            problems.append(f"stored as {name}, not as its test's file {record_file_name(test_id)}")
        return problems

    return check


def trusted_leases(
    directory: Path, *, config: GateConfig, trust: RecordTrust, now: dt.datetime
) -> dict[str, TrustedLease]:
    """Every lease in ``directory`` by test id; :class:`LeaseRefused` for one that does not count.

    ``config`` is the trusted configuration (its policy judges the leases),
    ``trust`` what a record must be to count.  A directory that does not
    exist holds no lease.  Dot-files (``.gitkeep``) are skipped.
    """
    if not directory.exists():
        return {}
    try:
        names = sorted(n for n in os.listdir(directory) if not n.startswith("."))
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", source=str(directory)) from None
    leases: dict[str, TrustedLease] = {}
    for name in names:
        where = os.path.join(directory, name)
        if not _NAME.fullmatch(name):
            raise LeaseRefused(f"{where}: not a lease file (<sha256 of the test id>.json)")
        verdict = read_record_file(
            where, trust=trust, kind="lease", check=_check(name, now, config)
        )
        if not verdict.trusted or verdict.record is None:
            raise LeaseRefused(str(verdict))
        record = verdict.record
        test_id, owner, expires = record["test_id"], record["owner"], record["expires_at"]
        assert isinstance(test_id, str) and isinstance(owner, str) and isinstance(expires, str)
        leases[test_id] = TrustedLease(
            test_id=test_id, owner=owner, expires_at=expires, path=where, verdict=verdict
        )
    return leases
