"""Repository configuration: ``[tool.flakecore]`` in the repository's ``pyproject.toml``.

Policy numbers are repository policy (docs/policies.md), so they belong in the
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

The table is only ever read from a *trusted* place -- the base revision, or
a file CI provides outside the scored checkout
(:mod:`flakecore.gate.policy_source`) -- never from the working tree, which
the patch under judgement wrote.  Two nested tables exist.
``[tool.flakecore.trust.keys]`` maps key ids to the public keys whose
signatures make a record count (``ed25519:<64 hex>``).
``[tool.flakecore.triage]``
(:class:`~flakecore.gate.triage_config.TriageConfig`) says how ``flakecore
triage`` runs one test with one seed, which fixture epoch lock it pins and
which policies must agree; it is as strict as the rest.
"""

from __future__ import annotations

import importlib
import os
import posixpath
import re
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

import attrs

from flakecore.digest import canonical_json_sha256
from flakecore.errors import InputError, UsageError
from flakecore.policy import DEFAULT_POLICY, Policy, PolicySource

if TYPE_CHECKING:
    from flakecore.gate.triage_config import TriageConfig
    from flakecore.trust import TrustedKey

__all__ = [
    "CONFIG_KEYS",
    "DEFAULT_FIXTURE_GLOBS",
    "DEFAULT_LEASE_DIR",
    "DEFAULT_LEDGER_DIR",
    "MAX_CONFIG_BYTES",
    "POLICY_KEYS",
    "TRIAGE_POLICIES",
    "GateConfig",
    "flakecore_table",
    "mentions_flakecore",
    "needs_toml_parser",
    "parse_policy_override",
    "parse_table",
    "parse_toml",
]

DEFAULT_LEDGER_DIR: Final = ".flakecore/ledger"
DEFAULT_LEASE_DIR: Final = ".flakecore/leases"
#: Fixture, oracle and test paths the guard watches unless configured; test configuration
#: at any depth too (it decides what a test run means as much as a test body does).
DEFAULT_FIXTURE_GLOBS: Final = (
    "tests/*",
    "test/*",
    "*fixture*",
    "*oracle*",
    "test_*.py",
    "*_test.py",
    "conftest.py",
    "pyproject.toml",
    "setup.cfg",
    "tox.ini",
    "pytest.ini",
)
#: The ``Policy`` fields a configuration may set.
POLICY_KEYS: Final = tuple(a.name for a in attrs.fields(Policy))
_PATH_KEYS: Final = ("ledger_dir", "lease_dir")
_GLOB_KEYS: Final = ("fixture_globs", "ledger_globs")
_TRUST_KEY: Final = "trust"
_TRIAGE_KEY: Final = "triage"
#: Every key ``[tool.flakecore]`` may hold.
CONFIG_KEYS: Final = (*POLICY_KEYS, *_PATH_KEYS, *_GLOB_KEYS, _TRUST_KEY, _TRIAGE_KEY)
#: Every key ``[tool.flakecore.trust]`` may hold.
_TRUST_KEYS: Final = ("keys",)
#: The policies ``triage`` can run, in the order it runs them; ``replay`` is always one.
TRIAGE_POLICIES: Final = ("replay", "budget")
#: Every key ``[tool.flakecore.triage]`` may hold.
_TRIAGE_KEYS: Final = (
    "command",
    "epoch_lock",
    "policies",
    "report",
    "report_format",
    "setup",
    "timeout",
    "fixture",
    "property_command",
)

# The patterns are compiled on first use (``re``'s cache): a verb that reads no
# table, and sets no --policy, does not compile them.
_TOOL_TABLE = rb'(?m)^[ \t]*(?:\[[ \t]*)?"?tool"?[ \t]*\.[ \t]*"?flakecore\b'
_TOOL_HEADER = rb'(?m)^[ \t]*\[[ \t]*"?tool"?[ \t]*\]'
#: At most 16 digits: every value within +-(2**53 - 1) fits, and ``int()`` never
#: meets a 5,000-digit string (its own limit raises a bare ValueError).
_INT = r"-?[0-9]{1,16}"
#: A pyproject.toml larger than this is refused, not cut short.
MAX_CONFIG_BYTES: Final = 1 << 20
_FLAKECORE_KEY = rb'(?m)^[ \t]*"?flakecore"?[ \t]*[.=]'


