"""The on-disk store of leases and seed-budget ledger rows, and the check CI runs over it.

One file per test id, named by the sha256 of the test id (``<64 hex>.json``):
a test id is untrusted text (``../../etc``, NUL, a thousand characters), so
it never becomes a path.  Files are read and replaced through
:mod:`flakecore.files` (regular files only, bounded; atomic writes through a
random temporary file), so a reader sees the old record or the new one, never half.

The ledger follows ``budget`` (docs/policies.md): a ``FLAKE_CANDIDATE`` writes the row for its
test id (replacing the previous one: only a new observation carries
evidence), ``STABLE_PASS`` deletes it, every other code leaves the ledger
untouched.  An expired row is absent; nothing here renews anything.

:func:`check_directory` is the enforcement step: it re-judges every stored
record (lease, ledger row, or a stored ``decide`` packet) at ``now`` and
lists every reason each one is invalid, so CI fails on an expired, overlong,
malformed or rebound record instead of trusting that it was fine once.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from collections.abc import Mapping
from typing import Final

import attrs

from flakecore._fields import MISSING, is_nonblank
from flakecore._wording import plural
from flakecore.attestation import Untrusted, is_envelope, open_statement, parse_envelope
from flakecore.budget import BudgetDecision, budget, ledger_row
from flakecore.codes import BudgetCode, DecideCode
from flakecore.decide import decide
from flakecore.errors import InputError, MissingInputError
from flakecore.files import read_bytes, write_atomic
from flakecore.gate.basetrust import RecordTrust, base_files, read_record_file
from flakecore.gate.vote import DECIDE_PACKET_FORMAT
from flakecore.jsonio import (
    MAX_DOCUMENT_BYTES,
    compact_text,
    compact_value,
    load_object,
    loads_strict,
    quote,
)
from flakecore.lease import LEASE_FORMAT, format_version_ok, lease_problems
from flakecore.policy import DEFAULT_POLICY, Policy
from flakecore.signing import RecordSigner, sign_record
from flakecore.testids import id_digest
from flakecore.trust import TrustVerdict

__all__ = [
    "DECIDE_PACKET_FORMAT",
    "LEDGER_ROW_FIELDS",
    "LEDGER_ROW_FORMAT",
    "STORED_KINDS",
    "LedgerAction",
    "RecordCheck",
    "apply_budget",
    "check_directory",
    "check_file",
    "check_record",
    "peek_record",
    "read_record",
    "record_bytes",
    "record_file_name",
    "row_expired",
    "row_problems",
    "stored_bytes",
    "utc_today",
]

#: ``format`` of a ledger row (schemas/ledger-row.v1.json).
LEDGER_ROW_FORMAT: Final = "flakecore.ledger-row"
LEDGER_ROW_FIELDS: Final = (
    "format",
    "format_version",
    "test_id",
    "parent_digest",
    "seeds",
    "passes",
    "budget",
    "code",
    "expires_on",
    "opened_against",
)
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_RECORD_NAME = re.compile(r"[0-9a-f]{64}\.json")


def record_file_name(test_id: str) -> str:
    """``sha256(test_id as UTF-8)`` in hex, plus ``.json``: never a path built from the id."""
    return id_digest(test_id) + ".json"


def utc_today(now: dt.datetime) -> dt.date:
    """The UTC calendar date of ``now``: ledger dates are UTC dates.

    An instant past the ends of ``datetime`` in UTC (9999-12-31T23:00-05:00
    is year 10000 there) is the last or first date rather than an
    OverflowError: every row is then expired, or none is valid for long.
    """
    try:
        return now.astimezone(dt.timezone.utc).date()
    except OverflowError:
        offset = now.utcoffset()
        return dt.date.max if offset is not None and offset < dt.timedelta(0) else dt.date.min


def read_record(path: str) -> dict[str, object]:
    """One stored record, through the strict JSON reader; :class:`InputError` when unusable.

    This says nothing about who wrote it: evidence is read through
    :func:`flakecore.gate.basetrust.read_record_file`.
    """
    return load_object(read_bytes(path, MAX_DOCUMENT_BYTES), source=path)


def peek_record(data: bytes, *, source: str = "<record>") -> dict[str, object] | None:
    """The record stored bytes hold -- an envelope's predicate opened *without* verifying it.

    Only for questions whose answer can only refuse more (is this a renewal
    of the stored lease? what kind does an untrusted file claim to be?),
    never for evidence.  None when the bytes hold no record.
    """
    value = loads_strict(data, source=source)
    if is_envelope(value):
        try:
            payload = parse_envelope(value).payload
            return open_statement(payload, kind=STORED_KINDS).record
        except Untrusted:
            return None
    return value if isinstance(value, dict) else None


def stored_bytes(
    record: Mapping[str, object],
    *,
    kind: str,
    signer: RecordSigner | None = None,
    test_id: str | None = None,
) -> bytes:
    """A record's file body: the record, or with ``signer`` its DSSE envelope (docs/trust.md).

    ``test_id`` names the test for a record that does not carry its own (a
    freeze record).  Signing needs the ``sign`` extra.
    """
    if signer is None:
        return record_bytes(record)
    return record_bytes(sign_record(record, kind=kind, signer=signer, test_id=test_id))


def _parse_date(value: object) -> dt.date | None:
    if not isinstance(value, str) or not value.isascii() or _DATE.fullmatch(value) is None:
        return None
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        return None


def row_expired(row: Mapping[str, object], *, today: dt.date) -> bool:
    """Whether a row has expired (``expires_on <= today``); an unreadable date counts as expired.

    ``expires_on`` is a UTC date: the row is absent from 00:00Z that day on.
    """
    expires = _parse_date(row.get("expires_on", MISSING))
    return expires is None or expires <= today


def row_problems(row: object, *, today: dt.date, policy: Policy = DEFAULT_POLICY) -> list[str]:
    """Every reason a stored ledger row is invalid on ``today`` (UTC; empty list: valid).

    The observation is re-judged with :func:`flakecore.budget` (it must still
    be a ``FLAKE_CANDIDATE`` under this policy); the row must be unexpired
    and must not run longer than the policy's maximum lease from ``today``.
    """
    if not isinstance(row, Mapping):
        return ["a ledger row must be a JSON object"]
    problems: list[str] = []
    if row.get("format", MISSING) != LEDGER_ROW_FORMAT:
        problems.append(f"format is {row.get('format', MISSING)!r}, expected {LEDGER_ROW_FORMAT!r}")
    if not format_version_ok(row.get("format_version", MISSING)):
        problems.append("format_version is missing or not a 1.x version")
    problems += [f"unknown field {k!r}" for k in sorted(set(row) - set(LEDGER_ROW_FIELDS))]
    problems += [f"{k} is missing" for k in LEDGER_ROW_FIELDS if k not in row]
    if "code" in row and row["code"] != BudgetCode.FLAKE_CANDIDATE.value:
        problems.append(f"code is {row['code']!r}: only FLAKE_CANDIDATE opens a row")
    packet = {
        "test_id": row.get("test_id"),
        "parent_digest": row.get("parent_digest"),
        "head_digest": row.get("parent_digest"),
        "property_holds": True,
        "seeds": row.get("seeds"),
        "passes": row.get("passes"),
        "budget": row.get("budget"),
        "opened_against": row.get("opened_against"),
    }
    decision = budget(packet, policy=policy)
    if decision.code is not BudgetCode.FLAKE_CANDIDATE:
        problems += [f"the observation is {decision.code.value}: {r}" for r in decision.reasons]
    if "expires_on" in row:
        expires = _parse_date(row["expires_on"])
        if expires is None:
            problems.append("expires_on is not a YYYY-MM-DD date")
        elif expires <= today:
            problems.append(f"expired: expires_on {expires.isoformat()} is not after {today}")
        elif expires - today > policy.max_lease:  # subtract: adding overflows past 9999
            problems.append(
                f"expires_on {expires.isoformat()} is more than "
                f"{plural(policy.max_lease_days, 'day')} away: so long a row is a permanent freeze"
            )
    return list(dict.fromkeys(problems))


def _packet_problems(
    packet: Mapping[str, object],
    *,
    policy: Policy,
    patch_hash: str | None,
    oracle_version: str | None,
) -> list[str]:
    """A stored clean-runner packet: still eligible, and bound to this patch and oracle."""
    problems: list[str] = []
    decision = decide(packet, policy=policy)
    if decision.code is not DecideCode.ELIGIBLE:
        problems += [f"decide says {decision.code.value}: {r}" for r in decision.reasons]
    if patch_hash is None or oracle_version is None:
        problems.append(
            "a stored decide packet expires only with its patch hash and oracle version: "
            "check it with --patch-hash and --oracle-version"
        )
    for name, wanted in (("patch_hash", patch_hash), ("oracle_version", oracle_version)):
        have = packet.get(name, MISSING)
        if wanted is not None and have != wanted:
            problems.append(f"bound to another {name.replace('_', ' ')}: {have!r}, not {wanted!r}")
    return problems


@attrs.frozen(kw_only=True)
class RecordCheck:
    """The verdict on one stored file: ``problems`` empty means valid."""

    path: str
    kind: str
    """``lease``, ``ledger-row``, ``decide-packet``, or ``unknown``."""
    test_id: str | None
    problems: tuple[str, ...]
    trust: TrustVerdict | None = None
    """Why the file counts as evidence, or why not (None: it could not be read)."""

    @property
    def valid(self) -> bool:
        """True only when nothing is wrong with the record."""
        return not self.problems

    def to_json(self) -> dict[str, object]:
        """One JSON Lines record for ``lease check --json``."""
        return {
            "file": self.path,
            "kind": self.kind,
            "test_id": self.test_id,
            "valid": self.valid,
            "problems": list(self.problems),
            "trust": None if self.trust is None else _trust_json(self.trust),
        }

    def record_text(self) -> str:
        """``compact_text(self.to_json())``, joined from parts.

        The trust part is the same for every record one base (or one key)
        vouches for: it is encoded once per distinct verdict, not per record.
        """
        trust = "null" if self.trust is None else _trust_text(self.trust)
        return "".join(
            (
                '{"file":',
                quote(self.path),
                ',"kind":',
                quote(self.kind),
                ',"test_id":',
                "null" if self.test_id is None else quote(self.test_id),
                ',"valid":',
                "false" if self.problems else "true",
                ',"problems":',
                compact_value(self.problems),
                ',"trust":',
                trust,
                "}",
            )
        )


def _trust_json(verdict: TrustVerdict) -> dict[str, object]:
    """A record's trust in its ``lease check`` line: the verdict's JSON without the file."""
    return {k: v for k, v in verdict.to_json().items() if k != "file"}


#: Each distinct trust part's text, by what it is made of (bounded: a few per run).
_TRUST_TEXTS: dict[tuple[object, ...], str] = {}


def _trust_text(verdict: TrustVerdict) -> str:
    key = (verdict.reason, verdict.detail, verdict.signers)
    text = _TRUST_TEXTS.get(key)
    if text is None:
        text = compact_text(_trust_json(verdict))
        if len(_TRUST_TEXTS) < 256:
            _TRUST_TEXTS[key] = text
    return text


_KINDS: Final = {
    LEASE_FORMAT: "lease",
    LEDGER_ROW_FORMAT: "ledger-row",
    DECIDE_PACKET_FORMAT: "decide-packet",
}
#: The record kinds a lease or ledger directory holds.
STORED_KINDS: Final = tuple(_KINDS.values())


def check_record(
    data: object,
    *,
    path: str,
    now: dt.datetime,
    policy: Policy = DEFAULT_POLICY,
    patch_hash: str | None = None,
    oracle_version: str | None = None,
    trust: TrustVerdict | None = None,
) -> RecordCheck:
    """Judge one stored record, of whatever kind its ``format`` names, at ``now``.

    A record whose file name is not ``sha256(test_id).json`` is invalid too:
    a loader that looks the test up by id would miss it, or find two.
    ``trust`` is why the record counts, carried into the verdict.
    """
    if type(data) is not dict and not isinstance(data, Mapping):  # the ABC test for others
        return RecordCheck(path=path, kind="unknown", test_id=None, problems=("not a JSON object",))
    kind = _KINDS.get(data.get("format"), "unknown")  # type: ignore[arg-type]
    test_id = data.get("test_id")
    problems: list[str] = []
    if kind == "lease":
        problems += lease_problems(
            data, now=now, policy=policy, patch_hash=patch_hash, oracle_version=oracle_version
        )
    elif kind == "ledger-row":
        problems += row_problems(data, today=utc_today(now), policy=policy)
    elif kind == "decide-packet":
        problems += _packet_problems(
            data, policy=policy, patch_hash=patch_hash, oracle_version=oracle_version
        )
    else:
        problems.append(
            f"format {data.get('format', MISSING)!r} is not a lease, ledger row or decide packet"
        )
    if is_nonblank(test_id):
        assert isinstance(test_id, str)
        expected = record_file_name(test_id)
        if os.path.basename(path) != expected:
            problems.append(f"file name is not {expected} (sha256 of its test_id)")
    return RecordCheck(
        path=path,
        kind=kind,
        test_id=test_id if isinstance(test_id, str) else None,
        problems=tuple(dict.fromkeys(problems)),
        trust=trust,
    )


def _untrusted(verdict: TrustVerdict) -> RecordCheck:
    """A file that is not evidence: its trust reason is its one problem."""
    try:
        value = peek_record(verdict.data) if verdict.data is not None else None
    except InputError:
        value = None
    value = value or {}
    name, own = value.get("format"), value.get("test_id")
    return RecordCheck(
        path=verdict.path,
        kind=_KINDS.get(name, "unknown") if isinstance(name, str) else "unknown",
        test_id=own if isinstance(own, str) else None,
        problems=(f"{verdict.reason.value}: {verdict.detail}",),
        trust=verdict,
    )


def check_file(
    path: str,
    *,
    trust: RecordTrust,
    now: dt.datetime,
    policy: Policy = DEFAULT_POLICY,
    patch_hash: str | None = None,
    oracle_version: str | None = None,
) -> RecordCheck:
    """Judge one stored file: first whether it counts as evidence at all, then the record.

    A file that is not trusted (``trust``: the diff added it unsigned, a
    link, a bad signature ...) is invalid with that reason; a trusted one is
    judged by :func:`check_record`.  A file that is refused as input is
    invalid with that error; one there is nothing to read at raises
    :class:`~flakecore.errors.MissingInputError`.
    """
    try:
        verdict = read_record_file(path, trust=trust, kind=STORED_KINDS, check=lambda _: ())
    except MissingInputError:
        raise
    except InputError as exc:
        return RecordCheck(path=path, kind="unknown", test_id=None, problems=(str(exc),))
    if not verdict.trusted or verdict.record is None:
        return _untrusted(verdict)
    return check_record(
        verdict.record,
        path=path,
        now=now,
        policy=policy,
        patch_hash=patch_hash,
        oracle_version=oracle_version,
        trust=verdict,
    )


def check_directory(
    directory: str,
    *,
    trust: RecordTrust,
    now: dt.datetime,
    policy: Policy = DEFAULT_POLICY,
    patch_hash: str | None = None,
    oracle_version: str | None = None,
) -> list[RecordCheck]:
    """Check every entry of ``directory`` (not recursive), sorted by name.

    Dot-files are skipped (``.gitkeep``, a writer's temporary file).  Any
    other entry that is not ``<64 hex>.json`` holding a valid record is
    reported: a subdirectory or a stray file is invalid, not silently
    ignored, because a lease nobody checks is a permanent freeze.  Each
    record must count as evidence first (:func:`check_file`).  Raises
    :class:`InputError` when the directory itself cannot be read.
    """
    try:
        with os.scandir(directory) as listing:  # each entry's type comes with its name
            entries = sorted(listing, key=lambda e: e.name)
    except FileNotFoundError:
        raise MissingInputError("no such file or directory", source=directory) from None
    except NotADirectoryError:
        raise MissingInputError("cannot read: not a directory", source=directory) from None
    except OSError as exc:
        raise MissingInputError(f"cannot read: {exc.strerror}", source=directory) from None
    records = [e.path for e in entries if _RECORD_NAME.fullmatch(e.name)]
    with base_files(trust, records):  # base's side of every record, read ahead in bulk
        return [
            _check_entry(entry, trust, now, policy, patch_hash, oracle_version)
            for entry in entries
            if not entry.name.startswith(".")
        ]


def _is_dir(entry: os.DirEntry[str]) -> bool:
    """``os.path.isdir(entry.path)``, from the listing's own type where it has one."""
    try:
        return entry.is_dir()
    except OSError:
        return False


def _check_entry(  # noqa: PLR0917 - one entry of check_directory, with its arguments
    entry: os.DirEntry[str],
    trust: RecordTrust,
    now: dt.datetime,
    policy: Policy,
    patch_hash: str | None,
    oracle_version: str | None,
) -> RecordCheck:
    path, name = entry.path, entry.name
    if _is_dir(entry):
        return RecordCheck(
            path=path,
            kind="unknown",
            test_id=None,
            problems=("a subdirectory: records live directly in the directory",),
        )
    if _RECORD_NAME.fullmatch(name) is None:
        return RecordCheck(
            path=path,
            kind="unknown",
            test_id=None,
            problems=("not a record file (expected <sha256 of the test id>.json)",),
        )
    try:
        return check_file(
            path,
            trust=trust,
            now=now,
            policy=policy,
            patch_hash=patch_hash,
            oracle_version=oracle_version,
        )
    except MissingInputError as exc:  # gone, or a link to nothing: a bad entry all the same
        return RecordCheck(path=path, kind="unknown", test_id=None, problems=(str(exc),))


@attrs.frozen(kw_only=True)
class LedgerAction:
    """What ``ledger apply`` did for one budget packet.

    ``action`` is ``wrote`` (FLAKE_CANDIDATE), ``deleted`` (STABLE_PASS with a
    row), ``untouched`` (anything else) or ``refused`` (a FLAKE_CANDIDATE that
    cannot name its parent commit, so no row can be written, or a
    ``budget.json`` whose packet disagrees with its own runs).
    """

    decision: BudgetDecision
    action: str
    test_id: str | None
    path: str | None
    """The row's file: written, deleted, or kept; None when no such file is or was there."""
    row: dict[str, object] | None
    note: str

    def to_json(self) -> dict[str, object]:
        """The JSON form printed by ``ledger apply --json``."""
        return {
            "test_id": self.test_id,
            "action": self.action,
            "path": self.path,
            "row": self.row,
            "note": self.note,
            "decision": self.decision.to_json(),
        }


def apply_budget(
    directory: str,
    packet: Mapping[str, object],
    *,
    today: dt.date,
    policy: Policy = DEFAULT_POLICY,
    signer: RecordSigner | None = None,
) -> LedgerAction:
    """Run :func:`flakecore.budget` on ``packet`` and change the ledger (docs/policies.md).

    ``packet`` is a budget packet, or the ``budget.json`` that ``budget-run``
    wrote, as it is (:func:`~flakecore.gate.seedrun.budget_evidence`: its
    packet counts only when it agrees with the record's own runs; otherwise
    the packet is refused and nothing changes).  The directory is created
    when missing.  Only ``FLAKE_CANDIDATE`` writes and only ``STABLE_PASS``
    deletes; a process error (``INSUFFICIENT_BUDGET``) and every rejecting
    code leave every file as it was.  With ``signer`` the row is written as
    its signed envelope.
    """
    # Only ``ledger apply`` needs the seed runner's reader (with the replay and the pool):
    # ``lease check`` and the lease loaders import this module without paying for it.
    from flakecore.gate.seedrun import budget_evidence  # noqa: PLC0415

    packet, refused = budget_evidence(packet, policy=policy)
    if refused is not None:
        test_id = packet.get("test_id")
        return LedgerAction(
            decision=refused,
            action="refused",
            test_id=test_id if isinstance(test_id, str) else None,
            path=None,
            row=None,
            note="ledger untouched: the packet's summary is not what its recorded runs give",
        )
    decision = budget(packet, policy=policy)
    test_id = packet.get("test_id") if isinstance(packet, Mapping) else None
    if decision.code is BudgetCode.FLAKE_CANDIDATE:
        assert isinstance(test_id, str)
        row = ledger_row(packet, today=today, policy=policy)
        if row is None:
            return LedgerAction(
                decision=decision,
                action="refused",
                test_id=test_id,
                path=None,
                row=None,
                note="no row written: the packet does not name opened_against (its parent commit)",
            )
        os.makedirs(directory, exist_ok=True)
        path = os.path.join(directory, record_file_name(test_id))
        replaced = os.path.lexists(path)
        write_atomic(path, stored_bytes(row, kind="ledger-row", signer=signer))
        return LedgerAction(
            decision=decision,
            action="wrote",
            test_id=test_id,
            path=path,
            row=row,
            note=("replaced the previous row" if replaced else "new row")
            + f"; expires_on {row['expires_on']}",
        )
    if not isinstance(test_id, str) or decision.code is BudgetCode.INSUFFICIENT_BUDGET:
        return LedgerAction(
            decision=decision,
            action="untouched",
            test_id=test_id if isinstance(test_id, str) else None,
            path=None,
            row=None,
            note="ledger untouched: a process error changes nothing",
        )
    path = os.path.join(directory, record_file_name(test_id))
    if decision.code is BudgetCode.STABLE_PASS:
        try:
            os.unlink(path)
        except FileNotFoundError:
            return LedgerAction(
                decision=decision,
                action="untouched",
                test_id=test_id,
                path=None,
                row=None,
                note="no row for this test to delete",
            )
        return LedgerAction(
            decision=decision,
            action="deleted",
            test_id=test_id,
            path=path,
            row=None,
            note="stable pass: the row for this test is deleted",
        )
    note = f"ledger untouched: {decision.code.value} opens no row"
    stored = os.path.lexists(path)
    if stored:
        try:
            existing: dict[str, object] | None = read_record(path)
        except InputError:
            existing = None
        if existing is None or row_expired(existing, today=today):
            note += " (the stored row for this test is expired or unreadable: it counts as absent)"
        else:
            note += " (the stored row for this test stays until it expires)"
    return LedgerAction(
        decision=decision,
        action="untouched",
        test_id=test_id,
        path=path if stored else None,
        row=None,
        note=note,
    )


def record_bytes(record: Mapping[str, object]) -> bytes:
    """A record as its file body: indented, ASCII-only JSON ending in a newline, no NaN."""
    text = json.dumps(record, indent=2, ensure_ascii=True, allow_nan=False)
    return (text + "\n").encode("ascii")
