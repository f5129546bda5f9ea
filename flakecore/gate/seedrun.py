"""The seed-budget run (docs/gate.md), for real: digests, property, one run per seed.

``budget`` judges an observation; this module makes one, in the policy's order,
stopping as early as the table allows:

1. the parent fixture (the base commit's blob) and the head fixture are
   digested -- canonical JSON when the bytes are strict JSON, else the raw
   file digest -- and a mismatch stops everything (``FIXTURE_DRIFT``);
2. the property is scored on the **parent** fixture (a read-only temporary
   copy); a failing property stops everything (``PROPERTY_MISS``);
3. the committed seed list is checked before any seed runs (a short or
   repeating list is ``INSUFFICIENT_BUDGET`` without spending a run);
4. exactly one run per committed seed, no retries; a run that neither
   passed nor missed (an error, a timeout) leaves the budget unfilled;
5. the head fixture is hashed again after the runs (a loader that rewrote
   it is drift), the record is written atomically, then ``budget`` decides.
"""

from __future__ import annotations

import json
import os
import shlex
import stat
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

import attrs

from flakecore.budget import BUDGET_RUN_FORMAT, BudgetDecision, budget, budget_verdict
from flakecore.codes import AttemptResult, BudgetCode
from flakecore.digest import canonical_json_sha256, sha256_bytes
from flakecore.errors import InputError, UsageError
from flakecore.files import MAX_FILE_BYTES, read_bytes, write_atomic
from flakecore.gate.pool import in_order
from flakecore.gate.replay import DEFAULT_MISS_EXIT_CODES
from flakecore.gate.runtime import (
    WEAK_CONTAINMENT,
    CommandRun,
    child_env,
    remove_file,
    run_command,
    substitute,
)
from flakecore.gate.worktree import GitError, read_blob, repo_toplevel, resolve_commit
from flakecore.lease import format_version_ok
from flakecore.policy import DEFAULT_POLICY, Policy
from flakecore.records import BudgetPacket, Seed
from flakecore.seeds import seed_from_text

__all__ = [
    "BUDGET_RUN_FIELDS",
    "BUDGET_RUN_FORMAT",
    "BudgetRunOutcome",
    "BudgetRunRequest",
    "DigestKind",
    "SeedRun",
    "budget_evidence",
    "fixture_digest",
    "observation_packet",
    "parse_seeds",
    "run_budget",
]

#: The fields of ``budget.json`` and of its parts (schemas/budget-run.v1.json).
BUDGET_RUN_FIELDS: Final = {
    "": ("format", "format_version", "test_id", "parent", "head", "property", "runs", "packet"),
    "parent": ("base", "commit", "path", "digest", "digest_kind"),
    "head": ("path", "digest", "digest_kind", "digest_after_run"),
    "property": ("command", "holds", "exit", "timed_out", "duration_s"),
    "runs": ("seed", "result", "exit", "duration_s"),
}
#: How a fixture was digested: ``canonical-json`` or ``file`` (raw bytes).
DigestKind = str


def fixture_digest(data: bytes) -> tuple[str, DigestKind]:
    """The fixture's digest and its kind.

    Strict JSON is digested canonically (key order and spacing are not
    drift); anything else -- including JSON the strict reader refuses, such
    as duplicate keys -- by its raw bytes.
    """
    try:
        return canonical_json_sha256(data), "canonical-json"
    except InputError:
        return sha256_bytes(data), "file"


def parse_seeds(text: str) -> tuple[Seed, ...]:
    """``11,23,47`` -> ``(11, 23, 47)``; each token read by :func:`~flakecore.seeds.seed_from_text`.

    Only canonical decimals become integers: ``007`` stays the string ``"007"``
    (reading it as ``7`` would silently run another seed).

    Duplicates are kept here; :func:`run_budget` refuses them before anything runs.
    """
    seeds: list[Seed] = []
    for raw in text.split(","):
        token = raw.strip()
        if not token:
            raise UsageError(f"--seeds {text!r}: empty seed")
        seeds.append(seed_from_text(token))
    return tuple(seeds)


