"""Repository configuration: ``[tool.flakecore]`` in the repository's ``pyproject.toml``.

Policy numbers are repository policy (SPEC 3), so they belong in the
repository, reviewed like code, not in each CI script's flags.  The table
holds the :class:`flakecore.policy.Policy` fields plus where the ledger and
the leases live and which paths the coupling guard watches.  Flags override
it; every decision records the policy values it used.

Strictness, because a typo in a policy file must not silently loosen a gate:
an unknown key, a wrong type or a nested table is a :class:`UsageError`
naming the key (exit 64).  A file that is not TOML is an :class:`InputError`
(exit 65).  On Python 3.10 there is no ``tomllib``: ``tomli`` is used when it
happens to be installed (it is not a dependency); otherwise a pyproject that
*has* a ``[tool.flakecore]`` table is a usage error that says so, rather than
running on defaults that may be looser than the repository's policy.

Directory settings are relative to the directory holding the
``pyproject.toml`` (the repository root), so a job started in a
subdirectory finds the same ledger.
"""

from __future__ import annotations

import importlib
import os
import posixpath
import re
import sys
from collections.abc import Callable, Mapping
from typing import Any, Final

import attrs

from flakecore.errors import InputError, UsageError
from flakecore.files import read_bytes
from flakecore.policy import DEFAULT_POLICY, Policy

__all__ = [
    "CONFIG_KEYS",
    "DEFAULT_FIXTURE_GLOBS",
    "DEFAULT_LEASE_DIR",
    "DEFAULT_LEDGER_DIR",
    "POLICY_KEYS",
    "GateConfig",
    "find_pyproject",
    "load_config",
    "parse_policy_override",
    "parse_table",
]

DEFAULT_LEDGER_DIR: Final = ".flakecore/ledger"
DEFAULT_LEASE_DIR: Final = ".flakecore/leases"
#: Fixture, oracle and test paths the guard watches unless configured.
DEFAULT_FIXTURE_GLOBS: Final = (
    "tests/*",
    "test/*",
    "*fixture*",
    "*oracle*",
    "test_*.py",
    "*_test.py",
    "conftest.py",
)
#: The ``Policy`` fields a configuration may set.
POLICY_KEYS: Final = tuple(a.name for a in attrs.fields(Policy))
_PATH_KEYS: Final = ("ledger_dir", "lease_dir")
_GLOB_KEYS: Final = ("fixture_globs", "ledger_globs")
#: Every key ``[tool.flakecore]`` may hold.
CONFIG_KEYS: Final = (*POLICY_KEYS, *_PATH_KEYS, *_GLOB_KEYS)

_TOOL_TABLE = re.compile(rb'^[ \t]*(?:\[[ \t]*)?"?tool"?[ \t]*\.[ \t]*"?flakecore\b', re.MULTILINE)
_TOOL_HEADER = re.compile(rb'^[ \t]*\[[ \t]*"?tool"?[ \t]*\]', re.MULTILINE)
_INT = re.compile(r"-?[0-9]+")
#: A pyproject.toml larger than this is refused, not cut short.
_MAX_CONFIG_BYTES: Final = 1 << 20
_FLAKECORE_KEY = re.compile(rb'^[ \t]*"?flakecore"?[ \t]*[.=]', re.MULTILINE)


@attrs.frozen(kw_only=True)
class GateConfig:
    """The settings one run uses, and where they came from.

    ``source`` is the ``pyproject.toml`` read (None: defaults only);
    ``root`` is the directory relative paths start from.
    """

    policy: Policy = DEFAULT_POLICY
    ledger_dir: str = DEFAULT_LEDGER_DIR
    lease_dir: str = DEFAULT_LEASE_DIR
    fixture_globs: tuple[str, ...] = DEFAULT_FIXTURE_GLOBS
    ledger_globs: tuple[str, ...] | None = None
    """None: the ledger and lease directories, each followed by ``/*``."""
    root: str = "."
    source: str | None = None

    def resolve(self, path: str) -> str:
        """A configured directory as a path usable from the current directory."""
        return path if os.path.isabs(path) else os.path.normpath(os.path.join(self.root, path))

    @property
    def effective_ledger_globs(self) -> tuple[str, ...]:
        """The ledger/lease globs the guard uses."""
        if self.ledger_globs is not None:
            return self.ledger_globs
        return tuple(f"{posixpath.normpath(d)}/*" for d in (self.ledger_dir, self.lease_dir))

    def with_policy(self, overrides: Mapping[str, Any]) -> GateConfig:
        """This configuration with some policy numbers replaced (flags beat the file)."""
        if not overrides:
            return self
        return attrs.evolve(self, policy=attrs.evolve(self.policy, **overrides))


def _loader() -> Callable[[str], dict[str, Any]] | None:
    if sys.version_info >= (3, 11):
        import tomllib  # noqa: PLC0415 - only exists on 3.11+

        return tomllib.loads
    try:
        tomli = importlib.import_module("tomli")
    except ImportError:
        return None
    loads: Callable[[str], dict[str, Any]] = tomli.loads
    return loads


