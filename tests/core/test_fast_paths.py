"""Fast paths against their slow references: the same answer on every input.

Each reference here is the implementation the fast path replaced, kept only
as the oracle (it lives in the tests, not in the package).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import importlib
import json
import os
import posixpath
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from gate.support import PATCH, lease_record
from hypothesis import example as case
from hypothesis import given, settings
from hypothesis import strategies as st
from packets import NOW, REPO, budget_packet, replays

from flakecore import (
    _fields,
    admit,
    attestation,
    budget,
    classify,
    decide,
    identity,
    jsonio,
    timeutil,
)
from flakecore._wording import plural
from flakecore.codes import (
    AdmitCode,
    BudgetCode,
    ClassifyClass,
    DecideCode,
    PolicyName,
    TrustReason,
)
from flakecore.decision import Decision, trusted_decision
from flakecore.digest import is_commit_id, is_digest, is_lower_hex
from flakecore.errors import InputError
from flakecore.exits import BUDGET_EXIT
from flakecore.gate import _reaper, basetrust, guard, ledger
from flakecore.gate.config import DEFAULT_FIXTURE_GLOBS
from flakecore.gate.guard import POLICY_TABLE
from flakecore.jsonio import compact_text, loads_strict
from flakecore.policy import Policy, PolicySource
from flakecore.records import DECIDE_FIELDS
from flakecore.trust import TrustedKey, TrustVerdict

classify_module = importlib.import_module("flakecore.classify")
lease_module = importlib.import_module("flakecore.lease")
policies_cli = importlib.import_module("flakecore.cli._policies")

#: Strings with every kind of character JSON text can spell, lone surrogates included.
TEXT = st.text(
    st.one_of(
        st.characters(codec="utf-8"),
        st.sampled_from(["\ud800", "\udbff", "\udc00", "\udfff", "\\", '"', "u", "d"]),
    ),
    max_size=12,
)
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**60), 2**60) | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=12,
)


def _has_lone_surrogate(value: object) -> bool:
    """The walk ``loads_strict`` ran on every document before: any string, key or value."""
    if isinstance(value, str):
        return any(0xD800 <= ord(c) <= 0xDFFF for c in value)
    if isinstance(value, dict):
        return any(_has_lone_surrogate(k) or _has_lone_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_lone_surrogate(v) for v in value)
    return False


def _spelled(value: object, ascii_only: bool, escape_all: bool) -> bytes:
    """JSON text of ``value``: raw UTF-8, ``\\u`` escapes, or every escape upper case."""
    text = json.dumps(value, ensure_ascii=ascii_only)
    if escape_all:
        text = text.replace("\\ud", "\\uD")
    return text.encode("utf-8", "surrogatepass")


@settings(max_examples=800)
@given(VALUES, st.booleans(), st.booleans())
@case(value={"\ud800": None}, ascii_only=False, escape_all=False)  # raw: not UTF-8 at all
def test_lone_surrogates_are_refused_exactly_when_the_walk_finds_one(
    value: object, ascii_only: bool, escape_all: bool
) -> None:
    data = _spelled(value, ascii_only, escape_all)
    duplicate = False
    expected: str | None

    def pairs(items: list[tuple[str, object]]) -> dict[str, object]:
        nonlocal duplicate
        duplicate = duplicate or len({k for k, _ in items}) < len(items)
        return dict(items)

    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        expected = "invalid UTF-8"  # a raw surrogate: json.loads itself would pass it through
    else:
        reference = json.loads(data, object_pairs_hook=pairs)  # stdlib: keeps lone surrogates
        expected = "duplicate key" if duplicate else None
    if expected is None and _has_lone_surrogate(reference):
        expected = "lone surrogate"
    elif expected is None:
        assert loads_strict(data) == reference
        return
    with pytest.raises(InputError, match=expected):
        loads_strict(data)


@pytest.mark.parametrize(
    ("data", "refused"),
    [
        (b'{"a":"\\ud800"}', True),
        (b'{"a":"\\uD800"}', True),
        (b'{"\\uDFFF":1}', True),
        (b'["x", ["\\udbff"]]', True),
        (b'["\\ud83d\\ude00"]', False),  # a pair: one character
        (b'["\\uDBFF\\uDFFF"]', False),
        (b'{"a":"\\\\ud800"}', False),  # an escaped backslash, then text
        (b'{"a":"\\u0064800"}', False),
        (b'{"a":"\\uE000"}', False),
    ],
)
def test_surrogate_escapes_by_hand(data: bytes, refused: bool) -> None:
    if refused:
        with pytest.raises(InputError, match="lone surrogate"):
            loads_strict(data)
    else:
        assert loads_strict(data) == json.loads(data)


def _reference(data: bytes) -> object:
    """The range hooks alone: a fresh decoder, no depth check, no surrogate walk."""
    decoder = json.JSONDecoder(
        object_pairs_hook=jsonio._pairs,
        parse_constant=jsonio._constant,
        parse_float=jsonio._float,
        parse_int=jsonio._int,
    )
    try:
        return decoder.decode(data.decode())
    except ValueError as exc:
        return ("refused", str(exc))


DIGITS = st.text(st.sampled_from("0123456789"), min_size=1, max_size=45)
NUMBERS = st.builds(
    lambda sign, whole, frac, exp: sign + whole + frac + exp,
    st.sampled_from(["", "-"]),
    DIGITS.map(lambda d: d.lstrip("0") or "0"),
    st.one_of(st.just(""), DIGITS.map(lambda d: "." + d)),
    st.one_of(
        st.just(""),
        st.builds(
            lambda e, s, d: e + s + d,
            st.sampled_from("eE"),
            st.sampled_from(["", "+", "-"]),
            DIGITS,
        ),
    ),
)
DOCUMENTS = st.builds(
    lambda numbers, keys: (
        "{" + ",".join(f'"{k}":{n}' for k, n in zip(keys, numbers, strict=False)) + "}"
    ),
    st.lists(NUMBERS, min_size=1, max_size=5),
    st.lists(st.sampled_from("abc"), min_size=1, max_size=5),
)


@settings(max_examples=1500)
@given(DOCUMENTS)
def test_numbers_and_duplicate_keys_are_judged_as_by_the_hooks(text: str) -> None:
    data = text.encode()
    expected = _reference(data)
    if isinstance(expected, tuple):
        with pytest.raises(InputError, match=re.escape(expected[1])):
            loads_strict(data)
        return
    got = loads_strict(data)
    assert isinstance(got, dict) and isinstance(expected, dict)
    assert got == expected
    assert [type(v) for v in got.values()] == [type(v) for v in expected.values()]


#: JSON text and near-JSON: values, padding, trailing garbage, every refusal of the hooks.
JSONISH = st.one_of(
    st.builds(
        lambda value, before, after: before + json.dumps(value) + after,
        VALUES,
        st.sampled_from(["", " ", "\n", "\t\r "]),
        st.sampled_from(
            ["", " ", "\n", "\n\n", " \r\n\t", "x", "}", ",1", " 2", "\n x", "\x0b", "\x0c",
             "\u00a0", "\u2028", "\n\x00"]
        ),
    ),
    st.lists(
        st.sampled_from(
            ['{', '}', '[', ']', '"a"', '"b"', ':', ',', '1', '-1.5e3', '1e999', 'NaN', '00',
             'true', 'nul', '"\\u00e9"', '"\\ud800"', '"', ' ', '\n', '\t', 'x', "9" * 41]
        ),
        max_size=12,
    ).map("".join),
)  # fmt: skip


def _outcome(data: bytes) -> object:
    """What ``loads_strict`` returns, or the type and text of what it raises."""
    try:
        return loads_strict(data, source="s", line=None)
    except InputError as exc:
        return (type(exc), str(exc))


@settings(max_examples=1500)
@given(JSONISH)
def test_the_one_scan_decodes_as_decode_does(text: str) -> None:
    data = text.encode("utf-8", "surrogatepass")
    fast = _outcome(data)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(jsonio, "_decode", jsonio._DECODER.decode)
        slow = _outcome(data)
    assert fast == slow
    if not isinstance(fast, tuple):
        assert json.dumps(fast) == json.dumps(slow)  # the same types, not only equal values


@settings(max_examples=300)
@given(st.dictionaries(TEXT.filter(lambda t: not _has_lone_surrogate(t)), VALUES, max_size=6))
def test_the_encoders_write_what_json_dumps_writes(value: dict[str, object]) -> None:
    compact = json.dumps(value, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
    assert jsonio.compact_line(value) == (compact + "\n").encode("ascii")
    canonical = json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
    )
    assert jsonio.canonical_bytes(value) == canonical.encode("ascii")


_OLD_RUNNER = re.compile(r"img:(?P<image>[^+\s]+)\+nonce:(?P<nonce>[0-9a-f]{16})")
_OLD_IMAGE = re.compile(r"(?:sha256:[0-9a-f]{64}|[0-9a-f]{64}|local-uncontainerized)")
RUNNER_TEXT = st.builds(
    "".join,
    st.lists(
        st.sampled_from(
            ["img:", "sha256:", "a" * 64, "f" * 63, "local-uncontainerized", "+nonce:",
             "0123456789abcdef", "+", " ", "\n", "x", "A", "0"]
        ),
        max_size=7,
    ),
)  # fmt: skip


@settings(max_examples=1000)
@given(RUNNER_TEXT)
def test_one_runner_pattern_is_the_two_step_check(text: str) -> None:
    m = _OLD_RUNNER.fullmatch(text)
    old = m is not None and _OLD_IMAGE.fullmatch(m["image"]) is not None
    assert (identity.runner_id_problem(text) is None) == (old and bool(text.strip()))
    if old:
        assert str(identity.RunnerId.parse(text)) == text
    assert identity.is_runner_id(text) is (identity.runner_id_problem(text) is None)


_HEX = st.text("0123456789abcdef", min_size=1, max_size=1)
_RUNNER_ID = st.builds(
    lambda image, nonce: f"img:{image}+nonce:{nonce}",
    st.one_of(
        st.just("local-uncontainerized"),
        st.lists(_HEX, min_size=64, max_size=64).map("".join),
        st.lists(_HEX, min_size=64, max_size=64).map(lambda h: "sha256:" + "".join(h)),
    ),
    st.lists(_HEX, min_size=16, max_size=16).map("".join),
)


_A_RUNNER = "img:local-uncontainerized+nonce:0123456789abcdef"


@settings(max_examples=1000)
@given(
    st.one_of(_RUNNER_ID, RUNNER_TEXT, st.none()).flatmap(
        lambda t: st.sampled_from([t, _Str(t)]) if isinstance(t, str) else st.just(t)
    ),
    st.one_of(_RUNNER_ID, RUNNER_TEXT, st.none()),
)
@case(f"{_A_RUNNER} {_A_RUNNER}", _A_RUNNER)  # a space inside either is no split
@case(f"{_A_RUNNER} ", _A_RUNNER)
@case(_A_RUNNER, f" {_A_RUNNER}")
@case(_A_RUNNER, f"{_A_RUNNER}\n")
def test_two_runner_ids_in_one_match_are_each_ones(a: object, b: object) -> None:
    each = identity.is_runner_id(a) and identity.is_runner_id(b)
    assert identity.are_runner_ids(a, b) is each
    assert identity.are_runner_ids(b, a) is each


@given(_RUNNER_ID, st.one_of(_RUNNER_ID, RUNNER_TEXT))
def test_runner_ids_are_their_own_identity_key(a: str, b: str) -> None:
    """decide compares two valid runner ids with ``==``: ``same_runner``'s answer."""
    assert identity.is_runner_id(a) and identity.identity_key(a) == a
    if identity.is_runner_id(b):
        assert identity.same_runner(a, b) is (a == b)


