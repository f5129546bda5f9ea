"""Generate the adversarial corpus: one folder per surface, one file per attack.

Run ``python tests/adversarial/make_corpus.py`` to regenerate; the output is
committed so it can be reviewed.  ``manifest.json`` names, for every file, the
CLI command that reads it and its single acceptable outcome: the exit code,
and whether it may be an accept (only the controls may).  A report that a
base command could write also names a ``replay`` target: ``tests/e2e/
test_defective_reports.py`` has a real base commit write it and checks that
``replay --report`` never reaches ``ACCEPT_PREEXISTING`` from it (only its
honest twins, marked ``accept``, do).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
A, B, C = "a" * 64, "b" * 64, "c" * 64
NOW = "2026-11-29T12:00:00Z"
LOCAL = "img:sha256:" + A + "+nonce:0123456789abcdef"
CLEAN = "img:sha256:" + A + "+nonce:fedcba9876543210"

ADMIT = {
    "base_misses": 1, "base_attempts": 5, "patch_misses": 1,
    "property_sha256": A, "base_property_sha256": A,
    "fixture_epoch": B, "base_fixture_epoch": B, "claimed_epoch": B,
}  # fmt: skip
DECIDE = {
    "test_id": "t::x", "patch_hash": A, "fixture_hash": B, "minimized_input_hash": C,
    "oracle_version": "o1", "local_runner_id": LOCAL, "clean_runner_id": CLEAN,
    "local_class": "flake_shaped", "clean_class": "flake_shaped",
    "clean_fixture_hash": B, "clean_input_hash": C,
    "property_cohort_passed": True, "clean_run_completed": True,
}  # fmt: skip
BUDGET = {
    "test_id": "t::x", "parent_digest": A, "head_digest": A, "property_holds": True,
    "seeds": [11, 23, 47, 71, 97, 131, 173, 211], "passes": 4, "budget": 8,
}  # fmt: skip
CLASSIFY = {
    "property_verdict": "pass", "pin_status": "match", "origin_passed": False,
    "replays": [{"attempt_id": f"r{i}", "passed": i != 2} for i in range(5)],
    "owner": "ci-bot", "expires_at": "2026-12-06T12:00:00Z",
}  # fmt: skip

Entry = dict[str, object]
entries: list[Entry] = []


def add(surface: str, name: str, data: bytes, command: list[str], exit_code: int, note: str,
        accept: bool = False, records: list[list[object]] | None = None,
        replay: dict[str, object] | None = None) -> None:  # fmt: skip
    """Write one corpus file and its manifest entry.

    ``records`` (for ``ingest``) is the exact ``[test_id, outcome, flags]``
    list the report must turn into: a report that parses is judged by what
    it says, not merely by its exit.  ``replay`` (``test_id``, ``format``,
    ``accept``) is the test a base replay reads from the report, and whether
    that replay may accept (an honest twin) or must not.
    """
    path = HERE / surface / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    entry: Entry = {
        "file": f"{surface}/{name}",
        "command": command,
        "exit": exit_code,
        "accept": accept,
        "note": note,
    }
    if records is not None:
        entry["records"] = records
    if replay is not None:
        entry["replay"] = replay
    entries.append(entry)


def js(value: object) -> bytes:
    return json.dumps(value).encode()


def packet_cases() -> None:
    """JSON packets: the parser's attacks, each through a policy verb."""
    verb = ["admit", "{file}", "--json"]
    raw: dict[str, tuple[bytes, str]] = {
        "duplicate-key-verdict.json": (
            js(ADMIT)[:-1] + b', "base_misses": 0}',
            "duplicate key that decides the verdict",
        ),
        "duplicate-key-nested.json": (b'{"a": {"k": 1, "k": 2}}', "nested duplicate key"),
        "nan.json": (js(ADMIT).replace(b'"base_misses": 1', b'"base_misses": NaN'), "NaN"),
        "infinity.json": (
            js(ADMIT).replace(b'"patch_misses": 1', b'"patch_misses": Infinity'),
            "Infinity",
        ),
        "1e400.json": (
            js(ADMIT).replace(b'"base_misses": 1', b'"base_misses": 1e400'),
            "float overflow",
        ),
        "huge-integer.json": (
            js(ADMIT).replace(b'"base_misses": 1', b'"base_misses": ' + b"9" * 5000),
            "5000-digit integer",
        ),
        "deep-nesting.json": (
            b'{"a":' + b"[" * 100_000 + b"]" * 100_000 + b"}",
            "100k-deep nesting",
        ),
        "lone-surrogate.json": (js(ADMIT)[:-1] + b', "property_id": "\\ud800"}', "lone surrogate"),
        "trailing-garbage.json": (js(ADMIT) + b" {}", "trailing garbage"),
        "top-level-array.json": (b"[" + js(ADMIT) + b"]", "top-level array"),
        "invalid-utf8.json": (js(ADMIT)[:-1] + b', "property_id": "\xff\xfe"}', "invalid UTF-8"),
        "utf16.json": (js(ADMIT).decode().encode("utf-16"), "UTF-16 with BOM"),
        "bom.json": (b"\xef\xbb\xbf" + js(ADMIT), "UTF-8 BOM"),
        "empty.json": (b"", "empty file"),
        "nul-bytes.json": (js(ADMIT)[:20] + b"\x00" * 10 + js(ADMIT)[20:], "NUL bytes"),
        "truncated.json": (js(ADMIT)[:-15], "truncated"),
    }
    for name, (data, note) in raw.items():
        add("json", name, data, verb, 65, note)
    semantic: dict[str, tuple[str, dict[str, object], int, str]] = {
        "string-bool.json": (
            "decide",
            {**DECIDE, "clean_run_completed": "false"},
            2,
            '"false" for a boolean',
        ),
        "string-true.json": (
            "decide",
            {**DECIDE, "property_cohort_passed": "true"},
            2,
            '"true" for a boolean',
        ),
        "float-count.json": ("admit", {**ADMIT, "base_misses": 1.0}, 1, "5.0-style float count"),
        "float-attempts.json": (
            "admit",
            {**ADMIT, "base_attempts": 5.0},
            5,
            "float attempts (judged at row 2)",
        ),
        "bool-count.json": ("admit", {**ADMIT, "base_attempts": True}, 5, "true for base_attempts"),
        "unknown-field.json": (
            "admit",
            {**ADMIT, "base_missess": 1},
            1,
            "unknown (misspelt) field",
        ),
        "case-variant-key.json": (
            "admit",
            {**{k: v for k, v in ADMIT.items() if k != "base_misses"}, "Base_Misses": 1},
            1,
            "case-variant key",
        ),
        "case-variant-verdict.json": (
            "classify",
            {**CLASSIFY, "property_verdict": "PASS"},
            1,
            "case-variant enum",
        ),
        "negative-count.json": ("admit", {**ADMIT, "patch_misses": -1}, 1, "negative count"),
        "misses-over-attempts.json": (
            "admit",
            {**ADMIT, "base_misses": 6, "base_attempts": 5},
            1,
            "more misses than attempts",
        ),
        "null-fields.json": ("decide", dict.fromkeys(DECIDE), 2, "every field null"),
    }
    for name, (policy, packet, code, note) in semantic.items():
        add("json", name, js(packet), [policy, "{file}", "--json", "--now", NOW], code, note)


