"""The parsed runner identity, :class:`RunnerId` (``flakecore.identity.RunnerId``).

Kept apart from :mod:`flakecore.identity`, which loads it on first use: a
verb that only checks runner ids (``decide``) does not build the class
(docs/performance.md).  The grammar is the identity module's.
"""

from __future__ import annotations

import os
import re

import attrs

from flakecore.identity import _IMAGE, _RUNNER, _RUNNER_GRAMMAR, LOCAL_IMAGE

__all__ = ["RunnerId"]


@attrs.frozen
class RunnerId:
    """A parsed runner identity."""

    image: str
    nonce: str

    @classmethod
    def fresh(cls, image_digest: str | None = None) -> RunnerId:
        """A new identity for this job; ``image_digest`` None means uncontainerized."""
        image = LOCAL_IMAGE if image_digest is None else image_digest.strip()
        if re.fullmatch(_IMAGE, image) is None:
            raise ValueError(
                f"image digest {image!r} is not 'sha256:<64 hex>', '<64 hex>' or {LOCAL_IMAGE!r}"
            )
        return cls(image=image, nonce=os.urandom(8).hex())  # secrets.token_hex(8)

    @classmethod
    def parse(cls, text: str) -> RunnerId:
        """Parse ``img:<digest>+nonce:<16 hex>``; raise ``ValueError`` otherwise."""
        m = _RUNNER.fullmatch(text)
        if m is None:
            raise ValueError(f"{text[:80]!r} is not {_RUNNER_GRAMMAR}")
        return cls(image=m["image"], nonce=m["nonce"])

    @property
    def containerized(self) -> bool:
        """False for the honest local fallback."""
        return self.image != LOCAL_IMAGE

    def __str__(self) -> str:
        return f"img:{self.image}+nonce:{self.nonce}"