@attrs.frozen(kw_only=True)
class BudgetRunRequest:
    """What to observe.  Relative paths are relative to ``checkout``."""

    checkout: Path
    """A directory inside the checkout under test (commands run at its top)."""
    test_id: str
    """The test the budget is about (one ledger row per test id)."""
    base: str
    """The parent commit whose fixture is the reference (required: no guessing)."""
    fixture: Path
    """The head fixture file on disk."""
    property_command: tuple[str, ...]
    """The property check; ``{fixture}`` is replaced by the parent fixture's path."""
    command: tuple[str, ...]
    """The test command; ``{seed}`` is replaced by each committed seed."""
    parent_fixture: str | None = None
    """The fixture's path in the base commit (from the top); None: the head fixture's path."""
    seeds: tuple[Seed, ...] | None = None
    """The committed seed list; None: the policy's default seeds."""
    timeout_s: float | None = None
    """Per-run timeout for the property and each seed run."""
    seed_env: str | None = None
    """Also pass each seed in this environment variable."""
    miss_exit_codes: frozenset[int] = DEFAULT_MISS_EXIT_CODES
    """Exit statuses of a seed run that mean "the assertion failed"."""
    jobs: int = 1
    """Seed runs side by side (the record is the one a run one after the other gives)."""


@attrs.frozen(kw_only=True)
class SeedRun:
    """One seed's single run."""

    seed: Seed
    result: AttemptResult
    exit_code: int | None
    duration_s: float

    def to_json(self) -> dict[str, object]:
        """One entry of ``runs`` in ``budget.json``."""
        return {
            "seed": self.seed,
            "result": self.result.value,
            "exit": self.exit_code,
            "duration_s": round(self.duration_s, 3),
        }


@attrs.frozen(kw_only=True)
class BudgetRunOutcome:
    """The decision, and the record (``budget.json``) it was made on.

    ``record`` is None only when the run stopped before a packet could be
    built (an unknown base, a fixture missing from it).
    """

    decision: BudgetDecision
    record: dict[str, object] | None

    @property
    def packet(self) -> dict[str, object] | None:
        """The budget packet inside the record (what ``flakecore budget`` reads)."""
        if self.record is None:
            return None
        packet = self.record["packet"]
        assert isinstance(packet, dict)
        return packet


def _insufficient(policy: Policy, *reasons: str) -> BudgetDecision:
    return budget_verdict(BudgetCode.INSUFFICIENT_BUDGET, *reasons, policy=policy)


def _validate(request: BudgetRunRequest) -> None:
    if not request.test_id.strip():
        raise UsageError("budget-run: --test-id is blank")
    if not request.command:
        raise UsageError("budget-run: give the COMMAND to run after --")
    if request.seed_env is None and not any("{seed}" in arg for arg in request.command):
        raise UsageError(
            "budget-run: the COMMAND must take each seed: put {seed} in it, or use --seed-env"
        )
    if not any("{fixture}" in arg for arg in request.property_command):
        raise UsageError(
            "budget-run: --property-cmd must name the parent fixture with {fixture}, "
            "or it would not be scored on the parent fixture"
        )
    if request.timeout_s is not None and not request.timeout_s > 0:
        raise UsageError("budget-run: --timeout must be a positive number of seconds")
    if request.jobs < 1:
        raise UsageError("budget-run: --jobs must be 1 or more")
    seeds = request.seeds or ()
    if repeated := [s for i, s in enumerate(seeds) if any(_same(s, t) for t in seeds[:i])]:
        raise UsageError(
            f"budget-run: --seeds repeats {repeated[0]!r}: each committed seed runs exactly once"
        )


def _seed_result(run: CommandRun, miss_codes: frozenset[int]) -> AttemptResult:
    if run.timed_out:
        return AttemptResult.TIMEOUT
    if run.returncode == 0:
        return AttemptResult.PASS
    if run.returncode in miss_codes:
        return AttemptResult.MISS
    return AttemptResult.ERROR


def _rewritten(copy: Path, original: bytes) -> bool:
    """Whether the property command changed (or replaced, or removed) its fixture copy."""
    try:
        return read_bytes(copy, len(original)) != original
    except InputError:
        return True


class _Uncontained(Exception):
    """A run left a process that could not be ended: nothing it touched can be recorded."""


