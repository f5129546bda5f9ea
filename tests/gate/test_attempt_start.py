"""The attempt's helper processes start cheaply and still do exactly what they did.

The reaper is imported from its own directory by ``python -I -S -c`` (so the
import system runs its compiled module) and calls ``prctl`` through
``_ctypes``; the isolation probe writes its JSON without ``json``.  Each
is checked against what it replaced.
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flakecore.gate import _probe, _reaper, runtime

#: What the probe writes: text (with lone surrogates, as undecodable paths give), ints, bools.
PROBE_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)
T = TypeVar("T")


@settings(max_examples=500)
@given(PROBE_VALUES)
def test_the_probes_json_is_what_json_dumps_writes(value: object) -> None:
    assert _probe.dumps(value) == json.dumps(value)


def test_prctl_through_ctypes_internals_is_ctypes_own_prctl() -> None:
    """PR_GET_DUMPABLE (3) answers in the return value; PR_SET_DUMPABLE (4) sets it; -1 errs."""
    code = (
        "import ctypes, sys\n"
        f"sys.path.append({os.path.dirname(_reaper.__file__)!r})\n"
        "import _reaper\n"
        "fast, slow = _reaper._libc_prctl(), ctypes.CDLL(None, use_errno=True).prctl\n"
        "out = []\n"
        "for f in (fast, slow):\n"
        "    out += [f(3, 0, 0, 0, 0), f(4, 0, 0, 0, 0), f(3, 0, 0, 0, 0), f(4, 1, 0, 0, 0)]\n"
        "    out += [f(3, 0, 0, 0, 0), f(99999, 0, 0, 0, 0), ctypes.get_errno()]\n"
        "print(out)\n"
    )
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, check=True
    )
    out = json.loads(done.stdout)
    assert out[:7] == out[7:]
    assert out[:6] == [1, 0, 0, 0, 1, -1]  # ctypes' own calls saw the fast path's effects too
    assert ctypes.get_errno() == 0  # (this process is untouched)


def test_the_reaper_started_from_a_hostile_directory_is_flakecores(tmp_path: Path) -> None:
    """A ``_reaper.py`` in the attempt's directory is never what runs: -I keeps it off the path."""
    (tmp_path / "_reaper.py").write_text("raise SystemExit(42)\n")
    run = runtime.run_command(
        ["sh", "-c", "exit 3"], cwd=tmp_path, timeout_s=30, env=dict(os.environ)
    )
    assert (run.returncode, run.contained, run.survivors) == (3, "subreaper", ())


def _same(fast: Callable[[T], object], slow: Callable[[T], object], value: T) -> None:
    """``fast(value)`` is ``slow(value)``, or both raise the same exception type."""
    try:
        expected: object = slow(value)
    except Exception as exc:  # (the fast path must raise the same type)
        with pytest.raises(type(exc)):
            fast(value)
        return
    assert fast(value) == expected


@settings(max_examples=300)
@given(st.binary(), st.text())
def test_the_reapers_fs_names_are_os_own(name: bytes, text: str) -> None:
    _same(_reaper._fsdecode, os.fsdecode, name)
    _same(_reaper._fsencode, os.fsencode, text)


def test_the_reapers_isdir_is_os_paths(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    (tmp_path / "link").symlink_to(tmp_path)
    names = ["", "file", "link", "missing", "file/below", "a\0b", "/proc/self"]
    for name in names:
        path = str(tmp_path / name) if name and not name.startswith("/") else name
        assert _reaper._isdir(path) == os.path.isdir(path), path


def test_the_reaper_does_not_import_os() -> None:
    """Its start imports ``posix``; ``os`` (and its ABCs) was a sixth of its instructions."""
    start = runtime._REAPER_START.split("; from _reaper")[0]
    code = f"{start}; import _reaper, sys; print(sorted({{'os', 'json'}} & set(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-B", "-c", code], capture_output=True, text=True, check=True
    )
    assert done.stdout == "[]\n"