@given(st.dictionaries(st.sampled_from([*DECIDE_FIELDS, "format", "x", "test_ID", ""]), st.none()))
def test_unknown_keys_as_the_set_difference(packet: dict[str, object]) -> None:
    known = set(DECIDE_FIELDS) | set(_fields.FORMAT_KEYS)
    problems = _fields.envelope_problems(packet, "decide-packet", _fields.known_keys(DECIDE_FIELDS))
    unknown = [p for p in problems if p.startswith("unknown field")]
    assert unknown == [f"unknown field {k!r}" for k in sorted(k for k in packet if k not in known)]
    assert len(problems) - len(unknown) == ("format" in packet) + ("format_version" in packet)


PATH_PARTS = st.sampled_from(
    [
        "a",
        "b",
        "tests",
        "test_x.py",
        "conftest.py",
        ".flakecore",
        "-",
        "[",
        "]",
        "!",
        "*",
        "?",
        "é",
        "\udcff",
    ]
)
PATHS = st.lists(PATH_PARTS, min_size=1, max_size=4).map("/".join)
GLOBS = st.one_of(
    st.sampled_from(DEFAULT_FIXTURE_GLOBS),
    st.lists(
        st.sampled_from(
            [
                "*",
                "?",
                "a",
                "b",
                "/",
                "[ab]",
                "[!a]",
                "[",
                "]",
                "tests",
                "**",
                ".",
                "é",
                "[*]",
                "[]*]",
                "[!*a]",
            ]
        ),
        max_size=5,
    ).map("".join),
)


@settings(max_examples=1000)
@given(st.lists(GLOBS, max_size=6), PATHS, st.lists(PATHS, max_size=3))
def test_the_compiled_globs_match_as_path_matches_does(
    globs: list[str], path: str, others: list[str]
) -> None:
    """Built for a diff holding ``path`` (and others), the matcher answers as path_matches."""
    match = guard._matcher(globs, "\0".join([*others, path]))
    found = match is not None and match(path) is not None
    assert found == any(guard.path_matches(path, g) for g in globs)


RAW_FIELDS = st.one_of(
    st.sampled_from(["100644", "120000", "160000", "000000", "0644", "10064x", "é"]),
    st.sampled_from(["0" * 40, "ab" * 20, "M", "A", "R100", "", " ", ":", "x", "\n"]),
)
_MODE = st.sampled_from(["100644", "100755", "120000", "160000", "000000"])
_OID = st.sampled_from(["0" * 40, "ab" * 20, "f" * 64])
_STATUS = st.sampled_from(["M", "A", "D", "T", "R100"])
RAW_META = st.one_of(
    st.lists(RAW_FIELDS, max_size=6).map(" ".join),
    st.tuples(_MODE, _MODE, _OID, _OID, _STATUS).map(" ".join),  # git's usual form
)
RAW_ENTRY = st.tuples(st.sampled_from([":", ":", "", " :"]), RAW_META, PATHS)