class _BudgetRun:
    def __init__(self, request: BudgetRunRequest, policy: Policy, output: int) -> None:
        self.request = request
        self.policy = policy
        self.output = output
        self.notes: list[str] = []
        self.weak = False

    def execute(self, argv: Sequence[str], top: Path, extra: dict[str, str]) -> CommandRun:
        """One contained run; raises :class:`_Uncontained` unless every process of it ended."""
        run = run_command(
            argv,
            cwd=top,
            timeout_s=self.request.timeout_s,
            env=child_env(extra),
            output=self.output,
        )
        if failure := run.containment_failure:
            raise _Uncontained(f"{shlex.join(argv)}: {failure}")
        self.weak = self.weak or run.weakly_contained
        return run

    def run(self, out: Path) -> BudgetRunOutcome:
        request, policy = self.request, self.policy
        checkout = Path(os.path.abspath(request.checkout))
        fixture = request.fixture if request.fixture.is_absolute() else checkout / request.fixture
        head_bytes = read_bytes(fixture, MAX_FILE_BYTES, source=str(request.fixture))
        try:
            top = repo_toplevel(checkout)
            base_sha = resolve_commit(top, request.base)
            parent_path = request.parent_fixture or self._repo_path(top, fixture)
            parent_bytes = read_blob(top, base_sha, parent_path)
        except GitError as exc:
            return BudgetRunOutcome(decision=_insufficient(policy, str(exc)), record=None)
        parent_digest, parent_kind = fixture_digest(parent_bytes)
        head_digest, head_kind = fixture_digest(head_bytes)
        seeds = policy.default_seeds if request.seeds is None else request.seeds
        record: dict[str, object] = {
            "format": BUDGET_RUN_FORMAT,
            "format_version": "1.0",
            "test_id": request.test_id,
            "parent": {
                "base": request.base,
                "commit": base_sha,
                "path": parent_path,
                "digest": parent_digest,
                "digest_kind": parent_kind,
            },
            "head": {"path": str(request.fixture), "digest": head_digest, "digest_kind": head_kind},
            "property": None,
            "runs": [],
        }
        holds: bool | None = None
        passes: int | None = None
        try:
            if parent_digest == head_digest:
                holds = self.score_property(top, parent_bytes, parent_path, record)
            if holds is True and not self.seeds_ok(seeds):
                self.notes.append("no seed was run: the committed seed list cannot fill the budget")
            elif holds is True:
                passes = self.run_seeds(top, seeds, record)
        except _Uncontained as exc:
            return BudgetRunOutcome(decision=_insufficient(policy, str(exc)), record=None)
        if self.weak:
            self.notes.append(WEAK_CONTAINMENT)
        # Hash after the run: a loader that rewrote the head fixture is drift.
        head = record["head"]
        assert isinstance(head, dict)
        try:
            after, _ = fixture_digest(read_bytes(fixture, MAX_FILE_BYTES))
        except InputError as exc:
            self.notes.append(f"the head fixture could not be read after the run: {exc.message}")
            head["digest_after_run"] = None
            passes = None
        else:
            if after != head_digest:
                self.notes.append("the head fixture changed during the run")
                head["digest_after_run"] = head_digest = after
        packet = BudgetPacket(
            test_id=request.test_id,
            parent_digest=parent_digest,
            head_digest=head_digest,
            property_holds=holds,
            seeds=tuple(seeds),
            passes=passes,
            budget=len(seeds),
            opened_against=base_sha,
        ).to_json()
        record["packet"] = packet
        body = json.dumps(record, indent=2, ensure_ascii=True, allow_nan=False) + "\n"
        write_atomic(out, body.encode("ascii"))
        decision = budget(packet, policy=policy)
        if self.notes:
            decision = attrs.evolve(decision, reasons=(*self.notes, *decision.reasons))
        return BudgetRunOutcome(decision=decision, record=record)

    @staticmethod
    def _repo_path(top: Path, fixture: Path) -> str:
        resolved = Path(os.path.realpath(fixture.parent)) / fixture.name
        try:
            return resolved.relative_to(top).as_posix()
        except ValueError:
            raise UsageError(
                f"budget-run: --fixture {fixture} is outside the repository; "
                "name the base commit's path with --parent-fixture"
            ) from None

    def seeds_ok(self, seeds: Sequence[Seed]) -> bool:
        """Whether the committed list could fill a budget (else no seed is run)."""
        probe = {
            "test_id": self.request.test_id,
            "parent_digest": "0" * 64,
            "head_digest": "0" * 64,
            "property_holds": True,
            "seeds": list(seeds),
            "passes": 0,
            "budget": len(seeds),
        }
        return budget(probe, policy=self.policy).code is not BudgetCode.INSUFFICIENT_BUDGET

    def score_property(
        self, top: Path, parent_bytes: bytes, parent_path: str, record: dict[str, object]
    ) -> bool | None:
        """Run the property on a read-only copy of the parent fixture: 0 holds, >0 fails."""
        request = self.request
        suffix = Path(parent_path).suffix
        with tempfile.TemporaryDirectory(prefix="flakecore-parent-") as scratch:
            copy = Path(scratch) / f"parent-fixture{suffix}"
            write_atomic(copy, parent_bytes)
            copy.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
            argv = substitute(request.property_command, fixture=str(copy))
            run = self.execute(argv, top, {"FLAKECORE_FIXTURE": str(copy)})
            rewritten = _rewritten(copy, parent_bytes)
        holds: bool | None
        if run.start_error is not None or run.timed_out or run.returncode is None:
            holds = None
        elif rewritten:
            holds = None
            self.notes.append("the property command rewrote the parent fixture: not scored")
        elif run.returncode < 0:
            holds = None
        else:
            holds = run.returncode == 0
        if holds is None and not rewritten:
            self.notes.append(f"the property was not scored: {run.describe()}")
        record["property"] = {
            "command": list(request.property_command),  # the copy it named is gone
            "holds": holds,
            "exit": run.returncode,
            "timed_out": run.timed_out,
            "duration_s": round(run.duration_s, 3),
        }
        return holds

    def run_seeds(self, top: Path, seeds: Sequence[Seed], record: dict[str, object]) -> int | None:
        """One run per committed seed, no retries; None when a run neither passed nor missed.

        With ``jobs`` above 1 the seeds run side by side (:mod:`flakecore.gate.pool`),
        and the runs are recorded in seed order up to the first that filled
        nothing, exactly as one after the other.
        """
        request = self.request

        def one(seed: Seed) -> tuple[Seed, CommandRun, AttemptResult]:
            text = str(seed)
            argv = substitute(request.command, seed=text)
            extra = {request.seed_env: text} if request.seed_env else {}
            run = self.execute(argv, top, extra)
            return seed, run, _seed_result(run, request.miss_exit_codes)

        def fills_nothing(done: tuple[Seed, CommandRun, AttemptResult]) -> bool:
            return done[2] not in (AttemptResult.PASS, AttemptResult.MISS)

        runs: list[SeedRun] = []
        passes = 0
        for seed, run, result in in_order(seeds, one, jobs=request.jobs, last=fills_nothing):
            runs.append(
                SeedRun(
                    seed=seed, result=result, exit_code=run.returncode, duration_s=run.duration_s
                )
            )
            record["runs"] = [r.to_json() for r in runs]
            if result in (AttemptResult.PASS, AttemptResult.MISS):
                passes += result is AttemptResult.PASS
                continue
            self.notes.append(
                f"seed {seed!r}: {result.value} ({run.describe()}); only a pass or an assertion "
                "miss fills the budget, so the remaining seeds were not run"
            )
            return None
        return passes