def lease_cases() -> None:
    """Expiries, owners, runner ids and digests that must not open a freeze."""

    def classify(name: str, changes: dict[str, object], code: int, note: str) -> None:
        add(
            "packets",
            name,
            js({**CLASSIFY, **changes}),
            ["classify", "{file}", "--json", "--now", NOW],
            code,
            note,
        )

    classify("expiry-past.json", {"expires_at": "2026-11-01T00:00:00Z"}, 6, "past expiry")
    classify("expiry-naive.json", {"expires_at": "2026-12-01T00:00:00"}, 6, "naive expiry")
    classify("expiry-9999.json", {"expires_at": "9999-12-31T23:59:59Z"}, 6, "year 9999")
    classify("expiry-2099.json", {"expires_at": "2099-01-01T00:00:00Z"}, 6, "permanent freeze")
    classify("expiry-now.json", {"expires_at": NOW}, 6, "expiry == now")
    classify(
        "expiry-now-offset.json",
        {"expires_at": "2026-11-29T13:00:00+01:00"},
        6,
        "== now in another offset",
    )
    classify("owner-whitespace.json", {"owner": " \t\u00a0 "}, 6, "whitespace owner")
    classify("owner-null.json", {"owner": None}, 6, "null owner")
    # SPEC 8: an owner that is not printable ASCII is no identity: the lease is refused.
    classify("owner-nbsp-zwsp.json", {"owner": "\u00a0\u200b"}, 6, "NBSP+ZWSP owner")
    classify("owner-zwj.json", {"owner": "\u200d"}, 6, "a lone U+200D owner")
    classify("owner-newline.json", {"owner": "ci-bot\nclass=flake"}, 6, "owner with a newline")
    classify("owner-hangul-filler.json", {"owner": "ci-bot\u3164"}, 6, "invisible U+3164")

    def decide(name: str, clean: str, note: str, code: int = 2) -> None:
        add(
            "packets",
            name,
            js({**DECIDE, "clean_runner_id": clean}),
            ["decide", "{file}", "--json"],
            code,
            note,
        )

    # A variant of the local runner id is outside the grammar: MISSING_FIELD (2)
    # before it could count as a distinct runner.
    decide("runner-same.json", LOCAL, "the same runner twice", 4)
    decide("runner-case.json", LOCAL.upper(), "runner ids equal modulo case")
    decide("runner-space.json", " " + LOCAL + " \n", "modulo whitespace")
    decide(
        "runner-nfkc.json",
        LOCAL.replace("img", "\uff49\uff4d\uff47"),
        "modulo Unicode NFKC (fullwidth)",
    )
    decide("runner-zero-width.json", LOCAL.replace(":", "\u200b:", 1), "modulo a zero-width space")
    decide(
        "runner-u2010.json",
        "img:local\u2010uncontainerized+nonce:0123456789abcdef",
        "U+2010 for '-': no runner id",
    )

    def admit(name: str, value: str, note: str) -> None:
        packet = {**ADMIT, "property_sha256": value, "base_property_sha256": value}
        add("packets", name, js(packet), ["admit", "{file}", "--json"], 1, note)

    admit("digest-upper.json", A.upper(), "uppercase digest on both sides")
    admit("digest-prefixed.json", "sha256:" + A, "prefixed digest")
    admit("digest-truncated.json", A[:63], "truncated digest")
    admit("digest-newline.json", A + "\n", "digest with a trailing newline")
    admit("epoch-nickname.json", "2026-q4", "an epoch name is not a digest")


