"""Environment variables flakecore gives a meaning to, importable without the code that reads them.

The runtime withholds the signing key from every child process; it needs
the name, not the signing machinery (docs/performance.md: the git layer
loads no cryptography).
"""

from __future__ import annotations

from typing import Final

__all__ = ["SIGNING_KEY_ENV"]

#: The environment variable CI sets to the PEM private key a writer signs with.  Every
#: attempt's environment loses it (:func:`flakecore.gate.runtime.child_env`).
SIGNING_KEY_ENV: Final = "FLAKECORE_SIGNING_KEY"
