"""Signing what a verb writes: ``--signing-key FILE`` or ``$FLAKECORE_SIGNING_KEY``, and the key id.

A writer signs when it is given a key: the record is then stored as a DSSE
envelope that every reader verifies against the trusted configuration's
keys (docs/trust.md).  The key comes from CI -- a file outside the
checkout or the environment variable -- never from the checkout, and the
variable is withheld from every command flakecore runs.
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING, Final

from flakecore._env import SIGNING_KEY_ENV
from flakecore.cli._common import warn
from flakecore.cli._config import Configured
from flakecore.errors import UsageError

if TYPE_CHECKING:
    from flakecore.signing import RecordSigner

__all__ = ["KEY_ID_ENV", "add_signing_arguments", "signer_from_args"]

#: The environment variable naming the signing key's id (when ``--key-id`` is not given).
KEY_ID_ENV: Final = "FLAKECORE_KEY_ID"


def add_signing_arguments(parser: argparse.ArgumentParser) -> None:
    """``--signing-key FILE`` and ``--key-id ID``."""
    group = parser.add_argument_group("signing (docs/trust.md)")
    group.add_argument(
        "--signing-key",
        metavar="FILE",
        help=f"sign what this verb writes with this ed25519 PEM key, kept outside the checkout "
        f"(default: ${SIGNING_KEY_ENV} when set)",
    )
    group.add_argument(
        "--key-id",
        metavar="ID",
        help=f"the id [tool.flakecore.trust.keys] lists the key under (default: ${KEY_ID_ENV})",
    )


def signer_from_args(args: argparse.Namespace, configured: Configured) -> RecordSigner | None:
    """The signer the flags or the environment name, or None: then records are written plain.

    A key whose public half the trusted configuration does not list still
    signs, with a warning: nothing it signs will count until base lists it.
    """
    key_file: str | None = args.signing_key
    from_env = bool(os.environ.get(SIGNING_KEY_ENV, "").strip())
    if key_file is None and not from_env:
        if args.key_id is not None:
            raise UsageError(
                f"--key-id without a key: give --signing-key FILE or ${SIGNING_KEY_ENV}"
            )
        return None
    keyid = args.key_id if args.key_id is not None else os.environ.get(KEY_ID_ENV, "")
    if not keyid.strip():
        raise UsageError(
            f"a signing key needs its id: --key-id ID or ${KEY_ID_ENV} (the name "
            "[tool.flakecore.trust.keys] lists its public key under)"
        )
    from flakecore.signing import load_signer  # noqa: PLC0415 - only a writer with a key signs

    signer = load_signer(
        keyid=keyid,
        checkout=configured.trust.checkout,
        key_file=key_file,
        key_env=None if key_file is not None else SIGNING_KEY_ENV,
    )
    if signer.key.public not in {k.public for k in configured.trust.keys}:
        warn(
            f"the signing key {keyid} ({signer.key}) is not a trusted key of this policy: "
            "records it signs count only once [tool.flakecore.trust.keys] in base lists it"
        )
    return signer