def find_pyproject(start: str = ".") -> str | None:
    """The nearest ``pyproject.toml`` from ``start`` upwards, stopping at the repository root.

    The repository root is the first directory holding ``.git``; without
    one the search goes on to the filesystem root.  Any entry of that name
    counts (a FIFO or an escaping symlink is then refused by the reader, not
    skipped in favour of a parent's file).
    """
    here = os.path.abspath(start)
    while True:
        candidate = os.path.join(here, "pyproject.toml")
        if os.path.lexists(candidate):
            return candidate
        if os.path.exists(os.path.join(here, ".git")):
            return None
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def _mentions_flakecore(data: bytes) -> bool:
    """Without a TOML parser: does this file (probably) configure flakecore?"""
    if _TOOL_TABLE.search(data):
        return True
    return bool(_TOOL_HEADER.search(data) and _FLAKECORE_KEY.search(data))


def _int_key(key: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise UsageError(f"[tool.flakecore] {key} must be an integer, got {_tname(value)}")
    return value


def _seeds(key: str, value: object) -> tuple[int, ...]:
    if not isinstance(value, list) or not value:
        raise UsageError(f"[tool.flakecore] {key} must be a non-empty list of integers")
    seeds = tuple(_int_key(key, v) for v in value)
    if len(set(seeds)) != len(seeds):
        raise UsageError(f"[tool.flakecore] {key} repeats a seed")
    return seeds


def _rel_dir(key: str, value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise UsageError(f"[tool.flakecore] {key} must be a non-blank string")
    norm = posixpath.normpath(value.replace("\\", "/"))
    if posixpath.isabs(norm) or norm == ".." or norm.startswith("../") or norm == ".":
        raise UsageError(
            f"[tool.flakecore] {key} must be a relative directory inside the repository"
        )
    return norm


def _globs(key: str, value: object) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(g, str) and g.strip() for g in value):
        raise UsageError(f"[tool.flakecore] {key} must be a list of non-blank strings")
    return tuple(value)


def _tname(value: object) -> str:
    return type(value).__name__


def parse_table(table: object, *, root: str = ".", source: str | None = None) -> GateConfig:
    """A configuration from ``[tool.flakecore]``'s contents; :class:`UsageError` names the key."""
    if not isinstance(table, Mapping):
        raise UsageError("[tool.flakecore] must be a table")
    unknown = sorted(k for k in table if k not in CONFIG_KEYS)
    if unknown:
        raise UsageError(
            f"[tool.flakecore] unknown key {unknown[0]!r} (known: {', '.join(CONFIG_KEYS)})"
        )
    policy_values: dict[str, Any] = {}
    for key in POLICY_KEYS:
        if key in table:
            value = table[key]
            policy_values[key] = (
                _seeds(key, value) if key == "default_seeds" else _int_key(key, value)
            )
    policy = Policy(**policy_values)
    fields: dict[str, Any] = {}
    for key in _PATH_KEYS:
        if key in table:
            fields[key] = _rel_dir(key, table[key])
    for key in _GLOB_KEYS:
        if key in table:
            fields[key] = _globs(key, table[key])
    config = GateConfig(policy=policy, root=root, source=source, **fields)
    if config.ledger_dir == config.lease_dir:
        raise UsageError(
            "[tool.flakecore] ledger_dir and lease_dir must differ: both name files by test id"
        )
    return config


def load_config(path: str | None = None, *, start: str = ".") -> GateConfig:
    """Read ``[tool.flakecore]`` from ``path``, or from the nearest ``pyproject.toml``.

    A missing table means the defaults.  An explicit ``path`` that does not
    exist is an :class:`InputError` (``no such file``).
    """
    explicit = path is not None
    found = path if explicit else find_pyproject(start)
    if found is None:
        return GateConfig(root=os.path.abspath(start) if start != "." else ".")
    data = read_bytes(found, _MAX_CONFIG_BYTES)
    root = os.path.dirname(os.path.abspath(found))
    loads = _loader()
    if loads is None:
        if explicit or _mentions_flakecore(data):
            raise UsageError(
                f"{found}: reading [tool.flakecore] needs Python 3.11+ (tomllib) or the tomli "
                "package; install tomli, or pass --no-config to run on defaults and flags"
            )
        return GateConfig(root=root)
    try:
        document = loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text", source=found) from None
    except ValueError as exc:
        raise InputError(f"invalid TOML: {exc}", source=found) from None
    tool = document.get("tool", {})
    if not isinstance(tool, Mapping) or "flakecore" not in tool:
        return GateConfig(root=root, source=found)
    return parse_table(tool["flakecore"], root=root, source=found)


def _ascii_int(name: str, text: str) -> int:
    text = text.strip()
    if _INT.fullmatch(text) is None:
        raise UsageError(f"--policy {name}: {text!r} is not an integer")
    return int(text)


def parse_policy_override(text: str) -> tuple[str, Any]:
    """``NAME=VALUE`` from a ``--policy`` flag: a Policy field and an integer (or seed list).

    ``default_seeds`` takes a comma-separated list (``11,23,47``).  Digits are
    ASCII only: ``int()`` would also take other scripts' digits.
    """
    name, eq, value = text.partition("=")
    name = name.strip().replace("-", "_")
    if not eq or name not in POLICY_KEYS:
        raise UsageError(
            f"--policy {text!r}: expected NAME=VALUE with NAME one of {', '.join(POLICY_KEYS)}"
        )
    if name != "default_seeds":
        return name, _ascii_int(name, value)
    seeds = tuple(_ascii_int(name, s) for s in value.split(","))
    if len(set(seeds)) != len(seeds):
        raise UsageError(f"--policy {name}: a seed repeats")
    return name, seeds