@attrs.frozen(kw_only=True)
class GateConfig:
    """The settings one run uses, and where they came from.

    ``source`` says where the table was read (revision, path, digest);
    ``root`` is the directory relative paths start from.  ``trusted_keys``
    is empty unless the table came from a trusted configuration.
    """

    policy: Policy = DEFAULT_POLICY
    ledger_dir: str = DEFAULT_LEDGER_DIR
    lease_dir: str = DEFAULT_LEASE_DIR
    fixture_globs: tuple[str, ...] = DEFAULT_FIXTURE_GLOBS
    ledger_globs: tuple[str, ...] | None = None
    """None: the ledger and lease directories, each followed by ``/*``."""
    trusted_keys: tuple[TrustedKey, ...] = ()
    triage: TriageConfig | None = None
    """None: the table has no ``[tool.flakecore.triage]`` (``triage`` refuses to run)."""
    root: str = "."
    source: PolicySource = attrs.field(factory=PolicySource)

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
        """This configuration with some policy numbers replaced (flags beat the file).

        The source then names the replaced values, so a decision never claims
        the file's number for a flag's.
        """
        if not overrides:
            return self
        names = tuple(sorted({*self.source.overrides, *overrides}))
        return attrs.evolve(
            self,
            policy=attrs.evolve(self.policy, **overrides),
            source=attrs.evolve(self.source, overrides=names),
        )


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


def mentions_flakecore(data: bytes) -> bool:
    """Without a TOML parser: does this file (probably) configure flakecore?"""
    if re.search(_TOOL_TABLE, data):
        return True
    return bool(re.search(_TOOL_HEADER, data) and re.search(_FLAKECORE_KEY, data))


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


def _rel_dir(key: str, value: object, what: str = "directory") -> str:
    if not isinstance(value, str) or not value.strip():
        raise UsageError(f"[tool.flakecore] {key} must be a non-blank string")
    norm = posixpath.normpath(value.replace("\\", "/"))
    if posixpath.isabs(norm) or norm == ".." or norm.startswith("../") or norm == ".":
        raise UsageError(f"[tool.flakecore] {key} must be a relative {what} inside the repository")
    return norm


def _globs(key: str, value: object) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(g, str) and g.strip() for g in value):
        raise UsageError(f"[tool.flakecore] {key} must be a list of non-blank strings")
    return tuple(value)


def _closed_table(value: object, name: str, known: tuple[str, ...]) -> Mapping[str, object]:
    """``value`` as the table ``[name]``, holding no key outside ``known``."""
    if not isinstance(value, Mapping):
        raise UsageError(f"[{name}] must be a table")
    unknown = sorted(k for k in value if k not in known)
    if unknown:
        raise UsageError(f"[{name}] unknown key {unknown[0]!r} (known: {', '.join(known)})")
    return value


def _trust(value: object) -> tuple[TrustedKey, ...]:
    """``[tool.flakecore.trust]``: only ``keys``, a table of key id -> ``ed25519:<hex>``."""
    table = _closed_table(value, "tool.flakecore.trust", _TRUST_KEYS).get("keys", {})
    if not isinstance(table, Mapping):
        raise UsageError("[tool.flakecore.trust] keys must be a table of key id = 'ed25519:<hex>'")
    # Imported here: a verb with the default configuration does not load the trust layer.
    from flakecore.trust import TrustedKey  # noqa: PLC0415

    keys = sorted((TrustedKey.parse(k, v) for k, v in table.items()), key=lambda k: k.keyid)
    seen: dict[str, str] = {}
    for key in keys:
        if key.public in seen:
            raise UsageError(
                f"[tool.flakecore.trust.keys] {seen[key.public]} and {key.keyid} are one public "
                "key: one key under two ids would pass for two runners"
            )
        seen[key.public] = key.keyid
    return tuple(keys)


def _words(key: str, value: object, *, needs: tuple[str, ...] = ()) -> tuple[str, ...]:
    """A command as a non-empty list of non-blank strings holding every placeholder in ``needs``."""
    if not isinstance(value, list) or not value or not all(isinstance(w, str) for w in value):
        raise UsageError(f"[tool.flakecore.triage] {key} must be a non-empty list of strings")
    if not value[0].strip():
        raise UsageError(f"[tool.flakecore.triage] {key}: the program is blank")
    for placeholder in needs:
        if not any(placeholder in word for word in value):
            raise UsageError(f"[tool.flakecore.triage] {key} must contain {placeholder}")
    return tuple(value)


def _triage_policies(value: object) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(p, str) for p in value):
        raise UsageError("[tool.flakecore.triage] policies must be a list of policy names")
    unknown = sorted(set(value) - set(TRIAGE_POLICIES))
    if unknown:
        raise UsageError(
            f"[tool.flakecore.triage] policies: unknown {unknown[0]!r} "
            f"(known: {', '.join(TRIAGE_POLICIES)})"
        )
    if len(set(value)) != len(value) or "replay" not in value:
        raise UsageError(
            "[tool.flakecore.triage] policies must name replay (only the base replay shows that "
            "base already failed), and no policy twice"
        )
    return tuple(p for p in TRIAGE_POLICIES if p in value)


