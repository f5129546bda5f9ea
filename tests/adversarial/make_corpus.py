"""Generate the adversarial corpus: one folder per surface, one file per attack.

Run ``python tests/adversarial/make_corpus.py`` to regenerate; the output is
committed so it can be reviewed.  ``manifest.json`` names, for every file, the
CLI command that reads it and its single acceptable outcome: the exit code,
and whether it may be an accept (only the controls may).
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
        accept: bool = False) -> None:  # fmt: skip
    """Write one corpus file and its manifest entry."""
    path = HERE / surface / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    entries.append(
        {
            "file": f"{surface}/{name}",
            "command": command,
            "exit": exit_code,
            "accept": accept,
            "note": note,
        }
    )


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

    def decide(name: str, clean: str, note: str) -> None:
        add(
            "packets",
            name,
            js({**DECIDE, "clean_runner_id": clean}),
            ["decide", "{file}", "--json"],
            4,
            note,
        )

    decide("runner-case.json", LOCAL.upper(), "runner ids equal modulo case")
    decide("runner-space.json", " " + LOCAL + " \n", "modulo whitespace")
    decide(
        "runner-nfkc.json",
        LOCAL.replace("img", "\uff49\uff4d\uff47"),
        "modulo Unicode NFKC (fullwidth)",
    )
    decide("runner-zero-width.json", LOCAL.replace(":", "\u200b:", 1), "modulo a zero-width space")

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


SURFACES: list[Callable[[], None]] = [packet_cases, lease_cases, log_cases, controls]


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