def log_cases() -> None:
    """Attempt logs: every SPEC 2 refusal, each must be INCOMPLETE (exit 1)."""

    def line(n: object, result: object = "pass", seed: object = "s") -> bytes:
        return (
            json.dumps({"seed": seed, "n": n, "result": result}, separators=(",", ":")).encode()
            + b"\n"
        )

    cases: dict[str, tuple[bytes, str]] = {
        "no-final-newline.jsonl": (line(1) + line(2)[:-1], "missing final newline"),
        "blank-line.jsonl": (line(1) + b"\n" + line(2), "blank line"),
        "no-result.jsonl": (line(1) + b'{"seed":"s","n":2}\n', "a line without result"),
        "result-upper.jsonl": (line(1, "MISS"), "case-variant result"),
        "result-unknown.jsonl": (line(1, "flaky"), "unknown result"),
        "result-fail.jsonl": (line(1, "fail"), "adapter word, not a log result"),
        "n-repeated.jsonl": (line(1) + line(1, "miss"), "repeated n"),
        "n-out-of-order.jsonl": (line(2) + line(1), "out-of-order n"),
        "n-gap.jsonl": (line(1) + line(3, "miss"), "missing n (a deleted pass)"),
        "mixed-seeds.jsonl": (line(1) + line(2, seed="t"), "mixed seeds"),
        "seed-type.jsonl": (line(1, seed=1234) + line(2, seed="1234"), "1234 vs '1234'"),
        "crlf.jsonl": (line(1)[:-1] + b"\r\n", "CRLF"),
        "u2028.jsonl": (
            line(1, seed="a\u2028b").replace(b"\\u2028", "\u2028".encode()) + line(2, seed="x"),
            "U+2028 inside a string (no split)",
        ),
        "two-workers-concatenated.jsonl": (
            line(1) + line(2, "miss") + line(1) + line(2),
            "two workers in one file",
        ),
        "beyond-the-cap.jsonl": (
            b"".join(line(n) for n in range(1, 10_002)),
            "more lines than the hard limit",
        ),
        "duplicate-key.jsonl": (
            b'{"seed":"s","n":1,"result":"miss","result":"pass"}\n',
            "duplicate result key",
        ),
        "extra-field.jsonl": (b'{"seed":"s","n":1,"result":"pass","weight":0}\n', "extra field"),
        "spaces.jsonl": (b'{"seed": "s", "n": 1, "result": "pass"}\n', "not compact"),
        "empty.jsonl": (b"", "empty log"),
        "huge-line.jsonl": (
            b'{"seed":"' + b"x" * 1_000_000 + b'","n":1,"result":"pass"}\n',
            "1 MB line",
        ),
    }
    for name, (data, note) in cases.items():
        add("logs", name, data, ["attempts", "{file}", "--json"], 1, note)


