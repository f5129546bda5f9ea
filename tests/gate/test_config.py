"""``[tool.flakecore]``: strict keys and types, discovery, flags over the file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flakecore.errors import InputError, UsageError
from flakecore.gate import config as config_module
from flakecore.gate.config import (
    CONFIG_KEYS,
    DEFAULT_FIXTURE_GLOBS,
    parse_policy_override,
    parse_table,
)
from flakecore.gate.policy_source import load_outside_config
from flakecore.policy import DEFAULT_POLICY, Policy
from gate.support import AUTHOR, HOST, NOW_TEXT, REVIEWER, TEST_ID, cli, dump, lease_report


def pyproject(directory: Path, body: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "pyproject.toml"
    path.write_text(body)
    return path


def test_defaults() -> None:
    config = parse_table({})
    assert config.policy == DEFAULT_POLICY
    assert config.ledger_dir == ".flakecore/ledger" and config.lease_dir == ".flakecore/leases"
    assert config.fixture_globs == DEFAULT_FIXTURE_GLOBS
    assert config.effective_ledger_globs == (".flakecore/ledger/*", ".flakecore/leases/*")


def test_every_key() -> None:
    config = parse_table(
        {
            "attempt_cap": 4,
            "min_base_misses": 2,
            "min_seed_budget": 10,
            "default_seeds": [1, 2, 3],
            "replay_budget": 6,
            "max_lease_days": 7,
            "max_log_lines": 500,
            "ledger_dir": "state/ledger/",
            "lease_dir": "./state/leases",
            "fixture_globs": ["golden/*"],
            "ledger_globs": ["state/*"],
        }
    )
    assert config.policy == Policy(
        attempt_cap=4,
        min_base_misses=2,
        min_seed_budget=10,
        default_seeds=(1, 2, 3),
        replay_budget=6,
        max_lease_days=7,
        max_log_lines=500,
    )
    assert (config.ledger_dir, config.lease_dir) == ("state/ledger", "state/leases")
    assert config.fixture_globs == ("golden/*",) and config.effective_ledger_globs == ("state/*",)
    assert set(CONFIG_KEYS) >= {"attempt_cap", "ledger_globs"}


BAD = [
    ({"max_lease_dayz": 7}, "max_lease_dayz"),
    ({"policy": {"max_lease_days": 7}}, "policy"),
    ({"max_lease_days": "7"}, "max_lease_days"),
    ({"max_lease_days": True}, "max_lease_days"),
    ({"max_lease_days": 7.0}, "max_lease_days"),
    ({"max_lease_days": 0}, "max_lease_days"),
    ({"attempt_cap": -1}, "attempt_cap"),
    ({"default_seeds": "11,23"}, "default_seeds"),
    ({"default_seeds": []}, "default_seeds"),
    ({"default_seeds": [1, 1]}, "default_seeds"),
    ({"default_seeds": [1, "2"]}, "default_seeds"),
    ({"ledger_dir": 5}, "ledger_dir"),
    ({"ledger_dir": "  "}, "ledger_dir"),
    ({"ledger_dir": "/abs/ledger"}, "ledger_dir"),
    ({"lease_dir": "../outside"}, "lease_dir"),
    ({"fixture_globs": "tests/*"}, "fixture_globs"),
    ({"ledger_globs": ["ok", ""]}, "ledger_globs"),
    ({"ledger_dir": "same", "lease_dir": "same/"}, "must differ"),
]


@pytest.mark.parametrize(("table", "key"), BAD)
def test_unknown_keys_and_wrong_types_name_the_key(table: dict[str, object], key: str) -> None:
    with pytest.raises(UsageError, match=key):
        parse_table(table)


def test_table_must_be_a_table() -> None:
    with pytest.raises(UsageError):
        parse_table(["not", "a", "table"])


def test_an_outside_config_is_read_and_its_dirs_resolve_in_the_checkout(tmp_path: Path) -> None:
    path = pyproject(tmp_path / "ci", '[tool.flakecore]\nmax_lease_days = 3\nledger_dir = "l"\n')
    config = load_outside_config(str(path), checkout=tmp_path / "checkout")
    assert config.policy.max_lease_days == 3
    assert config.source.path == str(path) and config.source.revision is None
    assert config.resolve(config.ledger_dir) == str(tmp_path / "checkout" / "l")


def test_an_outside_config_without_table_is_defaults(tmp_path: Path) -> None:
    path = pyproject(tmp_path, '[project]\nname = "x"\n')
    config = load_outside_config(str(path), checkout=tmp_path / "checkout")
    assert config.policy == DEFAULT_POLICY


def test_invalid_toml_and_missing_file(tmp_path: Path) -> None:
    path = pyproject(tmp_path, "[tool.flakecore\nmax = \n")
    elsewhere = tmp_path / "checkout"
    with pytest.raises(InputError, match="invalid TOML"):
        load_outside_config(str(path), checkout=elsewhere)
    with pytest.raises(InputError, match="no such file"):
        load_outside_config(str(tmp_path / "missing.toml"), checkout=elsewhere)


def test_without_a_toml_parser_a_config_file_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Python 3.10 without tomli: never run on defaults looser than the repository's policy."""
    monkeypatch.setattr(config_module, "_loader", lambda: None)
    elsewhere = tmp_path / "checkout"
    for name, body in (
        ("a", "[tool.flakecore]\nmax_lease_days = 3\n"),
        ("b", "[tool]\nflakecore.max_lease_days = 3\n"),
        ("c", '[project]\nname = "flakecore"\n[tool.ruff]\nx = 1\n'),
    ):
        path = pyproject(tmp_path / name, body)
        with pytest.raises(UsageError, match="tomli"):
            load_outside_config(str(path), checkout=elsewhere)
    assert config_module.mentions_flakecore(b"[tool.flakecore]\n")
    assert config_module.mentions_flakecore(b"[tool]\nflakecore.max_lease_days = 3\n")
    assert not config_module.mentions_flakecore(b'[project]\nname = "flakecore"\n')


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("max_lease_days=7", ("max_lease_days", 7)),
        ("max-lease-days = 7", ("max_lease_days", 7)),
        ("default_seeds=1,2,3", ("default_seeds", (1, 2, 3))),
    ],
)
def test_policy_overrides(text: str, expected: tuple[str, object]) -> None:
    assert parse_policy_override(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "max_lease_days",
        "nope=1",
        "max_lease_days=seven",
        "max_lease_days=\u0667",
        "default_seeds=1,1",
    ],
)
def test_bad_policy_overrides(text: str) -> None:
    with pytest.raises(UsageError):
        parse_policy_override(text)


