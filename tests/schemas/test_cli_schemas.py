"""``flakecore validate`` and ``flakecore schema`` as a pipeline calls them (subprocesses)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from packets import admit_packet, budget_packet, classify_report, decide_packet

from flakecore import validation
from flakecore.exits import (
    EXIT_DATAERR,
    EXIT_NOINPUT,
    EXIT_OK,
    EXIT_SOFTWARE,
    EXIT_USAGE,
)
from flakecore.exits import VALIDATE_INVALID as INVALID

REPO = Path(__file__).resolve().parents[2]


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    # -I: never import from the working directory, so the installed package answers.
    return subprocess.run(
        [sys.executable, "-I", "-m", "flakecore", *args],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
    )


def write(path: Path, value: object) -> str:
    path.write_text(json.dumps(value, indent=2) + "\n")
    return str(path)


def test_schema_prints_the_installed_file() -> None:
    out = run("schema", "decision")
    assert out.returncode == EXIT_OK
    assert out.stdout.encode() == validation.schema_bytes("decision")
    assert out.stdout.encode() == (REPO / "schemas" / "decision.v1.json").read_bytes()


def test_schema_without_a_name_lists_the_names() -> None:
    out = run("schema")
    assert out.returncode == EXIT_OK
    assert tuple(out.stdout.split()) == validation.schema_names()


@pytest.mark.parametrize("name", ["nope", "decision.v1.json", "DECISION", ""])
def test_schema_with_an_unknown_name_is_a_usage_error(name: str) -> None:
    out = run("schema", name)
    assert out.returncode == EXIT_USAGE
    assert out.stdout == ""
    assert "known: admit-packet, attempt-line" in out.stderr


def test_usage_errors() -> None:
    assert run("validate").returncode == EXIT_USAGE
    out = run("validate", "--kind", "packet", str(REPO / "schemas" / "decision.v1.json"))
    assert out.returncode == EXIT_USAGE
    assert "known: " in out.stderr


def test_valid_records_exit_zero_and_print_no_problem(tmp_path: Path) -> None:
    files = [
        write(tmp_path / "a.json", admit_packet()),
        write(tmp_path / "d.json", decide_packet()),
        write(tmp_path / "b.json", budget_packet()),
        write(tmp_path / "c.json", classify_report()),
    ]
    out = run("validate", "--kind", "admit-packet", files[0])
    assert (out.returncode, out.stdout) == (EXIT_OK, "")
    named = [files[0]]
    kinds = ["admit-packet", "decide-packet", "budget-packet", "classify-report"]
    for path, kind in zip(files, kinds, strict=True):
        data = json.loads(Path(path).read_text())
        named.append(write(Path(path + ".named.json"), {"format": f"flakecore.{kind}", **data}))
    out = run("validate", *named[1:])
    assert (out.returncode, out.stdout) == (EXIT_OK, ""), out.stderr
    assert out.stderr == "flakecore: validate: 4 valid, 0 invalid, 0 unusable\n"


def test_every_problem_on_its_own_line(tmp_path: Path) -> None:
    path = write(
        tmp_path / "bad.json", admit_packet(base_misses="1", Test_id="x", fixture_epoch="E")
    )
    out = run("validate", "--kind", "admit-packet", path)
    assert out.returncode == INVALID
    lines = sorted(out.stdout.splitlines())
    assert f"{path}: /Test_id: unknown field (the schema does not define it)" in lines
    assert f"{path}: /base_misses: '1' is not of type 'integer'" in lines
    assert any(line.startswith(f"{path}: /fixture_epoch: ") for line in lines)
    assert all(line.startswith(f"{path}: /") for line in lines)


def test_the_kind_comes_from_format_and_kind_overrides_it(tmp_path: Path) -> None:
    packet = {"format": "flakecore.admit-packet", "format_version": "1.0", **admit_packet()}
    path = write(tmp_path / "p.json", packet)
    assert run("validate", path).returncode == EXIT_OK
    out = run("validate", "--kind", "decide-packet", path)
    assert out.returncode == INVALID
    assert f"{path}: /format: 'flakecore.decide-packet' was expected" in out.stdout.splitlines()


@pytest.mark.parametrize(
    ("record", "message"),
    [
        (admit_packet(), "/format: missing: the record does not name its kind; give --kind"),
        (
            {**admit_packet(), "format": "flakecore.admit"},
            "/format: format 'flakecore.admit' is not one of:",
        ),
        ({**admit_packet(), "format": 7}, "/format: format 7 is not one of:"),
    ],
)
def test_a_record_without_a_known_kind_is_invalid(
    tmp_path: Path, record: object, message: str
) -> None:
    path = write(tmp_path / "p.json", record)
    out = run("validate", path)
    assert out.returncode == INVALID
    assert out.stdout.startswith(f"{path}: {message}")


def test_json_lines_are_checked_line_by_line(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_text(
        '{"seed":"s","n":1,"result":"pass"}\n'
        '{"seed":"s","n":2,"result":"fail"}\n'
        '{"seed":"s","n":3.5,"result":"miss"}\n'
    )
    out = run("validate", "--kind", "attempt-line", str(path))
    assert out.returncode == INVALID
    assert out.stdout.splitlines() == [
        f"{path}:2: /result: 'fail' is not one of ['pass', 'miss', 'error', 'skip', 'timeout']",
        f"{path}:3: /n: 3.5 is not of type 'integer'",
    ]
    # Without --kind, attempt lines cannot name their kind: every line says so.
    out = run("validate", str(path))
    assert out.returncode == INVALID
    assert [line.split(": ")[0] for line in out.stdout.splitlines()] == [
        f"{path}:1",
        f"{path}:2",
        f"{path}:3",
    ]


def test_json_output(tmp_path: Path) -> None:
    good = write(tmp_path / "good.json", {"seed": 1, "n": 1, "result": "pass"})
    bad = write(tmp_path / "bad.json", {"seed": 1, "n": 0, "result": "pass"})
    out = run("validate", "--json", "--kind", "attempt-line", good, bad, str(tmp_path / "gone"))
    assert out.returncode == EXIT_NOINPUT
    results = [json.loads(line) for line in out.stdout.splitlines()]
    assert results[0] == {"input": good, "kind": "attempt-line", "valid": True, "problems": []}
    assert results[1]["valid"] is False
    assert results[1]["problems"][0]["pointer"] == "/n"
    assert results[1]["problems"][0]["keyword"] == "minimum"
    assert results[2]["valid"] is False
    assert results[2]["error"].endswith("no such file")


@pytest.mark.parametrize(
    ("content", "exit_code", "message"),
    [
        (b'{"a": 1, "a": 2}\n', EXIT_DATAERR, "duplicate key 'a'"),
        (b"\xef\xbb\xbf{}\n", EXIT_DATAERR, "byte-order mark"),
        (b'{"a": NaN}\n', EXIT_DATAERR, "NaN is not valid JSON"),
        (b'{"a": "\\ud800"}\n', EXIT_DATAERR, "lone surrogate"),
        (b"[1, 2]\n", EXIT_DATAERR, "expected a JSON object"),
        (b"", EXIT_DATAERR, "invalid JSON"),
        (b'{\n  "a": 1,\n}\n', EXIT_DATAERR, "invalid JSON"),
        (
            b'{"seed":1,"n":1,"result":"pass"}\n\n{"seed":1,"n":2,"result":"pass"}\n',
            EXIT_DATAERR,
            ":2: blank line",
        ),
        (
            b'{"seed":1,"n":1,"result":"pass"}\n{"seed":1,"n":2,\n',
            EXIT_DATAERR,
            ":2:17: invalid JSON",
        ),
    ],
)
def test_unusable_input(tmp_path: Path, content: bytes, exit_code: int, message: str) -> None:
    path = tmp_path / "in.json"
    path.write_bytes(content)
    out = run("validate", "--kind", "attempt-line", str(path))
    assert out.returncode == exit_code
    assert message in out.stderr
    assert out.stderr.startswith(f"flakecore: {path}")


def test_missing_files_and_directories(tmp_path: Path) -> None:
    out = run("validate", str(tmp_path / "gone.json"))
    assert out.returncode == EXIT_NOINPUT
    assert f"{tmp_path / 'gone.json'}: no such file" in out.stderr
    assert run("validate", str(tmp_path)).returncode == EXIT_NOINPUT


def test_the_worst_exit_wins(tmp_path: Path) -> None:
    invalid = write(tmp_path / "bad.json", {"seed": 1, "n": 0, "result": "pass"})
    unusable = tmp_path / "garbage.json"
    unusable.write_text("not json")
    gone = str(tmp_path / "gone.json")
    kind = ("--kind", "attempt-line")
    assert run("validate", *kind, invalid).returncode == INVALID
    assert run("validate", *kind, invalid, str(unusable)).returncode == EXIT_DATAERR
    assert run("validate", *kind, gone, str(unusable), invalid).returncode == EXIT_NOINPUT
    out = run("validate", *kind, invalid, str(unusable), gone)
    assert out.stderr.splitlines()[-1] == "flakecore: validate: 0 valid, 1 invalid, 2 unusable"


def test_standard_input() -> None:
    lines = '{"seed":1,"n":1,"result":"pass"}\n{"seed":1,"n":2,"result":"MISS"}\n'
    out = run("validate", "--kind", "attempt-line", "-", stdin=lines)
    assert out.returncode == INVALID
    assert out.stdout.startswith("-:2: /result: ")


def test_policy_output_validates_even_for_unreadable_packets(tmp_path: Path) -> None:
    """What `flakecore <policy> --json` prints is a valid decision, whatever the input."""
    broken = tmp_path / "broken.json"
    broken.write_text('{"a": 1, "a": 2}')
    gone = str(tmp_path / "gone.json")
    cases = {
        "admit": [write(tmp_path / "a.json", admit_packet()), write(tmp_path / "x.json", {"x": 1})],
        "decide": [write(tmp_path / "d.json", decide_packet())],
        "budget": [write(tmp_path / "b.json", budget_packet())],
        "classify": [write(tmp_path / "c.json", classify_report())],
    }
    for verb, files in cases.items():
        out = run(verb, "--json", "--now", "2026-11-29T12:00:00Z", *files, str(broken), gone)
        decisions = tmp_path / f"{verb}.jsonl"
        decisions.write_text(out.stdout)
        assert len(out.stdout.splitlines()) == len(files) + 2
        check = run("validate", str(decisions))
        assert (check.returncode, check.stdout) == (EXIT_OK, ""), check.stdout


def test_a_missing_extra_is_reported_not_a_traceback(tmp_path: Path) -> None:
    path = write(tmp_path / "p.json", {"seed": 1, "n": 1, "result": "pass"})
    code = (
        "import sys; sys.modules['jsonschema'] = None; sys.modules['referencing'] = None; "
        "from flakecore.cli import main; "
        f"raise SystemExit(main(['validate', '--kind', 'attempt-line', {path!r}]))"
    )
    out = subprocess.run(
        [sys.executable, "-I", "-c", code], capture_output=True, text=True, check=False
    )
    assert out.returncode == EXIT_SOFTWARE
    assert "Traceback" not in out.stderr
    assert "pip install 'flakecore[schemas]'" in out.stderr
    # `schema` needs no extra.
    code = code.replace("'validate', '--kind', 'attempt-line', " + repr(path), "'schema', 'lease'")
    out = subprocess.run(
        [sys.executable, "-I", "-c", code], capture_output=True, text=True, check=False
    )
    assert out.returncode == EXIT_OK, out.stderr
    assert json.loads(out.stdout)["$id"].endswith("/lease.v1.json")


def test_one_problem_is_one_output_line_whatever_the_key(tmp_path: Path) -> None:
    path = write(tmp_path / "p.json", {"seed": 1, "n": 1, "result": "pass", "x\ny\u2028z": 1})
    out = run("validate", "--kind", "attempt-line", path)
    assert out.returncode == INVALID
    assert out.stdout.splitlines() == [
        f"{path}: /x\\ny\\u2028z: unknown field (the schema does not define it)"
    ]