def controls() -> None:
    """Valid inputs that must be accepted: a gate that refuses everything fails the suite."""
    add(
        "controls",
        "admit.json",
        js(ADMIT),
        ["admit", "{file}", "--json"],
        0,
        "control",
        accept=True,
    )
    add(
        "controls",
        "decide.json",
        js(DECIDE),
        ["decide", "{file}", "--json"],
        0,
        "control",
        accept=True,
    )
    add(
        "controls",
        "budget.json",
        js(BUDGET),
        ["budget", "{file}", "--json"],
        0,
        "control",
        accept=True,
    )
    add(
        "controls",
        "classify.json",
        js(CLASSIFY),
        ["classify", "{file}", "--json", "--now", NOW],
        4,
        "control",
        accept=True,
    )
    log = b"".join(
        json.dumps({"seed": "s", "n": n, "result": r}, separators=(",", ":")).encode() + b"\n"
        for n, r in enumerate(["pass", "miss", "pass"], 1)
    )
    add("controls", "log.jsonl", log, ["attempts", "{file}", "--json"], 0, "control", accept=True)


def suite(*cases: bytes, attrs: bytes = b"") -> bytes:
    return (
        b'<?xml version="1.0" encoding="UTF-8"?><testsuite name="s"'
        + attrs
        + b">"
        + b"".join(cases)
        + b"</testsuite>"
    )


def case(name: bytes, body: bytes = b"", extra: bytes = b"") -> bytes:
    return b'<testcase classname="c" name="' + name + b'"' + extra + b">" + body + b"</testcase>"