# --------------------------------------------------------------------------- precedence via the CLI


def _open(cwd: Path, *extra: str) -> int:
    report = dump(cwd.parent / "report.json", lease_report())
    done = cli(
        "lease", "open", "--report", report, "--test-id", TEST_ID, "--replay-host", HOST,
        "--accepted-by", REVIEWER, "--patch-author", AUTHOR, "--now", NOW_TEXT, *extra,
        cwd=cwd,
    )  # fmt: skip
    return done.returncode


def test_the_working_tree_pyproject_is_never_policy(tmp_path: Path) -> None:
    """A 3-day table in the checkout is not read: without a source lease open refuses (64)."""
    work = tmp_path / "work"
    pyproject(work, "[tool.flakecore]\nmax_lease_days = 3\nlease_dir = 'my-leases'\n")
    assert _open(work) == 64
    assert _open(work, "--no-config", "--dir", "flagdir") == 0, "the defaults allow 7 days"
    assert (work / "flagdir").is_dir() and not (work / "my-leases").exists()


def test_config_outside_the_checkout_then_flags(tmp_path: Path) -> None:
    """The report's expiry is 7 days out: a 3-day CI policy refuses it, a flag allows it."""
    work = tmp_path / "work"
    work.mkdir()
    ci = pyproject(
        tmp_path / "ci", "[tool.flakecore]\nmax_lease_days = 3\nlease_dir = 'my-leases'\n"
    )
    assert _open(work, "--config", str(ci)) == 6
    assert not (work / "my-leases").exists()
    assert _open(work, "--config", str(ci), "--policy", "max_lease_days=14") == 0
    assert len(list((work / "my-leases").iterdir())) == 1


def test_config_inside_the_checkout_is_refused(tmp_path: Path) -> None:
    work = tmp_path / "work"
    inside = pyproject(work / "conf", "[tool.flakecore]\nmax_lease_days = 3\n")
    assert _open(work, "--config", str(inside), "--dir", "d") == 64
    linked = tmp_path / "linked.toml"
    linked.symlink_to(inside)
    assert _open(work, "--config", str(linked), "--dir", "d") == 64, "through a link too"


def test_decisions_record_the_policy_used(tmp_path: Path) -> None:
    ci = pyproject(tmp_path / "ci", "[tool.flakecore]\nmin_seed_budget = 9\n")
    packet = dump(tmp_path / "b.json", {"test_id": "t", "parent_digest": "a" * 64,
        "head_digest": "a" * 64, "property_holds": True, "seeds": list(range(8)),
        "passes": 3, "budget": 8})  # fmt: skip
    done = cli("budget", packet, "--json", "--config", str(ci), cwd=tmp_path / "ci")
    assert done.returncode == 64, "a --config inside the directory it runs in is refused"
    done = cli("budget", packet, "--json", "--config", str(ci))
    decision = json.loads(done.stdout)
    assert decision["code"] == "INSUFFICIENT_BUDGET"
    assert decision["policy_values"]["min_seed_budget"] == 9
    assert decision["policy_source"]["path"] == str(ci)
    assert decision["policy_source"]["revision"] is None
    done = cli("budget", packet, "--json", "--config", str(ci), "--policy", "min_seed_budget=8")
    decision = json.loads(done.stdout)
    assert decision["policy_values"]["min_seed_budget"] == 8
    assert decision["policy_source"]["overrides"] == ["min_seed_budget"]
    assert done.returncode == 0
    done = cli("budget", packet, "--json")
    assert json.loads(done.stdout)["policy_source"]["path"] is None, "no source: the defaults"


