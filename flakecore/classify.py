"""``classify``: one exit class per failing run, and whether its lease may open.

The table, in order, is in docs/policies.md.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import TYPE_CHECKING

import attrs

from flakecore._fields import (
    CLASSIFY_FIELDS,
    MAX_SAFE_INTEGER,
    MISSING,
    envelope_problems,
    envelope_sound,
    is_bool,
    is_count,
    is_int,
    is_nonblank,
    is_number,
    known_keys,
    wire_form,
)
from flakecore._wording import plural
from flakecore.codes import ClassifyClass, PolicyName
from flakecore.decision import Decision, slot_setters
from flakecore.digest import is_digest
from flakecore.exits import CLASSIFY_EXIT, CLASSIFY_FLAKE_LEASE_REFUSED
from flakecore.identity import identity_problem
from flakecore.policy import DEFAULT_POLICY, Policy
from flakecore.timeutil import format_rfc3339, parse_rfc3339

if TYPE_CHECKING:
    from flakecore.records import ClassifyReport

__all__ = [
    "ClassifyDecision",
    "classify",
    "freeze_allowed",
    "lease_window_problems",
    "replays_sound",
]

_REPLAY_KEYS = frozenset({"attempt_id", "passed", "exit_code", "duration_s"})

#: The members and each class with its exit, read once: on this interpreter an enum's
#: class attribute and its hash run Python code (a packet each time, as in decide).
_FLAKE = ClassifyClass.FLAKE
_AS_INCOMPLETE = (ClassifyClass.INCOMPLETE, CLASSIFY_EXIT[ClassifyClass.INCOMPLETE])
_AS_FIXTURE = (ClassifyClass.FIXTURE, CLASSIFY_EXIT[ClassifyClass.FIXTURE])
_AS_PROPERTY = (ClassifyClass.PROPERTY, CLASSIFY_EXIT[ClassifyClass.PROPERTY])
_AS_STABLE_RED = (ClassifyClass.STABLE_RED, CLASSIFY_EXIT[ClassifyClass.STABLE_RED])
_AS_FLAKE = (_FLAKE, CLASSIFY_EXIT[_FLAKE])
_CLASSIFY = PolicyName.CLASSIFY


@attrs.frozen(kw_only=True)
class ClassifyDecision(Decision[ClassifyClass]):
    """A class plus the separate permission decision: may a lease open?

    ``greens``/``replays`` count the replay evidence (0 when it was unusable);
    ``lease_reasons`` say why a ``FLAKE`` may not open a lease.
    """

    freeze_allowed: bool = False
    lease_reasons: tuple[str, ...] = ()
    replays: int = 0
    greens: int = 0

    @property
    def freeze(self) -> str:
        """``eligible``, ``refused`` (a FLAKE without a valid lease) or ``no``."""
        if self.code is not _FLAKE:
            return "no"
        return "eligible" if self.freeze_allowed else "refused"

    def summary_line(self) -> str:
        """The one-line form CI logs show: ``exit=4 class=flake freeze=eligible``.

        Kept by the member's identity, the exit and the permission (an
        enum's ``value`` runs Python code); the member is kept with its line,
        so its id stays its own.
        """
        code, exit_code, allowed = self.code, self.exit_code, self.freeze_allowed
        if type(exit_code) is not int or type(allowed) is not bool:
            return f"exit={exit_code} class={code.value.lower()} freeze={self.freeze}"
        key = (id(code), exit_code, allowed)
        kept = _SUMMARIES.get(key)
        if kept is None:
            kept = (code, f"exit={exit_code} class={code.value.lower()} freeze={self.freeze}")
            if len(_SUMMARIES) < 256:
                _SUMMARIES[key] = kept
        return kept[1]

    def record_extras(self) -> dict[str, object]:
        """The lease permission beside the class, in the decision record."""
        return {
            "freeze_allowed": self.freeze_allowed,
            "freeze": self.freeze,
            "lease_reasons": list(self.lease_reasons),
            "replays": self.replays,
            "greens": self.greens,
        }

    def extras_text(self) -> str:
        """:meth:`record_extras` as text, encoded once for each distinct set of them.

        Kept in a plain dict by the values with their types (``1`` and
        ``True`` are equal keys of two texts): a key of no lease reason needs
        no generator over them, and a dict lookup no ``lru_cache`` call.
        """
        lease, allowed, replays, greens = (
            self.lease_reasons,
            self.freeze_allowed,
            self.replays,
            self.greens,
        )
        if (
            type(lease) is tuple
            and type(allowed) is bool
            and type(replays) is int
            and type(greens) is int
            and (not lease or all(type(reason) is str for reason in lease))
        ):
            key = (self.code is _FLAKE, allowed, lease, replays, greens)
            text = _EXTRAS.get(key)
            if text is None:
                text = Decision.extras_text(
                    _classified(
                        _FLAKE if key[0] else ClassifyClass.INCOMPLETE,
                        0,
                        allowed,
                        (),
                        {},
                        allowed,
                        lease,
                        replays,
                        greens,
                    )
                )
                if len(_EXTRAS) < 256:
                    _EXTRAS[key] = text
            return text
        return super().extras_text()


#: :meth:`ClassifyDecision.summary_line`'s answers, by the member's id, the exit and the permission.
_SUMMARIES: dict[tuple[int, int, bool], tuple[ClassifyClass, str]] = {}

#: :meth:`ClassifyDecision.extras_text` of plain values: whether the code is ``FLAKE``,
#: the permission, the lease reasons, the replays and greens.
_EXTRAS: dict[tuple[bool, bool, tuple[str, ...], int, int], str] = {}

_SETTERS = slot_setters(ClassifyDecision)
_new = object.__new__


def _classified(  # noqa: PLR0917 - ClassifyDecision's fields in order, for a hot path
    code: ClassifyClass,
    exit_code: int,
    accepted: bool,
    reasons: tuple[str, ...],
    policy_values: dict[str, object],
    freeze_allowed: bool,
    lease_reasons: tuple[str, ...],
    replays: int,
    greens: int,
) -> ClassifyDecision:
    """``ClassifyDecision(policy=CLASSIFY, ...)`` with no source, set slot by slot.

    The constructor's result for ``classify``'s own checked values, without
    its keyword call (tests/core/test_fast_paths.py).
    """
    obj: ClassifyDecision = _new(ClassifyDecision)
    p, c, e, a, r, v, s, f, lr, n, g = _SETTERS
    p(obj, _CLASSIFY)
    c(obj, code)
    e(obj, exit_code)
    a(obj, accepted)
    r(obj, reasons)
    v(obj, policy_values)
    s(obj, None)
    f(obj, freeze_allowed)
    lr(obj, lease_reasons)
    n(obj, replays)
    g(obj, greens)
    return obj


_KNOWN = known_keys(CLASSIFY_FIELDS)


def replays_sound(replays: list[object]) -> bool:
    """Whether :func:`_replay_problems` finds nothing: the same rules, without the wording.

    The lease check asks it too: a lease holds its replays as a classify report does.
    """
    return _sound_greens(replays) >= 0


def _sound_greens(replays: list[object]) -> int:
    """The green replays of sound ``replays`` (:func:`replays_sound`), -1 when they are not.

    ``classify`` counts its greens in the same pass: a sound replay's
    ``passed`` is a JSON boolean, so it is green exactly when it is true.
    A ``dict`` of four keys two of which are ``exit_code`` and ``duration_s``
    holds no other key exactly when its id and ``passed`` are there (both
    are tested below), so it skips the key-set test (which builds a set).
    """
    ids: set[str] = set()
    greens = 0
    for replay in replays:
        if (
            type(replay) is not dict
            or len(replay) != 4  # as many keys as _REPLAY_KEYS
            or "exit_code" not in replay
            or "duration_s" not in replay
        ) and (not isinstance(replay, dict) or not _REPLAY_KEYS.issuperset(replay)):
            return -1
        attempt_id, passed = replay.get("attempt_id"), replay.get("passed")
        if not isinstance(attempt_id, str) or not attempt_id.strip() or attempt_id in ids:
            return -1
        ids.add(attempt_id)
        if passed is True:
            greens += 1
        elif passed is not False:
            return -1
        exit_code, duration = replay.get("exit_code"), replay.get("duration_s")
        if exit_code is not None:
            if type(exit_code) is int:  # is_int, inline for the common type
                if not -MAX_SAFE_INTEGER <= exit_code <= MAX_SAFE_INTEGER:
                    return -1
            elif not is_int(exit_code):
                return -1
            if passed and exit_code != 0:
                return -1
        if duration is not None:
            if type(duration) is float or type(duration) is int:  # is_number and >= 0, inline
                if not 0 <= duration <= MAX_SAFE_INTEGER:  # NaN compares false
                    return -1
            elif not (is_number(duration) and duration >= 0):
                return -1
    return greens


def _replay_problems(replays: object) -> list[str]:
    if not isinstance(replays, list):
        return ["replays must be a list"]
    if replays_sound(replays):  # every replay of a well-formed report: no message to build
        return []
    return _worded_replay_problems(replays)


def _worded_replay_problems(replays: list[object]) -> list[str]:
    """Every problem of every replay, worded (``[]`` exactly when :func:`replays_sound`)."""
    problems: list[str] = []
    ids: set[str] = set()
    for i, replay in enumerate(replays):
        where = f"replays[{i}]"
        if not isinstance(replay, dict):
            problems.append(f"{where} is not an object")
            continue
        if not _REPLAY_KEYS.issuperset(replay):
            extra = sorted(set(replay) - _REPLAY_KEYS)
            problems += [f"{where} has unknown field {k!r}" for k in extra]
        attempt_id, passed = replay.get("attempt_id", MISSING), replay.get("passed", MISSING)
        exit_code = replay.get("exit_code")
        duration = replay.get("duration_s")
        if not is_nonblank(attempt_id):
            problems.append(f"{where}.attempt_id is missing or blank")
        elif attempt_id in ids:
            problems.append(f"{where}.attempt_id {attempt_id!r} repeats")
        else:
            ids.add(str(attempt_id))
        if not is_bool(passed):
            problems.append(f"{where}.passed must be a JSON boolean")
        if exit_code is not None and not is_int(exit_code):
            problems.append(f"{where}.exit_code must be an integer within +-(2^53-1) or null")
        elif passed is True and exit_code not in (None, 0):
            problems.append(f"{where} passed with exit code {exit_code}")
        if duration is not None and not (is_number(duration) and duration >= 0):
            problems.append(f"{where}.duration_s must be a number in 0..2^53-1 or null")
    return problems


def lease_window_problems(
    owner: object, expires_at: object, *, now: dt.datetime, policy: Policy = DEFAULT_POLICY
) -> list[str]:
    """Why a lease with this owner and expiry may not open (empty list: it may).

    Only the owner/expiry window: a stored lease *record* is judged as a whole
    by :func:`flakecore.lease.lease_problems`.

    The owner must be a plain identity (:mod:`flakecore.identity`: printable
    ASCII, not blank).  The expiry must be timezone-aware, strictly after
    ``now`` and no later than ``now`` plus the policy's maximum lease: a 2099
    expiry is a permanent freeze, not a lease.
    """
    problems: list[str] = []
    if (problem := identity_problem(owner)) is not None:
        problems.append(f"owner {problem}")
    limit = _lease_limit(now, policy.max_lease_days)
    if limit is None and (now.tzinfo is None or now.utcoffset() is None):
        problems.append("the evaluation time is naive")
        return problems
    if expires_at is MISSING or expires_at is None:
        problems.append("expires_at is missing")
        return problems
    try:
        expiry = parse_rfc3339(expires_at)  # type: ignore[arg-type]
    except ValueError as exc:
        problems.append(f"expires_at: {exc} (incomplete)")
        return problems
    if expiry <= now:
        problems.append(f"expires_at {format_rfc3339(expiry)} is not after now")
    elif expiry > limit if limit is not None else expiry - now > policy.max_lease:
        problems.append(f"expires_at is more than {plural(policy.max_lease_days, 'day')} away")
    return problems


#: The last evaluation time formatted, and its text: a batch judges every report at one ``now``.
_last_now: list[tuple[dt.datetime, str | None]] = []


def _now_text(now: dt.datetime) -> str | None:
    """``now`` in RFC 3339 (None when it is naive), kept for the same ``now`` object."""
    last = _last_now[0] if _last_now else None
    if last is not None and last[0] is now:  # a datetime is immutable: the same object, one text
        return last[1]
    aware = now.tzinfo is not None and now.utcoffset() is not None
    text = format_rfc3339(now) if aware else None
    _last_now[:] = [(now, text)]
    return text


#: The last evaluation time and longest lease, and the latest expiry they allow.
_last_limit: list[tuple[dt.datetime, int, dt.datetime | None]] = []


def _lease_limit(now: dt.datetime, days: int) -> dt.datetime | None:
    """``now`` plus ``days``, kept for the same ``now`` object; None: subtract instead.

    With a fixed offset (``datetime.timezone``, what an RFC 3339 text
    parses to) ``expiry > now + lease`` is ``expiry - now > lease``; another
    zone adds wall time, and ``now + lease`` may overflow past 9999, so
    either is left to the subtraction.
    """
    last = _last_limit[0] if _last_limit else None
    if last is not None and last[0] is now and last[1] == days:
        return last[2]
    limit: dt.datetime | None = None
    if type(now.tzinfo) is dt.timezone:
        try:
            limit = now + dt.timedelta(days=days)
        except OverflowError:
            limit = None
    _last_limit[:] = [(now, days, limit)]
    return limit


_FORMAT = "flakecore.classify-report"
_VERDICTS = ("pass", "fail")
_PINS = ("match", "mismatch")


def _sound(packet: Mapping[str, object]) -> bool:
    """Whether :func:`_incomplete` finds nothing: the same tests, without the wording."""
    get = packet.get
    owner, canary, pinned = get("owner"), get("canary"), get("pinned_sha256", MISSING)
    return (
        envelope_sound(packet, _KNOWN, _FORMAT)
        and get("property_verdict", MISSING) in _VERDICTS
        and get("pin_status", MISSING) in _PINS
        and (owner is None or isinstance(owner, str))
        and (canary is None or isinstance(canary, str))
        and (pinned is MISSING or is_digest(pinned))
    )


def _incomplete(packet: Mapping[str, object]) -> list[str]:
    reasons = envelope_problems(packet, "classify-report", _KNOWN)
    if packet.get("property_verdict", MISSING) not in _VERDICTS:
        reasons.append("property_verdict is missing or not 'pass'/'fail'")
    if packet.get("pin_status", MISSING) not in _PINS:
        reasons.append("pin_status is missing or not 'match'/'mismatch'")
    for name in ("owner", "canary"):
        value = packet.get(name, MISSING)
        if value is not MISSING and value is not None and not isinstance(value, str):
            reasons.append(f"{name} must be a string")
    pinned = packet.get("pinned_sha256", MISSING)
    if pinned is not MISSING and not is_digest(pinned):
        reasons.append("pinned_sha256 must be a sha256 digest")
    return reasons


def classify(
    report: ClassifyReport | Mapping[str, object],
    *,
    now: dt.datetime,
    policy: Policy = DEFAULT_POLICY,
) -> ClassifyDecision:
    """Give a failing run exactly one class, then decide the lease permission.

    The pin is checked before the property verdict, and the property before
    the replays, so a short replay cannot launder a property failure.
    ``now`` is the evaluation time (the clock, or ``--now``).
    """
    data = wire_form(report, "ClassifyReport")
    values = policy.values("replay_budget", "max_lease_days")
    values["now"] = _now_text(now)
    (code, exit_code), reasons, replays, greens = _judged(data, policy)
    if code is not _FLAKE:
        return _classified(code, exit_code, False, reasons, values, False, (), replays, greens)
    lease = tuple(
        lease_window_problems(
            data.get("owner", MISSING), data.get("expires_at", MISSING), now=now, policy=policy
        )
    )
    if lease:
        exit_code = CLASSIFY_FLAKE_LEASE_REFUSED
    allowed = not lease
    return _classified(code, exit_code, allowed, reasons, values, allowed, lease, replays, greens)


#: A class with its exit (the lease may still refuse a ``FLAKE``), the reasons, replays, greens.
_Judged = tuple[tuple[ClassifyClass, int], tuple[str, ...], int, int]


def _judged(data: Mapping[str, object], policy: Policy) -> _Judged:
    """:func:`classify`'s class and evidence counts: one decision built for them, no closure."""
    if type(data) is not dict and not isinstance(data, Mapping):
        return _AS_INCOMPLETE, ("report is not a JSON object",), 0, 0
    if not _sound(data):  # worded only now: a sound report is told without its reasons
        return _AS_INCOMPLETE, tuple(_incomplete(data)), 0, 0
    if data["pin_status"] == "mismatch":
        return _AS_FIXTURE, ("the fixture pin does not match",), 0, 0
    if data["property_verdict"] == "fail":
        return _AS_PROPERTY, ("the property fails: the code owns the bug",), 0, 0
    origin = data.get("origin_passed", MISSING)
    if not is_bool(origin):
        return _AS_INCOMPLETE, ("origin result unknown",), 0, 0
    if origin is True:
        return _AS_INCOMPLETE, ("the origin run passed: nothing to classify",), 0, 0
    replays = data.get("replays", MISSING)
    greens = _sound_greens(replays) if isinstance(replays, list) else -1
    if greens < 0:  # worded only now: a sound report's replays are checked once, in one pass
        return _AS_INCOMPLETE, tuple(_replay_problems(replays)), 0, 0
    assert isinstance(replays, list)
    n = data.get("budget", policy.replay_budget)
    if not is_count(n) or n < policy.replay_budget:  # type: ignore[operator]
        why = f"budget {n!r} is not an integer >= the policy's {policy.replay_budget}"
        return _AS_INCOMPLETE, (why,), 0, 0
    if len(replays) != n:
        why = f"{plural(len(replays), 'replay')} for a budget of {n}: not filled"
        return _AS_INCOMPLETE, (why,), 0, 0
    if not greens:
        return _AS_STABLE_RED, (f"red on all {plural(n, 'replay')}",), n, 0
    return _AS_FLAKE, ("at least one green in a full budget",), n, greens


def freeze_allowed(
    report: ClassifyReport | Mapping[str, object],
    *,
    now: dt.datetime,
    policy: Policy = DEFAULT_POLICY,
) -> bool:
    """True only for a ``FLAKE`` with a non-blank owner and an expiry inside the lease window."""
    return classify(report, now=now, policy=policy).freeze_allowed
