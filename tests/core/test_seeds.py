"""One rule for seeds given as text: budget-run --seeds, replay --seed, --flakecore-seed."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flakecore._fields import MAX_SAFE_INTEGER as MAX_SAFE_INT
from flakecore.errors import UsageError
from flakecore.gate.seedrun import parse_seeds
from flakecore.seeds import fresh_seed, seed_from_text


@pytest.mark.parametrize(
    ("text", "seed"),
    [
        ("1234", 1234),
        ("0", 0),
        ("-5", -5),
        (str(MAX_SAFE_INT), MAX_SAFE_INT),
        (str(-MAX_SAFE_INT), -MAX_SAFE_INT),
        (str(MAX_SAFE_INT + 1), str(MAX_SAFE_INT + 1)),  # beyond 2^53-1: a string seed
        (str(-MAX_SAFE_INT - 1), str(-MAX_SAFE_INT - 1)),
        ("007", "007"),  # not canonical: reading it as 7 would run another seed
        ("-0", "-0"),
        ("+7", "+7"),
        ("1_000", "1_000"),
        (" 12", " 12"),  # exactly as given
        ("\u0663", "\u0663"),  # an Arabic-Indic digit is not a decimal here
        ("pinned-seed", "pinned-seed"),
    ],
)
def test_seed_from_text(text: str, seed: int | str) -> None:
    got = seed_from_text(text)
    assert (type(got), got) == (type(seed), seed)


@pytest.mark.parametrize("text", ["", " ", "\t"])
def test_blank_seed_is_refused(text: str) -> None:
    with pytest.raises(UsageError):
        seed_from_text(text)


@given(st.one_of(st.integers(-MAX_SAFE_INT, MAX_SAFE_INT), st.text(min_size=1)))
def test_text_of_a_seed_reads_back_as_that_seed(seed: int | str) -> None:
    if isinstance(seed, str) and (not seed.strip() or seed_from_text(seed) != seed):
        return  # blank, or a string that reads as an integer: never produced by the rule
    again = seed_from_text(str(seed))
    assert (type(again), again) == (type(seed), seed)


def test_budget_seeds_use_the_same_rule() -> None:
    assert parse_seeds("11, 007,abc,9007199254740992") == (11, "007", "abc", "9007199254740992")


def test_fresh_seed_is_an_integer_every_source_takes() -> None:
    assert all(0 <= fresh_seed() < 2**32 for _ in range(100))