def _same(a: object, b: object) -> bool:
    """Equal by value *and* type (``True`` is not ``1``, ``"3"`` is not ``3``)."""
    return type(a) is type(b) and a == b


def _replayed(
    record: Mapping[str, object], seeds: list[object], head: Mapping[str, object]
) -> tuple[bool | None, int | None]:
    """``(property_holds, passes)`` as the record's own property result and runs give them.

    Mirrors :class:`_BudgetRun`: seeds run only when the property holds, in the
    committed order, one each; a run that neither passed nor missed ends the
    runs and leaves ``passes`` null, and so does a head fixture that could not
    be read after the runs.  Raises ``ValueError`` for a property result or
    runs that no budget-run could have written.
    """
    prop = record.get("property")
    holds = prop.get("holds") if isinstance(prop, Mapping) else prop
    if not (holds is None or isinstance(holds, bool)):
        raise ValueError("property is not a recorded property result")
    runs = record.get("runs")
    if not isinstance(runs, list) or not all(isinstance(r, Mapping) for r in runs):
        raise ValueError("runs is not a list of run records")
    in_order = all(_same(r.get("seed"), seed) for r, seed in zip(runs, seeds, strict=False))
    if len(runs) > len(seeds) or not in_order:
        raise ValueError("the runs are not one run per committed seed, in order")
    results = [r.get("result") for r in runs]
    filled = [x in (AttemptResult.PASS.value, AttemptResult.MISS.value) for x in results]
    if any(x not in {r.value for r in AttemptResult} for x in results) or not all(filled[:-1]):
        raise ValueError("a run has no result, or runs went on after one that filled nothing")
    if runs and holds is not True:
        raise ValueError("seeds ran although the property was not found to hold")
    unread = "digest_after_run" in head and not head["digest_after_run"]
    if holds is not True or len(runs) != len(seeds) or not all(filled) or unread:
        return holds, None
    return holds, results.count(AttemptResult.PASS.value)


