"""Environment variables flakecore gives a meaning to, importable without the code that reads them.

The runtime withholds the signing key from every child process; it needs
the name, not the signing machinery (docs/performance.md: the git layer
loads no cryptography).  :func:`child_env` is here, not in the runtime, so
the git layer can start git without loading what runs a command under test.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Final

__all__ = ["SIGNING_KEY_ENV", "child_env"]

#: The environment variable CI sets to the PEM private key a writer signs with.  Every
#: attempt's environment loses it (:func:`child_env`).
SIGNING_KEY_ENV: Final = "FLAKECORE_SIGNING_KEY"
#: Variables that point git at another repository; a replay must see only its worktree.
_GIT_REDIRECTS: Final = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
)
#: Variables no child process gets: the git redirects and the signing key.
_WITHHELD: Final = frozenset({*_GIT_REDIRECTS, SIGNING_KEY_ENV})


def child_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Our environment without variables that would point git elsewhere, and without the key.

    The signing key (:data:`SIGNING_KEY_ENV`) never reaches a command under
    test or git; docs/trust.md says what this does not stop (a process of the
    same user reads ``/proc/<pid>/environ``).
    """
    env = {k: v for k, v in os.environ.items() if k not in _WITHHELD}
    env.update(extra or {})
    return env