@settings(max_examples=1000)
@given(st.lists(RAW_ENTRY, max_size=5), st.sampled_from(["", "x", ":100644"]))
def test_the_raw_diff_pattern_passes_only_what_the_field_check_passes(
    entries: list[tuple[str, str, str]], tail: str
) -> None:
    """One pattern over git's whole output accepts it only when every field is well formed
    and none is a symlink's or a gitlink's."""
    text = "".join(f"{colon}{meta}\0{path}\0" for colon, meta, path in entries) + tail
    fields = text.split("\0")
    metas = fields[0 : 2 * len(fields[1::2]) : 2]
    if guard._PLAIN_ENTRIES.fullmatch(text) is not None:
        assert not any(guard._link(*guard._modes(meta)) for meta in metas)


def _guard_paths_before(
    changes: list[guard.Change],
    fixture_globs: list[str],
    ledger_globs: list[str],
    ledger_dirs: list[str],
    not_fixtures: set[str],
) -> guard.GuardResult:
    """guard_paths as it was: one fnmatchcase per path and glob, tuple membership."""
    dirs = tuple(posixpath.normpath(d) for d in ledger_dirs)
    reasons: dict[str, str] = {}
    ledger: list[str] = []
    for change in changes:
        why = guard._dir_reason(change.path, dirs)
        if change.link is not None:
            why = f"a {change.link}: git cannot show what lies behind it"
        if why is not None or any(guard.path_matches(change.path, g) for g in ledger_globs):
            ledger.append(change.path)
            if why is not None:
                reasons[change.path] = why
    ledger.append(POLICY_TABLE)
    reasons[POLICY_TABLE] = "x"
    fixture = tuple(
        c.path
        for c in changes
        if c.path not in ledger
        and c.path not in not_fixtures
        and any(guard.path_matches(c.path, g) for g in fixture_globs)
    )
    return guard.GuardResult(
        base="main", base_sha="", paths=tuple(c.path for c in changes),
        fixture_paths=fixture, ledger_paths=tuple(ledger), ledger_reasons=reasons,
    )  # fmt: skip


CHANGES = st.builds(
    guard.Change,
    PATHS,
    st.sampled_from(["100644", "120000", "160000", "000000"]),
    st.sampled_from(["100644", "100755", "120000", "000000"]),
)


#: A ``*`` inside a set is a member, not a wildcard: the glob's literal text is around the set.
STARRED_SETS = [
    ("[*]", "*"),
    ("[*]", "a/*"),
    ("[a*b]x", "*x"),
    ("[]*]", "]"),
    ("[!*]y", "xy"),
    ("led[*]ger.json", "data/led*ger.json"),
    ("ledger[0-9].json", "ledger7.json"),
]


@pytest.mark.parametrize(("glob", "path"), STARRED_SETS)
def test_a_glob_with_a_star_in_a_set_still_guards_its_paths(glob: str, path: str) -> None:
    assert guard.path_matches(path, glob)
    found = guard.guard_paths("main", [path], [], [glob], guarded={POLICY_TABLE: "x"})
    assert path in found.ledger_paths
    assert found == _guard_paths_before([guard.Change(path)], [], [glob], [], set())


@settings(max_examples=500)
@given(
    st.lists(CHANGES, max_size=8),
    st.lists(GLOBS, max_size=4),
    st.lists(GLOBS, max_size=4),
    st.lists(PATHS, max_size=2),
    st.lists(PATHS, max_size=2),
)
def test_guard_paths_splits_as_before(
    changes: list[guard.Change],
    fixtures: list[str],
    ledgers: list[str],
    dirs: list[str],
    skip: list[str],
) -> None:
    fast = guard.guard_paths(
        "main",
        changes,
        fixtures,
        ledgers,
        ledger_dirs=dirs,
        guarded={POLICY_TABLE: "x"},
        not_fixtures=set(skip),
    )
    assert fast == _guard_paths_before(changes, fixtures, ledgers, dirs, set(skip))


STATUS = st.dictionaries(
    st.sampled_from(["returncode", "timed_out", "duration_s", "start_error", "survivors", "x"]),
    st.one_of(
        st.integers(-(2**63), 2**63),
        st.booleans(),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(st.characters(codec="utf-8")),
        st.lists(st.integers(0, 2**22)),
    ),
)


@given(STATUS)
def test_the_reapers_status_line_is_what_json_writes(status: dict[str, object]) -> None:
    assert _reaper.status_line(status) == json.dumps(status) + "\n"


def _walked(root: int, spare_session: int | None) -> list[int]:
    """The descendants the /proc/*/stat walk gives (the reading on kernels without children files)."""
    walked = _reaper._children_by_walk(spare_session)
    found, queue = [], [root]
    while queue:
        below = walked.get(queue.pop(0), [])
        found += below
        queue += below
    return found


def test_descendants_from_children_files_are_those_of_the_full_walk() -> None:
    """A live tree: forks, a setsid grandchild, a thread's child; both readings agree."""
    tree = (
        "import os, subprocess, threading, time\n"
        "kids = [subprocess.Popen(['sleep', '30']) for _ in range(2)]\n"
        "kids.append(subprocess.Popen(['sh', '-c', 'sleep 30 & sleep 30 & wait']))\n"
        "threading.Thread(target=lambda: subprocess.Popen(['sleep', '30']).wait()).start()\n"
        "r, w = os.pipe()\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    os.write(w, b'x')\n"
        "    time.sleep(30)\n"
        "    os._exit(0)\n"
        "os.read(r, 1)\n"  # the fork has left our session: both readings below see it so
        "print('ready', flush=True)\n"
        "time.sleep(30)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", tree], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        deadline = time.monotonic() + 60  # the shell's and the thread's children start late
        while len(fast := _reaper.descendants(proc.pid)) < 7:
            assert time.monotonic() < deadline, fast
            time.sleep(0.05)
        slow = _walked(proc.pid, None)
        assert len(fast) == 7
        assert sorted(fast) == sorted(slow)
        ours = os.getsid(0)  # every process of the tree but the setsid one and its own
        spared = _reaper.descendants(proc.pid, spare_session=ours)
        assert sorted(spared) == sorted(_walked(proc.pid, ours))
        assert 1 <= len(spared) < len(fast)
        skipped = {fast[0], *_reaper.descendants(fast[0])}
        assert sorted(_reaper.descendants(proc.pid, skip={fast[0]})) == sorted(
            p for p in slow if p not in skipped
        )
    finally:
        for pid in _reaper.descendants(proc.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, 9)
        proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


