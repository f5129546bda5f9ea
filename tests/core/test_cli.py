"""The CLI as a pipeline runs it: a subprocess, exit codes, stdout and stderr."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from packets import NOW_TEXT, admit_packet, budget_packet, classify_report, decide_packet

from flakecore.cli import build_parser
from flakecore.errors import FlakecoreError, MissingExtra
from flakecore.exits import EXIT_DATAERR, EXIT_NOINPUT, EXIT_SOFTWARE, EXIT_USAGE


def run(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "flakecore", *args], input=stdin, capture_output=True, check=False
    )


def dump(tmp_path: Path, name: str, packet: object) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(packet))
    return str(path)


CASES = [
    ("admit", admit_packet(), "ACCEPT_PREEXISTING", 0),
    ("admit", admit_packet(base_misses=...), "REJECT_INCOMPLETE", 1),
    ("admit", admit_packet(base_property_sha256="c" * 64), "REJECT_PROPERTY_DRIFT", 2),
    ("admit", admit_packet(claimed_epoch="c" * 64), "REJECT_FIXTURE_EPOCH", 3),
    ("admit", admit_packet(base_misses=0), "REJECT_PATCH_INTRODUCED", 4),
    ("admit", admit_packet(base_attempts=6), "REJECT_BUDGET", 5),
    ("decide", decide_packet(), "ELIGIBLE", 0),
    ("decide", decide_packet(test_id=" "), "MISSING_FIELD", 2),
    ("decide", decide_packet(clean_class="pass"), "CLASS_MISMATCH", 3),
    ("decide", decide_packet(clean_run_completed=False), "CLEAN_RUN_UNAVAILABLE", 4),
    ("budget", budget_packet(), "FLAKE_CANDIDATE", 0),
    ("budget", budget_packet(passes=None), "INSUFFICIENT_BUDGET", 1),
    ("budget", budget_packet(property_holds=False), "PROPERTY_MISS", 2),
    ("budget", budget_packet(head_digest="c" * 64), "FIXTURE_DRIFT", 3),
    ("budget", budget_packet(passes=0), "STABLE_FAIL", 5),
    ("budget", budget_packet(passes=8), "STABLE_PASS", 6),
    ("classify", classify_report(pin_status=...), "INCOMPLETE", 1),
    ("classify", classify_report(property_verdict="fail"), "PROPERTY", 2),
    ("classify", classify_report(pin_status="mismatch"), "FIXTURE", 3),
    ("classify", classify_report(), "FLAKE", 4),
    (
        "classify",
        classify_report(replays=[{"attempt_id": str(i), "passed": False} for i in range(5)]),
        "STABLE_RED",
        5,
    ),
    ("classify", classify_report(owner=""), "FLAKE", 6),
]


@pytest.mark.parametrize(("verb", "packet", "code", "exit_code"), CASES)
def test_each_verb_and_exit(
    tmp_path: Path, verb: str, packet: dict[str, object], code: str, exit_code: int
) -> None:
    out = run(verb, dump(tmp_path, "p.json", packet), "--json", "--now", NOW_TEXT)
    assert out.returncode == exit_code, out.stderr
    decision = json.loads(out.stdout)
    assert (decision["policy"], decision["code"], decision["exit"]) == (verb, code, exit_code)
    assert out.stderr == b""


def test_text_output(tmp_path: Path) -> None:
    out = run("admit", dump(tmp_path, "p.json", admit_packet()))
    assert out.returncode == 0
    assert b"exit=0 admit=ACCEPT_PREEXISTING" in out.stdout


def test_stdin_batch_in_input_order() -> None:
    lines = [decide_packet(), decide_packet(local_class="deterministic"), decide_packet()]
    stdin = b"".join(json.dumps(p).encode() + b"\n" for p in lines)
    out = run("decide", "-", "--json", stdin=stdin)
    decisions = [json.loads(line) for line in out.stdout.splitlines()]
    assert [d["code"] for d in decisions] == ["ELIGIBLE", "NOT_FLAKE_SHAPED", "ELIGIBLE"]
    assert [d["input"] for d in decisions] == ["-:1", "-:2", "-:3"]
    assert out.returncode == 3  # the first non-zero exit


def test_malformed_line_is_a_refusal_not_a_skip() -> None:
    stdin = json.dumps(decide_packet()).encode() + b"\n{not json\n\n"
    out = run("decide", "-", "--json", stdin=stdin)
    decisions = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(decisions) == 3
    assert decisions[0]["code"] == "ELIGIBLE"
    assert decisions[1]["code"] == "MISSING_FIELD"
    assert decisions[1]["exit"] == EXIT_DATAERR
    assert "-:2" in decisions[1]["error"]
    assert decisions[2]["exit"] == EXIT_DATAERR  # a blank line is not silently skipped
    assert out.returncode == EXIT_DATAERR


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        (b'{"base_misses":0,"base_misses":3}', b"duplicate key"),
        (b"[]", b"expected a JSON object"),
        (b'{"a":NaN}', b"NaN"),
        (b"\xff\xfe", b"invalid UTF-8"),
        (b"", b"invalid JSON"),
    ],
)
def test_malformed_packet_file(tmp_path: Path, data: bytes, fragment: bytes) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(data)
    out = run("admit", str(path))
    assert out.returncode == EXIT_DATAERR
    assert out.stdout == b""
    assert out.stderr.count(b"\n") == 1
    assert str(path).encode() in out.stderr
    assert fragment in out.stderr
    assert b"Traceback" not in out.stderr


def test_missing_file(tmp_path: Path) -> None:
    out = run("budget", str(tmp_path / "absent.json"))
    assert out.returncode == EXIT_NOINPUT
    assert b"no such file" in out.stderr


def test_empty_stdin() -> None:
    out = run("admit", "-")
    assert out.returncode == EXIT_DATAERR


@pytest.mark.parametrize(
    "args",
    [
        ("frobnicate",),
        ("admit",),
        ("admit", "--no-such-flag", "x"),
        ("classify", "--budget", "five"),
        ("classify", "--now", "yesterday"),
        ("classify", "x.json", "--owner", "me"),
        (),
    ],
)
def test_usage_errors_use_64(args: tuple[str, ...]) -> None:
    out = run(*args)
    assert out.returncode == EXIT_USAGE
    assert b"Traceback" not in out.stderr
    assert out.stderr.strip().count(b"\n") == 0


@pytest.mark.parametrize(
    ("args", "prog"),
    [
        (
            ("admit", "--no-such-flag", "x"),
            b"flakecore admit: unrecognized arguments: --no-such-flag",
        ),
        (("decide", "x.json", "--bogus"), b"flakecore decide: unrecognized arguments: --bogus"),
        (("lease", "show", "f.json", "--bogus"), b"flakecore lease show: unrecognized arguments"),
        (("ledger", "apply", "p.json", "--x", "1"), b"flakecore ledger apply: unrecognized"),
        (("guard", "--base", "main", "extra"), b"flakecore guard: unrecognized arguments: extra"),
        (("frobnicate",), b"flakecore: argument VERB: invalid choice"),
    ],
)
def test_usage_errors_name_the_verb(args: tuple[str, ...], prog: bytes) -> None:
    out = run(*args)
    assert out.returncode == EXIT_USAGE
    assert out.stderr.startswith(b"flakecore: usage: ") and out.stderr.count(b"\n") == 1
    assert prog in out.stderr, out.stderr


@pytest.mark.parametrize(
    ("args", "hint"),
    [
        (("replay", "--github"), b"flakecore replay: --github was removed: write --format github"),
        (("budget-run", "--github"), b"--github was removed: write --format github"),
        (("decide", "-", "--github"), b"--github was removed: write --format github"),
        (
            ("replay", "--format", "junit"),
            b"flakecore replay: argument --format: 'junit' is not an output format (text, json "
            b"or github); the format of a test report is --report-format junit",
        ),
        (
            ("ingest", "-", "--format", "auto"),
            b"the format of a test report is --report-format auto",
        ),
        (
            ("budget-run", "--format", "tap"),
            b"'tap' is not an output format (text, json or github)",
        ),
    ],
)
def test_the_old_spellings_are_refused_with_the_new_one(args: tuple[str, ...], hint: bytes) -> None:
    out = run(*args)
    assert out.returncode == EXIT_USAGE
    assert out.stdout == b"" and out.stderr.count(b"\n") == 1
    assert hint in out.stderr, out.stderr


def test_only_verbs_that_read_reports_hint_at_report_format() -> None:
    out = run("budget-run", "--format", "tap")
    assert b"--report-format" not in out.stderr


def test_classify_flags() -> None:
    out = run(
        "classify", "--property-verdict", "pass", "--pin-status", "match",
        "--origin-passed", "false", "--replay", "green,green,red,green,green",
        "--owner", "ci-bot", "--expires-at", "2026-12-05T00:00:00Z", "--now", NOW_TEXT,
    )  # fmt: skip
    assert out.returncode == 4
    assert out.stdout.startswith(b"exit=4 class=flake freeze=eligible")


def test_classify_flag_left_out_is_incomplete() -> None:
    out = run("classify", "--property-verdict", "pass", "--origin-passed", "false", "--json")
    assert out.returncode == 1
    assert json.loads(out.stdout)["code"] == "INCOMPLETE"


def test_classify_short_replay_with_flags() -> None:
    out = run(
        "classify", "--property-verdict", "pass", "--pin-status", "match",
        "--origin-passed", "false", "--replay", "red,green", "--owner", "ci-bot",
        "--expires-at", "2026-12-05T00:00:00Z", "--now", NOW_TEXT,
    )  # fmt: skip
    assert out.returncode == 1
    assert b"class=incomplete" in out.stdout


def test_attempts_verb(tmp_path: Path) -> None:
    a = tmp_path / "w1.jsonl"
    a.write_bytes(b'{"seed":7,"n":1,"result":"miss"}\n{"seed":7,"n":2,"result":"pass"}\n')
    b = tmp_path / "w2.jsonl"
    b.write_bytes(b'{"seed":7,"n":1,"result":"miss"}\n')
    out = run("attempts", str(a), str(b), "--json")
    assert out.returncode == 0
    summary = json.loads(out.stdout)
    assert (summary["status"], summary["attempts"], summary["misses"]) == ("COMPLETE", 3, 2)
    b.write_bytes(b'{"seed":7,"n":1,"result":"miss"}')
    out = run("attempts", str(a), str(b))
    assert out.returncode == 1
    assert out.stdout.startswith(b"status=INCOMPLETE")
    assert run("attempts", str(tmp_path / "nope")).returncode == EXIT_NOINPUT


def test_attempts_takes_max_log_lines_from_the_configuration(tmp_path: Path) -> None:
    log = tmp_path / "w1.jsonl"
    log.write_bytes(b"".join(b'{"seed":7,"n":%d,"result":"pass"}\n' % n for n in (1, 2, 3)))
    config = tmp_path / "pyproject.toml"
    config.write_text("[tool.flakecore]\nmax_log_lines = 2\n")
    refused = run("attempts", str(log), "--config", str(config))
    assert refused.returncode == 1
    assert refused.stdout.startswith(b"status=INCOMPLETE attempts=2 ")
    assert b"more than 2 lines (policy limit)" in refused.stdout
    raised = run("attempts", str(log), "--config", str(config), "--policy", "max_log_lines=3")
    assert raised.returncode == 0 and raised.stdout.startswith(b"status=COMPLETE attempts=3 ")
    assert run("attempts", str(log), "--no-config").returncode == 0


def _options(
    parser: argparse.ArgumentParser, name: str = "flakecore"
) -> Iterator[tuple[str, argparse.Action]]:
    """Every (verb, option or positional) of the CLI, sub-verbs included; hidden ones left out."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help for a in action._choices_actions}
            for verb, sub in action.choices.items():
                assert (helps.get(verb) or "").strip(), f"{name} {verb}: no help"
                yield from _options(sub, f"{name} {verb}")
        elif action.help is not argparse.SUPPRESS:
            yield name, action


