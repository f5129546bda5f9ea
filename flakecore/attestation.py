"""Signed records as in-toto attestations: a DSSE envelope over an in-toto Statement v1.

Any in-toto tooling can read and verify what flakecore signs, because the
layers are the standard ones (docs/trust.md):

- the **envelope** (DSSE): ``payloadType`` exactly
  ``application/vnd.in-toto+json``, the payload in standard base64, and one
  signature per key, each with its ``keyid``;
- the **Statement** (``_type`` ``https://in-toto.io/Statement/v1``): the
  subject is the test id, with the canonical JSON digest of the record, and
  then every sha256 digest the record holds, named by its JSON pointer;
- the **predicate**: the record itself (a lease, a ledger row, a freeze
  record, a budget-run observation, a run record or a packet), under the
  predicate type :data:`PREDICATE_TYPE`, which flakecore owns.

This module only builds and reads those layers, strictly and without
cryptography (:mod:`flakecore.signing` signs and verifies).  Reading refuses
what a lenient reader would let through: an unknown field at any layer,
base64 that does not re-encode to the same text, a payload with duplicate
keys, a subject that the record does not reproduce exactly, a record of
another kind than the reader asked for.
"""

from __future__ import annotations

import base64
import binascii
import functools
from collections.abc import Mapping
from typing import Final, TypeAlias

import attrs

from flakecore._fields import format_version_ok, is_nonblank
from flakecore.codes import TrustReason
from flakecore.digest import canonical_json_sha256, is_digest
from flakecore.errors import InputError, Untrusted
from flakecore.jsonio import canonical_bytes, loads_strict

__all__ = [
    "MAX_SIGNATURES",
    "PAYLOAD_TYPE",
    "PREDICATE_TYPE",
    "SIGNABLE_KINDS",
    "STATEMENT_TYPE",
    "Envelope",
    "Kinds",
    "Opened",
    "Untrusted",
    "is_envelope",
    "open_statement",
    "parse_envelope",
    "statement",
    "statement_bytes",
    "subjects",
]

#: DSSE ``payloadType`` of an in-toto Statement in JSON.
PAYLOAD_TYPE: Final = "application/vnd.in-toto+json"
#: ``_type`` of an in-toto Statement, version 1.
STATEMENT_TYPE: Final = "https://in-toto.io/Statement/v1"
#: flakecore's predicate type: "the predicate is one flakecore record", version 1.
#: ``.invalid`` is reserved (RFC 2606), so the name can belong to no one else; it
#: never resolves and nothing is ever fetched from it.
PREDICATE_TYPE: Final = "https://flakecore.invalid/attestation/record/v1"
#: Record kinds that can be signed: what a later step reads back as evidence.
SIGNABLE_KINDS: Final = (
    "admit-packet",
    "budget-packet",
    "budget-run",
    "classify-report",
    "decide-packet",
    "freeze-record",
    "lease",
    "ledger-row",
    "run-record",
)
#: More signatures than this on one record is not an envelope flakecore wrote.
MAX_SIGNATURES: Final = 16
#: The kind a reader asks for, or the kinds it accepts (one directory holds leases,
#: ledger rows and decide packets): the record's own ``format`` says which it is.
Kinds: TypeAlias = str | tuple[str, ...]
_ENVELOPE_KEYS: Final = frozenset({"payload", "payloadType", "signatures"})
_SIGNATURE_KEYS: Final = frozenset({"keyid", "sig"})
_STATEMENT_KEYS: Final = frozenset({"_type", "subject", "predicateType", "predicate"})


@attrs.frozen(kw_only=True)
class Envelope:
    """A DSSE envelope read strictly: the payload bytes and each signature's key id and bytes."""

    payload: bytes = attrs.field(repr=False)
    payload_type: str
    signatures: tuple[tuple[str, bytes], ...] = attrs.field(repr=False)

    @property
    def keyids(self) -> tuple[str, ...]:
        """The key ids the signatures claim, in envelope order."""
        return tuple(keyid for keyid, _ in self.signatures)


