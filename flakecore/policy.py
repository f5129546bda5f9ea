"""The one place that holds every policy number, and where a set of them came from.

These are repository policy, not tuned results (docs/policies.md): every decision
records the values it used, so a changed number is visible in the output,
and where it got them (:class:`PolicySource`), because a policy the patch
under judgement wrote is no policy at all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from flakecore._fields import MAX_SAFE_INTEGER, is_int
from flakecore.errors import UsageError

if TYPE_CHECKING:
    import datetime as dt

__all__ = ["DEFAULT_POLICY", "DEFAULT_SEEDS", "EMPTY_TABLE_SHA256", "Policy", "PolicySource"]

#: Seed list committed before a seed-budget run (docs/policies.md).
DEFAULT_SEEDS: tuple[int, ...] = (11, 23, 47, 71, 97, 131, 173, 211)
#: ``datetime.timedelta.max.days``, written out: the policy loads no ``datetime`` (tested).
_MAX_DAYS = 999_999_999


def _positive(_: object, attribute: attrs.Attribute[int], value: int) -> None:
    # Bounded too: decisions record these numbers (docs/trust.md: within 2**53 - 1).
    if not is_int(value) or value < 1:
        raise UsageError(
            f"policy {attribute.name} must be an integer in 1..{MAX_SAFE_INTEGER}, got {value!r}"
        )


def _lease_days(policy: object, attribute: attrs.Attribute[int], value: int) -> None:
    _positive(policy, attribute, value)
    if value > _MAX_DAYS:  # datetime.timedelta holds no more
        raise UsageError(f"policy {attribute.name} must be at most {_MAX_DAYS}, got {value!r}")


def _seeds(_: object, attribute: attrs.Attribute[tuple[int, ...]], value: tuple[int, ...]) -> None:
    if not isinstance(value, tuple) or not all(is_int(s) for s in value):
        raise UsageError(
            f"policy {attribute.name} must be integers within +-{MAX_SAFE_INTEGER}; "
            "larger seeds are strings"
        )


@attrs.frozen(kw_only=True)
class Policy:
    """Policy numbers with the documented defaults (docs/policies.md).

    Raising ``attempt_cap`` to "farm a miss" is exactly what the admit policy forbids;
    raise ``min_base_misses`` on a noisy suite instead.
    """

    attempt_cap: int = attrs.field(default=5, validator=_positive)
    """``admit``: most base replays counted (``ATTEMPT_CAP``)."""
    min_base_misses: int = attrs.field(default=1, validator=_positive)
    """``admit``: base misses needed for ``ACCEPT_PREEXISTING`` (``MIN_BASE_MISSES``)."""
    min_seed_budget: int = attrs.field(default=8, validator=_positive)
    """``budget``: fewest committed seeds a run may use."""
    default_seeds: tuple[int, ...] = attrs.field(default=DEFAULT_SEEDS, validator=_seeds)
    """``budget``: the seed list used when a run names none."""
    replay_budget: int = attrs.field(default=5, validator=_positive)
    """``classify``: replays a lease needs."""
    max_lease_days: int = attrs.field(default=14, validator=_lease_days)
    """``classify`` and ledger rows: longest lease / row lifetime."""
    max_log_lines: int = attrs.field(default=10_000, validator=_positive)
    """Attempt logs longer than this are refused unread."""
    max_red_tests: int = attrs.field(default=10, validator=_positive)
    """``triage``: more red tests in one run than this is a regression, not triaged one by one."""

    @property
    def max_lease(self) -> dt.timedelta:
        """Longest time a lease or ledger row may stay open."""
        import datetime as dt  # noqa: PLC0415 - a verb that judges no time loads none

        return dt.timedelta(days=self.max_lease_days)

    def values(self, *names: str) -> dict[str, object]:
        """The named policy values as JSON-ready data, for decision records (a new dict).

        A policy asks for the same names on every packet of a batch: the last
        answer for each set of names of plain values is kept, with the policy
        it came from (a policy is frozen).
        """
        last = _LAST_VALUES.get(names)
        if last is not None and last[0] is self:
            return dict(last[1])
        out: dict[str, object] = {}
        for name in names:
            value = getattr(self, name)
            out[name] = list(value) if isinstance(value, tuple) else value
        if not any(type(value) is list for value in out.values()):  # a list is the caller's own
            _LAST_VALUES[names] = (self, out.copy())
        return out


#: :meth:`Policy.values`' last answer, and its policy, for each set of names.
_LAST_VALUES: dict[tuple[str, ...], tuple[Policy, dict[str, object]]] = {}


DEFAULT_POLICY = Policy()


#: Canonical JSON digest of an empty ``[tool.flakecore]`` table: the defaults.  Written
#: out, so importing the policy needs no hash function (tests/core/test_fast_paths.py
#: checks it is ``canonical_json_sha256({})``).
EMPTY_TABLE_SHA256 = "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"


@attrs.frozen(kw_only=True)
class PolicySource:
    """Where a decision's policy came from: revision, path, and the digest of the table.

    ``revision`` is the full commit id the table was read from (None: not a
    git revision, e.g. an explicit file outside the checkout, or the working
    tree); ``path`` the file it was read from (repository-relative for a
    revision; None: defaults only).  ``sha256`` is the canonical JSON digest
    of the parsed ``[tool.flakecore]`` table, so two spellings of one policy
    agree and any changed value shows.  ``overrides`` names the policy values
    flags replaced.  ``scored_tree_differs`` is None when nobody compared the
    scored tree's table with this one.
    """

    revision: str | None = None
    path: str | None = None
    sha256: str = EMPTY_TABLE_SHA256
    overrides: tuple[str, ...] = ()
    scored_tree_differs: bool | None = None

    def to_json(self) -> dict[str, object]:
        """The ``policy_source`` object of a decision record (schemas/decision.v1.json)."""
        data: dict[str, object] = {
            "revision": self.revision,
            "path": self.path,
            "sha256": self.sha256,
            "overrides": list(self.overrides),
        }
        if self.scored_tree_differs is not None:
            data["scored_tree_differs"] = self.scored_tree_differs
        return data