#: Field values that sit on each side of every rule of the admit and decide packets.
FIELD_VALUES: st.SearchStrategy[object] = st.one_of(
    st.sampled_from(
        [None, True, False, 0, 1, -1, 2**53, 1.0, "", " ", "\u00a0", "x", "1.0", "1.2", "1.01",
         "2.0", "flake_shaped", "pass", "deterministic", "a" * 40, "a" * 64, "A" * 64, "a" * 63,
         "flakecore.decide-packet", "flakecore.admit-packet", "flakecore.budget-packet",
         "img:local-uncontainerized+nonce:0123456789abcdef",
         "img:sha256:" + "a" * 64 + "+nonce:0123456789abcdef",
         "img:" + "a" * 64 + "+nonce:0123456789ABCDEF", [], {}, ["a"], [1, 2, 3, 4, 5],
         [1, "1", 2, 3, 4], [2**53, 1, 2, 3, 4], [True, 1, 2, 3, 4], [1, 1, 2, 3, 4], 5, 8]
    ),
    TEXT,
)  # fmt: skip


def _varied(kind: str) -> st.SearchStrategy[dict[str, object]]:
    """A kind's example packets with fields dropped, replaced, or added."""
    examples = [
        json.loads(p.read_text()) for p in sorted((REPO / "examples" / kind).glob("*.json"))
    ]
    names = sorted({k for e in examples for k in e} | {"x", "format", "format_version", "seed"})
    return st.builds(
        lambda base, drop, change: {
            **{k: v for k, v in base.items() if k not in drop},
            **change,
        },
        st.sampled_from(examples),
        st.sets(st.sampled_from(names), max_size=2),
        st.dictionaries(st.sampled_from(names), FIELD_VALUES, max_size=2),
    )


@settings(max_examples=1500)
@given(
    st.sampled_from(["admit", "decide", "budget"]).flatmap(
        lambda k: st.tuples(st.just(k), _varied(k))
    )
)
def test_a_sound_packet_is_one_the_worded_check_finds_nothing_in(
    case: tuple[str, dict[str, object]],
) -> None:
    kind, packet = case
    module = importlib.import_module(f"flakecore.{kind}")
    assert module._sound(packet) == (module._reasons(packet) == [])


PLAIN = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**60), 2**60), st.floats(allow_nan=False), TEXT
)
SOURCES = st.one_of(
    st.none(),
    st.builds(
        PolicySource,
        revision=st.one_of(st.none(), st.just("a" * 40)),
        path=st.one_of(st.none(), TEXT),
        overrides=st.lists(TEXT, max_size=2).map(tuple),
        scored_tree_differs=st.one_of(st.none(), st.booleans()),
    ),
)


def _decisions() -> st.SearchStrategy[Decision[Any]]:
    """Decisions of every kind, with every type a Python caller could put in a field."""
    common = {
        "exit_code": st.one_of(st.integers(0, 80), st.booleans(), st.just(3.0)),
        "accepted": st.one_of(st.booleans(), st.integers(0, 1)),
        "reasons": st.one_of(st.lists(TEXT, max_size=3).map(tuple), st.lists(PLAIN, max_size=2)),
        "policy_values": st.dictionaries(
            st.sampled_from(["attempt_cap", "now", "default_seeds"]),
            st.one_of(PLAIN, st.lists(st.integers(), max_size=3)),
            max_size=3,
        ),
    }
    kinds = [
        st.builds(Decision, policy=st.just(name), code=st.sampled_from(list(codes)), **common)
        for name, codes in [
            (PolicyName.ADMIT, AdmitCode),
            (PolicyName.DECIDE, DecideCode),
            (PolicyName.BUDGET, BudgetCode),
        ]
    ]
    extras = {
        "freeze_allowed": st.booleans(),
        "lease_reasons": st.lists(TEXT, max_size=2).map(tuple),
        "replays": st.integers(0, 9),
        "greens": st.integers(0, 9),
    }
    classified = st.builds(
        classify_module.ClassifyDecision,
        policy=st.just(PolicyName.CLASSIFY),
        code=st.sampled_from(list(ClassifyClass)),
        **common,
        **extras,
    )
    return st.one_of(*kinds, classified)


@settings(max_examples=800)
@given(_decisions(), SOURCES, TEXT)
def test_a_decision_record_text_is_what_the_encoder_writes(
    decision: Decision[Any], source: PolicySource | None, input_: str
) -> None:
    source_json = None if source is None else source.to_json()
    source_text = None if source_json is None else jsonio.compact_text(source_json)
    try:
        expected = jsonio.compact_text({**decision.record(source_json), "input": input_})
    except ValueError:  # an infinite float in the values: refused the same way
        with pytest.raises(ValueError, match="not JSON compliant"):
            decision.record_text(source_text, input_)
        return
    for _ in range(2):  # encoded afresh, then as kept
        assert decision.record_text(source_text, input_) == expected


def test_equal_values_and_reasons_of_other_types_are_not_one_kept_text() -> None:
    """``1``, ``True`` and ``1.0`` are equal keys: each is written as its own type."""
    for value in (1, True, 1.0, 1, "1", False, 0, 0.0, 0):
        for reasons in (("1",), (1,), (True,), ("1",)):
            decision = Decision(
                policy=PolicyName.BUDGET,
                code=BudgetCode.STABLE_PASS,
                exit_code=6,
                accepted=False,
                reasons=reasons,  # type: ignore[arg-type]  # what a Python caller may pass
                policy_values={"now": value},
            )
            expected = jsonio.compact_text({**decision.to_json(), "input": "-:1"})
            assert decision.record_text(None, "-:1") == expected


@pytest.mark.parametrize("kind", ["admit", "decide", "budget", "classify"])
def test_the_examples_record_text_is_what_the_encoder_writes(kind: str) -> None:
    source = PolicySource(revision="a" * 40, path="pyproject.toml", overrides=("attempt_cap",))
    text = jsonio.compact_text(source.to_json())
    for path in sorted((REPO / "examples" / kind).glob("*.json")):
        decision = _judged(kind, json.loads(path.read_text()))
        expected = {**decision.record(source.to_json()), "input": path.name}
        assert decision.record_text(text, path.name) == jsonio.compact_text(expected)
        assert decision.record_text(None, "-:1") == jsonio.compact_text(
            {**decision.to_json(), "input": "-:1"}
        )


FIELDS: dict[str, st.SearchStrategy[Any]] = {
    "exit_code": st.one_of(st.integers(0, 80), st.booleans()),
    "accepted": st.one_of(st.booleans(), st.integers(0, 1)),
    "reasons": st.lists(TEXT, max_size=3).map(tuple),
    "policy_values": st.dictionaries(TEXT, PLAIN, max_size=3),
}


@given(st.sampled_from(list(BudgetCode)), st.fixed_dictionaries(FIELDS))
def test_a_trusted_decision_is_the_constructors(code: BudgetCode, fields: dict[str, Any]) -> None:
    made = Decision(policy=PolicyName.BUDGET, code=code, **fields)
    trusted = trusted_decision(PolicyName.BUDGET, code, *(fields[name] for name in FIELDS))
    assert type(trusted) is Decision
    assert attrs.asdict(trusted, recurse=False) == attrs.asdict(made, recurse=False)


EXTRAS: dict[str, st.SearchStrategy[Any]] = {
    "freeze_allowed": st.one_of(st.booleans(), st.integers(0, 1)),
    "lease_reasons": st.one_of(st.lists(TEXT, max_size=2).map(tuple), st.lists(TEXT, max_size=2)),
    "replays": st.one_of(st.integers(0, 9), st.booleans()),
    "greens": st.one_of(st.integers(0, 9), st.booleans()),
}