def xml_cases() -> None:
    """JUnit XML: parser attacks are refused (65); odd but well-formed reports are judged exactly."""
    ingest = ["ingest", "{file}", "--report-format", "auto"]
    laughs = (
        b'<!DOCTYPE l [<!ENTITY a "aaaaaaaaaa">'
        + b"".join(
            b'<!ENTITY %s "%s">'
            % (b"b" + bytes([97 + i]), (b"&" + (b"b" + bytes([96 + i]) if i else b"a") + b";") * 10)
            for i in range(9)
        )
        + b"]>"
    )
    refused: dict[str, tuple[bytes, str]] = {
        "billion-laughs.xml": (
            b'<?xml version="1.0"?>' + laughs + b"<testsuite>&bi;</testsuite>",
            "billion laughs",
        ),
        "quadratic-blowup.xml": (
            b'<?xml version="1.0"?><!DOCTYPE q [<!ENTITY x "'
            + b"x" * 50_000
            + b'">]><testsuite>'
            + b"&x;" * 2_000
            + b"</testsuite>",
            "quadratic blowup",
        ),
        "external-entity.xml": (
            b'<?xml version="1.0"?><!DOCTYPE t [<!ENTITY e SYSTEM "file:///etc/passwd">]><testsuite>'
            + case(b"&e;")
            + b"</testsuite>",
            "external file entity",
        ),
        "parameter-entity.xml": (
            b'<?xml version="1.0"?><!DOCTYPE t [<!ENTITY % p SYSTEM "file:///etc/passwd"> %p;]><testsuite/>',
            "external parameter entity",
        ),
        "external-dtd.xml": (
            b'<?xml version="1.0"?><!DOCTYPE testsuite SYSTEM "junit.dtd"><testsuite/>',
            "external DTD",
        ),
        "entity-to-element.xml": (
            b'<?xml version="1.0"?><!DOCTYPE t [<!ENTITY f "<failure/>">]><testsuite>'
            + case(b"t", b"&f;")
            + b"</testsuite>",
            "internal entity expanding to an element",
        ),
        "deep-nesting.xml": (
            b"<testsuites>" + b"<testsuite>" * 5000 + b"</testsuite>" * 5000 + b"</testsuites>",
            "5000 nested suites",
        ),
        "invalid-utf8.xml": (suite(case(b"t\xff\xfe")), "invalid UTF-8 in a name"),
        "utf7.xml": (
            b'<?xml version="1.0" encoding="UTF-7"?><testsuite>+ADw-failure/+AD4-</testsuite>',
            "UTF-7 declaration",
        ),
        "utf16.xml": (
            '<?xml version="1.0" encoding="UTF-16"?><testsuite/>'.encode("utf-16"),
            "UTF-16",
        ),
        "bom-contradicts.xml": (
            b'\xef\xbb\xbf<?xml version="1.0" encoding="ISO-8859-1"?><testsuite/>',
            "UTF-8 BOM, Latin-1 declaration",
        ),
        "gzip-disguised.xml": (
            b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03" + b"\x00" * 20,
            "gzip named .xml",
        ),
        "nul-bytes.xml": (suite(case(b"t\x00x")), "NUL byte"),
        "truncated.xml": (suite(case(b"a"), case(b"b"))[:-20], "truncated"),
        "empty.xml": (b"", "empty file"),
        "namespaced-failure.xml": (
            b'<testsuite xmlns:x="urn:x">'
            + case(b"t", b'<x:failure message="m"/>')
            + b"</testsuite>",
            "namespaced result tag",
        ),
        "case-variant-failure.xml": (
            suite(case(b"t", b'<Failure message="m"/>')),
            "case-variant result tag",
        ),
        "huge-attribute.xml": (suite(case(b"n" * 100_000)), "100 kB test name (over the id limit)"),
    }
    for name, (data, note) in refused.items():
        add("xml", name, data, ingest, 65, note)
    judged: dict[str, tuple[bytes, list[list[object]], str]] = {
        "failure-and-skipped.xml": (
            suite(case(b"t", b'<failure message="m"/><skipped/>')),
            [["c::t", "error", []]],
            "both failure and skipped: never a pass",
        ),
        "duplicate-conflicting.xml": (
            suite(case(b"t", b'<failure message="m"/>'), case(b"t")),
            [
                ["c::t", "fail", ["conflicting-duplicate"]],
                ["c::t", "pass", ["conflicting-duplicate"]],
            ],
            "one id, two elements, different outcomes",
        ),
        "lying-counters.xml": (
            suite(
                case(b"t", b'<failure message="m"/>'), attrs=b' tests="1" failures="0" errors="0"'
            ),
            [["c::t", "fail", []]],
            "suite counters say no failure",
        ),
        "huge-message.xml": (
            suite(case(b"t", b'<failure message="' + b"m" * 1_000_000 + b'"/>')),
            [["c::t", "fail", []]],
            "1 MB failure message, kept bounded",
        ),
        "huge-text-node.xml": (
            suite(case(b"t", b"<system-out>" + b"o" * 2_000_000 + b"</system-out>")),
            [["c::t", "pass", []]],
            "2 MB text node",
        ),
        "odd-durations.xml": (
            suite(
                case(b"a", extra=b' time="-1"'),
                case(b"b", extra=b' time="NaN"'),
                case(b"c", extra=b' time="1,5"'),
            ),
            [["c::a", "pass", []], ["c::b", "pass", []], ["c::c", "pass", []]],
            "negative/NaN/comma durations become unknown",
        ),
    }
    for name, (data, records, note) in judged.items():
        add("xml", name, data, ingest, 0, note, records=records)
    failing = case(b"t", b'<failure message="m"/>')
    namespaced: dict[str, tuple[bytes, str]] = {
        "namespace-default-suite.xml": (
            b'<testsuite xmlns="urn:x" name="s">' + failing + b"</testsuite>",
            "default namespace on the suite: another vocabulary's elements",
        ),
        "namespace-default-result.xml": (
            suite(case(b"t", b'<failure xmlns="urn:x" message="m"/>')),
            "default namespace on the result element",
        ),
        "namespace-prefixed-structure.xml": (
            b'<x:testsuite xmlns:x="urn:x" name="s"><x:testcase classname="c" name="t">'
            b'<x:failure message="m"/></x:testcase></x:testsuite>',
            "prefixed namespace on every structure and result element",
        ),
        "blank-id.xml": (
            b'<testsuite><testcase classname=" " name=""><failure message="m"/></testcase>'
            b"</testsuite>",
            "blank classname and name outside a named suite: no id",
        ),
        "control-in-id.xml": (
            suite(case(b"t&#10;u", b'<failure message="m"/>')),
            "a newline (character reference) in a test name",
        ),
    }
    for name, (data, note) in namespaced.items():
        # A namespaced failure of c::t was counted as a miss: a base replay must not accept.
        target = {"test_id": "c::t", "format": "junit", "accept": False}
        add("xml", name, data, ingest, 65, note,
            replay=target if name.startswith("namespace") else None)  # fmt: skip
    add(
        "xml",
        "blank-classname-three-suites.xml",
        b"<testsuites>"
        + b"".join(
            b'<testsuite name="S%d"><testcase classname="" name="A">%s</testcase></testsuite>'
            % (n, b'<failure message="m"/>' if n == 2 else b"")
            for n in (1, 2, 3)
        )
        + b"</testsuites>",
        ingest,
        0,
        "three tests named A in three suites: three ids, none flagged",
        records=[["S1::A", "pass", []], ["S2::A", "fail", []], ["S3::A", "pass", []]],
        replay={"test_id": "S2::A", "format": "junit", "accept": True},
    )