def observation_packet(
    record: Mapping[str, object], *, policy: Policy = DEFAULT_POLICY
) -> tuple[dict[str, object] | None, list[str]]:
    """The budget packet of a ``budget.json``, checked against the record's own runs.

    Returns ``(packet, problems)``: ``problems`` lists every way the packet's
    summary (digests, property, passes, budget, parent commit -- and so its
    code) disagrees with what the record says was observed; the packet counts
    only when that list is empty.  A process that outlived its run, or anyone
    who edited the file afterwards, changes the summary; the runs have to be
    rewritten to match as well, which this check cannot see (that is what
    signed records are for).
    """
    packet = record.get("packet")
    if record.get("format") != BUDGET_RUN_FORMAT or not isinstance(packet, Mapping):
        return None, [f"not a {BUDGET_RUN_FORMAT} record with a packet"]
    seeds, parent, head = packet.get("seeds"), record.get("parent"), record.get("head")
    if not (isinstance(seeds, list) and isinstance(parent, Mapping) and isinstance(head, Mapping)):
        return None, ["the record has no seed list, parent or head"]
    try:
        holds, passes = _replayed(record, seeds, head)
    except ValueError as exc:
        return None, [str(exc)]
    after = head.get("digest_after_run")
    expected: dict[str, object] = {
        "test_id": record.get("test_id"),
        "parent_digest": parent.get("digest"),
        "head_digest": after if after else head.get("digest"),
        "property_holds": holds,
        "passes": passes,
        "budget": len(seeds),
        "opened_against": parent.get("commit"),
    }
    problems = [
        f"{name} is {packet.get(name)!r} but the record gives {value!r}"
        for name, value in expected.items()
        if not _same(packet.get(name), value)
    ]
    claimed = budget(packet, policy=policy).code
    observed = budget({**packet, **expected}, policy=policy).code
    if claimed is not observed:
        problems.append(f"its code is {claimed.value} but its runs give {observed.value}")
    return (None if problems else dict(packet)), problems


def budget_evidence(
    record: Mapping[str, object], *, policy: Policy = DEFAULT_POLICY
) -> tuple[Mapping[str, object], BudgetDecision | None]:
    """The budget packet a record holds, and the refusal when it cannot be trusted.

    A ``budget.json`` that ``budget-run`` wrote is accepted as it is: its
    packet, once :func:`observation_packet` found it to agree with the
    record's own runs (else the refusal is ``INSUFFICIENT_BUDGET``, naming
    every disagreement, and every field no budget-run writes).  Any other
    record is taken as a budget packet.
    """
    if record.get("format") != BUDGET_RUN_FORMAT:
        return record, None
    verified, problems = observation_packet(record, policy=policy)
    reasons = [f"not a budget.json budget-run writes: {p}" for p in _shape_problems(record)]
    reasons += [f"the record disagrees with its own runs: {p}" for p in problems]
    if verified is None or reasons:
        return record, budget_verdict(BudgetCode.INSUFFICIENT_BUDGET, *reasons, policy=policy)
    return verified, None


def _shape_problems(record: Mapping[str, object]) -> list[str]:
    """What no budget-run writes: another major version, or a field it does not know."""
    problems = []
    if not format_version_ok(record.get("format_version")):
        problems.append("format_version is missing or not a 1.x version")
    for part, fields in BUDGET_RUN_FIELDS.items():
        value = record.get(part) if part else record
        for item in value if part == "runs" and isinstance(value, list) else [value]:
            if isinstance(item, Mapping):
                where = f"{part}: " if part else ""
                problems += [f"{where}unknown field {k!r}" for k in sorted(set(item) - set(fields))]
    return problems


def run_budget(
    request: BudgetRunRequest,
    *,
    out: Path,
    policy: Policy = DEFAULT_POLICY,
    output: int = subprocess.DEVNULL,
) -> BudgetRunOutcome:
    """Observe a fixed seed budget (docs/policies.md), write ``out``, then decide with ``budget``.

    ``out`` is deleted first, so a stale observation never stands in for this
    one.  Raises :class:`~flakecore.errors.UsageError` for a request that
    makes no sense and :class:`~flakecore.errors.InputError` when the head
    fixture cannot be read; a git failure is ``INSUFFICIENT_BUDGET``, and so
    is a run that left a process which could not be ended (then no record is
    written: that process could still rewrite it).
    ``output`` receives the commands' stdout and stderr (discarded by default).
    """
    remove_file(out)
    _validate(request)
    return _BudgetRun(request, policy, output).run(out)