@attrs.frozen(kw_only=True)
class Opened:
    """A Statement that passed every structural check: the record and its test id."""

    record: dict[str, object] = attrs.field(eq=False)
    test_id: str


def _record_test_id(record: Mapping[str, object], test_id: str | None) -> str:
    """The test id a statement names: the record's own ``test_id``, or the one given."""
    own = record.get("test_id")
    if own is not None and not is_nonblank(own):
        raise ValueError("the record's test_id is blank or not a string")
    if own is not None and test_id is not None and own != test_id:
        raise ValueError(f"the record is for test {own!r}, not {test_id!r}")
    chosen = own if own is not None else test_id
    if not is_nonblank(chosen):
        raise ValueError("a signed record needs a test id (the record has none; pass one)")
    assert isinstance(chosen, str)
    return chosen


#: JSON's other plain values: nothing below them to walk.
_SCALARS: Final = frozenset({bool, int, float})


def _digests(value: object, pointer: str, found: list[tuple[str, str]]) -> None:
    """Append every sha256 digest in a JSON value, with its JSON pointer, keys in sorted order.

    Depth first, a container's entries in order (a mapping's by sorted key);
    one recursive call per container rather than a generator per value, and
    a plain string or number entry judged in place, since every signed
    record is walked when it is verified.
    """
    if is_digest(value):
        assert isinstance(value, str)
        found.append((pointer, value))
        return
    if isinstance(value, Mapping):
        entries: list[tuple[object, object]] = [(key, value[key]) for key in sorted(value)]
    elif isinstance(value, list):
        entries = list(enumerate(value))
    else:
        return
    for label, item in entries:
        kind = type(item)
        if kind is str:  # a plain string is a digest (64 characters) or nothing
            if len(item) != 64 or not is_digest(item):  # type: ignore[arg-type]
                continue
        elif item is None or kind in _SCALARS:
            continue
        # The entry's pointer, only for a digest or a container (an index escapes to itself).
        where = pointer + "/" + str(label).replace("~", "~0").replace("/", "~1")
        if kind is str:
            found.append((where, item))  # type: ignore[arg-type]
        else:
            _digests(item, where, found)


def subjects(record: Mapping[str, object], test_id: str) -> list[dict[str, object]]:
    """The Statement subject for ``record``: the test, then each evidence digest.

    The first entry is named by the test id and carries the record's
    canonical JSON digest; each further entry is a sha256 digest the record
    holds (a pinned fixture, a parent digest, a property digest ...), named by
    its JSON pointer (``/pinned_sha256``, ``/parent/digest``).  A verifier
    recomputes this list from the signed record and compares it exactly.
    """
    first: dict[str, object] = {
        "name": test_id,
        "digest": {"sha256": canonical_json_sha256(dict(record))},
    }
    found: list[tuple[str, str]] = []
    _digests(record, "", found)
    rest: list[dict[str, object]] = [{"name": p, "digest": {"sha256": d}} for p, d in found]
    return [first, *rest]


@functools.lru_cache(maxsize=64)
def _formats(kinds: tuple[str, ...]) -> frozenset[str]:
    """The ``format`` of each kind (a reader asks with the same kinds for every record)."""
    return frozenset(f"flakecore.{k}" for k in kinds)


def _kind_problem(record: Mapping[str, object], kind: Kinds) -> str | None:
    kinds = (kind,) if isinstance(kind, str) else kind
    unknown = [k for k in kinds if k not in SIGNABLE_KINDS]
    if unknown or not kinds:
        what = repr(unknown[0]) if unknown else "no kind"
        return f"{what} is not a kind of record flakecore signs ({', '.join(SIGNABLE_KINDS)})"
    name = record.get("format")
    if not isinstance(name, str) or name not in _formats(tuple(kinds)):
        expected = " or ".join(f"'flakecore.{k}'" for k in kinds)
        return f"format is {name!r}, expected {expected}: a signed record names its kind"
    if not format_version_ok(record.get("format_version")):
        return "format_version is missing or not a 1.x version"
    return None


