"""Leases (docs/leases.md): build one from a classify report and the roles; judge stored ones.

A lease is the only freeze ``classify`` can open, and it is enforcement only
if CI loads it and checks it again later.  Both halves live here so that they
cannot drift apart: :func:`build_lease` never writes a record that
:func:`lease_problems` would refuse at the same instant, and
:func:`lease_problems` re-runs :func:`flakecore.classify` over the stored
evidence instead of trusting that it passed once.  There is no renewal: a
lease past its ``expires_at`` is invalid, and only a new ``lease open`` on new
evidence replaces it.

Roles stay apart: the replay host only appends attempt rows, the acceptor
(a reviewer or a separate policy job) accepts the lease, and neither the
replay host nor the patch author may be the acceptor.  Owners, acceptors,
authors and hosts are plain identities (:mod:`flakecore.identity`: printable
ASCII), compared with case folded and spaces removed, so ``Bot`` and
``bot `` are one identity pretending to be two, and a look-alike spelt with
other characters is no identity at all.

Pure: no clock (``now`` is an argument) and no files.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from typing import Final

import attrs

from flakecore._fields import (
    CLASSIFY_FIELDS,
    MAX_SAFE_INTEGER,
    MISSING,
    format_version_ok,
    is_bool,
    is_int,
    is_nonblank,
)
from flakecore._wording import plural
from flakecore.classify import ClassifyDecision, classify, replays_sound
from flakecore.codes import ClassifyClass
from flakecore.digest import commit_id_problem, is_commit_id, is_digest, is_lower_hex
from flakecore.identity import (
    identity_key,
    identity_problem,
    is_runner_id,
    runner_id_problem,
    same_identity,
)
from flakecore.policy import DEFAULT_POLICY, Policy
from flakecore.timeutil import format_rfc3339, parse_rfc3339

__all__ = [
    "LEASE_FIELDS",
    "LEASE_FORMAT",
    "LEASE_FORMAT_VERSION",
    "LEASE_REQUIRED",
    "LeaseOutcome",
    "Roles",
    "build_lease",
    "format_version_ok",
    "lease_problems",
    "role_problems",
    "short_form",
]

#: ``format`` of a lease record (schemas/lease.v1.json).
LEASE_FORMAT: Final = "flakecore.lease"
#: The version this module writes; any ``1.<minor>`` is read.
LEASE_FORMAT_VERSION: Final = "1.0"


#: Every field a lease may carry, in the order records are written.
LEASE_FIELDS: Final = (
    "format",
    "format_version",
    "test_id",
    "class",
    "property_verdict",
    "pin_status",
    "pinned_sha256",
    "origin_passed",
    "replays",
    "budget",
    "greens",
    "owner",
    "expires_at",
    "canary",
    "attempt_ids",
    "replay_host",
    "accepted_by",
    "patch_author",
    "patch_hash",
    "oracle_version",
    "opened_at",
)
#: Fields whose absence makes a lease invalid (``patch_hash``/``oracle_version`` are optional).
LEASE_REQUIRED: Final = tuple(f for f in LEASE_FIELDS if f not in ("patch_hash", "oracle_version"))
_KNOWN: Final = frozenset(LEASE_FIELDS)
_REQUIRED: Final = frozenset(LEASE_REQUIRED)
_FLAKE: Final = ClassifyClass.FLAKE.value


@attrs.frozen(kw_only=True)
class Roles:
    """Who did what around one lease (docs/policies.md).

    ``patch_hash`` (the patch's git commit id, as ``decide`` requires) and
    ``oracle_version`` bind the lease to one patch: a new patch is a new
    vote, even when the test name matches yesterday's lease.
    """

    replay_host: str
    """Runner id of the host that ran the replays; it never writes the lease."""
    accepted_by: str
    """The reviewer or policy job accepting the lease."""
    patch_author: str | None = None
    """Who (or which agent) wrote the patch; required to open a lease."""
    patch_hash: str | None = None
    oracle_version: str | None = None


@attrs.frozen(kw_only=True)
class LeaseOutcome:
    """The result of trying to open a lease: the record, or every reason it was refused.

    ``decision`` is the classify verdict the attempt started from; a lease is
    written only when :attr:`opened` is true.
    """

    decision: ClassifyDecision
    record: dict[str, object] | None
    reasons: tuple[str, ...] = ()

    @property
    def opened(self) -> bool:
        """True only when a record was built."""
        return self.record is not None


def role_problems(replay_host: object, accepted_by: object, patch_author: object) -> list[str]:
    """Why these three roles are not apart (empty list: they are).

    Each must be a plain identity (:mod:`flakecore.identity`; the replay host
    a runner id), so a look-alike of the author (a Cyrillic U+043E for ``o``,
    a zero width space) is refused rather than counted as somebody else.  The patch
    author is required: a lease that cannot name the author cannot show that
    the author did not accept it.
    """
    host = runner_id_problem(replay_host)
    acceptor = identity_problem(accepted_by)
    author = identity_problem(patch_author)
    named = (("replay_host", host), ("accepted_by", acceptor), ("patch_author", author))
    problems = [f"{name} {problem}" for name, problem in named if problem is not None]
    if acceptor is None and host is None and same_identity(str(accepted_by), str(replay_host)):
        problems.append("accepted_by is the replay host: the replay host never accepts its lease")
    if acceptor is None and author is None and same_identity(str(accepted_by), str(patch_author)):
        problems.append("accepted_by is the patch author: an author never accepts its own freeze")
    return problems


def _dedupe(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def build_lease(
    report: Mapping[str, object],
    *,
    test_id: str,
    roles: Roles,
    now: dt.datetime,
    policy: Policy = DEFAULT_POLICY,
    canary: str | None = None,
) -> LeaseOutcome:
    """Classify ``report`` and, only if a freeze is allowed and the roles are apart, build a lease.

    ``canary`` names the canary job when the report does not; a report and
    an argument that name different canaries are refused rather than picked
    from.  The record is checked with :func:`lease_problems` at ``now`` before
    it is returned, so nothing written here is invalid the moment it is written.
    """
    decision = classify(report, now=now, policy=policy)
    if not decision.freeze_allowed:
        flake = decision.code is ClassifyClass.FLAKE
        why = list(decision.lease_reasons) if flake else list(decision.reasons)
        return LeaseOutcome(
            decision=decision,
            record=None,
            reasons=(f"classify: {decision.summary_line()}", *why),
        )
    reasons: list[str] = []
    if not is_nonblank(test_id):
        reasons.append("test_id is missing or blank")
    reasons += role_problems(roles.replay_host, roles.accepted_by, roles.patch_author)
    if roles.patch_hash is not None and (
        problem := commit_id_problem("patch_hash", roles.patch_hash)
    ):
        reasons.append(problem)
    if roles.oracle_version is not None and not is_nonblank(roles.oracle_version):
        reasons.append("oracle_version is blank")
    pinned = report.get("pinned_sha256", MISSING)
    if not is_digest(pinned):
        reasons.append("pinned_sha256 is missing: a lease records the pinned fixture digest")
    report_canary = report.get("canary")
    if canary is not None and is_nonblank(report_canary) and report_canary != canary:
        reasons.append(f"canary {canary!r} differs from the report's {report_canary!r}")
    chosen_canary = canary if canary is not None else report_canary
    if not is_nonblank(chosen_canary):
        reasons.append("canary is missing: a lease names the canary job that keeps running")
    if reasons:
        return LeaseOutcome(decision=decision, record=None, reasons=tuple(_dedupe(reasons)))
    replays = report["replays"]
    assert isinstance(replays, list)
    record: dict[str, object] = {
        "format": LEASE_FORMAT,
        "format_version": LEASE_FORMAT_VERSION,
        "test_id": test_id,
        "class": ClassifyClass.FLAKE.value,
        "property_verdict": report["property_verdict"],
        "pin_status": report["pin_status"],
        "pinned_sha256": pinned,
        "origin_passed": report["origin_passed"],
        "replays": [dict(r) for r in replays],
        "budget": report.get("budget", policy.replay_budget),
        "greens": decision.greens,
        "owner": report["owner"],
        "expires_at": report["expires_at"],
        "canary": chosen_canary,
        "attempt_ids": [r["attempt_id"] for r in replays],
        "replay_host": roles.replay_host,
        "accepted_by": roles.accepted_by,
        "patch_author": roles.patch_author,
    }
    if roles.patch_hash is not None:
        record["patch_hash"] = roles.patch_hash
    if roles.oracle_version is not None:
        record["oracle_version"] = roles.oracle_version
    record["opened_at"] = format_rfc3339(now)
    if problems := lease_problems(record, now=now, policy=policy):
        return LeaseOutcome(decision=decision, record=None, reasons=tuple(problems))
    return LeaseOutcome(decision=decision, record=record)


def _structure_problems(record: Mapping[str, object]) -> list[str]:
    """Format, unknown and missing fields, and the types classify does not judge."""
    problems: list[str] = []
    name = record.get("format", MISSING)
    if name != LEASE_FORMAT:
        problems.append(f"format is {name!r}, expected {LEASE_FORMAT!r}")
    if not format_version_ok(record.get("format_version", MISSING)):
        problems.append("format_version is missing or not a 1.x version")
    if not _KNOWN.issuperset(record):
        problems += [f"unknown field {k!r}" for k in sorted(set(record) - _KNOWN)]
    problems += [f"{k} is missing" for k in LEASE_REQUIRED if k not in record]
    if "test_id" in record and not is_nonblank(record["test_id"]):
        problems.append("test_id is blank or not a string")
    if "class" in record and record["class"] != ClassifyClass.FLAKE.value:
        problems.append(f"class is {record['class']!r}: only FLAKE opens a lease")
    if "pinned_sha256" in record and not is_digest(record["pinned_sha256"]):
        problems.append("pinned_sha256 is not a sha256 digest")
    if "canary" in record and not is_nonblank(record["canary"]):
        problems.append("canary is blank or not a string")
    greens = record.get("greens", MISSING)
    if greens is not MISSING and not (is_int(greens) and greens >= 1):  # type: ignore[operator]
        problems.append("greens must be an integer >= 1")
    budget = record.get("budget", MISSING)
    if budget is not MISSING and not (is_int(budget) and budget >= 1):  # type: ignore[operator]
        problems.append("budget must be an integer >= 1")
    origin = record.get("origin_passed", MISSING)
    if origin is not MISSING and origin is not False:
        problems.append(
            "origin_passed must be false" if is_bool(origin) else "origin_passed is not a boolean"
        )
    patch = record.get("patch_hash", MISSING)
    if patch is not MISSING and (problem := commit_id_problem("patch_hash", patch)):
        problems.append(problem)
    if "oracle_version" in record and not is_nonblank(record["oracle_version"]):
        problems.append("oracle_version is blank or not a string")
    return problems


def _attempt_id_problems(record: Mapping[str, object]) -> list[str]:
    ids = record.get("attempt_ids", MISSING)
    if ids is MISSING:
        return []
    if not isinstance(ids, list) or not ids or not all(is_nonblank(i) for i in ids):
        return ["attempt_ids must be a non-empty list of non-blank strings"]
    problems: list[str] = []
    if len(set(ids)) != len(ids):
        problems.append("attempt_ids repeat")
    replays = record.get("replays")
    if (
        isinstance(replays, list)
        and all(isinstance(r, Mapping) for r in replays)
        and ids != [r.get("attempt_id") for r in replays]
    ):
        problems.append("attempt_ids are not the replays' attempt ids in order")
    return problems


def _time_problems(
    record: Mapping[str, object], now: dt.datetime, policy: Policy
) -> tuple[list[str], dt.datetime | None]:
    """``opened_at`` checks; the expiry against *now* is classify's to judge."""
    problems: list[str] = []
    opened_text = record.get("opened_at", MISSING)
    if opened_text is MISSING:
        return problems, None
    try:
        opened = parse_rfc3339(opened_text)  # type: ignore[arg-type]
    except ValueError as exc:
        return [f"opened_at: {exc}"], None
    if now.tzinfo is not None and opened > now:
        problems.append(f"opened_at {format_rfc3339(opened)} is in the future")
    try:
        expiry = parse_rfc3339(record.get("expires_at"))  # type: ignore[arg-type]
    except ValueError:
        return problems, opened  # classify names the bad expiry
    if expiry <= opened:
        problems.append("expires_at is not after opened_at")
    elif expiry - opened > policy.max_lease:  # subtract: adding overflows past 9999
        problems.append(
            f"expires_at is more than {plural(policy.max_lease_days, 'day')} after opened_at: "
            "a lease that long is a permanent freeze"
        )
    return problems, opened


def _classify_problems(record: Mapping[str, object], now: dt.datetime, policy: Policy) -> list[str]:
    """Re-judge the stored evidence: the class, the replays and the lease window at ``now``."""
    report = {k: record[k] for k in CLASSIFY_FIELDS if k in record}  # re-judged, not trusted
    decision = classify(report, now=now, policy=policy)
    if decision.code is not ClassifyClass.FLAKE:
        return [f"the evidence classifies as {decision.code.value}: {r}" for r in decision.reasons]
    problems = list(decision.lease_reasons)
    greens = record.get("greens")
    if is_int(greens) and greens != decision.greens:
        problems.append(
            f"greens is {greens} but {plural(decision.greens, 'replay')} "
            f"{'is' if decision.greens == 1 else 'are'} green"
        )
    return problems


def _binding_problems(
    record: Mapping[str, object], patch_hash: str | None, oracle_version: str | None
) -> list[str]:
    problems: list[str] = []
    for name, wanted in (("patch_hash", patch_hash), ("oracle_version", oracle_version)):
        if wanted is None:
            continue
        have = record.get(name, MISSING)
        if have is MISSING:
            problems.append(f"not bound to a {name.replace('_', ' ')} (expected {wanted!r})")
        elif have != wanted:
            problems.append(f"bound to another {name.replace('_', ' ')}: {have!r}, not {wanted!r}")
    return problems


def lease_problems(
    record: object,
    *,
    now: dt.datetime,
    policy: Policy = DEFAULT_POLICY,
    patch_hash: str | None = None,
    oracle_version: str | None = None,
) -> list[str]:
    """Every reason a stored lease is invalid at ``now`` (empty list: it is valid).

    Invalid: a malformed record (unknown or missing fields, wrong types, a
    format other than ``flakecore.lease`` 1.x); evidence that no longer
    classifies as a ``FLAKE`` whose lease may open (blank owner, naive or
    unparsable expiry, ``expires_at <= now``, expiry more than the policy's
    maximum lease after ``now`` *or* after ``opened_at``); ``opened_at`` in the
    future; ``greens``/``attempt_ids`` that disagree with the replays; roles
    that are not apart; and, when ``patch_hash``/``oracle_version`` are given,
    a lease bound to another patch or oracle (or to none).
    """
    if type(record) is not dict and not isinstance(record, Mapping):  # the ABC test for others
        return ["a lease must be a JSON object"]
    if _lease_sound(record, now, policy, patch_hash, oracle_version):
        return []  # a valid lease (what CI mostly checks): nothing to word
    return _worded_lease_problems(record, now, policy, patch_hash, oracle_version)


def _worded_lease_problems(
    record: Mapping[str, object],
    now: dt.datetime,
    policy: Policy,
    patch_hash: str | None,
    oracle_version: str | None,
) -> list[str]:
    """Every problem, worded (``[]`` exactly when :func:`_lease_sound`)."""
    problems = _structure_problems(record)
    problems += _attempt_id_problems(record)
    problems += _classify_problems(record, now, policy)
    time_problems, _ = _time_problems(record, now, policy)
    problems += time_problems
    if all(k in record for k in ("replay_host", "accepted_by", "patch_author")):
        problems += role_problems(
            record["replay_host"], record["accepted_by"], record["patch_author"]
        )
    problems += _binding_problems(record, patch_hash, oracle_version)
    return _dedupe(problems)


def _positive_int(value: object) -> bool:
    """``is_int(value) and value >= 1``, with the plain ``int`` tested inline."""
    if type(value) is int:
        return 1 <= value <= MAX_SAFE_INTEGER
    return is_int(value) and value >= 1  # type: ignore[operator]


def _digests_sound(pinned: object, patch: object) -> bool:
    """``is_digest(pinned)`` and, when present, ``is_commit_id(patch)``: one hex test of both.

    Lowercase hex of even lengths joined is lowercase hex exactly when each part is.
    """
    if type(pinned) is not str or len(pinned) != 64:
        return is_digest(pinned) and (patch is MISSING or is_commit_id(patch))
    if patch is MISSING:
        return is_lower_hex(pinned)
    if type(patch) is not str or (len(patch) != 40 and len(patch) != 64):
        return is_commit_id(patch) and is_digest(pinned)
    return is_lower_hex(pinned + patch)


def _identities(*values: object) -> bool:
    """``all(is_identity(v) for v in values)``: each a non-blank ``str``, their text tested once.

    Printable ASCII joined is printable ASCII exactly when each part is.
    """
    for value in values:
        if not (isinstance(value, str) and value.strip()):
            return False
    joined = "".join(values)  # type: ignore[arg-type]  # every one a str (above)
    return joined.isascii() and joined.isprintable()


def _lease_sound(
    record: Mapping[str, object],
    now: dt.datetime,
    policy: Policy,
    patch_hash: str | None,
    oracle_version: str | None,
) -> bool:
    """Whether :func:`lease_problems` finds nothing: the same rules, none of them worded.

    One pass over the fields, without a classify decision, a report copy or
    a message list.  False sends the record through the worded checks, which
    say why (tests/core/test_fast_paths.py holds the two to the same answer).
    """
    get = record.get
    if get("format") != LEASE_FORMAT or not format_version_ok(get("format_version")):
        return False
    keys = record.keys()  # compared as a set view: no set built from the record
    if not (keys <= _KNOWN and keys >= _REQUIRED):
        return False
    test_id, canary, owner = record["test_id"], record["canary"], record["owner"]
    if not (isinstance(test_id, str) and test_id.strip()):
        return False
    if not (isinstance(canary, str) and canary.strip()):
        return False
    if record["class"] != _FLAKE or record["origin_passed"] is not False:
        return False
    if record["property_verdict"] != "pass" or record["pin_status"] != "match":
        return False
    if not _digests_sound(record["pinned_sha256"], get("patch_hash", MISSING)):
        return False
    if "oracle_version" in record and not is_nonblank(record["oracle_version"]):
        return False
    for name, wanted in (("patch_hash", patch_hash), ("oracle_version", oracle_version)):
        if wanted is not None and get(name, MISSING) != wanted:
            return False
    greens, budget, replays = record["greens"], record["budget"], record["replays"]
    if not (_positive_int(greens) and _positive_int(budget)):
        return False
    if type(replays) is not list or len(replays) != budget or budget < policy.replay_budget:
        return False
    if not replays_sound(replays):
        return False  # every replay is now a dict with a unique non-blank attempt_id
    ids = record["attempt_ids"]
    if type(ids) is not list or ids != [r["attempt_id"] for r in replays]:
        return False
    if greens != [r["passed"] for r in replays].count(True):
        return False  # each passed is a bool (replays_sound); at least one green: greens >= 1
    host, acceptor, author = record["replay_host"], record["accepted_by"], record["patch_author"]
    if not (is_runner_id(host) and _identities(owner, acceptor, author)):
        return False
    assert isinstance(host, str) and isinstance(acceptor, str) and isinstance(author, str)
    key = identity_key(acceptor)  # folded once, compared with both
    if key == identity_key(host) or key == identity_key(author):
        return False
    if now.tzinfo is None or now.utcoffset() is None:
        return False
    try:
        expiry = parse_rfc3339(record["expires_at"])  # type: ignore[arg-type]
        opened = parse_rfc3339(record["opened_at"])  # type: ignore[arg-type]
    except ValueError:
        return False
    # Opened by now and open a while yet, no longer than the window from opened_at (hence
    # from now too).  Subtract, never add: adding a span overflows past 9999.
    return opened <= now < expiry and expiry - opened <= _max_lease(policy)


#: ``Policy.max_lease`` by ``max_lease_days``: the span is built once per run, not per lease.
_MAX_LEASES: dict[int, dt.timedelta] = {}


def _max_lease(policy: Policy) -> dt.timedelta:
    """``policy.max_lease``, kept for each ``max_lease_days`` (a few a run)."""
    if type(policy) is not Policy:  # a subclass may say otherwise
        return policy.max_lease
    days = policy.max_lease_days
    span = _MAX_LEASES.get(days)
    if span is None:
        span = policy.max_lease
        if len(_MAX_LEASES) < 64:
            _MAX_LEASES[days] = span
    return span


_PLAIN = re.compile(r"[^\s\"'=\\]+")


def _value(value: object) -> str:
    """A value for a ``key=value`` line; anything that could split or forge a line is quoted."""
    if value is MISSING or value is None:
        return "?"
    text = value if isinstance(value, str) else repr(value)
    if text.isprintable() and _PLAIN.fullmatch(text):
        return text
    return '"' + text.encode("unicode_escape").decode("ascii").replace('"', '\\"') + '"'


def short_form(record: Mapping[str, object]) -> str:
    """The human line of a lease (docs/leases.md).

    ``class=flake property=pass pin=match sha256:<digest> origin=fail
    replays=5 budget=5 greens=4 owner=... expires_at=... canary=...``; a
    missing field prints as ``?`` (the record is then invalid anyway).
    """
    origin = record.get("origin_passed", MISSING)
    replays = record.get("replays", MISSING)
    klass = record.get("class", MISSING)
    pinned = record.get("pinned_sha256", MISSING)
    parts = [
        f"class={_value(klass.lower() if isinstance(klass, str) else klass)}",
        f"property={_value(record.get('property_verdict', MISSING))}",
        f"pin={_value(record.get('pin_status', MISSING))} sha256:{_value(pinned)}",
        f"origin={'fail' if origin is False else 'pass' if origin is True else '?'}",
        f"replays={len(replays) if isinstance(replays, list) else '?'}",
        f"budget={_value(record.get('budget', MISSING))}",
        f"greens={_value(record.get('greens', MISSING))}",
        f"owner={_value(record.get('owner', MISSING))}",
        f"expires_at={_value(record.get('expires_at', MISSING))}",
        f"canary={_value(record.get('canary', MISSING))}",
    ]
    return " ".join(parts)
