"""The installed package: no heavy imports, typed, versioned, not the source tree."""

from __future__ import annotations

import re
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import flakecore

REPO = Path(__file__).resolve().parents[2]


def test_tests_run_against_the_installed_package() -> None:
    # nox's virtualenvs live under the checkout (.nox/), so compare the package folder itself.
    assert Path(flakecore.__file__).resolve().parent != REPO / "flakecore"


def test_core_import_pulls_in_nothing_heavy() -> None:
    code = (
        "import sys, flakecore; "
        "bad = [m for m in sys.modules if m.split('.')[0] in "
        "{'junitparser', 'jsonschema', 'referencing', 'lxml', 'ijson', 'flakecore_adapters'} "
        "or m.startswith('flakecore.cli')]; "
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_core_modules_never_import_adapters_or_cli() -> None:
    package = Path(flakecore.__file__).parent
    forbidden = re.compile(
        r"^\s*(?:from|import)\s+(flakecore_adapters|flakecore\.cli|jsonschema|referencing)\b",
        re.MULTILINE,
    )
    allowed = {"__main__.py": {"flakecore.cli"}, "validation.py": {"jsonschema", "referencing"}}
    for module in package.glob("*.py"):
        for found in forbidden.findall(module.read_text()):
            assert found in allowed.get(module.name, set()), (module.name, found)


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
