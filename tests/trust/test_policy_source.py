"""Policy from the trusted revision, on real git repositories: the patch cannot set its own policy."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from packets import admit_packet

from flakecore import AdmitCode, admit, validation
from flakecore.digest import canonical_json_sha256
from flakecore.errors import InputError, UsageError
from flakecore.gate.config import flakecore_table, parse_table, parse_toml
from flakecore.gate.policy_source import (
    compare_scored_table,
    load_outside_config,
    load_trusted_config,
    scored_table_reason,
)
from flakecore.gate.worktree import GitError
from flakecore.policy import EMPTY_TABLE_SHA256
from trust.support import Checkout, make_checkout

PUB_A = "ed25519:" + "1a" * 32
PUB_B = "ed25519:" + "2b" * 32
BASE_TOML = f"""\
[project]
name = "sample"

[tool.flakecore]
attempt_cap = 5
max_lease_days = 14

[tool.flakecore.trust.keys]
ci-local = "{PUB_A}"
"""
BASE_TABLE = {"attempt_cap": 5, "max_lease_days": 14, "trust": {"keys": {"ci-local": PUB_A}}}
#: What an agent farming a base miss writes: 1000 replays, 25 misses.
FARMING = admit_packet(base_attempts=1000, base_misses=25, patch_misses=3)


@pytest.fixture
def checkout(tmp_path: Path) -> Checkout:
    return make_checkout(tmp_path, {"pyproject.toml": BASE_TOML, "src/lib.py": "X = 1\n"})


def test_the_patchs_attempt_cap_does_not_count(checkout: Checkout) -> None:
    """The patch raises attempt_cap to farm a miss: base's cap decides, and the decision says so."""
    checkout.write("pyproject.toml", BASE_TOML.replace("attempt_cap = 5", "attempt_cap = 1000"))
    checkout.commit("raise the cap")
    document = parse_toml((checkout.top / "pyproject.toml").read_bytes(), source="patched")
    assert document is not None
    patched = parse_table(flakecore_table(document))
    assert admit(FARMING, policy=patched.policy).code is AdmitCode.ACCEPT_PREEXISTING

    trusted = compare_scored_table(load_trusted_config(checkout.top, "main"), checkout=checkout.top)
    assert trusted.policy.attempt_cap == 5
    decision = admit(FARMING, policy=trusted.policy).with_policy_source(trusted.source)
    assert decision.code is AdmitCode.REJECT_BUDGET
    record = decision.to_json()
    assert record["format_version"] == "1.1"
    assert record["policy_source"] == {
        "revision": checkout.base,
        "path": "pyproject.toml",
        "sha256": canonical_json_sha256(BASE_TABLE),
        "overrides": [],
        "scored_tree_differs": True,
    }
    assert list(validation.iter_errors(record, "decision")) == []
    reason = scored_table_reason(trusted)
    assert reason is not None and checkout.base[:12] in reason and "differs from base" in reason


def test_honest_twin_the_same_table_respelled_does_not_differ(checkout: Checkout) -> None:
    """Reordered keys and comments are the same table: no false alarm for an honest patch."""
    respelled = BASE_TOML.replace(
        "attempt_cap = 5\nmax_lease_days = 14", "# policy\nmax_lease_days = 14\nattempt_cap = 5"
    )
    checkout.write("pyproject.toml", respelled)
    checkout.write("src/lib.py", "X = 2\n")
    checkout.commit("honest change")
    trusted = compare_scored_table(load_trusted_config(checkout.top, "main"), checkout=checkout.top)
    assert trusted.source.scored_tree_differs is False
    assert scored_table_reason(trusted) is None
    assert admit(admit_packet(), policy=trusted.policy).code is AdmitCode.ACCEPT_PREEXISTING


def test_an_uncommitted_edit_is_not_read_either(checkout: Checkout) -> None:
    checkout.write(
        "pyproject.toml", BASE_TOML.replace("max_lease_days = 14", "max_lease_days = 99999")
    )
    trusted = load_trusted_config(checkout.top, "HEAD")
    assert trusted.policy.max_lease_days == 14
    assert compare_scored_table(trusted, checkout=checkout.top).source.scored_tree_differs is True


def test_keys_the_patch_adds_are_not_trusted(checkout: Checkout) -> None:
    checkout.write("pyproject.toml", BASE_TOML + f'agent = "{PUB_B}"\n')
    checkout.commit("trust my own key")
    trusted = load_trusted_config(checkout.top, "main")
    assert [k.keyid for k in trusted.trusted_keys] == ["ci-local"]
    assert load_trusted_config(checkout.top, "feature").trusted_keys[0].keyid == "agent"