def tap_cases() -> None:
    """TAP: the run must never read as more complete or greener than it was.

    Every stream-level defect below leaves the target test ``t`` failing, so
    that reading it at face value would let a base replay accept: each must
    instead put ``stream-defect`` on every record, ``t``'s included.
    """
    ingest = ["ingest", "{file}", "--report-format", "tap"]
    defect = "stream-defect"
    plan_error: list[object] = ["<plan>", "error", [defect]]

    t_fails: list[object] = ["t", "fail", [defect]]
    b_passes: list[object] = ["b", "pass", [defect]]
    both = [t_fails, b_passes, plan_error]
    #: name -> (report, records, note, target); the target fails in every one.
    defects: dict[str, tuple[bytes, list[list[object]], str, str]] = {
        "plan-mismatch.tap": (
            b"1..3\nnot ok 1 - t\nok 2 - b\n", both,
            "plan says 3, 2 ran: every record carries the defect", "t",
        ),
        "no-plan.tap": (b"not ok 1 - t\nok 2 - b\n", both, "no plan", "t"),
        "two-plans.tap": (b"1..2\nnot ok 1 - t\nok 2 - b\n1..2\n", both, "a second plan", "t"),
        "plan-in-the-middle.tap": (
            b"not ok 1 - t\n1..2\nok 2 - b\n", both, "a test point after the closing plan", "t",
        ),
        "skip-all-with-tests.tap": (
            b"1..0 # SKIP nothing to run\nnot ok 1 - t\n", [t_fails, plan_error],
            "a skip-all plan followed by a test point", "t",
        ),
        "duplicate-numbers.tap": (
            b"1..2\nnot ok 1 - t\nok 1 - b\n", both, "test number repeated", "t",
        ),
        "out-of-order-numbers.tap": (
            b"1..2\nok 2 - b\nnot ok 1 - t\n", [b_passes, t_fails, plan_error],
            "test numbers out of order", "t",
        ),
        "zero-number.tap": (b"1..1\nnot ok 0 - t\n", [t_fails, plan_error], "test number 0", "t"),
        "misindented-point.tap": (
            b"1..1\nnot ok 1 - t\n  ok 2 - t\n", [t_fails, plan_error],
            "a test point indented by 2 spaces: another reader counts it", "t",
        ),
        "bail-out-then-ok.tap": (
            b"1..3\nnot ok 1 - t\nBail out! db down\nok 2 - b\nok 3 - c\n",
            [
                t_fails,
                ["b", "pass", ["bailed-out", defect]],
                ["c", "pass", ["bailed-out", defect]],
                ["<plan>", "error", ["bailed-out", defect]],
            ],
            "Bail out! followed by ok lines that complete the plan: every record is flagged", "t",
        ),
        "no-final-newline.tap": (
            b"1..2\nok 1 - b\nnot ok 2 - t", [b_passes, t_fails, plan_error],
            "the last line has no newline: cut from 'not ok 2 - t # TODO'", "t",
        ),
        "yaml-unterminated.tap": (
            b"ok 1 - a\n  ---\n  x: 1\nnot ok 2 - t\n  ...\n1..1\n",
            [["a", "pass", [defect]], t_fails, plan_error],
            "a YAML block never closed must not swallow the failing point after it", "t",
        ),
        "yaml-at-end.tap": (
            b"1..1\nnot ok 1 - t\n  ---\n  message: x\n", [t_fails, plan_error],
            "the report ends inside a YAML block", "t",
        ),
        "brace-unclosed.tap": (
            b"1..1\nnot ok 1 - p {\n    not ok 1 - t\n    1..1\n",
            [["p > t", "fail", [defect]], ["p", "fail", [defect]], plan_error],
            "a brace subtest never closed", "p > t",
        ),
        "subtest-plan-mismatch.tap": (
            b"1..1\n# Subtest: p\n    1..2\n    not ok 1 - t\nnot ok 1 - p\n",
            [["p > t", "fail", [defect]], ["p > <plan>", "error", [defect]], ["p", "fail", [defect]]],
            "a subtest's plan not kept", "p > t",
        ),
    }  # fmt: skip
    for name, (data, records, note, target) in defects.items():
        add("tap", name, data, ingest, 0, note, records=records,
            replay={"test_id": target, "format": "tap", "accept": False})  # fmt: skip
    honest: dict[str, tuple[bytes, list[list[object]], str, str]] = {
        "control-target-fails.tap": (
            b"TAP version 14\n1..2\nnot ok 1 - t\nok 2 - b\n",
            [["t", "fail", []], ["b", "pass", []]],
            "honest twin of the defects: a complete stream in which t fails",
            "t",
        ),
        "brace-child-fails.tap": (
            b"1..2\nnot ok 1 - p {\n    ok 1 - c\n    not ok 2 - t\n    1..2\n}\nok 2 - b\n",
            [["p > c", "pass", []], ["p > t", "fail", []], ["p", "fail", []], ["b", "pass", []]],
            "brace subtest: the failing child is p > t, not the next point",
            "p > t",
        ),
        "hash-is-not-a-directive.tap": (
            b"1..1\nnot ok 1 - t # not a directive\n",
            [["t # not a directive", "fail", []]],
            "a '#' that starts no directive stays in the description",
            "t # not a directive",
        ),
    }
    for name, (data, records, note, target) in honest.items():
        add("tap", name, data, ingest, 0, note, records=records,
            replay={"test_id": target, "format": "tap", "accept": True})  # fmt: skip
    add(
        "tap",
        "make-noise-first.tap",
        b"make[1]: Entering directory '/src/t'\n1..1\nnot ok 1 - t\n",
        ["ingest", "{file}", "--report-format", "auto"],
        0,
        "TAP behind a build tool's first line: sniffed as TAP, as --format tap reads it",
        records=[["t", "fail", []]],
        replay={"test_id": "t", "format": "auto", "accept": True},
    )
    cases: dict[str, tuple[bytes, int, list[list[object]] | None, str]] = {
        "directive-casing.tap": (
            b"1..2\nnot ok 1 - a # todo later\nok 2 - b # SkIp why\n",
            0,
            [["a", "skip", []], ["b", "skip", []]],
            "directives in any case",
        ),
        "word-hash-skip.tap": (
            b"1..1\nnot ok 1 - word#skip\n",
            0,
            [["word", "skip", []]],
            "word#skip is a SKIP (Perl's TAP::Parser): never a miss",
        ),
        "escaped-hash.tap": (
            b"1..1\nnot ok 1 - a \\# TODO not a directive\n",
            0,
            [["a # TODO not a directive", "fail", []]],
            "escaped # is not a directive",
        ),
        "lying-parent.tap": (
            b"TAP version 14\n1..1\n# Subtest: p\n    1..1\n    not ok 1 - child\nok 1 - p\n",
            0,
            [["p > child", "fail", []], ["p", "error", []]],
            "subtest parent says ok over a failing child",
        ),
        "yaml-alias-bomb.tap": (
            b"TAP version 13\n1..1\nnot ok 1 - a\n  ---\n  a: &a [x, x, x, x, x, x, x, x, x]\n  b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n  c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\n  d: [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n  ...\n",
            0,
            [["a", "fail", []]],
            "YAML alias bomb kept as text",
        ),
        "very-long-line.tap": (
            b"1..1\nok 1 - " + b"x" * 100_000 + b"\n",
            65,
            None,
            "a 100 kB description (over the id limit)",
        ),
        "control-in-description.tap": (
            b"1..1\nnot ok 1 - t\tu\n",
            65,
            None,
            "a tab (C0 control) in a description: no id",
        ),
    }
    for name, (data, code, expected, note) in cases.items():
        add("tap", name, data, ingest, code, note, records=expected)


