"""Which stored records count as evidence (docs/trust.md): trusted keys and verdicts, as values.

The author of the patch under judgement can write every byte of the scored
checkout, so a lease, ledger row, freeze record, observation, run record or
packet found there proves nothing by being there.  It counts only when the
base revision holds the same bytes at the same path (it landed through
review), or when a key that the *trusted* configuration names signed it.
Every reader asks one of the two checks (:mod:`flakecore.gate.basetrust`,
:mod:`flakecore.signing`) and gets a :class:`TrustVerdict`: a value with a
closed :class:`~flakecore.codes.TrustReason`, never an exception and never a
silent skip, so a refusal can always say why.

No git and no cryptography here; the only file-system question is
:func:`inside` (is a path within the scored checkout?).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Final

import attrs

from flakecore.codes import TrustReason
from flakecore.errors import UsageError

__all__ = [
    "KEY_ID",
    "KEY_TYPE",
    "TRUSTING",
    "TrustVerdict",
    "TrustedKey",
    "inside",
    "refused",
    "require_other_signer",
]

#: The only key type this version trusts; a public key is written ``ed25519:<64 hex>``.
KEY_TYPE: Final = "ed25519"
#: A key id in ``[tool.flakecore.trust.keys]``: plain ASCII, so it prints and compares as itself.
KEY_ID: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_PUBLIC = re.compile(r"ed25519:([0-9a-f]{64})")
#: The reasons that make a record count.
TRUSTING: Final = frozenset(
    {TrustReason.BASE_IDENTICAL, TrustReason.SIGNED, TrustReason.OUTSIDE_CHECKOUT}
)


@attrs.frozen
class TrustedKey:
    """One public key the trusted configuration names, by its key id.

    Two ids for one key would let one signer pass for two runners, so key
    equality for "another signer" compares ``public``, never ``keyid``.
    """

    keyid: str
    public: str
    """The raw ed25519 public key, 64 lowercase hex digits."""

    @classmethod
    def parse(cls, keyid: object, text: object) -> TrustedKey:
        """A key from its configuration spelling ``ed25519:<64 hex>``, or :class:`UsageError`."""
        if not isinstance(keyid, str) or KEY_ID.fullmatch(keyid) is None:
            raise UsageError(
                f"[tool.flakecore.trust.keys] key id {keyid!r} must be 1-64 ASCII letters, "
                "digits, '.', '_' or '-', starting with a letter or digit"
            )
        match = _PUBLIC.fullmatch(text) if isinstance(text, str) else None
        if match is None:
            raise UsageError(
                f"[tool.flakecore.trust.keys] {keyid}: expected 'ed25519:<64 lowercase hex>' "
                "(the raw public key)"
            )
        return cls(keyid=keyid, public=match.group(1))

    def __str__(self) -> str:
        """The configuration spelling, ``ed25519:<hex>``."""
        return f"{KEY_TYPE}:{self.public}"


@attrs.frozen(kw_only=True)
class TrustVerdict:
    """Whether one stored record counts as evidence, and why.

    ``data`` holds the bytes that were judged (the reader uses these, never a
    second read of the file, which could have changed meanwhile; an unsigned
    record refused for its place keeps them too, so output can name its kind); ``record``
    the record itself when the check parsed it (the predicate of a signed
    record); ``signers`` the trusted keys whose signatures verified.
    """

    path: str
    reason: TrustReason
    detail: str
    data: bytes | None = attrs.field(default=None, repr=False)
    record: Mapping[str, object] | None = attrs.field(default=None, repr=False, eq=False)
    signers: tuple[TrustedKey, ...] = ()

    @property
    def trusted(self) -> bool:
        """True for a record base holds, a trusted key signed, or the job's own outside."""
        return self.reason in TRUSTING

    def __str__(self) -> str:
        """One line: ``PATH: REASON: detail``."""
        return f"{self.path}: {self.reason.value}: {self.detail}"

    def to_json(self) -> dict[str, object]:
        """A JSON-ready summary (no record bytes)."""
        return {
            "file": self.path,
            "trusted": self.trusted,
            "reason": self.reason.value,
            "detail": self.detail,
            "signers": [k.keyid for k in self.signers],
        }


def inside(path: str | os.PathLike[str], directory: str | os.PathLike[str]) -> bool:
    """Whether ``path`` lies in ``directory``, as written *or* with symbolic links resolved.

    Both views count: a link in the checkout that points out of it is still
    a file the patch chose, and a link outside that points in reaches bytes
    the patch wrote.
    """
    top = (Path(os.path.abspath(directory)), Path(os.path.realpath(directory)))
    here = (Path(os.path.abspath(path)), Path(os.path.realpath(path)))
    return any(p == t or t in p.parents for p in here for t in top)


def refused(path: str, reason: TrustReason, detail: str) -> TrustVerdict:
    """A refusal; ``reason`` must be one that does not trust."""
    if reason in TRUSTING:
        raise ValueError(f"{reason.value} trusts a record; a refusal needs another reason")
    return TrustVerdict(path=path, reason=reason, detail=detail)


def require_other_signer(clean: TrustVerdict, *, other_than: TrustVerdict) -> TrustVerdict:
    """``clean`` if a trusted key other than each signer of ``other_than`` signed it.

    A clean runner is a different key (docs/trust.md), not a different string: two nonces
    minted on one machine are one runner.  Both records must be signed (an
    unsigned local run leaves no key to tell the clean one apart from), and
    keys are compared by their public key, so one key listed under two ids
    is still one signer.
    """
    if not clean.trusted:
        return clean
    if clean.reason is not TrustReason.SIGNED:
        return refused(clean.path, TrustReason.NOT_SIGNED, "the clean run record is not signed")
    if other_than.reason is not TrustReason.SIGNED:
        return refused(
            clean.path,
            TrustReason.NOT_SIGNED,
            f"the local run record {other_than.path} is not signed by a trusted key, "
            "so no key tells the clean runner apart from it",
        )
    local = {k.public for k in other_than.signers}
    if not any(k.public not in local for k in clean.signers):
        ids = ", ".join(sorted({k.keyid for k in clean.signers}))
        return refused(
            clean.path,
            TrustReason.SAME_SIGNER,
            f"signed only by {ids}, which also signed the local run: one key is one runner",
        )
    return clean