@pytest.mark.parametrize(
    ("scored", "differs"),
    [
        pytest.param(None, True, id="the patch deletes pyproject.toml"),
        pytest.param("not = [toml", True, id="not TOML"),
        pytest.param('[project]\nname = "sample"\n', True, id="the table removed"),
        pytest.param("[tool.flakecore]\nwhen = 2026-11-29\n", True, id="a TOML date"),
        pytest.param(BASE_TOML, False, id="unchanged"),
    ],
)
def test_what_counts_as_a_different_scored_table(
    checkout: Checkout, scored: str | None, differs: bool
) -> None:
    if scored is None:
        (checkout.top / "pyproject.toml").unlink()
    else:
        checkout.write("pyproject.toml", scored)
    trusted = compare_scored_table(load_trusted_config(checkout.top, "main"), checkout=checkout.top)
    assert trusted.source.scored_tree_differs is differs


def test_a_scored_pyproject_that_is_a_symlink_differs(checkout: Checkout, tmp_path: Path) -> None:
    outside = tmp_path / "same.toml"
    outside.write_text(BASE_TOML)
    (checkout.top / "pyproject.toml").unlink()
    (checkout.top / "pyproject.toml").symlink_to(outside)
    trusted = compare_scored_table(load_trusted_config(checkout.top, "main"), checkout=checkout.top)
    assert trusted.source.scored_tree_differs is True


def test_a_base_without_pyproject_means_defaults_from_that_revision(tmp_path: Path) -> None:
    checkout = make_checkout(tmp_path, {"README": "x\n"})
    checkout.write("pyproject.toml", "[tool.flakecore]\nattempt_cap = 1000\n")
    checkout.commit("add a policy in the patch")
    trusted = load_trusted_config(checkout.top, "main")
    assert trusted.policy.attempt_cap == 5
    assert trusted.source.revision == checkout.base
    assert trusted.source.sha256 == EMPTY_TABLE_SHA256
    assert compare_scored_table(trusted, checkout=checkout.top).source.scored_tree_differs is True


def test_a_monorepo_names_its_policy_file(tmp_path: Path) -> None:
    checkout = make_checkout(
        tmp_path, {"pkg/pyproject.toml": '[tool.flakecore]\nlease_dir = "state/leases"\n'}
    )
    trusted = load_trusted_config(checkout.top, "main", path="pkg/pyproject.toml")
    assert trusted.source.path == "pkg/pyproject.toml"
    assert trusted.resolve(trusted.lease_dir) == str(checkout.top / "pkg" / "state" / "leases")
    with pytest.raises(UsageError, match="inside the repository"):
        load_trusted_config(checkout.top, "main", path="../pyproject.toml")


def test_a_base_pyproject_that_is_a_symlink_is_refused(tmp_path: Path) -> None:
    checkout = make_checkout(tmp_path, {"policy.toml": "[tool.flakecore]\nattempt_cap = 3\n"})
    (checkout.top / "pyproject.toml").symlink_to("policy.toml")
    checkout.git("checkout", "-q", "main")
    checkout.commit("a linked pyproject")
    with pytest.raises(InputError, match="symbolic link in base"):
        load_trusted_config(checkout.top, "main")


def test_an_unknown_base_is_a_git_error(checkout: Checkout) -> None:
    with pytest.raises(GitError, match="unknown revision"):
        load_trusted_config(checkout.top, "no-such-branch")


def test_a_config_file_outside_the_checkout(checkout: Checkout, tmp_path: Path) -> None:
    ci = tmp_path / "ci" / "flakecore.toml"
    ci.parent.mkdir()
    ci.write_text(BASE_TOML.replace("max_lease_days = 14", "max_lease_days = 7"))
    config = load_outside_config(str(ci), checkout=checkout.top)
    assert config.policy.max_lease_days == 7
    assert [k.keyid for k in config.trusted_keys] == ["ci-local"]
    assert (config.source.revision, config.source.path) == (None, str(ci))
    assert config.resolve(config.lease_dir) == str(checkout.top / ".flakecore" / "leases")
    assert compare_scored_table(config, checkout=checkout.top) == config


def test_a_config_file_inside_the_checkout_is_refused(checkout: Checkout, tmp_path: Path) -> None:
    inner = checkout.write("ci/flakecore.toml", BASE_TOML)
    with pytest.raises(UsageError, match="inside the scored checkout"):
        load_outside_config(str(inner), checkout=checkout.top)
    with pytest.raises(UsageError, match="inside the scored checkout"):
        load_outside_config(os.path.relpath(inner), checkout=checkout.top)
    link = tmp_path / "looks-outside.toml"
    link.symlink_to(inner)
    with pytest.raises(UsageError, match="inside the scored checkout"):
        load_outside_config(str(link), checkout=checkout.top)
    with pytest.raises(UsageError, match="inside the scored checkout"):
        load_outside_config(str(checkout.top / "pyproject.toml"), checkout=checkout.top)
