"""Base replay isolation (docs/trust.md): the replayed command must not import the scored checkout.

A CI job usually installs the checkout under test into its environment
(``pip install -e .``, ``pip install .``, a pytest plugin from it), and the
base replay then runs in that same environment: the base worktree's tests
import the *patched* package, and the base "misses" are the patch's own.
Before the first attempt, :func:`find_leaks` finds the interpreter the
command will use, asks it (through :mod:`flakecore.gate._probe`, which runs
none of the environment's code) for its site directories, and reads what
start-up would read there -- ``.pth`` files, the modules their ``import``
lines load (editable-install finders and their ``MAPPING``), ``*.egg-link``
files, and every distribution's ``direct_url.json`` -- plus ``PYTHONPATH``
and the command line itself.  Anything that resolves into the scored
checkout is a leak, and the replay is ``REJECT_INCOMPLETE``, naming it.

Which interpreter (documented in docs/gate.md): the command's program when
it is a Python (its name is ``python``, ``python3``, ``python3.12``,
``pypy3``...); else the Python named on the ``#!`` line of the program when
it is a script (a console script such as ``pytest``); else ``python3``, then
``python``, on the command's ``PATH``.  Paths are resolved from the base
worktree, with the command's own environment.

Files are read as hostile: only regular files, at most :data:`MAX_FILE` bytes
each, never executed, Python modules parsed with :mod:`ast` only.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import urllib.parse
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import attrs

from flakecore.errors import InputError
from flakecore.files import open_stream, read_bytes
from flakecore.gate.runtime import Reapers, run_command
from flakecore.jsonio import load_object
from flakecore.trust import inside

__all__ = [
    "MAX_FILE",
    "Interpreter",
    "IsolationError",
    "command_interpreter",
    "describe",
    "find_leaks",
    "find_leaks_ahead",
]

#: The most flakecore reads of one ``.pth`` file, finder module or ``direct_url.json``.
MAX_FILE = 1 << 20
_PYTHON_NAME = re.compile(r"(?:python|pypy)[0-9.]*(?:\.exe)?")
#: Interpreter options that take an argument (``-W error``, ``-X dev``).
_OPTION_ARGS = frozenset("WXQ")
_PROBE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_probe.py")
_PROBE_TIMEOUT_S = 120.0


class IsolationError(Exception):
    """The interpreter could not be probed: the isolation cannot be shown."""


class _NeedsWorktree(Exception):
    """The answer depends on the command's directory, which does not exist yet."""


@attrs.frozen
class Interpreter:
    """The Python the command will run, and the options it is given."""

    path: str
    """As found (not resolved: a venv's ``python`` is a symlink, and its location matters)."""
    flags: frozenset[str] = frozenset()
    """Single-letter options that change the search path: ``I``, ``E``, ``s``, ``S``."""


def _from(cwd: Path | None, path: str) -> str:
    """``path`` taken from the command's directory (None: not there yet, so not known)."""
    if os.path.isabs(path):
        return path
    if cwd is None:
        raise _NeedsWorktree(path)
    return os.path.join(cwd, path)


def _which(name: str, env: Mapping[str, str], cwd: Path | None) -> str | None:
    if "/" in name:
        path = _from(cwd, name)
        return path if os.path.isfile(path) else None
    # Entry by entry: a relative (or empty) entry is the command's directory's, as
    # its own exec lookup takes it, not flakecore's working directory.
    for entry in env.get("PATH", os.defpath).split(os.pathsep):
        found = shutil.which(name, path=_from(cwd, entry or os.curdir))
        if found is not None:
            return os.path.abspath(found)
    return None


def _flags(args: Sequence[str]) -> frozenset[str]:
    """The search-path options among the interpreter's leading options."""
    flags: set[str] = set()
    items = iter(args)
    for arg in items:
        if arg == "--" or not arg.startswith("-") or arg == "-":
            break
        for i, letter in enumerate(arg[1:]):
            if letter in "IEsS":
                flags.add(letter)
            if letter in "mc":
                return frozenset(flags)
            if letter in _OPTION_ARGS:
                if i == len(arg) - 2:
                    next(items, None)
                break
    return frozenset(flags)