def test_every_option_of_every_verb_has_help() -> None:
    options = list(_options(build_parser()))
    assert len(options) > 150
    missing = [
        (verb, a.option_strings or [a.dest]) for verb, a in options if not (a.help or "").strip()
    ]
    assert missing == []


def test_help_cites_the_user_docs_never_the_spec() -> None:
    """No SPEC ships to users: help cites docs/ pages instead."""
    texts = [a.help or "" for _, a in _options(build_parser())]
    parsers = [build_parser()]
    while parsers:
        parser = parsers.pop()
        texts += [parser.description or "", parser.epilog or ""]
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                parsers += action.choices.values()
                texts += [a.help or "" for a in action._choices_actions]
    assert [t for t in texts if "SPEC" in t] == []


def test_help_and_version() -> None:
    out = run("--help")
    assert out.returncode == 0
    for verb in (b"admit", b"decide", b"budget", b"classify", b"attempts"):
        assert verb in out.stdout
    assert b"64 usage error" in b" ".join(run("admit", "--help").stdout.split())
    top = b" ".join(out.stdout.split())
    for code in (b"64 usage", b"65 unusable", b"66 missing", b"70 internal", b"73 ", b"74 "):
        assert code in top, code
    assert b"128+N stopped by signal N" in top
    assert run("--version").stdout.startswith(b"flakecore ")


