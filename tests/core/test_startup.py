"""Start-up without the cost of what a call does not use, and with the same answers.

``import flakecore`` imports nothing; each public name loads its module on
first use.  The CLI imports only the module of the verb a call names; the
parser it builds that way must parse every command line exactly as the full
parser does (same namespace, same usage error, same help and version text).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import hashlib
import importlib
import io
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from packets import NOW, REPO, admit_packet, budget_packet, classify_report, decide_packet

import flakecore
from flakecore import cli
from flakecore.cli import _common, _main
from flakecore.errors import UsageError


def fresh(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    return done.stdout.strip()


def test_importing_the_package_imports_no_module_of_it() -> None:
    loaded = "import sys, flakecore; print(sorted(m for m in sys.modules if 'flakecore' in m))"
    assert fresh(loaded) == "['flakecore']"


def test_every_public_name_is_its_modules_object() -> None:
    homes = flakecore._HOME_OF
    assert set(homes) == set(flakecore.__all__) - {"__version__"}
    for name, module in homes.items():
        expected = getattr(importlib.import_module(f"flakecore.{module}"), name)
        assert getattr(flakecore, name) is expected, name
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = flakecore.nope


def test_the_type_checking_imports_are_the_table() -> None:
    """The names type checkers see are exactly the ones loaded at run time, from the same homes."""
    tree = ast.parse(Path(flakecore.__file__).read_text())
    block = next(n for n in tree.body if isinstance(n, ast.If))
    imported = {
        alias.name: node.module
        for node in block.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert imported == {name: f"flakecore.{m}" for name, m in flakecore._HOME_OF.items()}


def test_policy_functions_stay_functions_after_their_modules_load() -> None:
    code = (
        "import flakecore.admit, flakecore.decide, flakecore.budget, flakecore.classify\n"
        "import flakecore\n"
        "print([callable(f) and f.__module__ for f in "
        "(flakecore.admit, flakecore.decide, flakecore.budget, flakecore.classify)])"
    )
    modules = "['flakecore.admit', 'flakecore.decide', 'flakecore.budget', 'flakecore.classify']"
    assert fresh(code) == modules


def test_star_import_and_dir_name_everything() -> None:
    namespace: dict[str, object] = {}
    exec("from flakecore import *", namespace)
    assert set(flakecore.__all__) <= set(namespace)
    assert set(flakecore.__all__) <= set(dir(flakecore))


def test_a_verb_call_imports_only_its_own_verb_module() -> None:
    code = (
        "import sys\n"
        "from flakecore.cli._main import parser_for\n"
        "parser_for(['decide', '-'])\n"
        "print(sorted(m for m in sys.modules if m.startswith('flakecore.cli.')))"
    )
    loaded = ast.literal_eval(fresh(code))
    verbs = [m for m in loaded if m.rsplit(".", 1)[1] in set(cli.VERBS.values())]
    assert verbs == ["flakecore.cli._policies"]
    version = "import sys; import flakecore.cli._main as c; c.parser_for(['--version']); " + (
        "print(sorted(m for m in sys.modules if m.rsplit('.', 1)[-1] in set(c.VERBS.values())))"
    )
    assert fresh(version) == "[]"


def test_version_is_answered_before_the_cli_loads() -> None:
    code = (
        "import contextlib, io, sys\n"
        "from flakecore.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        "    assert main(['--vers', '--bogus']) == 0\n"
        "print(repr(out.getvalue()))\n"
        "print(sorted(m for m in sys.modules if 'flakecore' in m))"
    )
    printed, modules = fresh(code).splitlines()
    assert ast.literal_eval(modules) == ["flakecore", "flakecore._version", "flakecore.cli"]
    # what argparse's version action prints, and the exit it takes
    assert outcome(_main.build_parser(), ["--vers", "--bogus"]) == (
        "exit",
        0,
        ast.literal_eval(printed),
        "",
    )


def test_the_verb_table_is_what_the_modules_register() -> None:
    def registered(parser: argparse.ArgumentParser) -> list[str]:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        return list(sub.choices)

    assert registered(_main.build_parser()) == list(cli.VERBS)
    for verb, module in cli.VERBS.items():
        added = registered(_main.build_parser([verb]))
        assert verb in added
        assert set(added) <= {v for v, m in cli.VERBS.items() if m == module}
    # a policy verb's call builds its own parser, not the other three's
    for verb in ("admit", "decide", "budget", "classify", "replay", "budget-run"):
        assert registered(_main.build_parser([verb])) == [verb]


def test_the_codes_kept_apart_load_on_first_use_and_are_the_same_objects() -> None:
    code = (
        "import importlib, sys, flakecore.codes as c, flakecore.exits as e\n"
        "before = sorted(m for m in sys.modules if 'codes' in m)\n"
        "same = [getattr(c, n) is getattr(importlib.import_module('flakecore.' + h), n)\n"
        "        for n, h in c._HOMES.items()]\n"
        "tables = [e.ADMIT_EXIT is e.ADMIT_EXIT, set(e.TRIAGE_EXIT) == set(c.TriageVerdict)]\n"
        "print(before, all(same), len(same), tables, set(c.__all__) <= set(dir(c)),\n"
        "      set(e.__all__) <= set(dir(e)))"
    )
    assert fresh(code) == "['flakecore.codes'] True 11 [True, True] True True"
    from flakecore import codes, exits

    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = codes.Nope
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = exits.Nope
    # every table gives every code of its set an exit, in the order it is written
    for name, (code_set, written) in exits._TABLES.items():
        table = getattr(exits, name)
        assert [code.name for code in table] == list(written)
        assert set(table) == set(getattr(codes, code_set))
    # triage's exit is its most serious verdict's, by the table's order
    verdicts = list(exits.TRIAGE_EXIT)
    assert exits.triage_exit(verdicts[::-1]) == exits.TRIAGE_EXIT[verdicts[0]]
    assert exits.triage_exit([]) == exits.TRIAGE_NOTHING_RED


def test_the_runner_id_class_loads_on_first_use_and_is_the_same_object() -> None:
    code = (
        "import sys, flakecore.identity as i\n"
        "before = 'flakecore._runner' in sys.modules\n"
        "import flakecore._runner as r\n"
        "print(before, i.RunnerId is r.RunnerId, 'RunnerId' in dir(i))"
    )
    assert fresh(code) == "False True True"
    from flakecore import identity

    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = identity.Nope


def outcome(parser: argparse.ArgumentParser, argv: Sequence[str]) -> tuple[object, ...]:
    """What parsing ``argv`` gives: the namespace, or the error, or what an exit printed."""
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            args = parser.parse(argv)  # type: ignore[attr-defined]
    except UsageError as exc:
        return ("usage", str(exc))
    except SystemExit as exc:
        return ("exit", exc.code, out.getvalue(), err.getvalue())
    values = {k: v for k, v in vars(args).items() if k not in ("run", "verb_parser")}
    return ("args", values, args.run.__qualname__, args.verb_parser.prog)


TOKENS = st.sampled_from(
    [
        *cli.VERBS,
        "--version", "--vers", "--v", "--", "-h", "--help", "--he", "--json", "-",
        "--format", "json", "--no-config", "--now", "2026-11-29T12:00:00Z", "--base", "main",
        "check", "open", "show", "apply", "--dirs", "x.json", "--bogus", "-x", "--version=1",
        "--test-id", "t", "dec", "",
    ]
)  # fmt: skip


@settings(max_examples=300)
@given(st.lists(TOKENS, max_size=6))
def test_the_parser_a_call_gets_parses_it_as_the_full_one(argv: list[str]) -> None:
    assert outcome(_main.parser_for(argv), argv) == outcome(_main.build_parser(), argv)


@pytest.mark.parametrize("verb", list(cli.VERBS))
def test_each_verbs_help_is_the_full_parsers(verb: str) -> None:
    assert outcome(_main.parser_for([verb, "--help"]), [verb, "--help"]) == outcome(
        _main.build_parser(), [verb, "--help"]
    )


HELP_CALLS = [
    ["--help"],
    ["--version"],
    ["decide"],
    ["decide", "--bogus"],
    ["lease"],
    ["lease", "check", "--help"],
    ["ledger", "--help"],
    *([verb, "--help"] for verb in cli.VERBS),
]


@pytest.mark.parametrize("columns", ["5", "30", "80", "200"])
def test_help_and_usage_are_the_stock_formatters(
    monkeypatch: pytest.MonkeyPatch, columns: str
) -> None:
    """The formatter that asks for the width late, and the subparsers named without
    formatting, print what argparse's own do, at every terminal width."""
    monkeypatch.setenv("COLUMNS", columns)
    ours = [outcome(_main.build_parser(), argv) for argv in HELP_CALLS]
    stock_init = _common.UsageArgumentParser.__init__

    def with_stock_formatter(self: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        stock_init(self, *args, formatter_class=argparse.HelpFormatter, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(_common.UsageArgumentParser, "__init__", with_stock_formatter)
    monkeypatch.setattr(
        _common.UsageArgumentParser, "add_subparsers", argparse.ArgumentParser.add_subparsers
    )
    assert [outcome(_main.build_parser(), argv) for argv in HELP_CALLS] == ours


EXAMPLES = REPO / "examples"
#: What a pure policy verb with neither --base nor --config must not load (``budget`` is not
#: one of them: it also reads budget-run's records, through the seed-run layer): git, the trust
#: machinery, the other policies, the typed records (a CLI reads JSON mappings), and the stdlib
#: modules only they (or help) need.
NOT_FOR_ONE_PACKET = (
    "flakecore.gate.worktree",
    "flakecore.gate.basetrust",
    "flakecore.gate.policy_source",
    "flakecore.gate.runtime",
    "flakecore.trust",
    "flakecore.signing",
    "flakecore.attestation",
    "subprocess",
    "hashlib",
    "shutil",
    "flakecore.records",
    "flakecore.cli._github",
    "flakecore.gate.triage_config",
    "flakecore._attempt_codes",
    "flakecore._trust_codes",
    "flakecore.gate.config",
    "flakecore._runner",
)
POLICY_MODULES = ("flakecore.admit", "flakecore.budget", "flakecore.classify", "flakecore.decide")


@pytest.mark.parametrize("verb", ["admit", "decide", "classify"])
def test_a_policy_verb_without_a_source_loads_no_git_no_trust_and_no_other_policy(
    verb: str,
) -> None:
    packet = sorted((EXAMPLES / verb).glob("*.json"))[0]
    code = (
        "import contextlib, io, sys\n"
        "from flakecore.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    main([{verb!r}, '--no-config', '--now', '2026-11-29T12:00:00Z', {str(packet)!r}])\n"
        "print(sorted(sys.modules))"
    )
    loaded = set(ast.literal_eval(fresh(code)))
    assert not loaded & set(NOT_FOR_ONE_PACKET)
    assert loaded & set(POLICY_MODULES) == {f"flakecore.{verb}"}
    assert {m for m in loaded if m.endswith("_codes")} == {f"flakecore._{verb}_codes"}


def _records() -> dict[str, object]:
    from flakecore import records

    replay = records.Replay(attempt_id="r1", passed=True, exit_code=0, duration_s=0.5)
    report = {**classify_report(), "replays": (replay,)}
    return {
        "admit": records.AdmitEvidence(**admit_packet()),  # type: ignore[arg-type]
        "decide": records.DecidePacket(**decide_packet()),  # type: ignore[arg-type]
        "budget": records.BudgetPacket(**{**budget_packet(), "seeds": (11, 23)}),  # type: ignore[arg-type]
        "classify": records.ClassifyReport(**report),  # type: ignore[arg-type]
    }


@pytest.mark.parametrize("policy", POLICY_MODULES)
def test_a_policy_judges_its_own_record_by_its_wire_form_and_anything_else_as_given(
    policy: str,
) -> None:
    """The records load only for a caller that passes one (``_fields.wire_form``): a
    policy still judges its own record as the record's JSON, and another kind's record,
    like any value that is not a mapping, as not a JSON object."""
    name = policy.rsplit(".", 1)[1]
    judge = getattr(importlib.import_module(policy), name)
    kwargs: dict[str, object] = {"now": NOW} if name == "classify" else {}
    for kind, record in _records().items():
        expected = record.to_json() if kind == name else object()  # type: ignore[attr-defined]
        assert judge(record, **kwargs) == judge(expected, **kwargs), kind


def test_a_verb_that_judges_no_time_loads_no_datetime() -> None:
    """Only classify reads the clock: decide without --now loads neither datetime nor the
    RFC 3339 parser, and a bad --now is still refused."""
    packet = str(EXAMPLES / "decide" / "eligible.json")
    code = (
        "import contextlib, io, sys\n"
        "from flakecore.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    assert main(['decide', '--no-config', {packet!r}]) == 0\n"
        "print(sorted(sys.modules))"
    )
    loaded = set(ast.literal_eval(fresh(code)))
    assert not loaded & {"datetime", "flakecore.timeutil"}
    for verb in ("admit", "decide", "budget", "classify"):
        assert outcome_of_run([verb, "--no-config", "--now", "2026-11-29T12:00:00", packet]) == (64)


def outcome_of_run(argv: list[str]) -> int:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return cli.main(argv)


def test_the_longest_lease_is_what_datetime_holds() -> None:
    import datetime as dt

    from flakecore import policy

    assert dt.timedelta.max.days == policy._MAX_DAYS


def test_the_defaults_table_digest_is_the_empty_tables() -> None:
    from flakecore.digest import canonical_json_sha256
    from flakecore.policy import EMPTY_TABLE_SHA256

    assert canonical_json_sha256({}) == EMPTY_TABLE_SHA256


@pytest.mark.parametrize("in_git", [True, False])
@pytest.mark.parametrize("no_config", [True, False])
@pytest.mark.parametrize("overrides", [[], ["max_lease_days=7", "default_seeds=3,5"]])
def test_the_deferred_defaults_are_what_the_eager_lookup_gave(
    tmp_path: Path, in_git: bool, no_config: bool, overrides: list[str]
) -> None:
    """Without a source the checkout is looked up on first use: the same root and trust."""
    from flakecore.cli._config import config_from_args
    from flakecore.gate.basetrust import RecordTrust
    from flakecore.gate.config import GateConfig, parse_policy_override

    top = tmp_path / "checkout"
    start = top / "sub"
    start.mkdir(parents=True)
    if in_git:
        subprocess.run(["git", "init", "-q", str(top)], check=True)
    eager_checkout = top.resolve() if in_git else start.resolve()
    eager = GateConfig(root=str(eager_checkout)).with_policy(
        dict(parse_policy_override(t) for t in overrides)
    )
    args = argparse.Namespace(
        base=None, config=None, no_config=no_config, policy_overrides=overrides
    )
    configured = config_from_args(args, verb="decide", start=str(start))
    assert not configured.judges_records
    assert (configured.policy, configured.source) == (eager.policy, eager.source)
    assert configured.scored_table_reason is None
    assert configured.config == eager
    assert configured.trust == RecordTrust(checkout=eager_checkout)
    assert not configured.judges_records


@pytest.mark.parametrize("config", [["--no-config"], []], ids=["no-config", "base-config"])
def test_guard_loads_no_trust_layer(tmp_path: Path, config: list[str]) -> None:
    """guard needs the git layer and the resolved base, not the records' trust or signing
    (with a base table too: the scored tree's is read by the no-follow reader alone), nor
    the decisions, nor (in text form) the GitHub output."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "pyproject.toml").write_text('[tool.flakecore]\nfixture_globs = ["tests/*"]\n')
    env = ["-c", "user.name=t", "-c", "user.email=t@example.test"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "add", "pyproject.toml"], check=True)
    subprocess.run(["git", "-C", str(repo), *env, "commit", "-q", "-m", "b"], check=True)
    argv = ["guard", *config, "--base", "HEAD", "--repo", str(repo)]
    code = (
        "import contextlib, io, sys\n"
        "from flakecore.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    assert main({argv!r}) == 0\n"
        "print(sorted(sys.modules))"
    )
    loaded = set(ast.literal_eval(fresh(code)))
    assert "flakecore.gate.worktree" in loaded
    assert ("flakecore.gate.policy_source" in loaded) is not bool(config)
    unneeded = {
        "flakecore.gate.basetrust",
        "flakecore.signing",
        "flakecore.attestation",
        "flakecore.trust",
        "flakecore.decision",
        "tempfile",
        "shutil",  # a worktree's cleanup only
        "flakecore.cli._github",  # --format github only
    }
    assert not loaded & unneeded


def test_a_replay_in_json_loads_no_github_output_and_no_closest_ids(tmp_path: Path) -> None:
    """The GitHub row is built for ``--format github`` only, the closest ids for a refusal only."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "prop.py").write_text("def test_p():\n    pass\n")
    (repo / "epoch.lock").write_text("epoch 1\n")
    env = ["-c", "user.name=t", "-c", "user.email=t@example.test"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(repo), *env, "commit", "-q", "-m", "b"], check=True)
    claimed = hashlib.sha256(b"epoch 1\n").hexdigest()
    argv = [
        "replay", "--no-config", "--json", "--base", "HEAD", "--seed", "3", "--attempts", "1",
        "--property-file", "prop.py", "--epoch-lock", "epoch.lock", "--claimed-epoch", claimed,
        "--patch-misses", "1", "--seed-env", "SEED", "--out", str(tmp_path / "freeze.json"),
        "--", sys.executable, "-c", "pass",
    ]  # fmt: skip
    code = (
        "import contextlib, io, os, sys\n"
        "from flakecore.cli import main\n"
        f"os.chdir({str(repo)!r})\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    assert main({argv!r}) == 4\n"  # REJECT_PATCH_INTRODUCED: the whole replay ran
        "print(sorted(sys.modules))"
    )
    loaded = set(ast.literal_eval(fresh(code)))
    assert "flakecore.gate.replay" in loaded
    assert not loaded & {"flakecore.cli._github", "flakecore.testids"}


DECIDE_EXAMPLE = REPO / "examples" / "decide" / "eligible.json"


@pytest.mark.parametrize("enabled", [True, False])
def test_main_leaves_the_callers_collector_as_it_set_it(enabled: bool) -> None:
    code = (
        "import contextlib, gc, io\n"
        "from flakecore.cli import main\n"
        f"gc.enable() if {enabled} else gc.disable()\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    assert main(['decide', '--no-config', {str(DECIDE_EXAMPLE)!r}]) == 0\n"
        "print(gc.isenabled(), gc.get_freeze_count())"
    )
    assert fresh(code) == f"{enabled} 0"


def test_the_command_runs_its_verb_with_the_collector_on_and_ends_with_all_frozen() -> None:
    # The verb sees the collector on, with start-up's objects frozen out of
    # its passes; at the end everything is frozen, so the exit sweeps nothing.
    code = (
        "import contextlib, gc, io, sys\n"
        "import flakecore.cli._policies as p\n"
        "seen = []\n"
        "runner = p._runner\n"
        "def spy(name):\n"
        "    run = runner(name)\n"
        "    def wrapped(args):\n"
        "        seen.append(('verb', gc.isenabled(), gc.get_freeze_count() > 0))\n"
        "        return run(args)\n"
        "    return wrapped\n"
        "p._runner = spy\n"
        "from flakecore.cli import console\n"
        f"sys.argv = ['flakecore', 'decide', '--no-config', {str(DECIDE_EXAMPLE)!r}]\n"
        "frozen = gc.get_freeze_count()\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        "    code = console()\n"
        "print(*seen)\n"
        "print('decision', code, 'decide=ELIGIBLE' in out.getvalue())\n"
        "print('end', gc.isenabled(), gc.get_freeze_count() > frozen)"
    )
    assert fresh(code).splitlines() == [
        "('verb', True, True)",
        "decision 0 True",
        "end True True",
    ]


def test_the_installed_command_is_the_console_entry_and_python_m_runs_it() -> None:
    from importlib.metadata import entry_points

    (script,) = entry_points(group="console_scripts", name="flakecore")
    assert script.value == "flakecore.cli:console"
    done = subprocess.run(
        [sys.executable, "-m", "flakecore", "decide", "--no-config", str(DECIDE_EXAMPLE)],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, "decide=ELIGIBLE" in done.stdout) == (0, True)
