"""Runner identities: ``img:<image digest>+nonce:<16 hex>`` (SPEC 2).

The nonce is drawn fresh at job start, so two jobs on the same image are
still two runners; without a nameable image the identity says so honestly
(``img:local-uncontainerized``), which is not a pass.
"""

from __future__ import annotations

import re
import secrets
import unicodedata

import attrs

__all__ = ["LOCAL_IMAGE", "RunnerId", "same_runner"]

#: The honest image name when the job does not run in a nameable image.
LOCAL_IMAGE = "local-uncontainerized"

_IMAGE = re.compile(r"(?:sha256:[0-9a-f]{64}|[0-9a-f]{64}|local-uncontainerized)")
_RUNNER = re.compile(r"img:(?P<image>[^+\s]+)\+nonce:(?P<nonce>[0-9a-f]{16})")


@attrs.frozen
class RunnerId:
    """A parsed runner identity."""

    image: str
    nonce: str

    @classmethod
    def fresh(cls, image_digest: str | None = None) -> RunnerId:
        """A new identity for this job; ``image_digest`` None means uncontainerized."""
        image = LOCAL_IMAGE if image_digest is None else image_digest.strip()
        if _IMAGE.fullmatch(image) is None:
            raise ValueError(
                f"image digest {image!r} is not 'sha256:<64 hex>', '<64 hex>' or {LOCAL_IMAGE!r}"
            )
        return cls(image=image, nonce=secrets.token_hex(8))

    @classmethod
    def parse(cls, text: str) -> RunnerId:
        """Parse ``img:<digest>+nonce:<16 hex>``; raise ``ValueError`` otherwise."""
        m = _RUNNER.fullmatch(text)
        if m is None or _IMAGE.fullmatch(m["image"]) is None:
            raise ValueError(f"{text[:80]!r} is not 'img:<image digest>+nonce:<16 hex>'")
        return cls(image=m["image"], nonce=m["nonce"])

    @property
    def containerized(self) -> bool:
        """False for the honest local fallback."""
        return self.image != LOCAL_IMAGE

    def __str__(self) -> str:
        return f"img:{self.image}+nonce:{self.nonce}"


def _fold(text: str) -> str:
    folded = unicodedata.normalize("NFKC", text).casefold()
    return "".join(ch for ch in folded if not ch.isspace() and unicodedata.category(ch) != "Cf")


def same_runner(a: str, b: str) -> bool:
    """Whether two runner ids name the same runner.

    Compared after Unicode NFKC, case folding and removal of whitespace and
    invisible format characters: ids that differ only there are one runner
    pretending to be two, and must not vouch for each other.
    """
    return _fold(a) == _fold(b)