def _head(path: str, size: int) -> bytes | None:
    """At most the first ``size`` bytes of the file ``path`` resolves to; None if not a file.

    The environment's own links are followed (``realpath``), then the file is
    opened through :mod:`flakecore.files`: a regular file only, never blocking.
    """
    try:
        with open_stream(os.path.realpath(path), source=path) as fh:
            return fh.read(size)
    except (OSError, InputError):
        return None


def _shebang(path: str) -> list[str] | None:
    head = _head(path, 256)
    if head is None:
        return None
    first = head.split(b"\n", 1)[0]
    if not first.startswith(b"#!"):
        return None
    return first[2:].decode("utf-8", "replace").split()


def command_interpreter(
    argv: Sequence[str], env: Mapping[str, str], cwd: Path
) -> Interpreter | None:
    """The Python the command will use (the rule in the module docstring); None: none found."""
    return _interpreter(argv, env, cwd)


def _interpreter(
    argv: Sequence[str], env: Mapping[str, str], cwd: Path | None
) -> Interpreter | None:
    program = _which(argv[0], env, cwd) if argv else None
    if program is not None and _PYTHON_NAME.fullmatch(os.path.basename(argv[0])):
        return Interpreter(program, _flags(argv[1:]))
    line = _shebang(program) if program is not None else None
    if line:
        words = line[1:] if os.path.basename(line[0]) == "env" else line
        words = [w for w in words if not (w.startswith("-") and not _PYTHON_NAME.fullmatch(w))]
        if words and _PYTHON_NAME.fullmatch(os.path.basename(words[0])):
            found = _which(words[0], env, cwd)
            if found is not None:
                return Interpreter(found, _flags(line[line.index(words[0]) + 1 :]))
    for name in ("python3", "python"):
        found = _which(name, env, cwd)
        if found is not None:
            return Interpreter(found)
    return None


def _read(path: str) -> bytes | None:
    return _head(path, MAX_FILE)