@given(st.sampled_from(list(ClassifyClass)), st.fixed_dictionaries(FIELDS | EXTRAS))
def test_a_classified_decision_and_its_extras_text_are_the_slow_ones(
    code: ClassifyClass, fields: dict[str, Any]
) -> None:
    made = classify_module.ClassifyDecision(policy=PolicyName.CLASSIFY, code=code, **fields)
    trusted = classify_module._classified(code, *(fields[name] for name in FIELDS | EXTRAS))
    assert type(trusted) is classify_module.ClassifyDecision
    assert attrs.asdict(trusted, recurse=False) == attrs.asdict(made, recurse=False)
    for decision in (made, made, trusted):  # the second time from the cache
        assert decision.extras_text() == Decision.extras_text(decision)
        assert decision.extras_text() == "".join(
            "," + compact_text({key: value})[1:-1]
            for key, value in decision.record_extras().items()
        )
        freeze = (
            "no"
            if code is not ClassifyClass.FLAKE
            else ("eligible" if decision.freeze_allowed else "refused")
        )
        assert decision.summary_line() == (
            f"exit={decision.exit_code} class={code.value.lower()} freeze={freeze}"
        )


POLICY_NAMES = st.lists(st.sampled_from([f.name for f in attrs.fields(Policy)]), max_size=4)


@given(
    st.lists(
        st.tuples(
            st.sampled_from([Policy(), Policy(attempt_cap=3), Policy(default_seeds=(1, 2))]),
            POLICY_NAMES.map(tuple),
        ),
        max_size=6,
    )
)
def test_policy_values_kept_per_run_are_each_policys_own(
    asks: list[tuple[Policy, tuple[str, ...]]],
) -> None:
    for policy, names in asks:
        expected = {
            name: list(v) if isinstance(v := getattr(policy, name), tuple) else v for name in names
        }
        got = policy.values(*names)
        assert got == expected
        got["now"] = "changed"  # the caller's own dict: the next answer is not changed
        for value in got.values():
            if isinstance(value, list):
                value.append(0)
        assert policy.values(*names) == expected


ABS_PATHS = st.lists(st.sampled_from(["", "a", "b", "ab", ".", "..", "é"]), max_size=4).flatmap(
    lambda parts: st.sampled_from(["/", "//", "///"]).map(lambda root: root + "/".join(parts))
)


@settings(max_examples=1000)
@given(ABS_PATHS, ABS_PATHS)
def test_below_is_pathlibs_relative_to(path: str, top: str) -> None:
    written, root = Path(os.path.normpath(path)), Path(os.path.normpath(top))
    expected = (
        written.relative_to(root).as_posix() if written == root or root in written.parents else None
    )
    assert basetrust._below(os.path.normpath(path), root) == expected


