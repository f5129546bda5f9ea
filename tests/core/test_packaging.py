"""The installed package: no heavy imports, typed, versioned, not the source tree."""

from __future__ import annotations

import re
import subprocess
import sys
from importlib.metadata import entry_points, version
from pathlib import Path

import flakecore

REPO = Path(__file__).resolve().parents[2]


def test_tests_run_against_the_installed_package() -> None:
    # nox's virtualenvs live under the checkout (.nox/), so compare the package folder itself.
    assert Path(flakecore.__file__).resolve().parent != REPO / "flakecore"


#: Top-level packages the core must not pull in (the plugin pulls in pytest alone).
_HEAVY = {
    "junitparser", "jsonschema", "referencing", "lxml", "ijson", "flakecore_adapters",
    "pytest", "_pytest", "pluggy", "hypothesis", "numpy",
}  # fmt: skip


def _imported(statement: str) -> list[str]:
    """Heavy modules (and the CLI) that ``statement`` pulls in, in a fresh interpreter."""
    code = (
        f"import sys; {statement}; "
        f"bad = [m for m in sys.modules if m.split('.')[0] in {sorted(_HEAVY)!r} "
        "or m.startswith('flakecore.cli')]; "
        "print(','.join(sorted(bad)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return [m for m in out.stdout.strip().split(",") if m]


def test_core_import_pulls_in_nothing_heavy() -> None:
    assert _imported("import flakecore") == []
    # Every core module, the gate included.
    package = Path(flakecore.__file__).parent
    modules = sorted(
        "flakecore." + ".".join(p.relative_to(package).with_suffix("").parts)
        for p in package.rglob("*.py")
        if p.relative_to(package).parts[0] not in ("cli", "__main__.py")
    )
    assert "flakecore.gate.replay" in modules and "flakecore.logdir" in modules
    assert _imported("; ".join(f"import {m}" for m in modules)) == []


def test_core_modules_never_import_adapters_cli_or_pytest() -> None:
    package = Path(flakecore.__file__).parent
    forbidden = re.compile(
        r"^\s*(?:from|import)\s+"
        r"(flakecore_adapters|flakecore\.cli|jsonschema|referencing|_?pytest|pluggy|hypothesis|numpy)\b",
        re.MULTILINE,
    )
    allowed = {"__main__.py": {"flakecore.cli"}, "validation.py": {"jsonschema", "referencing"}}
    for module in package.rglob("*.py"):
        if module.relative_to(package).parts[0] == "cli":
            continue
        for found in forbidden.findall(module.read_text()):
            assert found in allowed.get(module.name, set()), (module.name, found)


def test_pytest_plugin_is_registered_and_idle_it_imports_no_flakecore() -> None:
    (entry,) = [e for e in entry_points(group="pytest11") if e.value.startswith("flakecore")]
    assert (entry.name, entry.value) == ("flakecore", "flakecore_pytest")
    # What pytest imports in every session (the plugin's options): not even the core.
    code = (
        "import sys, pytest, flakecore_pytest; print(sorted(m for m in sys.modules "
        "if m.split('.')[0] in ('flakecore', 'flakecore_adapters', 'numpy', 'hypothesis')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    # Once an option is given, the session's module loads the core, never the adapters or CLI.
    pulled = _imported("import flakecore_pytest._session")
    assert "pytest" in pulled  # the check itself sees the import
    assert not [m for m in pulled if m.startswith(("flakecore_adapters", "flakecore.cli"))]


def test_the_cli_imports_no_private_gate_module() -> None:
    cli = Path(flakecore.__file__).parent / "cli"
    private = re.compile(r"^\s*(?:from|import)\s+(flakecore\.gate\._\w+)", re.MULTILINE)
    modules = sorted(cli.glob("*.py"))
    assert len(modules) > 5
    for module in modules:
        assert private.findall(module.read_text()) == [], module.name


def test_version_from_metadata_and_py_typed() -> None:
    assert flakecore.__version__ == version("flakecore")
    assert (Path(flakecore.__file__).parent / "py.typed").is_file()


def test_public_api_is_exported() -> None:
    for name in ("admit", "decide", "budget", "classify", "freeze_allowed", "Policy"):
        assert name in flakecore.__all__
        assert callable(getattr(flakecore, name))
