"""Sign records and verify signed records, with securesystemslib (the ``sign`` extra).

A record that the diff under judgement adds or changes counts only when a
key the *trusted* configuration names signed it (docs/trust.md).
The envelope is DSSE over an in-toto Statement v1 (:mod:`flakecore.attestation`),
so in-toto tooling verifies it too.  The cryptography is securesystemslib's
(``CryptoSigner``, ``SSlibKey``, ``securesystemslib.dsse.Envelope``; ed25519
through pyca/cryptography): nothing here hand-rolls a signature, a hash of a
key, or the DSSE pre-authentication encoding.

securesystemslib is imported lazily, in :func:`_lib` only, so ``import
flakecore`` (and this module) works without the extra; a signing or
verifying call without it raises :class:`~flakecore.errors.MissingExtra`.

Private keys come from a file or an environment variable that CI provides,
never from the scored checkout: a key file inside it is refused, because the
patch could have put its own key there.  Verification follows DSSE's order:
the envelope's shape and payload type, then the signature over the payload
bytes, and only then the payload is parsed.
"""

from __future__ import annotations

import functools
import importlib
import os
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Final

import attrs

from flakecore._env import SIGNING_KEY_ENV
from flakecore.attestation import (
    PAYLOAD_TYPE,
    Kinds,
    Untrusted,
    open_statement,
    parse_envelope,
    statement,
    statement_bytes,
)
from flakecore.codes import TrustReason
from flakecore.errors import InputError, MissingExtra, UsageError
from flakecore.files import read_bytes
from flakecore.jsonio import loads_strict
from flakecore.trust import KEY_ID, TrustedKey, TrustVerdict, inside, refused

__all__ = [
    "SIGNING_KEY_ENV",
    "RecordProblems",
    "RecordSigner",
    "load_signer",
    "sign_record",
    "verify_signed",
]

#: A PEM private key is a few hundred bytes; anything this big is not one.
_MAX_KEY_BYTES: Final = 64 * 1024
#: What the missing-extra error says the feature is.
_FEATURE: Final = "signing and verifying records"
_ED25519: Final = "ed25519"

#: A reader's own check of a record of its kind: every reason it is invalid (empty: valid).
RecordProblems = Callable[[Mapping[str, object]], Sequence[str]]


@functools.cache
def _lib() -> types.SimpleNamespace:
    """securesystemslib and the pieces of cryptography it signs with, or :class:`MissingExtra`.

    Built once (a failed import is not cached: it raises every time).
    """
    try:
        dsse = importlib.import_module("securesystemslib.dsse")
        exceptions = importlib.import_module("securesystemslib.exceptions")
        signer = importlib.import_module("securesystemslib.signer")
        crypto_errors = importlib.import_module("cryptography.exceptions")
        ed25519 = importlib.import_module("cryptography.hazmat.primitives.asymmetric.ed25519")
        serialization = importlib.import_module("cryptography.hazmat.primitives.serialization")
    except ImportError as exc:
        top = (exc.name or "").partition(".")[0] or None  # the package to install, not a submodule
        raise MissingExtra("sign", needed_by=_FEATURE, name=top) from exc
    return types.SimpleNamespace(
        CryptoSigner=signer.CryptoSigner,
        Ed25519PrivateKey=ed25519.Ed25519PrivateKey,
        Envelope=dsse.Envelope,
        Signature=signer.Signature,
        SSlibKey=signer.SSlibKey,
        UnsupportedAlgorithm=crypto_errors.UnsupportedAlgorithm,
        UnverifiedSignatureError=exceptions.UnverifiedSignatureError,
        load_pem_private_key=serialization.load_pem_private_key,
    )


@attrs.frozen
class RecordSigner:
    """A private key loaded for signing, and the trusted-key entry it answers to.

    ``key`` is what the trusted configuration must list for a verifier to
    accept this signer: ``[tool.flakecore.trust.keys] <keyid> = "<key>"``.
    """

    key: TrustedKey
    signer: object = attrs.field(repr=False)
    """The securesystemslib ``Signer`` (a ``CryptoSigner``) that signs."""


def _key_bytes(
    key_file: str | None, key_env: str | None, checkout: str | os.PathLike[str]
) -> tuple[bytes, str]:
    if (key_file is None) == (key_env is None):
        raise UsageError(
            "a signing key comes from exactly one of a key file or an environment variable"
        )
    if key_file is not None:
        if inside(key_file, checkout):
            raise UsageError(
                f"{key_file}: the signing key is inside the scored checkout, where the patch "
                "could have written it; CI keeps keys outside it (a secret, a file it creates)"
            )
        return read_bytes(key_file, _MAX_KEY_BYTES), key_file
    assert key_env is not None
    text = os.environ.get(key_env, "")
    if not text.strip():
        raise UsageError(f"environment variable {key_env} holds no signing key")
    return text.encode("utf-8", "surrogateescape"), f"${key_env}"