def report_json_cases() -> None:
    """pytest JSON reports: ids with controls are refused like JUnit's and TAP's."""
    ingest = ["ingest", "{file}", "--report-format", "pytest-json"]
    for name, nodeid, note in (
        ("nodeid-nul.json", "t.py::a\u0000b", "an escaped NUL in a nodeid"),
        ("nodeid-newline.json", "t.py::a\nb", "an escaped newline in a nodeid"),
        ("nodeid-blank.json", " ", "a blank nodeid"),
    ):
        add(
            "json", name, js({"tests": [{"nodeid": nodeid, "outcome": "failed"}]}), ingest, 65, note
        )


SURFACES: list[Callable[[], None]] = [
    packet_cases,
    lease_cases,
    log_cases,
    xml_cases,
    tap_cases,
    report_json_cases,
    controls,
]


def main() -> None:
    """Rewrite every surface folder and the manifest."""
    for folder in HERE.iterdir():
        if folder.is_dir() and not folder.name.startswith(("_", ".")):
            shutil.rmtree(folder)
    for surface in SURFACES:
        surface()
    manifest = sorted(entries, key=lambda e: str(e["file"]))
    (HERE / "manifest.json").write_text(json.dumps(manifest, indent=1, ensure_ascii=True) + "\n")
    print(f"{len(manifest)} corpus files")


if __name__ == "__main__":
    main()
