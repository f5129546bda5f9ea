"""The leases of a lease directory that count (docs/trust.md), for a test runner to obey.

A lease lets one test's failure stop failing the run until it expires
(docs/pytest.md), so a runner must know that the patch did not write it.  Every
file of the directory is judged, and each must count or the whole run is
refused -- an expired, forged, untrusted or malformed lease is never skipped:

- with a trusted configuration from the **base revision**, a lease counts
  when base holds it byte for byte at the same path (it landed in its own
  reviewed commit) or a key base's ``[tool.flakecore.trust.keys]`` names
  signed it (:func:`flakecore.gate.basetrust.read_trusted_record`);
- with a configuration from a file outside the checkout (no base), only a
  signature by one of its keys can make a lease count;

and in both cases the lease must be valid *now* (:func:`flakecore.lease.lease_problems`:
not expired, inside the policy's window, roles apart) and stored under its
own test's file name.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

import attrs

from flakecore.attestation import Untrusted
from flakecore.errors import FlakecoreError, InputError
from flakecore.gate.basetrust import read_in_checkout, read_trusted_record
from flakecore.gate.config import GateConfig
from flakecore.gate.ledger import record_file_name
from flakecore.gate.worktree import repo_toplevel
from flakecore.lease import lease_problems
from flakecore.signing import RecordProblems, verify_signed
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


def _in_repository(path: Path, top: Path) -> str | None:
    """``path`` from the repository top, its parts below the top as given (links unresolved).

    Only the directories down to the top are resolved (a checkout under a
    linked ``/tmp``); below it nothing is, so a lease directory that is a
    link reaches the reader as a link and is refused there.
    """
    absolute = Path(os.path.abspath(path))
    for parent in absolute.parents:
        if os.path.realpath(parent) == str(top):
            return absolute.relative_to(parent).as_posix()
    return None


def _where(directory: Path, name: str, top: Path | None) -> str:
    """How a file is named in reasons: from the repository top, or as given without a base."""
    if top is None:
        return str(directory / name)
    rel = _in_repository(directory / name, top)
    assert rel is not None  # trusted_leases checked the directory
    return rel


def _judge(
    directory: Path, name: str, now: dt.datetime, config: GateConfig, top: Path | None
) -> TrustVerdict:
    check = _check(name, now, config)
    keys = config.trusted_keys
    where = _where(directory, name, top)
    if top is not None:
        assert config.source.revision is not None
        return read_trusted_record(
            top, config.source.revision, where, keys=keys, kind="lease", check=check
        )
    try:
        data = read_in_checkout(directory, name)
    except Untrusted as exc:
        raise LeaseRefused(f"{where}: {exc.reason.value}: {exc.detail}") from None
    return verify_signed(data, keys=keys, kind="lease", check=check, path=where)


def trusted_leases(
    directory: Path, *, config: GateConfig, now: dt.datetime
) -> dict[str, TrustedLease]:
    """Every lease in ``directory`` by test id; :class:`LeaseRefused` for one that does not count.

    ``config`` is the trusted configuration: read from the base revision
    (its ``source.revision`` set; ``directory`` must then lie in that
    repository), or from a file outside the checkout.  A directory that
    does not exist holds no lease.  Dot-files (``.gitkeep``) are skipped.
    """
    if not directory.exists():
        return {}
    top: Path | None = None
    if config.source.revision is not None:
        top = repo_toplevel(directory)
        if _in_repository(directory / "x", top) is None:
            raise LeaseRefused(f"{directory}: the lease directory is not in the repository {top}")
    try:
        names = sorted(n for n in os.listdir(directory) if not n.startswith("."))
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", source=str(directory)) from None
    leases: dict[str, TrustedLease] = {}
    for name in names:
        where = _where(directory, name, top)
        if not _NAME.fullmatch(name):
            raise LeaseRefused(f"{where}: not a lease file (<sha256 of the test id>.json)")
        verdict = _judge(directory, name, now, config, top)
        if not verdict.trusted or verdict.record is None:
            unsigned = "" if top is not None else " (without a base, only a signed lease counts)"
            raise LeaseRefused(f"{verdict}{unsigned}")
        record = verdict.record
        test_id, owner, expires = record["test_id"], record["owner"], record["expires_at"]
        assert isinstance(test_id, str) and isinstance(owner, str) and isinstance(expires, str)
        leases[test_id] = TrustedLease(
            test_id=test_id, owner=owner, expires_at=expires, path=where, verdict=verdict
        )
    return leases
