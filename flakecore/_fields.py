"""Strict readers for untrusted JSON mappings: one path for every packet.

Python's type system is not JSON's: ``True`` is an ``int``, ``5.0 == 5``.
These helpers say what JSON means, so every policy judges types the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, cast

__all__ = [
    "ADMIT_FIELDS",
    "BUDGET_FIELDS",
    "CLASSIFY_FIELDS",
    "DECIDE_FIELDS",
    "DECIDE_IDENTITY_FIELDS",
    "FORMAT_KEYS",
    "MAX_SAFE_INTEGER",
    "MIN_SAFE_INTEGER",
    "MISSING",
    "Seed",
    "envelope_problems",
    "envelope_sound",
    "format_problem",
    "format_version_ok",
    "is_bool",
    "is_count",
    "is_int",
    "is_nonblank",
    "is_number",
    "is_seed",
    "is_v1",
    "known_keys",
    "wire_form",
]


#: A seed is a JSON string or integer; ``1234`` and ``"1234"`` differ.
Seed = int | str

#: The fields of each packet kind (docs/schemas.md), as :mod:`flakecore.records` names them.
ADMIT_FIELDS = (
    "base_misses",
    "base_attempts",
    "patch_misses",
    "property_sha256",
    "base_property_sha256",
    "fixture_epoch",
    "base_fixture_epoch",
    "claimed_epoch",
    "property_id",
    "seed",
    "base_sha",
)
DECIDE_IDENTITY_FIELDS = (
    "test_id",
    "patch_hash",
    "fixture_hash",
    "minimized_input_hash",
    "oracle_version",
    "local_runner_id",
    "clean_runner_id",
)
DECIDE_FIELDS = (
    *DECIDE_IDENTITY_FIELDS,
    "local_class",
    "clean_class",
    "clean_fixture_hash",
    "clean_input_hash",
    "property_cohort_passed",
    "clean_run_completed",
)
BUDGET_FIELDS = (
    "test_id",
    "parent_digest",
    "head_digest",
    "property_holds",
    "seeds",
    "passes",
    "budget",
    "opened_against",
)
CLASSIFY_FIELDS = (
    "property_verdict",
    "pin_status",
    "origin_passed",
    "replays",
    "owner",
    "expires_at",
    "budget",
    "pinned_sha256",
    "canary",
)


class _Missing:
    """A key that is absent (distinct from JSON ``null``)."""

    def __repr__(self) -> str:
        return "<missing>"


MISSING: Final = _Missing()

#: Keys every packet may carry to name its format.
FORMAT_KEYS: Final = ("format", "format_version")

#: Numbers in records stay within +-(2**53 - 1) (docs/trust.md): beyond it a JavaScript
#: reader (every JSON consumer that reads numbers as doubles) sees another value,
#: so ``2**53`` and ``2**53 + 1`` would be two seeds here and one seed there.
#: Larger seeds are strings.
MAX_SAFE_INTEGER: Final = 2**53 - 1
MIN_SAFE_INTEGER: Final = -MAX_SAFE_INTEGER


def is_int(value: object) -> bool:
    """A JSON integer every consumer reads alike: not a bool, not ``5.0``, within +-(2**53 - 1)."""
    if type(value) is int:  # what the decoder makes: one type test (a bool is not one)
        return MIN_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER
    return (
        isinstance(value, int)
        and not isinstance(value, bool)
        and MIN_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER
    )


def is_number(value: object) -> bool:
    """A finite JSON number within +-(2**53 - 1) (an integer or a float, not a bool)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return MIN_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER  # NaN compares false


def is_count(value: object) -> bool:
    """A non-negative JSON integer."""
    if type(value) is int:  # what the decoder makes: one type test, no call of is_int
        return 0 <= value <= MAX_SAFE_INTEGER
    return is_int(value) and value >= 0  # type: ignore[operator]


def is_bool(value: object) -> bool:
    """A JSON boolean (the string ``"false"`` is not one)."""
    return isinstance(value, bool)


def is_nonblank(value: object) -> bool:
    """A string with at least one non-whitespace character."""
    return isinstance(value, str) and value.strip() != ""


def is_seed(value: object) -> bool:
    """A seed is a JSON string or integer (within +-(2**53 - 1)), compared by value *and* type."""
    return isinstance(value, str) or is_int(value)


def known_keys(allowed: tuple[str, ...]) -> frozenset[str]:
    """Every key a packet with the fields ``allowed`` may carry (its format keys too)."""
    return frozenset((*allowed, *FORMAT_KEYS))


def format_problem(packet: Mapping[str, object], kind: str) -> str | None:
    """Check the optional ``format``/``format_version`` pair against ``kind``.

    Absent is fine (the verb names the kind); a different kind or another
    major version is refused.
    """
    expected = f"flakecore.{kind}"
    name = packet.get("format", MISSING)
    version = packet.get("format_version", MISSING)
    if name is not MISSING and name != expected:
        return f"format is {name!r}, expected {expected!r}"
    if version is not MISSING and (not isinstance(version, str) or not is_v1(version)):
        return f"format_version {version!r} is not a 1.x version"
    return None


def envelope_sound(packet: Mapping[str, object], known: frozenset[str], expected: str) -> bool:
    """No unknown key and no :func:`format_problem`; ``known`` from :func:`known_keys`.

    ``expected`` is the format name (``flakecore.<kind>``).  A policy's
    check of a sound packet starts here, without wording anything.
    """
    if not known.issuperset(packet) or packet.get("format", expected) != expected:
        return False
    version = packet.get("format_version", "1.0")
    return version == "1.0" or format_version_ok(version)


def envelope_problems(packet: Mapping[str, object], kind: str, known: frozenset[str]) -> list[str]:
    """:func:`format_problem` and each unknown key, worded; ``known`` from :func:`known_keys`."""
    if envelope_sound(packet, known, f"flakecore.{kind}"):
        return []
    problem = format_problem(packet, kind)
    unknown = [] if known.issuperset(packet) else sorted(k for k in packet if k not in known)
    # Keys the packet's schema does not define: a misspelt key is not ignored.
    return [*([] if problem is None else [problem]), *(f"unknown field {k!r}" for k in unknown)]


def format_version_ok(value: object) -> bool:
    """``1.<minor>`` with no leading zero in the minor, as the schemas spell it."""
    return isinstance(value, str) and is_v1(value)


def is_v1(version: str) -> bool:
    """``1.<minor>``: ASCII digits, no leading zero in the minor."""
    major, dot, minor = version.partition(".")
    ascii_digits = minor.isascii() and minor.isdigit()
    return major == "1" and dot == "." and ascii_digits and (minor == "0" or minor[0] != "0")


def wire_form(packet: object, record: str) -> Mapping[str, object]:
    """What a policy judges: a JSON mapping as it is, a typed record as its wire form.

    ``record`` names the :mod:`flakecore.records` class the policy takes.  A
    mapping never is one, so that module (its attrs classes) loads only for a
    caller that passes something else; what is neither is handed back for
    the policy to refuse.
    """
    if type(packet) is dict or isinstance(packet, Mapping):  # a decoded packet: no ABC check
        return cast("Mapping[str, object]", packet)
    from flakecore import records  # noqa: PLC0415 - only a typed caller pays for its classes

    kind = getattr(records, record)
    if isinstance(packet, kind):
        return cast("Mapping[str, object]", packet.to_json())
    return cast("Mapping[str, object]", packet)