def _literal_paths(tree: ast.AST) -> Iterator[tuple[str | None, str]]:
    """Every absolute path written as a string constant, with the dict key it sits under.

    A setuptools editable finder holds ``MAPPING = {"pkg": "/abs/src/pkg"}``;
    other back ends call a function with the path.  Either way the path is a
    string literal, which is all this reads: the module is never run.
    """
    keyed: dict[int, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    for sub in ast.walk(value):
                        keyed.setdefault(id(sub), key.value)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and str(node.value).startswith("/"):
            yield keyed.get(id(node)), str(node.value)


def _parse(data: bytes) -> ast.AST | None:
    try:
        return ast.parse(data)
    except (SyntaxError, ValueError):
        return None


class _Finder:
    """Collects the leaks of one interpreter's start-up."""

    def __init__(self, checkout: Path) -> None:
        self.checkout = checkout
        self.leaks: list[str] = []

    def inside(self, path: str) -> bool:
        """In the scored checkout, as written or with links resolved."""
        return inside(path, self.checkout)

    def path(self, path: str, what: str) -> None:
        if self.inside(path):
            self.leaks.append(f"{what} {path} is inside the scored checkout")

    def module(self, sitedir: str, name: str, pth: str) -> None:
        """A module a ``.pth`` line imports: its string paths (an editable finder's MAPPING)."""
        for candidate in (f"{name}.py", os.path.join(name, "__init__.py")):
            file = os.path.join(sitedir, candidate)
            data = _read(file)
            if data is None:
                continue
            self.path(file, f"{name} (imported by {pth})")
            tree = _parse(data)
            if tree is None:
                continue
            for key, value in _literal_paths(tree):
                if self.inside(value):
                    mapped = f"maps {key!r} to" if key is not None else "names"
                    self.leaks.append(
                        f"{candidate} (imported by {pth}, an editable-install finder) "
                        f"{mapped} {value}, inside the scored checkout"
                    )
            return

    def pth(self, sitedir: str, name: str) -> None:
        """One ``.pth`` file, read the way ``site.addpackage`` would, executing nothing."""
        file = os.path.join(sitedir, name)
        self.path(file, f"the .pth file {name} in {sitedir}")
        data = _read(file)
        if data is None:
            return
        for raw in data.decode("utf-8", "replace").splitlines():
            line = raw.rstrip()
            if not line or line.startswith("#"):
                continue
            if line.startswith(("import ", "import\t")):
                tree = _parse(line.encode())
                for _, value in _literal_paths(tree) if tree is not None else ():
                    if self.inside(value):
                        self.leaks.append(f"{name} in {sitedir} runs code naming {value}")
                for node in ast.walk(tree) if tree is not None else ():
                    if isinstance(node, ast.Import):
                        for alias in node.names:
                            self.module(sitedir, alias.name.split(".")[0], name)
                continue
            target = os.path.join(sitedir, line)
            if self.inside(target):
                self.leaks.append(f"{name} in {sitedir} adds {target} to sys.path")

    def distributions(self, sitedir: str) -> None:
        """``direct_url.json`` of each installed distribution, and legacy ``.egg-link`` files."""
        for entry in sorted(os.listdir(sitedir)):
            full = os.path.join(sitedir, entry)
            if entry.endswith(".egg-link"):
                data = _read(full)
                first = data.decode("utf-8", "replace").splitlines()[:1] if data else []
                for line in first:
                    if line.strip():
                        self.path(os.path.join(sitedir, line.strip()), f"{entry} points at")
            if not entry.endswith(".dist-info"):
                continue
            data = _read(os.path.join(full, "direct_url.json"))
            if data is None:
                continue
            try:
                url = load_object(data, source=entry).get("url")
            except InputError:
                continue
            if isinstance(url, str) and url.startswith("file:"):
                where = urllib.parse.unquote(urllib.parse.urlsplit(url).path)
                if self.inside(where):
                    name = entry[: -len(".dist-info")]
                    self.leaks.append(
                        f"the distribution {name} was installed from the scored checkout "
                        f"(direct_url.json: {url})"
                    )

    def site_dir(self, sitedir: str) -> None:
        self.path(sitedir, "the site directory")
        if not os.path.isdir(sitedir) or self.inside(sitedir):
            return
        try:
            names = sorted(n for n in os.listdir(sitedir) if n.endswith(".pth"))
        except OSError:
            return
        for name in names:
            if not name.startswith("."):
                self.pth(sitedir, name)
        for custom in ("sitecustomize", "usercustomize"):
            self.module(sitedir, custom, "start-up")
        self.distributions(sitedir)


def _probe(
    interpreter: Interpreter,
    env: Mapping[str, str],
    cwd: Path | None,
    scratch: Path,
    output: int,
    *,
    reapers: Reapers | None,
) -> dict[str, object]:
    out = scratch / "interpreter-probe.json"
    argv = [interpreter.path, "-I", "-S", _PROBE, str(out)]
    where = scratch if cwd is None else cwd  # (a compiled interpreter: its answer is the same)
    if reapers is not None:
        run = reapers.run(argv, cwd=where, timeout_s=_PROBE_TIMEOUT_S)
    else:
        run = run_command(argv, cwd=where, timeout_s=_PROBE_TIMEOUT_S, env=env, output=output)
    if failure := run.containment_failure:
        raise IsolationError(f"probing {interpreter.path}: {failure}")
    if run.returncode != 0:
        raise IsolationError(f"probing {interpreter.path} failed: {run.describe()}")
    try:
        return load_object(read_bytes(out, MAX_FILE), source=str(out))
    except InputError as exc:
        raise IsolationError(f"probing {interpreter.path}: {exc}") from None


def _strings(value: object) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def find_leaks(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path,
    checkout: Path,
    scratch: Path,
    output: int,
    reapers: Reapers | None = None,
) -> list[str]:
    """Every way the command, run in ``cwd`` with ``env``, would reach into ``checkout``.

    Raises :class:`IsolationError` when the interpreter cannot be probed.
    ``reapers``: the probe runs on one of them (started ahead with ``env``
    and ``output``), else under a reaper of its own.
    An empty list means none was found (not that none exists: see the
    limits in docs/gate.md).
    """
    return _leaks(
        argv, env=env, cwd=cwd, checkout=checkout, scratch=scratch, output=output, reapers=reapers
    )


def find_leaks_ahead(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    checkout: Path,
    scratch: Path,
    output: int,
    reapers: Reapers | None = None,
) -> list[str] | None:
    """:func:`find_leaks` before the command's directory exists; None when it needs it.

    The answer is the one :func:`find_leaks` gives in any directory when no
    path it looks at is relative to that directory (the program, a ``#!``
    line's Python, a ``PYTHONPATH`` entry) and the interpreter is a compiled
    program, not a script (a shim such as pyenv's picks its Python from the
    directory it runs in): ``-I -S`` then reads nothing there.  The probe runs
    in ``scratch``.  A replay asks this while git adds the worktree.
    """
    try:
        return _leaks(
            argv,
            env=env,
            cwd=None,
            checkout=checkout,
            scratch=scratch,
            output=output,
            reapers=reapers,
        )
    except _NeedsWorktree:
        return None


def _compiled(path: str) -> bool:
    """An ELF executable, not a script that could look at its directory."""
    return _head(path, 4) == b"\x7fELF"


def _leaks(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path | None,
    checkout: Path,
    scratch: Path,
    output: int,
    reapers: Reapers | None,
) -> list[str]:
    finder = _Finder(checkout)
    program = _which(argv[0], env, cwd) if argv else None
    if program is not None:
        finder.path(program, "the command's program")
    for arg in argv[1:]:
        value = arg.split("=", 1)[1] if arg.startswith("-") and "=" in arg else arg
        if os.path.isabs(value):
            finder.path(value, "the command names")
    interpreter = _interpreter(argv, env, cwd)
    if interpreter is None:
        return finder.leaks
    if cwd is None and not _compiled(interpreter.path):
        raise _NeedsWorktree(interpreter.path)
    if interpreter.path != program:
        finder.path(interpreter.path, "the interpreter")
    flags = interpreter.flags
    if not flags & {"I", "E"}:
        for entry in env.get("PYTHONPATH", "").split(os.pathsep):
            if entry:
                finder.path(_from(cwd, entry), "the PYTHONPATH entry")
    if finder.leaks or "S" in flags:
        return finder.leaks
    found = _probe(interpreter, env, cwd, scratch, output, reapers=reapers)
    prefix = found.get("prefix")
    if isinstance(prefix, str):
        finder.path(prefix, "the interpreter's prefix")
    dirs = _strings(found.get("site_dirs"))
    user_site = found.get("user_site")
    no_user = flags & {"I", "s"} or ("PYTHONNOUSERSITE" in env and "E" not in flags)
    if found.get("venv_allows_user_site") is True and not no_user and isinstance(user_site, str):
        dirs.append(user_site)
    for sitedir in dict.fromkeys(dirs):
        finder.site_dir(sitedir)
    return list(dict.fromkeys(finder.leaks))


def describe(leaks: Sequence[str]) -> str:
    """One line for the refusal: the first leaks, and what to do."""
    shown = "; ".join(leaks[:3]) + (f" (and {len(leaks) - 3} more)" if len(leaks) > 3 else "")
    return (
        f"the base replay would import the scored checkout: {shown}; give the base its own "
        "environment (--setup, see docs/gate.md#base-replay-isolation)"
    )
