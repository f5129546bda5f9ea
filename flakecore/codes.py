"""Closed sets of wire strings: outcomes, results and every policy's codes.

Each enum's *values* are the exact strings of docs/policies.md; they are what JSON
records and other languages see.  Anything not in these sets is unknown, and
an unknown code is a refusal.
"""

from __future__ import annotations

import enum

__all__ = [
    "AdmitCode",
    "AttemptFlag",
    "AttemptResult",
    "BudgetCode",
    "ClassifyClass",
    "DecideCode",
    "FailureClass",
    "LogStatus",
    "Outcome",
    "PolicyName",
    "TriageVerdict",
    "TrustReason",
]


class PolicyName(str, enum.Enum):
    """The four admission policies."""

    ADMIT = "admit"  # base-commit replay (docs/policies.md)
    DECIDE = "decide"  # clean-runner vote (docs/policies.md)
    BUDGET = "budget"  # fixed seed budget (docs/policies.md)
    CLASSIFY = "classify"  # exit classes and the lease (docs/policies.md)


class Outcome(str, enum.Enum):
    """Outcome of one execution of one test, as adapters report it."""

    PASS = "pass"  # the test ran and passed
    FAIL = "fail"  # the test's own assertion failed: the only miss
    ERROR = "error"  # setup/teardown/collection/import error, hook failure, crash
    SKIP = "skip"  # skipped, xfail, disabled, failing TODO
    TIMEOUT = "timeout"  # killed for exceeding its time limit


class AttemptFlag(str, enum.Enum):
    """Why an adapter's attempt record cannot be taken at face value.

    Evidence carrying any flag cannot open a freeze: it is incomplete.
    """

    CONFLICTING_DUPLICATE = "conflicting-duplicate"  # one id in separate elements (any outcomes)
    UNEXPECTED_PASS = "unexpected-pass"  # an expected failure passed (xpass, passing TODO)
    BAILED_OUT = "bailed-out"  # recorded after the run announced it gave up (TAP Bail out!)
    INCOMPLETE_HISTORY = "incomplete-history"  # the report kept fewer attempts than ran
    STREAM_DEFECT = "stream-defect"  # the report as a whole is defective (TAP plan, cut, ...)


class AttemptResult(str, enum.Enum):
    """``result`` of one attempt-log line (README.md, evidence primitives)."""

    PASS = "pass"  # attempt passed
    MISS = "miss"  # the assertion failed
    ERROR = "error"  # started, but errored before a verdict
    SKIP = "skip"  # started, skipped
    TIMEOUT = "timeout"  # started, killed at its time limit

    @classmethod
    def from_outcome(cls, outcome: Outcome) -> AttemptResult:
        """Map an adapter outcome to a log result (``fail`` is a ``miss``)."""
        return cls.MISS if outcome is Outcome.FAIL else cls(outcome.value)


class LogStatus(str, enum.Enum):
    """Status of a reduced attempt log."""

    COMPLETE = "COMPLETE"  # every line checked, counts are exact
    INCOMPLETE = "INCOMPLETE"  # refused: counts must not be used


class AdmitCode(str, enum.Enum):
    """Codes of ``admit`` (docs/policies.md)."""

    ACCEPT_PREEXISTING = "ACCEPT_PREEXISTING"  # base already missed: freeze allowed
    REJECT_INCOMPLETE = "REJECT_INCOMPLETE"  # evidence missing or malformed
    REJECT_BUDGET = "REJECT_BUDGET"  # attempts outside 1..cap, or no miss at all
    REJECT_PROPERTY_DRIFT = "REJECT_PROPERTY_DRIFT"  # property source differs
    REJECT_FIXTURE_EPOCH = "REJECT_FIXTURE_EPOCH"  # epochs disagree with the claim
    REJECT_PATCH_INTRODUCED = "REJECT_PATCH_INTRODUCED"  # only the patch misses


class DecideCode(str, enum.Enum):
    """Codes of ``decide`` (docs/policies.md): one per row of its table."""

    ELIGIBLE = "ELIGIBLE"  # a distinct clean runner reproduced the flake
    MISSING_FIELD = "MISSING_FIELD"  # identity field absent/blank, or a field malformed
    CLEAN_RUN_UNAVAILABLE = "CLEAN_RUN_UNAVAILABLE"  # no completed clean run echoing its inputs
    NOT_DISTINCT_RUNNER = "NOT_DISTINCT_RUNNER"  # local and clean runner are the same
    NOT_FLAKE_SHAPED = "NOT_FLAKE_SHAPED"  # deterministic/environment: fix or revert
    CLASS_MISMATCH = "CLASS_MISMATCH"  # clean run classed differently (or passed)
    FIXTURE_DRIFT = "FIXTURE_DRIFT"  # clean run loaded another fixture
    INPUT_DRIFT = "INPUT_DRIFT"  # clean run replayed another input
    PROPERTY_OWNS_BUG = "PROPERTY_OWNS_BUG"  # the property cohort did not pass