def _triage(value: object) -> TriageConfig:
    """``[tool.flakecore.triage]``: closed, every value checked; command and epoch_lock required."""
    table = _closed_table(value, "tool.flakecore.triage", _TRIAGE_KEYS)
    for key in ("command", "epoch_lock"):
        if key not in table:
            raise UsageError(f"[tool.flakecore.triage] {key} is required")
    fields: dict[str, Any] = {
        "command": _words("command", table["command"], needs=("{test_id}", "{seed}")),
        "epoch_lock": _rel_dir("triage.epoch_lock", table["epoch_lock"], "path"),
    }
    if "policies" in table:
        fields["policies"] = _triage_policies(table["policies"])
    for key in ("report", "fixture"):
        if key in table:
            fields[key] = _rel_dir(f"triage.{key}", table[key], "path")
    if "report_format" in table:
        fmt = table["report_format"]
        if not isinstance(fmt, str) or not fmt.strip():
            raise UsageError("[tool.flakecore.triage] report_format must be a format name")
        fields["report_format"] = fmt
    if "setup" in table:
        fields["setup"] = _words("setup", table["setup"])
    if "timeout" in table:
        timeout = table["timeout"]
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
            raise UsageError("[tool.flakecore.triage] timeout must be a positive number of seconds")
        fields["timeout_s"] = float(timeout)
    if "property_command" in table:
        fields["property_command"] = _words(
            "property_command", table["property_command"], needs=("{fixture}",)
        )
    from flakecore.gate.triage_config import TriageConfig  # noqa: PLC0415 - built for a table only

    config = TriageConfig(**fields)
    if "budget" in config.policies and not config.property_command:
        raise UsageError(
            "[tool.flakecore.triage] policies names budget: give property_command "
            "(the property check on the parent fixture, with {fixture})"
        )
    return config


def _tname(value: object) -> str:
    return type(value).__name__


def parse_table(
    table: object, *, root: str = ".", path: str | None = None, revision: str | None = None
) -> GateConfig:
    """A configuration from ``[tool.flakecore]``'s contents; :class:`UsageError` names the key.

    ``path`` and ``revision`` say where the table was read; the source also
    records the table's canonical JSON digest.
    """
    table = _closed_table(table, "tool.flakecore", CONFIG_KEYS)
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
    if _TRUST_KEY in table:
        fields["trusted_keys"] = _trust(table[_TRUST_KEY])
    if _TRIAGE_KEY in table:
        fields["triage"] = _triage(table[_TRIAGE_KEY])
    # Every value was checked above, so the table is plain JSON data.
    source = PolicySource(revision=revision, path=path, sha256=canonical_json_sha256(dict(table)))
    config = GateConfig(policy=policy, root=root, source=source, **fields)
    if config.ledger_dir == config.lease_dir:
        raise UsageError(
            "[tool.flakecore] ledger_dir and lease_dir must differ: both name files by test id"
        )
    return config


def parse_toml(data: bytes, *, source: str) -> dict[str, Any] | None:
    """A TOML document, or None when no TOML parser is installed (Python 3.10 without tomli).

    Not UTF-8 or not TOML is an :class:`InputError` naming ``source``.
    """
    loads = _loader()
    if loads is None:
        return None
    try:
        return loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text", source=source) from None
    except ValueError as exc:
        raise InputError(f"invalid TOML: {exc}", source=source) from None


def flakecore_table(document: Mapping[str, Any]) -> object:
    """The ``[tool.flakecore]`` value of a parsed pyproject; an empty table when there is none."""
    tool = document.get("tool", {})
    if not isinstance(tool, Mapping) or "flakecore" not in tool:
        return {}
    return tool["flakecore"]


def needs_toml_parser(source: str) -> UsageError:
    """The error for a ``[tool.flakecore]`` that cannot be read without tomllib or tomli."""
    return UsageError(
        f"{source}: reading [tool.flakecore] needs Python 3.11+ (tomllib) or the tomli "
        "package; install tomli, or pass --no-config to run on defaults and flags"
    )


def _ascii_int(name: str, text: str) -> int:
    text = text.strip()
    if re.fullmatch(_INT, text) is None:
        raise UsageError(f"--policy {name}: {text[:40]!r} is not an integer of 1-16 digits")
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
