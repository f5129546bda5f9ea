"""``--signing-key`` for the verbs that write records: sign them when CI gives a key.

The key comes from a file CI provides (``--signing-key FILE``, refused inside
the scored checkout) or from an environment variable (``--signing-key-env
NAME``, the PEM text), with ``--key-id`` naming the id the trusted
configuration lists its public key under (docs/trust.md).
"""

from __future__ import annotations

import argparse
import os

from flakecore.errors import UsageError
from flakecore.signing import RecordSigner, load_signer

__all__ = ["add_signing_arguments", "signer_from_args"]


def add_signing_arguments(parser: argparse.ArgumentParser) -> None:
    """``--signing-key FILE`` / ``--signing-key-env NAME`` and ``--key-id ID``."""
    group = parser.add_argument_group("signing (docs/trust.md)")
    key = group.add_mutually_exclusive_group()
    key.add_argument(
        "--signing-key",
        metavar="FILE",
        help="sign every record written with this ed25519 PEM key (outside the checkout)",
    )
    key.add_argument(
        "--signing-key-env", metavar="NAME", help="... with the PEM key in this variable"
    )
    group.add_argument(
        "--key-id",
        metavar="ID",
        help="the key's id in [tool.flakecore.trust.keys] (required with a signing key)",
    )


def signer_from_args(
    args: argparse.Namespace, *, checkout: str | os.PathLike[str]
) -> RecordSigner | None:
    """The signer the flags name, or None when no key was given."""
    key_file, key_env = args.signing_key, args.signing_key_env
    if key_file is None and key_env is None:
        if args.key_id is not None:
            raise UsageError("--key-id needs --signing-key or --signing-key-env")
        return None
    if args.key_id is None:
        raise UsageError("--signing-key needs --key-id (the id base's trusted keys list it under)")
    return load_signer(keyid=args.key_id, checkout=checkout, key_file=key_file, key_env=key_env)