def load_signer(
    *,
    keyid: str,
    checkout: str | os.PathLike[str],
    key_file: str | None = None,
    key_env: str | None = None,
) -> RecordSigner:
    """An ed25519 signer from an unencrypted PEM (PKCS#8) private key.

    The key comes from ``key_file`` (refused when it lies inside
    ``checkout``, as written or through a symbolic link) or from the
    environment variable ``key_env``; ``keyid`` is the id the trusted
    configuration lists its public key under.
    """
    if KEY_ID.fullmatch(keyid) is None:
        raise UsageError(f"key id {keyid!r} must be 1-64 ASCII letters, digits, '.', '_' or '-'")
    data, source = _key_bytes(key_file, key_env, checkout)
    if len(data) > _MAX_KEY_BYTES:
        raise InputError(f"larger than {_MAX_KEY_BYTES} bytes: not a private key", source=source)
    lib = _lib()
    try:
        private = lib.load_pem_private_key(data, password=None)
    except (ValueError, TypeError, lib.UnsupportedAlgorithm):
        raise InputError(
            "not an unencrypted PEM private key (PKCS#8, e.g. openssl genpkey -algorithm ed25519)",
            source=source,
        ) from None
    if not isinstance(private, lib.Ed25519PrivateKey):
        raise InputError(f"not an ed25519 key: only {_ED25519} keys are trusted", source=source)
    public = lib.SSlibKey.from_crypto(private.public_key(), keyid, _ED25519)
    signer = lib.CryptoSigner(private, public)
    return RecordSigner(key=TrustedKey(keyid=keyid, public=public.keyval["public"]), signer=signer)


def sign_record(
    record: Mapping[str, object], *, kind: str, signer: RecordSigner, test_id: str | None = None
) -> dict[str, object]:
    """The DSSE envelope (as JSON data) of one record, signed by ``signer``.

    The record must name its kind (``format`` ``flakecore.<kind>``, 1.x) and
    its test (its own ``test_id``, or ``test_id`` here); the payload is the
    Statement in canonical JSON.  :class:`UsageError` when it cannot be signed.
    """
    try:
        value = statement(record, kind=kind, test_id=test_id)
    except ValueError as exc:
        raise UsageError(f"cannot sign this {kind} record: {exc}") from None
    envelope = _lib().Envelope(statement_bytes(value), PAYLOAD_TYPE, {})
    envelope.sign(signer.signer)
    data: dict[str, object] = envelope.to_dict()
    return data


@functools.cache
def _public_key(key: TrustedKey) -> object:
    """securesystemslib's ``SSlibKey`` for a trusted key: a value, built once per key."""
    return _lib().SSlibKey(key.keyid, _ED25519, _ED25519, {"public": key.public})


def _verified_signers(
    payload: bytes, signatures: Sequence[tuple[str, bytes]], keys: Sequence[TrustedKey]
) -> tuple[TrustedKey, ...]:
    """Every trusted key whose signature verifies; :class:`Untrusted` when any claimed one fails.

    A signature under a key id the configuration does not name is ignored
    (anyone may add one); a signature that claims a trusted key id and does
    not verify refuses the whole record.
    """
    lib = _lib()
    trusted = {k.keyid: k for k in keys}
    claimed = [(keyid, sig) for keyid, sig in signatures if keyid in trusted]
    if not claimed:
        named = ", ".join(keyid for keyid, _ in signatures)
        raise Untrusted(
            TrustReason.UNTRUSTED_KEY,
            f"signed by {named}: no key the trusted configuration names",
        )
    signers: list[TrustedKey] = []
    for keyid, sig in claimed:
        key = trusted[keyid]
        envelope = lib.Envelope(payload, PAYLOAD_TYPE, {keyid: lib.Signature(keyid, sig.hex())})
        try:
            envelope.verify([_public_key(key)], 1)
        except (lib.UnverifiedSignatureError, ValueError):
            raise Untrusted(
                TrustReason.BAD_SIGNATURE,
                f"the signature by {keyid} does not verify: the payload was changed or "
                "another key signed it",
            ) from None
        signers.append(key)
    return tuple(signers)


def verify_signed(
    data: bytes,
    *,
    keys: Sequence[TrustedKey],
    kind: Kinds,
    check: RecordProblems,
    test_id: str | None = None,
    path: str = "<input>",
    parsed: Mapping[str, object] | None = None,
) -> TrustVerdict:
    """Whether a signed record (an envelope's bytes) counts, as a :class:`TrustVerdict`.

    Counts only when every step holds, in this order: a trusted key is
    configured at all; the envelope is well formed and its payload type is
    exactly in-toto's; a signature by a key id in ``keys`` verifies (and no
    signature claiming a trusted id fails); the payload is a well-formed
    Statement v1 with flakecore's predicate type; the predicate is a
    ``kind`` record (or of whichever of several kinds its ``format``
    names) whose subject digests are its own (for ``test_id`` when
    given); and ``check`` -- the reader's own check of a record of this
    kind -- finds nothing wrong.  ``keys`` must come from the trusted
    configuration, never from the checkout.  ``parsed`` is ``data`` as
    :func:`~flakecore.jsonio.loads_strict` decoded it, from a caller that
    looked at it first (it is not decoded again).
    """
    if not keys:
        return refused(
            path,
            TrustReason.NO_TRUSTED_KEYS,
            "a signed record, but the trusted configuration names no key "
            "([tool.flakecore.trust.keys] in base)",
        )
    try:
        value = loads_strict(data, source=path) if parsed is None else parsed
        envelope = parse_envelope(value)
        signers = _verified_signers(envelope.payload, envelope.signatures, keys)
        opened = open_statement(envelope.payload, kind=kind, test_id=test_id)
    except InputError as exc:
        return refused(path, TrustReason.MALFORMED_ENVELOPE, f"not JSON: {exc.message}")
    except Untrusted as exc:
        return refused(path, exc.reason, exc.detail)
    problems = list(check(opened.record))
    if problems:
        return refused(path, TrustReason.INVALID_RECORD, "; ".join(problems))
    return TrustVerdict(
        path=path,
        reason=TrustReason.SIGNED,
        detail=f"signed by {', '.join(k.keyid for k in signers)}",
        data=data,
        record=opened.record,
        signers=signers,
    )