@pytest.fixture(scope="module")
def link_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``top`` (a checkout with ``d``, a link ``ln`` to it) and ``out`` (a link ``in`` to ``top/d``)."""
    root = Path(os.path.realpath(tmp_path_factory.mktemp("places")))
    (root / "top" / "d").mkdir(parents=True)
    (root / "out").mkdir()
    (root / "top" / "ln").symlink_to("d")
    (root / "out" / "in").symlink_to(root / "top" / "d")
    return root


PLACE_PARTS = st.lists(
    st.sampled_from(["d", "ln", "..", ".", "", "x.json", "top", "out", "in"]), max_size=5
)


@settings(max_examples=500, deadline=None)
@given(
    st.lists(st.tuples(st.booleans(), PLACE_PARTS), max_size=6),
    st.sampled_from(["top", "top/d", "", "out", "top/ln"]),
)
def test_places_by_directory_are_each_paths_own(
    link_tree: Path, paths: list[tuple[bool, list[str]]], cwd: str
) -> None:
    top = link_tree / "top"
    written = [(str(link_tree) + "/" if absolute else "") + "/".join(p) for absolute, p in paths]
    before = os.getcwd()
    os.chdir(link_tree / cwd)
    try:
        expected = {}
        for path in written:
            with contextlib.suppress(attestation.Untrusted):
                if (where := basetrust._in_checkout(path, top, os.getcwd())) is not None:
                    name = posixpath.normpath(where)
                    expected[path] = (where, name, posixpath.dirname(name))
        assert basetrust._places(written, top) == expected
    finally:
        os.chdir(before)


def _judged(kind: str, packet: dict[str, object]) -> Decision[Any]:
    if kind == "admit":
        return admit(packet)
    if kind == "decide":
        return decide(packet)
    if kind == "budget":
        return budget(packet)
    return classify(packet, now=NOW)


@pytest.mark.parametrize("kind", ["admit", "decide", "budget", "classify"])
def test_with_policy_source_is_what_evolve_gives(kind: str) -> None:
    examples = sorted((REPO / "examples" / kind).glob("*.json"))
    assert examples
    source = PolicySource(revision="a" * 40, path="pyproject.toml", overrides=("attempt_cap",))
    other = PolicySource(path="elsewhere.toml")
    for example in examples:
        decision = _judged(kind, json.loads(example.read_text()))
        for start in (decision, attrs.evolve(decision, policy_source=other)):
            fast = start.with_policy_source(source)
            slow = attrs.evolve(start, policy_source=source)
            assert type(fast) is type(slow) and fast == slow
            assert fast.to_json() == slow.to_json()
            assert list(fast.to_json()) == list(slow.to_json())  # key order too
            record = start.record(source.to_json())  # what the printer builds
            assert record == slow.to_json() and list(record) == list(slow.to_json())


def _digests_before(value: object, pointer: str = "") -> Iterator[tuple[str, object]]:
    """The generator the signed-record walk was: every digest with its JSON pointer."""
    if is_digest(value):
        yield pointer, value
    elif isinstance(value, dict):
        for key in sorted(value):
            escaped = str(key).replace("~", "~0").replace("/", "~1")
            yield from _digests_before(value[key], f"{pointer}/{escaped}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _digests_before(item, f"{pointer}/{i}")


DIGESTS = st.sampled_from(["a" * 64, "0123456789abcdef" * 4, "A" * 64, "a" * 63, "a" * 65])
RECORDS = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | TEXT | DIGESTS,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(["a", "b/c", "~", "~1", "", "pinned_sha256"]), inner)
    ),
    max_leaves=16,
)


@settings(max_examples=1000)
@given(RECORDS)
def test_the_digest_walk_finds_what_the_generator_found(value: object) -> None:
    found: list[tuple[str, str]] = []
    attestation._digests(value, "", found)
    assert found == list(_digests_before(value))


REPLAY_VALUES: st.SearchStrategy[object] = st.sampled_from(
    [
        None,
        True,
        False,
        0,
        1,
        -1,
        2**53,
        0.0,
        1.5,
        -0.5,
        float("inf"),
        float("nan"),
        "",
        " ",
        "r1",
        "r2",
        [],
    ]
)
REPLAYS = st.lists(
    st.dictionaries(
        st.sampled_from(["attempt_id", "passed", "exit_code", "duration_s", "extra"]),
        REPLAY_VALUES,
    )
    | REPLAY_VALUES,
    max_size=5,
)


@settings(max_examples=2000)
@given(REPLAYS | REPLAY_VALUES)
def test_the_sound_replays_check_is_the_worded_one(replays: object) -> None:
    if not isinstance(replays, list):
        assert classify_module._replay_problems(replays) == ["replays must be a list"]
        return
    worded = classify_module._worded_replay_problems(replays)
    assert classify_module.replays_sound(replays) is (worded == [])
    assert classify_module._replay_problems(replays) == worded
    greens = sum(1 for r in replays if r["passed"] is True) if worded == [] else -1
    assert classify_module._sound_greens(replays) == greens  # classify's count, in the same pass


REPORT_VALUES = REPLAY_VALUES | st.sampled_from(
    [
        "pass",
        "fail",
        "match",
        "mismatch",
        "flakecore.classify-report",
        "flakecore.lease",
        "1.0",
        "1.2",
        "2.0",
        "01",
        "a" * 64,
        "A" * 64,
        "ab" * 31,
    ]
)
REPORTS = st.dictionaries(
    st.sampled_from(
        [
            "format",
            "format_version",
            "property_verdict",
            "pin_status",
            "owner",
            "canary",
            "pinned_sha256",
            "origin_passed",
            "extra",
        ]
    ),
    REPORT_VALUES,
)


@settings(max_examples=2000)
@given(REPORTS)
def test_the_sound_report_check_is_the_worded_one(report: dict[str, object]) -> None:
    assert classify_module._sound(report) is (classify_module._incomplete(report) == [])


@pytest.mark.parametrize("missing", ["attempt_id", "passed"])
def test_four_keys_with_an_unknown_one_are_not_sound(missing: str) -> None:
    replay = {"attempt_id": "r1", "passed": True, "exit_code": 0, "duration_s": 0.5}
    del replay[missing]
    replay["extra"] = "r2" if missing == "attempt_id" else True
    assert classify_module._sound_greens([replay]) == -1
    assert classify_module._worded_replay_problems([replay]) != []


FIXED = st.builds(
    dt.timezone, st.integers(-1439, 1439).map(lambda minutes: dt.timedelta(minutes=minutes))
)


@settings(max_examples=1000)
@given(
    st.datetimes(timezones=st.none() | st.timezones() | FIXED),
    st.datetimes(timezones=FIXED),
    st.sampled_from([1, 14, 365, 999_999_999]),
)
def test_the_kept_lease_limit_is_the_subtraction(now: Any, expiry: Any, days: int) -> None:
    for _ in range(2):  # the second time, from what was kept
        limit = classify_module._lease_limit(now, days)
        if now.tzinfo is None:
            assert limit is None
        if limit is not None:
            assert (expiry > limit) is (expiry - now > dt.timedelta(days=days))


STAMPS = st.one_of(
    st.sampled_from(["2026-11-29T12:00:00Z", "2026-11-29T12:00:00", "2026-11-29T25:00:00Z"]),
    st.builds(
        "{}-{:02}-{:02}T{:02}:{:02}:{:02}{}{}".format,
        st.integers(0, 9999).map("{:04}".format),
        st.integers(0, 13),
        st.integers(0, 32),
        st.integers(0, 24),
        st.integers(0, 60),
        st.integers(0, 61),
        st.sampled_from(["", ".5", ".1234567891"]),
        st.sampled_from(["Z", "z", "+00:00", "-05:00", "+23:59", "+24:00", ""]),
    ),
    TEXT,
)


def _parsed_or_refusal(parse: Any, text: str) -> object:
    try:
        when = parse(text)
    except ValueError as exc:
        return ("refused", str(exc))
    return (when, when.utcoffset())


@settings(max_examples=1500)
@given(st.lists(STAMPS, min_size=1, max_size=4))
def test_a_kept_timestamp_is_the_one_parsed_afresh(texts: list[str]) -> None:
    for text in [*texts, *texts]:  # the second time round, from what was kept
        kept = _parsed_or_refusal(timeutil.parse_rfc3339, text)
        assert kept == _parsed_or_refusal(timeutil._parse, text)


@settings(max_examples=300)
@given(st.datetimes(timezones=st.none() | st.timezones()))
def test_the_kept_evaluation_time_is_formatted_as_each_time(now: Any) -> None:
    for when in (now, now, now.replace(microsecond=(now.microsecond + 1) % 10**6), now):
        aware = when.tzinfo is not None and when.utcoffset() is not None
        got = classify({}, now=when).policy_values["now"]
        assert got == (timeutil.format_rfc3339(when) if aware else None)


budget_module = importlib.import_module("flakecore.budget")
SEEDS = st.lists(
    st.one_of(
        st.integers(-(2**54), 2**54),
        st.sampled_from([0, 1, 2**53 - 1, 2**53, -(2**53) + 1, -(2**53), True, False, 1.0]),
        st.sampled_from(["1", "", "a", "11"]),
        st.none(),
    ),
    max_size=10,
)


@settings(max_examples=2000)
@given(SEEDS)
def test_the_seed_list_checks_in_c_loops_are_the_per_seed_ones(seeds: list[object]) -> None:
    assert budget_module._seeds_ok(seeds) is all(map(_fields.is_seed, seeds))
    by_value_and_type = {(type(s).__name__, s) for s in seeds}
    assert budget_module._distinct(seeds) is (len(by_value_and_type) == len(seeds))


class _Int(int):
    """A subclass of ``int``: budget's tally takes the problem list's path for it."""


COUNTS = st.one_of(st.integers(0, 12), st.builds(_Int, st.integers(0, 12)))


def _tallied(seeds: list[object], passes: object, n: int, minimum: int) -> tuple[Any, ...]:
    """A budget packet's code, exit and reasons past its property, as the problem list gave."""
    if problems := budget_module._budget_problems(seeds, passes, n, minimum):
        code, reasons = BudgetCode.INSUFFICIENT_BUDGET, tuple(problems)
    elif passes == 0:
        code = BudgetCode.STABLE_FAIL
        reasons = (f"0 of {plural(n, 'seed')} passed: the miss is stable",)
    elif passes == n:
        code, reasons = (
            BudgetCode.STABLE_PASS,
            (f"{n} of {plural(n, 'seed')} passed: no freeze row",),
        )
    else:
        code, reasons = BudgetCode.FLAKE_CANDIDATE, (f"{passes} of {plural(n, 'seed')} passed",)
    return code, BUDGET_EXIT[code], reasons


@settings(max_examples=2000)
@given(
    st.lists(st.one_of(COUNTS, st.sampled_from(["1", "11", "a"])), max_size=10),
    st.one_of(COUNTS, st.none()),
    st.one_of(st.none(), COUNTS),
    st.integers(1, 10),
)
def test_a_budgets_kept_tally_is_its_problem_list_and_count(
    seeds: list[object], passes: object, budget_n: int | None, minimum: int
) -> None:
    n = len(seeds) if budget_n is None else budget_n  # None: a budget of the seeds' count
    packet = budget_packet(seeds=seeds, passes=passes, budget=n)
    policy = Policy(min_seed_budget=minimum)
    expected = _tallied(seeds, passes, n, minimum)
    for _ in range(2):  # afresh, then the kept tally
        decision = budget(packet, policy=policy)
        assert (decision.code, decision.exit_code, decision.reasons) == expected
        assert [type(r) for r in decision.reasons] == [str] * len(expected[2])


