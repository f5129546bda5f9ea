"""Where a verb's configuration comes from: ``--config``, ``--no-config``, ``--policy``.

``--config PYPROJECT`` / ``--no-config`` choose the ``[tool.flakecore]``
table (default: the nearest ``pyproject.toml``); ``--policy NAME=VALUE``
overrides one policy number on top of it.  Verbs read their configuration
only through :func:`config_from_args`: it is the one place that decides
which file the policy comes from.
"""

from __future__ import annotations

import argparse

from flakecore.errors import UsageError
from flakecore.gate.config import GateConfig, load_config, parse_policy_override

__all__ = ["add_config_arguments", "config_from_args"]


def add_config_arguments(parser: argparse.ArgumentParser, *, policy: bool = True) -> None:
    """``--config``, ``--no-config`` and (with ``policy``) ``--policy NAME=VALUE``."""
    group = parser.add_argument_group("configuration")
    group.add_argument(
        "--config",
        metavar="PYPROJECT",
        help="read [tool.flakecore] from this file (default: the nearest pyproject.toml)",
    )
    group.add_argument(
        "--no-config", action="store_true", help="ignore pyproject.toml: defaults and flags only"
    )
    if policy:
        group.add_argument(
            "--policy",
            dest="policy_overrides",
            action="append",
            default=[],
            metavar="NAME=VALUE",
            help="override one policy number, e.g. max_lease_days=7 (repeatable)",
        )


def config_from_args(args: argparse.Namespace, *, start: str = ".") -> GateConfig:
    """The configuration file (unless ``--no-config``), then ``--policy`` overrides on top."""
    if getattr(args, "no_config", False) and getattr(args, "config", None):
        raise UsageError("--config and --no-config exclude each other")
    if getattr(args, "no_config", False):
        config = GateConfig()
    else:
        config = load_config(getattr(args, "config", None), start=start)
    overrides = dict(parse_policy_override(t) for t in getattr(args, "policy_overrides", []))
    return config.with_policy(overrides)
