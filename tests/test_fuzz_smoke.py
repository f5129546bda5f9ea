"""A short smoke of every fuzz harness under hypothesis (atheris runs in ``nox -s fuzz``).

Random bytes rarely form a packet, so each policy harness is also fed valid
packets with fields replaced, deleted or retyped: the shapes a hostile
producer would try.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from fuzz_harnesses import HARNESSES
from hypothesis import given, settings
from hypothesis import strategies as st
from packets import admit_packet, budget_packet, classify_report, decide_packet

VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 12) | st.floats() | st.text(max_size=8)
    | st.sampled_from(["a" * 64, "pass", "fail", "match", "flake_shaped", "2026-12-01T00:00:00Z"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)  # fmt: skip

BASES: dict[str, Callable[[], dict[str, object]]] = {
    "admit": admit_packet,
    "decide": decide_packet,
    "budget": budget_packet,
    "classify": classify_report,
}


def mutated(base: dict[str, object]) -> st.SearchStrategy[bytes]:
    keys = st.sampled_from([*base, "extra", "Test_Id"])
    changes = st.dictionaries(keys, VALUES | st.just(...), max_size=3)
    return changes.map(
        lambda c: json.dumps(
            {k: v for k, v in {**base, **c}.items() if v is not ...}, allow_nan=True
        ).encode()
    )


@pytest.mark.parametrize("name", sorted(HARNESSES))
@settings(max_examples=150)
@given(data=st.binary(max_size=200))
def test_harness_on_random_bytes(name: str, data: bytes) -> None:
    HARNESSES[name](data)


@pytest.mark.parametrize("name", sorted(BASES))
@settings(max_examples=300)
@given(data=st.data())
def test_policy_harness_on_mutated_packets(name: str, data: st.DataObject) -> None:
    packet = data.draw(mutated(BASES[name]()))
    HARNESSES[name](packet)


def test_harnesses_accept_the_valid_packets() -> None:
    # The invariant checks run on the accept path too: a valid packet exercises them.
    for name, base in BASES.items():
        HARNESSES[name](json.dumps(base()).encode())