class _Str(str):
    """A subclass of ``str``: the digest checks take the pattern's path for it."""


#: Text on each side of the hex rules: cases, lengths, non-ASCII digits and letters,
#: whitespace ``unhexlify`` would skip elsewhere, a ``0x`` prefix.
def _near_hex(size: int) -> st.SearchStrategy[str]:
    """Lowercase hex of ``size`` characters with up to two replaced by a near miss."""
    return st.builds(
        lambda text, subs: "".join(dict(subs).get(i, c) for i, c in enumerate(text)),
        st.text(st.sampled_from("0123456789abcdef"), min_size=size, max_size=size),
        st.lists(
            st.tuples(st.integers(0, size), st.sampled_from("ABCDEFx \n\u0660\uff41g-")),
            max_size=2,
        ),
    )


HEX_TEXT = st.one_of(
    st.sampled_from([39, 40, 41, 63, 64, 65]).flatmap(_near_hex),
    st.sampled_from(["a" * 40, "a" * 64, "0x" + "a" * 62, "a" * 63 + "\n", "A" * 64]),
    TEXT,
).flatmap(lambda t: st.sampled_from([t, _Str(t)]))


@settings(max_examples=2000)
@given(HEX_TEXT)
def test_the_hex_checks_are_the_patterns(text: str) -> None:
    assert is_digest(text) is (re.fullmatch(r"[0-9a-f]{64}", text) is not None)
    assert is_commit_id(text) is (re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", text) is not None)


HEX_FIELD = st.one_of(HEX_TEXT, st.sampled_from(["", " ", " " * 64, "\t" * 40]), st.none(), PLAIN)


@settings(max_examples=2000)
@given(st.lists(HEX_TEXT, max_size=4))
def test_joined_hex_texts_pass_as_each_does(texts: list[str]) -> None:
    even = [str(t) for t in texts if len(t) % 2 == 0]
    assert is_lower_hex("".join(even)) is all(is_lower_hex(t) for t in even)


@settings(max_examples=2000)
@given(
    st.dictionaries(
        st.sampled_from(
            ["fixture_hash", "minimized_input_hash", "patch_hash", "clean_fixture_hash",
             "clean_input_hash"]
        ),
        HEX_FIELD,
    )
)  # fmt: skip
def test_decides_digests_as_one_text_are_the_per_field_checks(packet: dict[str, object]) -> None:
    decide_module = importlib.import_module("flakecore.decide")
    assert decide_module._hashes_sound(packet) is decide_module._hashes_sound_by_field(packet)


@settings(max_examples=2000)
@given(
    st.dictionaries(st.sampled_from(["parent_digest", "head_digest", "opened_against"]), HEX_FIELD)
)
def test_budgets_digests_as_one_text_are_the_per_field_checks(packet: dict[str, object]) -> None:
    by_field = (
        is_digest(packet.get("parent_digest"))
        and is_digest(packet.get("head_digest"))
        and is_commit_id(packet.get("opened_against", "0" * 40))
    )
    assert budget_module._hashes_sound(packet) is by_field


@settings(max_examples=2000)
@given(
    st.dictionaries(
        st.sampled_from(
            ["property_sha256", "base_property_sha256", "fixture_epoch", "base_fixture_epoch",
             "claimed_epoch", "base_sha"]
        ),
        HEX_FIELD,
    )
)  # fmt: skip
def test_admits_digests_as_one_text_are_the_per_field_checks(packet: dict[str, object]) -> None:
    admit_module = importlib.import_module("flakecore.admit")
    assert admit_module._hashes_sound(packet) is admit_module._hashes_sound_by_field(packet)


@given(_decisions())
def test_a_kept_verdict_line_is_the_one_formatted_afresh(decision: Decision[Any]) -> None:
    fresh = f"exit={decision.exit_code} {decision.policy.value}={decision.code.value}"
    assert policies_cli._verdict_line(decision) == fresh
    assert policies_cli._verdict_line(decision) == fresh  # the kept one


@given(st.one_of(st.integers(-(2**60), 2**60), st.booleans(), st.floats(), TEXT, st.none()))
@case(2**53 - 1)
@case(-(2**53 - 1))
@case(2**53)
@case(-(2**53))
def test_is_int_is_the_isinstance_rule(value: object) -> None:
    safe = 2**53 - 1
    rule = isinstance(value, int) and not isinstance(value, bool) and -safe <= value <= safe
    assert _fields.is_int(value) is rule


#: Roles, and spellings of them that are one identity (case, spaces) or none (a plain host).
ROLE_TEXTS = [
    "reviewer@example.test",
    "coding-agent-7",
    "Coding-Agent-7",
    " Coding-Agent-7",
    "img:local-uncontainerized",
    "img:sha256:" + "a" * 64 + "+nonce:0123456789abcdef",
    "IMG:sha256:" + "a" * 64 + "+nonce:0123456789abcdef",
    "Img:SHA256:" + "a" * 64 + "+NONCE:0123456789ABCDEF",
]
#: Values a lease field takes in the tests below: each field's valid spellings and its
#: near misses (a bool for an int, ``5.0`` for ``5``, a look-alike, a naive time ...).
LEASE_VALUES: st.SearchStrategy[object] = st.sampled_from(
    [
        None,
        True,
        False,
        0,
        1,
        3,
        4,
        5,
        6,
        4.0,
        5.0,
        -1,
        2**53,
        "",
        " ",
        "\t",
        "5",
        "x",
        [],
        {},
        ["r1"],
        "FLAKE",
        "STABLE_RED",
        "pass",
        "fail",
        "match",
        "mismatch",
        "flakecore.lease",
        "flakecore.ledger-row",
        "1.0",
        "1.7",
        "1.01",
        "2.0",
        "ci-bot",
        "CI-BOT ",
        "ci-b\u043et",
        *ROLE_TEXTS,
        "a" * 64,
        "A" * 64,
        "sha256:" + "a" * 64,
        PATCH,
        "f" * 40,
        "0" * 64,
        "f" * 39,
        "oracle-3",
        "oracle-4",
        "nightly-canary",
        "2026-11-29T12:00:00Z",
        "2026-11-28T12:00:00Z",
        "2026-11-30T12:00:00Z",
        "2026-12-06T12:00:00Z",
        "2026-12-13T12:00:00Z",
        "2026-12-14T00:00:00+00:00",
        "2026-12-06T12:00:00",
        "2026-12-06T07:00:00-05:00",
        "next tuesday",
    ]
)
LEASE_REPLAYS = st.one_of(
    st.sampled_from(["ggrgg", "ggggg", "rrrrr", "grrrr", "ggrg", "ggrggg", "g", "ggg"]).map(
        replays
    ),
    REPLAYS,
)
LEASE_CHANGES = st.dictionaries(
    st.sampled_from([*lease_module.LEASE_FIELDS, "renewed"]),
    LEASE_VALUES | st.just(...),
    max_size=4,
)
STAMP_VALUES = st.sampled_from(
    [
        "2026-11-22T12:00:00Z",
        "2026-11-28T12:00:00Z",
        "2026-11-29T12:00:00Z",
        "2026-11-29T12:00:01Z",
        "2026-12-06T12:00:00Z",
        "2026-12-12T12:00:00Z",
        "2026-12-13T12:00:00Z",
        "2026-12-13T12:00:01Z",
        "2026-12-06T07:00:00-05:00",
    ]
)
ROLE_VALUES = st.sampled_from(ROLE_TEXTS)
#: The fields whose rules compare two of them (the window, the roles): drawn on their own.
PAIRED_CHANGES = st.fixed_dictionaries(
    {},
    optional={
        "opened_at": STAMP_VALUES,
        "expires_at": STAMP_VALUES,
        "accepted_by": ROLE_VALUES,
        "patch_author": ROLE_VALUES,
        "replay_host": ROLE_VALUES,
    },
)
LEASE_NOWS = st.sampled_from(
    [
        NOW,
        NOW + dt.timedelta(days=6),
        NOW + dt.timedelta(days=7),
        NOW - dt.timedelta(days=1),
        NOW.replace(tzinfo=None),
        NOW.astimezone(dt.timezone(dt.timedelta(hours=-5))),
    ]
)
LEASE_POLICIES = st.sampled_from(
    [Policy(), Policy(replay_budget=3), Policy(replay_budget=6), Policy(max_lease_days=3)]
)
BINDINGS = st.sampled_from([None, PATCH, "0" * 64, "oracle-3", "oracle-4"])


@settings(max_examples=3000)
@given(
    LEASE_CHANGES,
    PAIRED_CHANGES,
    st.none() | LEASE_REPLAYS,
    st.booleans(),
    LEASE_NOWS,
    LEASE_POLICIES,
    BINDINGS,
    BINDINGS,
)
@case(  # inside the window from now, one day too long from opened_at
    {"opened_at": "2026-11-28T12:00:00Z", "expires_at": "2026-12-13T12:00:00Z"},
    {},
    None,
    False,
    NOW,
    Policy(),
    None,
    None,
)
def test_the_sound_lease_check_is_the_worded_one(
    changes: dict[str, object],
    paired: dict[str, object],
    new_replays: list[object] | None,
    consistent: bool,
    now: dt.datetime,
    policy: Policy,
    patch_hash: str | None,
    oracle: str | None,
) -> None:
    record = lease_record(**{**paired, **changes})
    if new_replays is not None:
        record["replays"] = new_replays
        if consistent:  # the replays' own ids and greens: only the replays decide
            record["attempt_ids"] = [
                r.get("attempt_id") if isinstance(r, dict) else r for r in new_replays
            ]
            record["greens"] = sum(
                isinstance(r, dict) and r.get("passed") is True for r in new_replays
            )
    worded = lease_module._worded_lease_problems(record, now, policy, patch_hash, oracle)
    assert lease_module._lease_sound(record, now, policy, patch_hash, oracle) is (worded == [])
    got = lease_module.lease_problems(
        record, now=now, policy=policy, patch_hash=patch_hash, oracle_version=oracle
    )
    assert got == worded


class _Text(str):
    """A ``str`` subclass: the helpers below must take the patterns' way for it."""


#: Digest-like texts: right and wrong lengths, cases and characters, plain or a subclass.
HEXISH = st.builds(
    lambda text, sub: _Text(text) if sub else text,
    st.text(st.sampled_from("0af9AF g\u0660"), max_size=66)
    | st.sampled_from(["a" * 64, "f" * 40, "0" * 64, "f" * 39, "A" * 64, "a" * 63 + "\u0660"]),
    st.booleans(),
)


@settings(max_examples=1500)
@given(st.one_of(HEXISH, LEASE_VALUES), st.one_of(HEXISH, LEASE_VALUES, st.just(_fields.MISSING)))
def test_one_hex_test_of_the_lease_digests_is_the_two_checks(pinned: object, patch: object) -> None:
    slow = is_digest(pinned) and (patch is _fields.MISSING or is_commit_id(patch))
    assert lease_module._digests_sound(pinned, patch) is slow


@settings(max_examples=1500)
@given(st.lists(st.one_of(LEASE_VALUES, TEXT, TEXT.map(_Text)), min_size=1, max_size=3))
def test_one_text_test_of_the_lease_identities_is_each_ones(values: list[object]) -> None:
    slow = all(identity.is_identity(v) for v in values)
    assert lease_module._identities(*values) is slow


def test_the_sound_lease_check_passes_the_valid_lease() -> None:
    """The fast path is taken for the valid record (else it would never pay)."""
    record = lease_record()
    assert lease_module._lease_sound(record, NOW, Policy(), PATCH, "oracle-3")
    assert lease_module._worded_lease_problems(record, NOW, Policy(), PATCH, "oracle-3") == []


def test_a_verdict_evolved_by_hand_is_what_attrs_evolve_gives() -> None:
    """``_evolved`` names every field: a field added to the verdict must be added there too."""
    key = TrustedKey(keyid="ci", public="a" * 64)
    verdict = TrustVerdict(
        path="a.json",
        reason=TrustReason.SIGNED,
        detail="signed by ci",
        data=b"{}",
        record={"x": 1},
        signers=(key,),
    )
    names = [f.name for f in attrs.fields(TrustVerdict)]
    assert names == ["path", "reason", "detail", "data", "record", "signers"]
    got = basetrust._evolved(verdict, path="b.json", record={"y": 2})
    want = attrs.evolve(verdict, path="b.json", record={"y": 2})
    assert attrs.asdict(got, recurse=False) == attrs.asdict(want, recurse=False)


VERDICTS = st.builds(
    TrustVerdict,
    path=TEXT,
    reason=st.sampled_from(list(TrustReason)),
    detail=TEXT,
    signers=st.lists(
        st.builds(TrustedKey, keyid=st.sampled_from(["ci", "release-1"]), public=st.just("a" * 64)),
        max_size=2,
    ).map(tuple),
)


@settings(max_examples=600)
@given(
    TEXT,
    st.sampled_from(["lease", "ledger-row", "decide-packet", "unknown"]),
    st.none() | TEXT,
    st.lists(TEXT, max_size=3).map(tuple),
    st.none() | VERDICTS,
)
def test_a_record_checks_line_is_what_the_encoder_writes(
    path: str,
    kind: str,
    test_id: str | None,
    problems: tuple[str, ...],
    trust: TrustVerdict | None,
) -> None:
    check = ledger.RecordCheck(
        path=path, kind=kind, test_id=test_id, problems=problems, trust=trust
    )
    for _ in range(2):  # the trust part encoded afresh, then as kept
        assert check.record_text() == compact_text(check.to_json())


@given(st.lists(st.integers(min_value=1, max_value=365), min_size=1, max_size=8))
def test_a_kept_lease_window_is_each_policys_own(days: list[int]) -> None:
    """``_max_lease`` keeps one span per ``max_lease_days``: each is the property's answer."""
    for n in days:
        policy = Policy(max_lease_days=n)
        assert lease_module._max_lease(policy) == policy.max_lease