def statement(
    record: Mapping[str, object], *, kind: str, test_id: str | None = None
) -> dict[str, object]:
    """The in-toto Statement v1 for one record; :class:`ValueError` if it cannot be signed.

    ``test_id`` is needed only for a record that does not name its test
    (a freeze record, a run record without its binding); a record that
    names another test is refused.
    """
    problem = _kind_problem(record, kind)
    if problem is not None:
        raise ValueError(problem)
    name = _record_test_id(record, test_id)
    return {
        "_type": STATEMENT_TYPE,
        "subject": subjects(record, name),
        "predicateType": PREDICATE_TYPE,
        "predicate": dict(record),
    }


def statement_bytes(value: Mapping[str, object]) -> bytes:
    """The payload bytes of a Statement: canonical JSON, so one record signs to one payload."""
    return canonical_bytes(value)


def _b64(text: object, what: str) -> bytes:
    """Standard base64 with padding, and only the one spelling that re-encodes to itself."""
    if not isinstance(text, str) or not text.isascii():
        raise Untrusted(TrustReason.MALFORMED_ENVELOPE, f"{what} is not a base64 string")
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise Untrusted(TrustReason.MALFORMED_ENVELOPE, f"{what} is not standard base64") from None
    if base64.b64encode(data).decode("ascii") != text:
        raise Untrusted(TrustReason.MALFORMED_ENVELOPE, f"{what} is not canonical base64")
    return data


def is_envelope(value: object) -> bool:
    """Whether a parsed document claims to be an envelope (no record has ``payloadType``)."""
    return isinstance(value, Mapping) and "payloadType" in value


def parse_envelope(value: object) -> Envelope:
    """A DSSE envelope, read strictly; :class:`Untrusted` names what is wrong.

    Exactly ``payload``, ``payloadType`` and ``signatures``; 1 to
    :data:`MAX_SIGNATURES` signatures, each exactly ``keyid`` and ``sig``, no
    key id twice.  The payload type is checked after the shape, so a wrong
    one gets its own reason.  Nothing in the payload is read here: DSSE
    verifies the signature before the payload is parsed.
    """
    if not isinstance(value, Mapping):
        raise Untrusted(TrustReason.MALFORMED_ENVELOPE, "an envelope must be a JSON object")
    if set(value) != _ENVELOPE_KEYS:
        extra = sorted(set(value) - _ENVELOPE_KEYS)
        missing = sorted(_ENVELOPE_KEYS - set(value))
        what = f"unknown field {extra[0]!r}" if extra else f"{missing[0]} is missing"
        raise Untrusted(TrustReason.MALFORMED_ENVELOPE, what)
    payload = _b64(value["payload"], "payload")
    signatures = value["signatures"]
    if not isinstance(signatures, list) or not 1 <= len(signatures) <= MAX_SIGNATURES:
        raise Untrusted(
            TrustReason.MALFORMED_ENVELOPE,
            f"signatures must be a list of 1 to {MAX_SIGNATURES} signatures",
        )
    parsed: list[tuple[str, bytes]] = []
    for i, entry in enumerate(signatures):
        if not isinstance(entry, Mapping) or set(entry) != _SIGNATURE_KEYS:
            raise Untrusted(
                TrustReason.MALFORMED_ENVELOPE, f"signatures[{i}] must be exactly keyid and sig"
            )
        keyid = entry["keyid"]
        if not isinstance(keyid, str) or not keyid.isprintable() or not keyid.strip():
            raise Untrusted(
                TrustReason.MALFORMED_ENVELOPE, f"signatures[{i}].keyid is not a key id"
            )
        sig = _b64(entry["sig"], f"signatures[{i}].sig")
        if not sig:
            raise Untrusted(TrustReason.MALFORMED_ENVELOPE, f"signatures[{i}].sig is empty")
        parsed.append((keyid, sig))
    keyids = [k for k, _ in parsed]
    if len(set(keyids)) != len(keyids):
        raise Untrusted(TrustReason.MALFORMED_ENVELOPE, "a key id signs twice")
    payload_type = value["payloadType"]
    if payload_type != PAYLOAD_TYPE:
        raise Untrusted(
            TrustReason.WRONG_PAYLOAD_TYPE,
            f"payloadType is {payload_type!r}, expected {PAYLOAD_TYPE!r}",
        )
    return Envelope(payload=payload, payload_type=PAYLOAD_TYPE, signatures=tuple(parsed))