def _without_adapters(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    code = (
        "import sys; sys.modules['flakecore_adapters'] = None; "
        f"from flakecore.cli import main; raise SystemExit(main({list(args)!r}))"
    )
    return subprocess.run(
        [sys.executable, "-I", "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.parametrize(
    "args",
    [
        ("ingest", "-"),
        ("replay", "--base", "HEAD", "--seed", "1", "--property-file", "p", "--epoch-lock", "e",
         "--claimed-epoch", "d", "--patch-misses", "1", "--out", "f.json", "--no-config",
         "--report", "r.xml", "--test-id", "t", "--", "true"),
    ],
)  # fmt: skip
def test_a_missing_adapters_extra_exits_70_with_one_line(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    out = _without_adapters(tmp_path, *args)
    assert out.returncode == EXIT_SOFTWARE
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr
    assert f"flakecore: {args[0]}" in out.stderr
    assert "needs the optional 'adapters' extra" in out.stderr
    assert "pip install 'flakecore[adapters]'" in out.stderr
    # The verbs that need no adapters still work without them.
    report = dump(tmp_path, "c.json", classify_report())
    assert _without_adapters(tmp_path, "classify", report, "--now", NOW_TEXT).returncode == 4


def test_missing_extra_is_one_import_error() -> None:
    error = MissingExtra("schemas", needed_by="validate", name="jsonschema")
    assert isinstance(error, ImportError) and isinstance(error, FlakecoreError)
    assert (error.extra, error.name) == ("schemas", "jsonschema")
    assert str(error) == (
        "validate needs the optional 'schemas' extra (jsonschema is not installed): "
        "pip install 'flakecore[schemas]'"
    )