class BudgetCode(str, enum.Enum):
    """Codes of ``budget`` (docs/policies.md); ``INSUFFICIENT_BUDGET`` is a process error."""

    FIXTURE_DRIFT = "FIXTURE_DRIFT"  # parent and head fixture digests differ
    PROPERTY_MISS = "PROPERTY_MISS"  # the property fails on the parent fixture
    STABLE_FAIL = "STABLE_FAIL"  # 0 of N seeds passed
    STABLE_PASS = "STABLE_PASS"  # N of N passed: delete any freeze row
    FLAKE_CANDIDATE = "FLAKE_CANDIDATE"  # 1..N-1 passed: one ledger row
    INSUFFICIENT_BUDGET = "INSUFFICIENT_BUDGET"  # evidence unusable: ledger untouched


class ClassifyClass(str, enum.Enum):
    """Exit classes of ``classify`` (docs/policies.md)."""

    INCOMPLETE = "INCOMPLETE"  # verdict/pin missing, budget not filled, origin unknown
    FIXTURE = "FIXTURE"  # the fixture pin does not match
    PROPERTY = "PROPERTY"  # the property fails: the code owns the bug
    STABLE_RED = "STABLE_RED"  # red on every replay
    FLAKE = "FLAKE"  # at least one green in a full budget


class FailureClass(str, enum.Enum):
    """Failure classes of a run in a ``decide`` packet (closed set)."""

    FLAKE_SHAPED = "flake_shaped"  # nondeterministic failure on a minimized input
    DETERMINISTIC = "deterministic"  # fails every time: fix or revert
    ENVIRONMENT = "environment"  # the environment, not the code, failed
    PASS = "pass"  # the clean run did not fail


class TrustReason(str, enum.Enum):
    """Why a stored record counts as evidence, or why it does not (docs/trust.md).

    Three values trust a record; every other value refuses it.  A record
    the patch could have written counts only when base holds it byte for
    byte or a trusted key signed it; an unsigned record outside the scored
    checkout counts as the job's own output (its reader re-verifies it:
    docs/trust.md).
    """

    BASE_IDENTICAL = "BASE_IDENTICAL"  # trusted: byte-identical at the same path in base
    SIGNED = "SIGNED"  # trusted: a valid signature by a key the trusted configuration names
    OUTSIDE_CHECKOUT = "OUTSIDE_CHECKOUT"  # trusted: unsigned outside the checkout, the job's own
    NOT_IN_BASE = "NOT_IN_BASE"  # base has no file at this path: the diff adds it, unsigned
    CHANGED_SINCE_BASE = "CHANGED_SINCE_BASE"  # base holds other bytes here: changed, unsigned
    SYMLINK = "SYMLINK"  # reached through a symbolic link (checkout or base): not the same path
    NOT_A_FILE = "NOT_A_FILE"  # a directory, submodule (gitlink), FIFO, device ... not a file
    OUTSIDE_REPOSITORY = "OUTSIDE_REPOSITORY"  # the path leaves the repository
    NO_TRUSTED_KEYS = "NO_TRUSTED_KEYS"  # a signed record, but the trusted config names no key
    MALFORMED_ENVELOPE = "MALFORMED_ENVELOPE"  # not a DSSE envelope flakecore can read
    WRONG_PAYLOAD_TYPE = "WRONG_PAYLOAD_TYPE"  # payloadType is not the in-toto JSON type
    UNTRUSTED_KEY = "UNTRUSTED_KEY"  # no signature by a key id the trusted config names
    BAD_SIGNATURE = "BAD_SIGNATURE"  # a trusted key id, but the signature does not verify
    BAD_STATEMENT = "BAD_STATEMENT"  # the payload is not a well-formed in-toto Statement v1
    WRONG_PREDICATE_TYPE = "WRONG_PREDICATE_TYPE"  # predicateType is not flakecore's
    SUBJECT_MISMATCH = "SUBJECT_MISMATCH"  # the subject does not match the signed record
    INVALID_RECORD = "INVALID_RECORD"  # the signed record is not a valid record of its kind
    NOT_SIGNED = "NOT_SIGNED"  # a signer was required (a clean run; no base to compare), none
    SAME_SIGNER = "SAME_SIGNER"  # signed only by keys that also signed the other run


class TriageVerdict(str, enum.Enum):
    """What ``flakecore triage`` says about one red test of a patch's CI run.

    Only ``ACCEPT_PREEXISTING`` accepts: every configured policy accepted.
    The policy code that decided is reported beside it.
    """

    ACCEPT_PREEXISTING = "ACCEPT_PREEXISTING"  # base already missed it; every policy agrees
    REJECT_PATCH_INTRODUCED = "REJECT_PATCH_INTRODUCED"  # the patch broke it (admit says so)
    REJECT_TOO_MANY_RED = "REJECT_TOO_MANY_RED"  # more red tests than the policy allows: regression
    REJECT_POLICY = "REJECT_POLICY"  # another refusal of a configured policy (drift, stable, ...)
    REJECT_ERROR = "REJECT_ERROR"  # an error or timeout (set-up, collection): never a flake
    REJECT_INCOMPLETE = "REJECT_INCOMPLETE"  # the evidence cannot decide (no pinned seed, ...)
