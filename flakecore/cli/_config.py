"""Where a verb's policy and its trust come from: ``--base``, ``--config``, ``--no-config``.

The working tree's ``pyproject.toml`` is never policy: the patch under
judgement wrote it (docs/trust.md).  A verb's ``[tool.flakecore]`` comes
from exactly one of

- ``--base REF``: the base revision, through git (verbs that take a base
  anyway -- ``replay``, ``budget-run``, ``guard`` -- use theirs);
- ``--config FILE``: a file CI provides *outside* the scored checkout;
- ``--no-config``: the defaults;

and ``--policy NAME=VALUE`` overrides one number on top.  With none of
them the pure policy verbs run on the defaults; a verb that needs the
lease or ledger location or judges stored records refuses (64), because
the defaults may be looser than the repository's policy.  The same choice
says which records count (:class:`~flakecore.gate.basetrust.RecordTrust`):
byte-identical in the base, signed by a key the trusted configuration
names, or -- without keys -- written outside the checkout.  Verbs read
their configuration only through :func:`config_from_args`.
"""

from __future__ import annotations

import argparse
import enum
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

import attrs

from flakecore.errors import GitError, UsageError

if TYPE_CHECKING:
    from pathlib import Path

    from flakecore.gate.basetrust import RecordTrust
    from flakecore.gate.config import GateConfig
    from flakecore.policy import Policy, PolicySource

__all__ = ["Configured", "Need", "add_config_arguments", "config_from_args"]


class Need(enum.Enum):
    """How much a verb needs a policy source it can trust."""

    POLICY = "policy"
    """A pure policy verb: with no source, the defaults."""
    LOCATION = "location"
    """Reads or writes the lease or ledger store, or judges records: a source is required."""
    TRUST = "trust"
    """Judges stored records: also a base or trusted keys, else nothing could count."""