def _subject_list(value: object) -> list[Mapping[str, object]]:
    if not isinstance(value, list) or not value:
        raise Untrusted(TrustReason.BAD_STATEMENT, "subject must be a non-empty list")
    for i, entry in enumerate(value):
        digest = entry.get("digest") if isinstance(entry, Mapping) else None
        well_formed = (
            isinstance(entry, Mapping)
            and set(entry) == {"name", "digest"}
            and is_nonblank(entry["name"])
            and isinstance(digest, Mapping)
            and set(digest) == {"sha256"}
            and is_digest(digest["sha256"])
        )
        if not well_formed:
            raise Untrusted(
                TrustReason.BAD_STATEMENT,
                f"subject[{i}] must be exactly a non-blank name and a sha256 digest",
            )
    return value


def open_statement(payload: bytes, *, kind: Kinds, test_id: str | None = None) -> Opened:
    """The record a verified payload carries, after every structural check of the Statement.

    In order: strict JSON (no duplicate keys) holding exactly the four
    Statement fields; ``_type`` exact; ``predicateType`` exact (its own
    reason); a well-formed subject; a predicate of ``kind`` (``format``
    ``flakecore.<kind>``, 1.x; with several kinds, whichever its ``format``
    names); and a subject equal to the one the record
    itself gives, for ``test_id`` when the reader names one.
    """
    try:
        value = loads_strict(payload, source="payload")
    except InputError as exc:
        raise Untrusted(TrustReason.BAD_STATEMENT, f"the payload is not JSON: {exc}") from None
    if not isinstance(value, Mapping) or set(value) != _STATEMENT_KEYS:
        fields = sorted(value) if isinstance(value, Mapping) else "not an object"
        raise Untrusted(
            TrustReason.BAD_STATEMENT,
            f"a Statement has exactly _type, subject, predicateType and predicate (got {fields})",
        )
    if value["_type"] != STATEMENT_TYPE:
        raise Untrusted(
            TrustReason.BAD_STATEMENT, f"_type is {value['_type']!r}, expected {STATEMENT_TYPE!r}"
        )
    if value["predicateType"] != PREDICATE_TYPE:
        raise Untrusted(
            TrustReason.WRONG_PREDICATE_TYPE,
            f"predicateType is {value['predicateType']!r}, expected {PREDICATE_TYPE!r}",
        )
    claimed = _subject_list(value["subject"])
    record = value["predicate"]
    if not isinstance(record, dict):
        raise Untrusted(TrustReason.INVALID_RECORD, "the predicate is not a JSON object")
    problem = _kind_problem(record, kind)
    if problem is not None:
        raise Untrusted(TrustReason.INVALID_RECORD, problem)
    name = claimed[0]["name"]
    assert isinstance(name, str)
    try:
        named = _record_test_id(record, name)
    except ValueError as exc:
        raise Untrusted(TrustReason.SUBJECT_MISMATCH, str(exc)) from None
    if test_id is not None and named != test_id:
        raise Untrusted(
            TrustReason.SUBJECT_MISMATCH, f"the statement is for test {named!r}, not {test_id!r}"
        )
    if claimed != subjects(record, named):
        raise Untrusted(
            TrustReason.SUBJECT_MISMATCH,
            "the subject digests are not the signed record's (its canonical digest and every "
            "sha256 it holds)",
        )
    return Opened(record=record, test_id=named)
