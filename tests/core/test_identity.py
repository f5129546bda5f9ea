"""SPEC 8's identity rule (``flakecore.identity``): every character class, and the honest twins."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from identities import BLANK, DISTINCT, HONEST, IDENTITIES, NOT_PLAIN, SAME

from flakecore import identity
from flakecore.identity import (
    identity_problem,
    is_identity,
    is_runner_id,
    runner_id_problem,
    same_identity,
    same_runner,
)

LOCAL = "img:sha256:" + "a" * 64 + "+nonce:0123456789abcdef"


def spec_identity(text: str) -> bool:
    """SPEC 8 word for word, the slow way: after NFKC, printable ASCII without
    control or format characters, not blank; and already in that form (see
    flakecore.identity: a character NFKC folds is refused, not folded)."""
    folded = unicodedata.normalize("NFKC", text)
    plain = all(ord(ch) < 0x80 and unicodedata.category(ch) not in ("Cc", "Cf") for ch in folded)
    return folded == text and plain and folded.strip(" ") != ""


@pytest.mark.parametrize(("text"), [t for _, t in BLANK], ids=[i for i, _ in BLANK])
def test_blank_is_missing(text: str) -> None:
    assert identity_problem(text) == "is missing or blank"
    assert not is_identity(text)


@pytest.mark.parametrize("value", [None, 7, True, ["ci-bot"], {"name": "ci-bot"}, b"ci-bot"])
def test_a_non_string_is_missing(value: object) -> None:
    assert identity_problem(value) == "is missing or blank"


@pytest.mark.parametrize(
    ("text", "code_point"), [c[1:] for c in NOT_PLAIN], ids=[c[0] for c in NOT_PLAIN]
)
def test_not_plain_is_refused_naming_the_character(text: str, code_point: int) -> None:
    problem = identity_problem(text)
    assert problem is not None and problem.startswith("is not printable ASCII")
    assert f"U+{code_point:04X}" in problem
    assert problem.isascii() and problem.isprintable()  # the error line shows what the eye cannot
    assert not is_identity(text)
    assert not spec_identity(text)


@pytest.mark.parametrize("text", HONEST)
def test_honest_identities_pass(text: str) -> None:
    assert identity_problem(text) is None
    assert is_identity(text) and spec_identity(text)


@pytest.mark.parametrize(("a", "b"), DISTINCT)
def test_distinct_honest_identities_stay_distinct(a: str, b: str) -> None:
    assert is_identity(a) and is_identity(b)
    assert not same_identity(a, b) and not same_identity(b, a)


@pytest.mark.parametrize(("a", "b"), SAME)
def test_case_and_spaces_do_not_make_a_second_identity(a: str, b: str) -> None:
    assert is_identity(a) and is_identity(b)
    assert same_identity(a, b)


def test_runner_ids_follow_the_grammar_exactly() -> None:
    assert is_runner_id(LOCAL)
    assert is_runner_id("img:local-uncontainerized+nonce:0123456789abcdef")
    for bad in (
        LOCAL.upper(),
        " " + LOCAL,
        LOCAL + "\n",
        LOCAL.replace("img", "\uff49mg"),
        LOCAL[:5] + "\u200b" + LOCAL[5:],
        "img:local\u2010uncontainerized+nonce:0123456789abcdef",
        "img:ubuntu:24.04+nonce:0123456789abcdef",
        LOCAL[:-1],
    ):
        assert runner_id_problem(bad) == "is not a runner id 'img:<image digest>+nonce:<16 hex>'"
    assert runner_id_problem("  ") == runner_id_problem(None) == "is missing or blank"


def test_same_runner_is_the_identity_comparison() -> None:
    assert same_runner is same_identity


# --------------------------------------------------------------------------- invariants


@given(st.text())
@example("\uff43\uff49-bot")
@example("\u212a")
@example("a\u00a0b")
def test_the_rule_is_spec_8_word_for_word(text: str) -> None:
    """The fast check (two C loops) equals the literal NFKC definition."""
    assert is_identity(text) is spec_identity(text)


@given(st.text())
def test_no_identity_has_a_non_ascii_character_after_nfkc(text: str) -> None:
    if is_identity(text):
        assert unicodedata.normalize("NFKC", text).isascii()
        assert unicodedata.normalize("NFKC", text) == text


@given(IDENTITIES)
def test_every_printable_ascii_text_is_an_identity(text: str) -> None:
    assert is_identity(text)


@given(st.text(st.characters(max_codepoint=0x7F)))
@example("\x1c\x1d\x1e\x1f x\t\x0b\x0c")  # str.isspace's ASCII separators
@example("MiXeD Case-7")
def test_the_ascii_fast_fold_equals_the_slow_fold(text: str) -> None:
    """The comparison key takes the fast path for ASCII; the NFKC path must agree."""
    assert identity.identity_key(text) == identity._fold_slow(text)


@given(IDENTITIES, IDENTITIES)
def test_identities_are_the_same_only_modulo_case_and_spaces(a: str, b: str) -> None:
    key = str.maketrans("", "", " ")
    assert same_identity(a, b) is (a.lower().translate(key) == b.lower().translate(key))