def add_config_arguments(
    parser: argparse.ArgumentParser, *, policy: bool = True, base: bool = True
) -> None:
    """``--base`` (unless the verb has its own), ``--config``, ``--no-config``, ``--policy``."""
    group = parser.add_argument_group("configuration (docs/trust.md)")
    if base:
        group.add_argument(
            "--base",
            metavar="REF",
            help="the reviewed base revision: [tool.flakecore] and trusted records come from it",
        )
    group.add_argument(
        "--config",
        metavar="FILE",
        help="read [tool.flakecore] from this file, which must lie outside the scored checkout",
    )
    group.add_argument(
        "--no-config", action="store_true", help="the default policy: no [tool.flakecore] at all"
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


class Configured:
    """A verb's configuration, and what a record must be to count as its evidence.

    The record trust (:class:`~flakecore.gate.basetrust.RecordTrust`) is
    built when it is first asked for, and with neither ``--base`` nor
    ``--config`` the scored checkout (one git call) is looked up only then
    too, or when the configuration's ``root`` is.  A pure policy verb
    without a source judges only the caller's packets and never asks, and
    ``guard`` needs only the resolved :attr:`base`: neither loads the trust
    machinery (docs/performance.md).  The defaults without ``--policy``
    build no :class:`~flakecore.gate.config.GateConfig` (nor load its
    module) until :attr:`config` is asked for: a pure policy verb needs only
    the default policy and its source.  What is asked gives what the eager
    lookup gave.
    """

    __slots__ = ("_base", "_checkout", "_config", "_head", "_start", "_table", "_trust")

    def __init__(self, *, config: GateConfig, trust: RecordTrust) -> None:
        self._table: GateConfig | None = config
        self._config: GateConfig | None = config
        self._trust: RecordTrust | None = trust
        self._checkout: Path | None = trust.checkout
        self._base = trust.base
        self._head: str | None = None
        self._start = "."

    @classmethod
    def _deferred(
        cls,
        table: GateConfig | None,
        config: GateConfig | None,
        checkout: Path | None,
        base: str | None,
    ) -> Configured:
        new = cls.__new__(cls)
        new._table, new._config, new._trust = table, config, None
        new._checkout, new._base, new._start, new._head = checkout, base, ".", None
        return new

    @classmethod
    def read(
        cls, config: GateConfig, *, checkout: Path, base: str | None, head: str | None = None
    ) -> Configured:
        """A configuration read for ``checkout`` (from ``base``, or a file); trust on first use.

        ``head`` is the checkout's ``HEAD`` when the git call that resolved ``base`` told it.
        """
        new = cls._deferred(config, config, checkout, base)
        new._head = head
        return new

    @classmethod
    def defaults(cls, table: GateConfig | None, *, start: str) -> Configured:
        """The defaults for the checkout holding ``start``.

        ``table`` holds their policy and source (None: the defaults' own,
        ``GateConfig()``'s, without building one).
        """
        new = cls._deferred(table, None, None, None)
        new._start = start
        return new

    @property
    def policy(self) -> Policy:
        """The policy numbers (the checkout is not looked up for them)."""
        if self._table is None:
            from flakecore.policy import DEFAULT_POLICY  # noqa: PLC0415 - GateConfig()'s own

            return DEFAULT_POLICY
        return self._table.policy

    @property
    def source(self) -> PolicySource:
        """Where the policy came from (the checkout is not looked up for it)."""
        if self._table is None:
            from flakecore.policy import PolicySource  # noqa: PLC0415 - GateConfig()'s own

            return PolicySource()
        return self._table.source

    @property
    def base(self) -> str | None:
        """The full commit id of ``--base`` (None: no base), as the record trust has it."""
        return self._base

    @property
    def head(self) -> str | None:
        """The checkout's ``HEAD`` as the call resolving ``--base`` read it (None: not read)."""
        return self._head

    @property
    def checkout(self) -> Path:
        """The top of the scored checkout (looked up now if it was not yet)."""
        if self._checkout is None:
            self._checkout = self.trust.checkout
        return self._checkout

    @property
    def config(self) -> GateConfig:
        """The whole configuration; for the defaults, rooted at the scored checkout."""
        if self._config is None:
            root = str(self.trust.checkout)
            if self._table is None:
                from flakecore.gate.config import GateConfig  # noqa: PLC0415 - see the class

                self._config = GateConfig(root=root)
            else:
                self._config = attrs.evolve(self._table, root=root)
        return self._config

    @property
    def trust(self) -> RecordTrust:
        """Which records count: byte-identical in base, signed by a trusted key, or the job's."""
        if self._trust is None:
            from flakecore.gate.basetrust import RecordTrust  # noqa: PLC0415 - the trust layer

            checkout = self._checkout if self._checkout is not None else _checkout(self._start)
            keys = self._table.trusted_keys if self._table is not None else ()
            self._trust = RecordTrust(checkout=checkout, base=self._base, keys=keys)
        return self._trust

    @property
    def judges_records(self) -> bool:
        """Whether a base or trusted keys decide which records count (else: the caller's)."""
        if self._trust is not None:
            keys = self._trust.keys
        else:
            keys = self._table.trusted_keys if self._table is not None else ()
        return self._base is not None or bool(keys)

    def describe(self) -> str:
        """One line: where the policy came from and which records count."""
        source = self.source
        if source.revision is not None:
            where = f"base {source.revision[:12]}:{source.path}"
        elif source.path is not None:
            where = source.path
        else:
            where = "the defaults"
        if source.overrides:
            where += " with --policy " + ", ".join(source.overrides)
        return f"policy from {where}; a record counts when {self.trust.describe()}"

    @property
    def scored_table_reason(self) -> str | None:
        """Why a decision notes the patch's own table, or None (:func:`scored_table_reason`)."""
        if self.source.revision is None:  # no base table: nothing to compare with
            return None
        from flakecore.gate.policy_source import scored_table_reason  # noqa: PLC0415

        assert self._table is not None  # the defaults have no revision
        return scored_table_reason(self._table)


def _checkout(start: str) -> Path:
    """The scored checkout: the git work tree holding ``start``, else ``start`` itself."""
    from pathlib import Path  # noqa: PLC0415 - as the git layer, loaded when asked for

    from flakecore.gate.worktree import repo_toplevel  # noqa: PLC0415

    try:
        return repo_toplevel(Path(start))
    except GitError:
        return Path(os.path.realpath(start))


def _none_given(verb: str) -> UsageError:
    return UsageError(
        f"{verb} needs a policy it can trust: --base REF (the reviewed revision), --config FILE "
        "(outside the scored checkout) or --no-config (the defaults); the working tree's "
        "pyproject.toml is never read, the patch could have written it"
    )


def _no_trust(verb: str) -> UsageError:
    return UsageError(
        f"{verb} cannot tell a reviewed record from one the patch wrote: give --base REF (a "
        "record counts when the base holds it byte for byte), or a --config FILE naming "
        "[tool.flakecore.trust.keys] (a record counts when one of them signed it)"
    )


def config_from_args(
    args: argparse.Namespace,
    *,
    verb: str,
    start: str = ".",
    need: Need = Need.POLICY,
    head: bool = False,
) -> Configured:
    """The verb's configuration and record trust, from ``--base``/``--config``/``--no-config``.

    ``start`` is where the scored checkout is (``guard --repo``).  With
    ``head``, the git call resolving ``--base`` also reads the checkout's
    ``HEAD`` when it can (:attr:`Configured.head`: replay's first check).  A git
    failure while reading the base is a ``GitError``; a ``--config`` inside
    the checkout and a missing source where ``need`` requires one are
    :class:`UsageError`.
    """
    base, path = getattr(args, "base", None), getattr(args, "config", None)
    no_config = getattr(args, "no_config", False)
    if no_config and path:
        raise UsageError("--config and --no-config exclude each other")
    overrides = getattr(args, "policy_overrides", [])
    if base is None and not path:
        if not (no_config or need is Need.POLICY):
            raise _none_given(verb)
        if need is Need.TRUST:  # the defaults name no trusted keys, and there is no base
            raise _no_trust(verb)
        if not overrides:  # GateConfig()'s policy and source, without building one
            return Configured.defaults(None, start=start)
        from flakecore.gate.config import GateConfig  # noqa: PLC0415 - see Configured

        return Configured.defaults(_with_overrides(GateConfig(), overrides), start=start)
    # Imported here: the git layer is no start-up cost of a verb without a source.
    from pathlib import Path  # noqa: PLC0415

    from flakecore.gate.config import GateConfig  # noqa: PLC0415
    from flakecore.gate.worktree import (  # noqa: PLC0415
        toplevel_and_commit,
        toplevel_commit_and_head,
    )

    base_sha = head_sha = None
    if base is None:
        checkout = _checkout(start)
    elif head:  # (one git call for a full commit id, CI's usual --base, and HEAD)
        checkout, base_sha, head_sha = toplevel_commit_and_head(Path(start), base)
    else:
        checkout, base_sha = toplevel_and_commit(Path(start), base)
    if path:
        from flakecore.gate.policy_source import load_outside_config  # noqa: PLC0415

        config = load_outside_config(path, checkout=checkout)
    elif no_config:
        config = GateConfig(root=str(checkout))
    else:
        from flakecore.gate.policy_source import base_config  # noqa: PLC0415

        assert base_sha is not None
        config = base_config(checkout, base_sha)  # both resolved already: no git call again
    if need is Need.TRUST and base_sha is None and not config.trusted_keys:
        raise _no_trust(verb)
    configured = _with_overrides(config, overrides)
    return Configured.read(configured, checkout=checkout, base=base_sha, head=head_sha)


def _with_overrides(config: GateConfig, flags: Sequence[str]) -> GateConfig:
    """``config`` with the ``--policy NAME=VALUE`` flags applied."""
    from flakecore.gate.config import parse_policy_override  # noqa: PLC0415 - see Configured

    return config.with_policy(dict(parse_policy_override(t) for t in flags))
