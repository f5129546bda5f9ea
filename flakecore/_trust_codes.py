"""Why a stored record counts as evidence, or not: :class:`TrustReason`.

It lives apart from :mod:`flakecore.codes` (which re-exports it) so that a
verb that judges only the caller's packets does not build it.
"""

from __future__ import annotations

import enum

__all__ = ["TrustReason"]


class TrustReason(str, enum.Enum):
    """Why a stored record counts as evidence, or why it does not (docs/trust.md).

    Three values trust a record; every other value refuses it.  A record
    the patch could have written counts only when base holds it byte for
    byte or a trusted key signed it; an unsigned record outside the scored
    checkout counts as the job's own output (its reader re-verifies it:
    docs/trust.md).
    """

    BASE_IDENTICAL = "BASE_IDENTICAL"  # trusted: byte-identical at the same path in base
    SIGNED = "SIGNED"  # trusted: a valid signature by a key the trusted configuration names
    OUTSIDE_CHECKOUT = "OUTSIDE_CHECKOUT"  # trusted: unsigned outside the checkout, the job's own
    NOT_IN_BASE = "NOT_IN_BASE"  # base has no file at this path: the diff adds it, unsigned
    CHANGED_SINCE_BASE = "CHANGED_SINCE_BASE"  # base holds other bytes here: changed, unsigned
    SYMLINK = "SYMLINK"  # reached through a symbolic link (checkout or base): not the same path
    NOT_A_FILE = "NOT_A_FILE"  # a directory, submodule (gitlink), FIFO, device ... not a file
    OUTSIDE_REPOSITORY = "OUTSIDE_REPOSITORY"  # the path leaves the repository
    NO_TRUSTED_KEYS = "NO_TRUSTED_KEYS"  # a signed record, but the trusted config names no key
    MALFORMED_ENVELOPE = "MALFORMED_ENVELOPE"  # not a DSSE envelope flakecore can read
    WRONG_PAYLOAD_TYPE = "WRONG_PAYLOAD_TYPE"  # payloadType is not the in-toto JSON type
    UNTRUSTED_KEY = "UNTRUSTED_KEY"  # no signature by a key id the trusted config names
    BAD_SIGNATURE = "BAD_SIGNATURE"  # a trusted key id, but the signature does not verify
    BAD_STATEMENT = "BAD_STATEMENT"  # the payload is not a well-formed in-toto Statement v1
    WRONG_PREDICATE_TYPE = "WRONG_PREDICATE_TYPE"  # predicateType is not flakecore's
    SUBJECT_MISMATCH = "SUBJECT_MISMATCH"  # the subject does not match the signed record
    INVALID_RECORD = "INVALID_RECORD"  # the signed record is not a valid record of its kind
    NOT_SIGNED = "NOT_SIGNED"  # a signer was required (a clean run; no base to compare), none
    SAME_SIGNER = "SAME_SIGNER"  # signed only by keys that also signed the other run
