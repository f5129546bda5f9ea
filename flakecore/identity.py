"""Identities (docs/trust.md): who owns, accepts or wrote a freeze, and which runner ran it.

Owners, acceptors, patch authors and runner ids are *plain*: printable ASCII
(U+0020..U+007E) with at least one character that is not a space.  Nothing
else is an identity, so a record that names one is incomplete:

- blank or whitespace-only (Unicode's whitespace, NBSP included) is *missing*;
- a control character (a newline in an owner), a format character (ZWSP,
  a lone U+200D), a filler that renders as nothing but is not a format
  character (U+3164, U+115F, U+034F, U+FE0F), or any other non-ASCII
  character (a Cyrillic U+043E for ``o`` in ``coding-agent``, U+2010 for
  ``-``) is not an identity.

"After NFKC" (docs/trust.md): NFKC changes no printable ASCII string, so a valid
identity is already its own NFKC form.  A character that NFKC would fold to
ASCII (fullwidth U+FF42 for ``b``, the ligature U+FB01, the Kelvin sign) is
refused rather than folded: the record must spell the identity it means, and
a validator in any language (``$defs/identity`` in the schemas, which has no
NFKC) gives the same answer.  A look-alike is therefore never a *different*
identity: it is no identity at all.

Two identities are the same when they are equal after case folding and with
spaces removed (:func:`same_identity`): ``Bot`` and ``bot `` are one identity
pretending to be two.  For text that is not an identity the comparison also
applies NFKC and drops whitespace and format characters, so a caller that
compares before validating still sees width, case and invisible-character
variants as one; only validation refuses the rest (Cyrillic, U+2010).

The runner id grammar is ``img:<image digest>+nonce:<16 hex>`` (README.md, evidence primitives): the
nonce is drawn fresh at job start, so two jobs on the same image are still
two runners; without a nameable image the identity says so honestly
(``img:local-uncontainerized``), which is not a pass.
"""

from __future__ import annotations

import importlib
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # for type checkers; at run time it loads on first use
    from flakecore._runner import RunnerId

__all__ = [
    "LOCAL_IMAGE",
    "RunnerId",
    "are_runner_ids",
    "identity_key",
    "identity_problem",
    "is_identity",
    "is_runner_id",
    "runner_id_problem",
    "same_identity",
    "same_runner",
]

#: The honest image name when the job does not run in a nameable image.
LOCAL_IMAGE = "local-uncontainerized"

#: The image grammar, compiled by ``re``'s cache when ``RunnerId.fresh`` first checks one.
_IMAGE = r"(?:sha256:[0-9a-f]{64}|[0-9a-f]{64}|local-uncontainerized)"
_RUNNER = re.compile(rf"img:(?P<image>{_IMAGE})\+nonce:(?P<nonce>[0-9a-f]{{16}})")
_RUNNER_GRAMMAR = "'img:<image digest>+nonce:<16 hex>'"
#: Two runner ids and one space between: the grammar holds no space, so the joined text
#: matches exactly when each id does (:func:`are_runner_ids`).
_ONE_RUNNER = rf"img:{_IMAGE}\+nonce:[0-9a-f]{{16}}"
_RUNNER_PAIR = re.compile(f"{_ONE_RUNNER} {_ONE_RUNNER}")


def identity_problem(value: object) -> str | None:
    """Why ``value`` is not an identity, as a phrase after the field name; None when it is one.

    ``"is missing or blank"`` for anything that is not a string with a
    non-whitespace character (callers refuse it as a missing field);
    otherwise the first character outside printable ASCII, by code point and
    position, so the one-line error shows what the eye cannot.
    """
    if not isinstance(value, str) or not value.strip():
        return "is missing or blank"
    if value.isascii() and value.isprintable():  # both C loops; the common case
        return None
    import unicodedata  # noqa: PLC0415 - only text outside printable ASCII is named

    at, char = next((i, c) for i, c in enumerate(value) if not " " <= c <= "~")
    name = unicodedata.name(char, unicodedata.category(char))
    return f"is not printable ASCII: U+{ord(char):04X} ({name}) at index {at}"


def is_identity(value: object) -> bool:
    """Whether ``value`` is a plain identity (printable ASCII, not blank)."""
    return identity_problem(value) is None


def runner_id_problem(value: object) -> str | None:
    """Why ``value`` is not a runner id (a phrase after the field name); None when it is one."""
    if not isinstance(value, str) or not value.strip():
        return "is missing or blank"
    if _RUNNER.fullmatch(value) is None:
        return f"is not a runner id {_RUNNER_GRAMMAR}"
    return None


def is_runner_id(value: object) -> bool:
    """Whether ``value`` follows the runner id grammar exactly (no case or space variants).

    :func:`runner_id_problem` finds nothing exactly then (a match is never blank).
    """
    return isinstance(value, str) and _RUNNER.fullmatch(value) is not None


def are_runner_ids(first: object, second: object) -> bool:
    """``is_runner_id(first) and is_runner_id(second)``: plain strings by one match of both.

    ``decide`` checks two ids a packet; one match over the joined text costs
    less than two (docs/performance.md, Output).
    """
    if type(first) is str and type(second) is str:
        return _RUNNER_PAIR.fullmatch(f"{first} {second}") is not None
    return is_runner_id(first) and is_runner_id(second)


def _fold_slow(text: str) -> str:
    import unicodedata  # noqa: PLC0415 - only text outside ASCII takes this path

    folded = unicodedata.normalize("NFKC", text).casefold()
    return "".join(ch for ch in folded if not ch.isspace() and unicodedata.category(ch) != "Cf")


def identity_key(text: str) -> str:
    """:func:`same_identity`'s key: NFKC, case folding, whitespace and format characters removed.

    ASCII text (every valid identity) takes a fast path with the same answer:
    NFKC leaves ASCII unchanged, ``casefold`` on ASCII is ``lower``, ASCII has
    no format characters, and ``str.split()`` splits on exactly the
    characters ``str.isspace`` names.
    """
    if text.isascii():
        return "".join(text.lower().split())
    return _fold_slow(text)


def same_identity(a: str, b: str) -> bool:
    """Whether two identities name the same owner, acceptor, author or runner.

    Compared after case folding and without spaces (and, for text that is
    not an identity, after NFKC and without invisible format characters):
    identities that differ only there are one identity pretending to be two,
    and must not vouch for each other.
    """
    return identity_key(a) == identity_key(b)


#: Runner ids are identities: the same comparison, under the name the decide policy uses.
same_runner = same_identity


def __getattr__(name: str) -> object:
    """:class:`RunnerId`, loaded on first use and then kept here.

    The class lives in :mod:`flakecore._runner`: a verb that only checks
    runner ids (``decide``) does not build it (docs/performance.md).
    """
    if name != "RunnerId":
        raise AttributeError(f"module 'flakecore.identity' has no attribute {name!r}")
    value = importlib.import_module("flakecore._runner").RunnerId
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