@pytest.mark.parametrize(
    ("body", "code", "needle"),
    [
        ("[tool.flakecore]\nmax_lease_dayz = 3\n", 64, "max_lease_dayz"),
        ("[tool.flakecore]\nmax_lease_days = '3'\n", 64, "max_lease_days"),
        ("[tool.flakecore\n", 65, "invalid TOML"),
    ],
)
def test_bad_config_on_the_command_line(tmp_path: Path, body: str, code: int, needle: str) -> None:
    ci = pyproject(tmp_path / "ci", body)
    for args in (("budget", "x.json"), ("lease", "check")):
        done = cli(*args, "--config", str(ci))
        assert done.returncode == code, (args, done.stderr)
        assert needle in done.stderr


def test_missing_config_file_and_conflicting_flags(tmp_path: Path) -> None:
    assert cli("lease", "check", "--config", str(tmp_path / "nope.toml")).returncode == 66
    done = cli("lease", "check", "--config", str(tmp_path / "x.toml"), "--no-config")
    assert done.returncode == 64


#: The smallest [tool.flakecore.triage] table the parser accepts.
TRIAGE = {
    "command": ["python", "-m", "pytest", "{test_id}", "--flakecore-seed", "{seed}"],
    "epoch_lock": "fixtures/epoch.lock",
}


def test_the_triage_table_with_every_key() -> None:
    config = parse_table(
        {
            "max_red_tests": 3,
            "triage": {
                **TRIAGE,
                "policies": ["budget", "replay"],
                "report": "out/report.xml",
                "report_format": "junit",
                "setup": ["sh", "-c", "make venv"],
                "timeout": 30,
                "fixture": "fixtures/data.json",
                "property_command": ["python", "check.py", "{fixture}"],
            },
        }
    )
    assert config.policy.max_red_tests == 3
    triage = config.triage
    assert triage is not None
    assert triage.command == tuple(TRIAGE["command"])
    assert triage.policies == ("replay", "budget")  # always in the order triage runs them
    assert (triage.report, triage.report_format, triage.timeout_s) == (
        "out/report.xml",
        "junit",
        30.0,
    )
    assert (
        triage.setup == ("sh", "-c", "make venv") and triage.budget_fixture == "fixtures/data.json"
    )
    assert parse_table({"triage": TRIAGE}).triage.budget_fixture == "fixtures/epoch.lock"  # type: ignore[union-attr]
    assert parse_table({}).triage is None


TRIAGE_BAD = [
    ({"command": TRIAGE["command"]}, "epoch_lock is required"),
    ({"epoch_lock": "e"}, "command is required"),
    ({"comand": ["x"]}, "unknown key 'comand'"),
    ({"command": "python -m pytest {test_id} {seed}"}, "list of strings"),
    ({"command": []}, "list of strings"),
    ({"command": ["", "{test_id}{seed}"]}, "the program is blank"),
    ({"command": ["pytest", "{test_id}"]}, r"must contain \{seed\}"),
    ({"command": ["pytest", "--flakecore-seed", "{seed}"]}, r"must contain \{test_id\}"),
    ({"epoch_lock": "/etc/epoch"}, "relative path inside the repository"),
    ({"epoch_lock": "../epoch"}, "relative path inside the repository"),
    ({"policies": ["budget"]}, "must name replay"),
    ({"policies": ["replay", "replay"]}, "no policy twice"),
    ({"policies": ["replay", "vote"]}, "unknown 'vote'"),
    ({"policies": "replay"}, "list of policy names"),
    ({"policies": ["replay", "budget"]}, "give property_command"),
    ({"property_command": ["check.py"]}, r"must contain \{fixture\}"),
    ({"timeout": 0}, "positive number"),
    ({"timeout": True}, "positive number"),
    ({"report_format": ""}, "format name"),
    ({"report": "../r.xml"}, "relative path"),
]


@pytest.mark.parametrize(("changes", "why"), TRIAGE_BAD)
def test_the_triage_table_is_strict(changes: dict[str, object], why: str) -> None:
    table = {**TRIAGE, **changes}
    for key in ("command", "epoch_lock"):
        if key not in changes and f"{key} is required" in why:
            table.pop(key)
    with pytest.raises(UsageError, match=why):
        parse_table({"triage": table})


def test_the_triage_table_and_its_policy_number_come_with_the_table_digest() -> None:
    plain, triaged = parse_table({}), parse_table({"triage": TRIAGE})
    assert plain.source.sha256 != triaged.source.sha256
    with pytest.raises(UsageError, match="max_red_tests"):
        parse_table({"max_red_tests": 0})
