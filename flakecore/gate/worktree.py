"""Git plumbing for the base replay: resolve commits, read blobs, and a detached worktree.

The base replay (docs/gate.md) runs the *unmodified* base commit.  The only honest way to get it
is a fresh, detached ``git worktree`` in a directory outside the checkout:
the scored checkout is never touched (no stash, no checkout, no clean), and
a worktree that is not exactly the base commit with an empty
``git status`` is refused, never cleaned into shape -- a file that appeared
there (a filter, a generator; hooks never run) could be the very thing that decides
the replay.  The worktree is removed on every path, including a signal.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import TracebackType

import attrs

from flakecore._env import child_env
from flakecore.errors import GitError, UsageError, WorktreeLockTimeout

__all__ = [
    "WORKTREE_LOCK_TIMEOUT_S",
    "DetachedWorktree",
    "GitError",
    "TreeEntry",
    "WorktreeLockTimeout",
    "git",
    "head_commit",
    "matching_refs",
    "read_blob",
    "read_object",
    "read_objects",
    "repo_toplevel",
    "resolve_commit",
    "toplevel_and_commit",
    "toplevel_commit_and_head",
    "tree_entries",
    "tree_entry",
]


#: How long a ``git worktree add``, ``remove`` or ``prune`` waits for the repository's
#: worktree lock (:func:`_worktrees_locked`) before it gives up with
#: :class:`WorktreeLockTimeout`, a refusal and never a hang.  An add holds the lock while git
#: checks the whole base out, so this allows for several replays' checkouts of a large one.
WORKTREE_LOCK_TIMEOUT_S = 300.0
#: The longest sleep between two tries of the lock (the first ones are shorter).
_LOCK_POLL_S = 0.05
#: The threads' half of the worktree lock, the ``flock`` being the processes' half.
_WORKTREES = threading.Lock()

#: Options before every git command the gate runs: the patch's code may have written ``.git``
#: (hooks, ``core.fsmonitor``), and none of what it put there may run in the gate's process
#: tree -- a ``post-checkout`` hook could leave a process behind that rewrites the base
#: worktree after it was verified, or the gate's own installed code.
_UNTRUSTED_COMMANDS_OFF = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=")


def _one_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    flat = " / ".join(lines) or "no message"
    return flat if len(flat) <= 300 else flat[:297] + "..."


def git(*args: str, cwd: Path) -> str:
    """Run ``git ARGS`` in ``cwd`` and return its stdout; raise :class:`GitError` on failure.

    Variables that redirect git to another repository (``GIT_DIR`` ...) are
    dropped, and prompts are disabled, so a gate run inside a hook or a CI
    step cannot read the wrong repository or hang on a password.
    """
    return _git_bytes(*args, cwd=cwd).decode("utf-8", "replace")


def _git_bytes(*args: str, cwd: Path, stdin: bytes | None = None) -> bytes:
    """git's stdout; with ``stdin``, both go through anonymous files (:func:`_spooled`)."""
    with contextlib.ExitStack() as files:
        source = sink = None
        if stdin is not None:
            source, sink = files.enter_context(_spooled(stdin)), files.enter_context(_spooled())
        with _started(args, cwd=cwd, stdin=source, stdout=sink) as process:
            out = _answer(process, args)
        return out if sink is None else os.pread(sink, os.fstat(sink).st_size, 0)


@contextlib.contextmanager
def _started(
    args: Sequence[str], *, cwd: Path, stdin: int | None = None, stdout: int | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    """``git ARGS`` started now, to be read by :func:`_answer`; killed if the block leaves first.

    What the block does meanwhile runs beside git.  ``stdin`` and ``stdout``
    are file descriptors (None: no input, a pipe for the output).
    """
    env = child_env({"GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"})
    try:
        process = subprocess.Popen(
            ["git", *_UNTRUSTED_COMMANDS_OFF, *args],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL if stdin is None else stdin,
            stdout=subprocess.PIPE if stdout is None else stdout,
            stderr=subprocess.PIPE,
        )
    except FileNotFoundError:
        raise GitError("git is not installed (or not on PATH)") from None
    except NotADirectoryError:
        raise GitError(f"{cwd}: not a directory") from None
    try:
        yield process
    finally:
        if process.returncode is None:
            process.kill()
            process.communicate()


#: The configuration scopes a patch's code may have written: ``.git/config`` and the main
#: worktree's ``config.worktree`` (with what they include).
_REPOSITORY_SCOPES = frozenset({b"local", b"worktree"})
_FILTER_COMMANDS = (b".smudge", b".clean", b".process")


def _refuse_repository_filters(top: Path) -> None:
    """Raise :class:`GitError` when the repository's own config sets a filter driver's command.

    git runs a filter driver during checkout, and has no switch to leave out the repository's
    own configuration, which the patch's code may have written: such a command would be code
    of the patch's choosing run by the gate.  A driver the system or global configuration
    defines with the same command (``git lfs install`` beside ``--local``) is trusted.
    """
    listed = _git_bytes("config", "--includes", "--show-scope", "-z", "--list", cwd=top)
    fields = listed.split(b"\0")
    trusted: dict[bytes, bytes] = {}
    last: dict[bytes, tuple[bytes, bytes]] = {}
    for scope, entry in zip(fields[0::2], fields[1::2], strict=False):
        key, _, value = entry.partition(b"\n")
        if not (key.startswith(b"filter.") and key.endswith(_FILTER_COMMANDS)):
            continue
        last[key] = (scope, value)
        if scope not in _REPOSITORY_SCOPES:
            trusted[key] = value
    for key, (scope, value) in last.items():
        if scope in _REPOSITORY_SCOPES and trusted.get(key) != value:
            raise GitError(
                f"the repository's own git config sets {key.decode('utf-8', 'replace')!r}: "
                "the base replay runs no filter that only .git/config defines "
                "(define it in the global git config)"
            )


def _answer(process: subprocess.Popen[bytes], args: Sequence[str]) -> bytes:
    """The stdout of a git call :func:`_started`, once it exited 0; else :class:`GitError`."""
    out, err = process.communicate()
    if process.returncode != 0:
        raise GitError(f"git {args[0]} failed: {_one_line(err.decode('utf-8', 'replace'))}")
    return out


@contextlib.contextmanager
def _spooled(data: bytes = b"") -> Iterator[int]:
    """An fd on an anonymous file holding ``data``, read from its start; closed after.

    git's input and output for a batch (``cat-file --batch`` of a whole lease
    directory) pass through these rather than two pipes: no poll loop feeding
    one and draining the other a few KiB a turn.
    """
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("flakecore-git", os.MFD_CLOEXEC)
    else:  # pragma: no cover - platforms without memfd (macOS)
        import tempfile  # noqa: PLC0415 - only there

        with tempfile.TemporaryFile() as spool:
            fd = os.dup(spool.fileno())
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.lseek(fd, 0, os.SEEK_SET)
        yield fd
    finally:
        os.close(fd)


def repo_toplevel(path: Path) -> Path:
    """The top of the checkout that contains ``path`` (symlinks resolved)."""
    out = git("rev-parse", "--show-toplevel", cwd=path).strip()
    if not out:
        raise GitError(f"{path}: not inside a git work tree")
    return Path(os.path.realpath(out))


#: A full commit id (SHA-1 or SHA-256): the one spelling that names exactly one object.
_FULL_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
#: What git accepts as an abbreviated object id.
_ABBREV = re.compile(r"[0-9a-f]{4,63}")
#: Refs that live at the top of the git directory (``HEAD``, ``FETCH_HEAD``...).
_ROOT_REF = re.compile(r"[A-Z_]*HEAD")
#: ``~N`` / ``^N`` / ``^`` navigation after the name; nothing else is taken.
_NAVIGATION = re.compile(r"(?:[~^][0-9]*)*")


def _unknown(ref: str) -> GitError:
    return GitError(f"unknown revision {ref!r}: not a commit in this repository")


def _rev_parse_commit(repo: Path, rev: str, shown: str) -> str:
    try:
        out = git("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", cwd=repo)
    except GitError:
        raise _unknown(shown) from None
    sha = out.strip()
    if not _FULL_SHA.fullmatch(sha):
        raise _unknown(shown)
    return sha


def matching_refs(repo: Path, name: str) -> list[str]:
    """Every full ref name git's rules would accept for ``name`` (``git help revisions``).

    git tries ``NAME``, ``refs/NAME``, ``refs/tags/NAME``, ``refs/heads/NAME``,
    ``refs/remotes/NAME`` and ``refs/remotes/NAME/HEAD``, takes the first that
    exists and only *warns* when several do -- so a tag ``main`` pushed with
    the patch silently wins over the branch.  Listing them all is how the
    ambiguity is seen.
    """
    candidates = [f"refs/{name}", f"refs/tags/{name}", f"refs/heads/{name}"]
    candidates += [f"refs/remotes/{name}", f"refs/remotes/{name}/HEAD"]
    if name.startswith("refs/"):
        candidates.insert(0, name)
    listed = set(git("for-each-ref", "--format=%(refname)", *candidates, cwd=repo).splitlines())
    found = [c for c in dict.fromkeys(candidates) if c in listed]
    if _ROOT_REF.fullmatch(name):
        top = git("rev-parse", "--git-path", name, cwd=repo).strip()
        if os.path.isfile(top if os.path.isabs(top) else repo / top):
            found.insert(0, name)
    return found


def resolve_commit(repo: Path, ref: str, *, flag: str = "--base") -> str:
    """The full object id of the one commit ``ref`` names; refuse a ref that names two.

    Accepted: a full commit id (40 or 64 hex), or a branch, tag, remote-tracking
    or root ref name (``main``, ``refs/heads/main``, ``origin/main``, ``HEAD``)
    optionally followed by ``~N``/``^N``, or an abbreviated commit id that is
    not also a ref name.  A name that matches several refs (a tag and a branch
    both called ``main``), a revision starting with ``-`` or holding blanks,
    and any other revision syntax (``@{...}``, ``:path``, ranges) are a
    :class:`UsageError`; a name that matches nothing is a :class:`GitError`.
    """
    if not ref or ref != ref.strip() or ref.startswith("-") or any(c in ref for c in "\0 \t\n"):
        raise UsageError(f"{flag} {ref!r} is not a git revision")
    if _FULL_SHA.fullmatch(ref):
        if _rev_parse_commit(repo, ref, ref) != ref:
            raise _unknown(ref)
        return ref
    cut = min((i for i in (ref.find("~"), ref.find("^")) if i >= 0), default=len(ref))
    name, navigation = ref[:cut], ref[cut:]
    if (
        not name
        or not _NAVIGATION.fullmatch(navigation)
        or "@{" in name
        or ":" in name
        or ".." in name
    ):
        raise UsageError(
            f"{flag} {ref!r}: give a branch, tag or full commit id, optionally with ~N or ^N"
        )
    refs = matching_refs(repo, name)
    if refs and _ABBREV.fullmatch(name) and _abbreviates_an_object(repo, name):
        refs.append(f"commit id {name}...")
    if len(refs) > 1:
        raise UsageError(
            f"{flag} {ref!r} is ambiguous: it matches {', '.join(refs)}; "
            "name one in full (refs/heads/..., refs/tags/...) or give the full commit id"
        )
    if not refs and not _ABBREV.fullmatch(name):
        raise _unknown(ref)
    return _rev_parse_commit(repo, (refs[0] if refs else name) + navigation, ref)


def toplevel_and_commit(path: Path, ref: str) -> tuple[Path, str]:
    """``repo_toplevel(path)`` and ``resolve_commit(top, ref)``: one git call for a full id.

    A full commit id needs neither ref rules nor disambiguation, so one
    ``rev-parse --show-toplevel ID^{commit} --`` answers both; anything but
    the exact answer (an error, another id) is asked again the long way, so
    the errors are those of :func:`repo_toplevel` and :func:`resolve_commit`.
    """
    top, sha, _ = _toplevel_commit_head(path, ref, head=False)
    return top, sha


def toplevel_commit_and_head(path: Path, ref: str) -> tuple[Path, str, str | None]:
    """:func:`toplevel_and_commit`, and ``head_commit(top)`` when that same git call told it.

    ``HEAD^{commit}`` joins the one ``rev-parse``; when that call does not
    answer exactly (an unborn ``HEAD`` fails it), the first two are asked
    the long way and ``HEAD`` is None: ask :func:`head_commit`, whose error
    is then the one to give.
    """
    return _toplevel_commit_head(path, ref, head=True)


def _toplevel_commit_head(path: Path, ref: str, *, head: bool) -> tuple[Path, str, str | None]:
    if _FULL_SHA.fullmatch(ref):
        heads = ("HEAD^{commit}",) if head else ()
        try:
            lines = git("rev-parse", "--show-toplevel", f"{ref}^{{commit}}", *heads, "--", cwd=path)
        except GitError:
            lines = ""
        parts = lines.split("\n")  # the top, the ids, and the "--" rev-parse echoes
        if len(parts) == 4 + head and parts[0] and parts[1] == ref and parts[-2:] == ["--", ""]:
            named = parts[2] if head else None
            if named is None or _FULL_SHA.fullmatch(named):
                return Path(os.path.realpath(parts[0])), ref, named
    top_path = repo_toplevel(path)
    return top_path, resolve_commit(top_path, ref), None


def _abbreviates_an_object(repo: Path, prefix: str) -> bool:
    try:
        return bool(git("rev-parse", f"--disambiguate={prefix}", cwd=repo).strip())
    except GitError:
        return False


def head_commit(repo: Path) -> str:
    """The full object id of ``HEAD`` in ``repo`` (git's own ``HEAD`` file comes first)."""
    return _rev_parse_commit(repo, "HEAD", "HEAD")


def read_blob(repo: Path, commit: str, path: str) -> bytes:
    """The raw bytes of ``path`` at ``commit`` (what ``git show COMMIT:PATH`` prints).

    Read with ``git cat-file blob``, which applies no text conversion, so the
    bytes are the committed ones.  ``path`` is relative to the repository top.
    """
    try:
        return _git_bytes("cat-file", "blob", f"{commit}:{path}", cwd=repo)
    except GitError:
        raise GitError(f"{path!r} does not exist in commit {commit[:12]}") from None


@attrs.frozen(kw_only=True)
class TreeEntry:
    """One entry of a commit's tree, as ``git ls-tree -l`` lists it.

    ``mode`` tells a regular file (``100644``/``100755``) from a symbolic
    link (``120000``), a submodule (``160000``, type ``commit``) or a
    directory (``040000``, type ``tree``); ``size`` is None except for blobs.
    """

    mode: str
    type: str
    oid: str
    size: int | None

    @property
    def is_file(self) -> bool:
        """A regular file (executable or not): not a link, submodule or directory."""
        return self.type == "blob" and self.mode in ("100644", "100755")


def tree_entry(repo: Path, commit: str, path: str) -> TreeEntry | None:
    """The entry at ``path`` (relative to the repository top) in ``commit``; None if there is none.

    ``path`` is taken literally (no pathspec magic, no globbing).  A path
    below a symbolic link or a submodule has no entry: git does not follow
    either inside a tree.
    """
    # (a directory's own listing is not asked for here: only the entry named ``path``)
    return tree_entries(repo, commit, path).get(path)


def tree_entries(
    repo: Path, commit: str, pathspec: str | None = None, *, sizes: bool = True
) -> dict[str, TreeEntry]:
    """What ``git ls-tree -l --full-tree COMMIT -- PATHSPEC`` lists, by path from the top.

    ``pathspec`` is literal; ``dir/`` lists the entries of that directory,
    None those of the top.  Names that are not UTF-8 are decoded with
    ``surrogateescape``.  Without ``sizes`` (no ``-l``) every ``size`` is
    None: git then need not open each blob to learn its size.  A size git
    cannot tell (``-`` for a tree, ``BAD`` for an object the repository lacks)
    is None too.
    """
    spec = () if pathspec is None else ("--", pathspec)
    long = ("-l",) if sizes else ()
    out = _git_bytes(
        "--literal-pathspecs", "ls-tree", *long, "-z", "--full-tree", commit, *spec, cwd=repo
    )
    entries: dict[str, TreeEntry] = {}
    for entry in out.split(b"\0"):
        if not entry:
            continue
        meta, _, name = entry.partition(b"\t")
        mode, kind, oid, *size = meta.decode("ascii").split()
        entries[name.decode("utf-8", "surrogateescape")] = TreeEntry(
            mode=mode, type=kind, oid=oid, size=int(size[0]) if size and size[0].isdigit() else None
        )
    return entries


def read_object(repo: Path, oid: str) -> bytes:
    """The raw bytes of the blob ``oid`` (no text conversion, no filters)."""
    return _git_bytes("cat-file", "blob", oid, cwd=repo)


def read_objects(repo: Path, oids: Sequence[str]) -> dict[str, bytes]:
    """The raw bytes of each blob in ``oids``, read by one ``git cat-file --batch``.

    An oid that is missing or not a blob is left out (read it alone to learn why).
    ``--buffer``: git writes its output in full buffers, not one flush (and
    one read here) per object.
    """
    if not oids:
        return {}
    out = _git_bytes(
        "cat-file", "--batch", "--buffer", cwd=repo, stdin="\n".join(oids).encode() + b"\n"
    )
    blobs: dict[str, bytes] = {}
    at = 0
    while at < len(out):
        end = out.index(b"\n", at)
        oid, kind, *size = out[at:end].split()
        at = end + 1
        if not size:  # "<oid> missing"
            continue
        length = int(size[0])
        if kind == b"blob":
            blobs[oid.decode("ascii", "replace")] = out[at : at + length]
        at += length + 1
    return blobs


def _git_common_dir(top: Path) -> Path:
    """The git common directory of the checkout at ``top``: where ``worktrees/`` lives.

    Read as git's own set-up reads it, so the replay starts no git process for
    it: ``.git`` is the git directory, or a file ``gitdir: PATH`` naming it (a
    linked worktree, a submodule, ``--separate-git-dir``; relative to ``top``),
    and a ``commondir`` file there names the common directory (relative to the
    git directory).  Any other layout is asked of ``git rev-parse``.
    """
    dot_git = top / ".git"
    try:
        if dot_git.is_dir():
            git_dir = dot_git
        else:
            link = dot_git.read_text("utf-8").rstrip("\r\n")
            if not link.startswith("gitdir: "):
                raise ValueError(link)
            git_dir = top / link.removeprefix("gitdir: ")
        try:
            common = git_dir / (git_dir / "commondir").read_text("utf-8").rstrip("\r\n")
        except FileNotFoundError:
            common = git_dir
        if common.is_dir():
            return Path(os.path.realpath(common))
    except (OSError, ValueError):  # (UnicodeDecodeError is a ValueError)
        pass
    return Path(os.path.realpath(top / git("rev-parse", "--git-common-dir", cwd=top).strip()))


@contextlib.contextmanager
def _worktrees_locked(repo: Path, common: Path, *, adding: bool = False) -> Iterator[None]:
    """Hold the repository's worktree lock: :data:`_WORKTREES`, then ``flock`` on ``common``.

    git keeps no lock over the worktrees' bookkeeping (``worktrees/`` in the
    common directory): an add that lists the others while another add is
    writing its own entry fails ("failed to read .git/worktrees/tree1/commondir"),
    and a prune may delete the entry of an add half done.  So every add,
    remove and prune of a replay holds this, and replays in one repository,
    threads of one process or processes side by side, take turns.  The flock
    is on a descriptor of the directory itself, opened read-only: nothing is
    written into the repository, and the kernel drops it with the process.
    Both waits end at :data:`WORKTREE_LOCK_TIMEOUT_S` (:class:`WorktreeLockTimeout`)
    and a signal ends them with nothing done; an add (``adding``) of a process
    asked to stop (:func:`~flakecore.gate.runtime.stop_all`) stops waiting at
    once, while a removal, the cleanup, waits on.
    """
    from flakecore.gate.runtime import stopping  # noqa: PLC0415 - see remove()

    deadline = time.monotonic() + WORKTREE_LOCK_TIMEOUT_S
    if not _WORKTREES.acquire(timeout=WORKTREE_LOCK_TIMEOUT_S):
        raise _lock_timeout(repo)
    try:
        try:
            fd = os.open(common, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as exc:
            raise GitError(f"{repo}: cannot open its git directory: {exc.strerror}") from None
        try:
            pause = 0.001
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    pass
                if adding and stopping():
                    raise GitError(f"{repo}: stopped while waiting for its worktree lock")
                if time.monotonic() >= deadline:
                    raise _lock_timeout(repo)
                time.sleep(pause)
                pause = min(2 * pause, _LOCK_POLL_S)
            yield
        finally:
            os.close(fd)  # (which drops the flock)
    finally:
        _WORKTREES.release()


def _lock_timeout(repo: Path) -> WorktreeLockTimeout:
    return WorktreeLockTimeout(
        f"{repo}: another process (or replay) has held its worktree lock for more than "
        f"{WORKTREE_LOCK_TIMEOUT_S:g} s; try again once its git worktree add or remove is done"
    )


def _shown(lines: Sequence[str]) -> str:
    """The first five of ``lines`` (each stripped), and how many more there are."""
    shown = ", ".join(line.strip() for line in lines[:5])
    return shown + (f" and {len(lines) - 5} more" if len(lines) > 5 else "")


def _object_format(commit: str) -> tuple[str, ...]:
    """``git init``'s option for the object format whose ids look like ``commit``."""
    return ("--object-format=sha256",) if len(commit) == 64 else ()


def _blob_id(data: bytes, like: str) -> str:
    """The id git gives a blob holding ``data``, in the object format of the id ``like``."""
    digest = hashlib.sha256 if len(like) == 64 else hashlib.sha1
    return digest(b"blob %d\0" % len(data) + data).hexdigest()


def _stdin_path(name: bytes) -> bytes:
    """``name`` as one line of ``hash-object --stdin-paths``: C-quoted when it must be."""
    if b"\n" not in name and not name.startswith(b'"'):
        return name + b"\n"
    quoted = b"".join(
        b"\\" + bytes([byte])
        if byte in b'"\\'
        else b"\\%03o" % byte
        if byte < 32
        else bytes([byte])
        for byte in name
    )
    return b'"' + quoted + b'"\n'


class DetachedWorktree:
    """A detached ``git worktree`` at one commit, in a new temporary directory.

    Use it as a context manager (or call :meth:`create` and :meth:`remove`).
    The temporary directory (``scratch``) holds the worktree (``path``) and
    may hold the caller's own files, such as an attempt log; all of it goes
    on :meth:`remove`, which is idempotent and never raises for a worktree
    that is already gone.
    """

    def __init__(self, repo: Path, commit: str, *, tmp_root: Path | None = None) -> None:
        self.repo = repo
        self.commit = commit
        self._tmp_root = tmp_root
        self.scratch: Path | None = None
        self.path: Path | None = None
        self._removal: contextlib.ExitStack | None = None
        self._removing: subprocess.Popen[bytes] | None = None
        self._common: Path | None = None
        #: git's add was started, and its entry not yet removed or given up on: remove()'s work.
        self._registered = False

    def create(self, *, meanwhile: Callable[[Path], None] | None = None) -> Path:
        """Add the worktree; returns its path.  It must lie outside the checkout.

        ``meanwhile`` is called with ``scratch`` once it exists, just before
        git adds the worktree: what the caller starts there runs beside git.
        """
        import tempfile  # noqa: PLC0415 - only a replay makes one: no start-up cost of guard

        scratch = Path(
            os.path.realpath(tempfile.mkdtemp(prefix="flakecore-replay-", dir=self._tmp_root))
        )
        self.scratch = scratch
        top = Path(os.path.realpath(self.repo))
        if scratch == top or top in scratch.parents:
            raise GitError(
                f"temporary directory {scratch} is inside the checkout; point TMPDIR elsewhere"
            )
        self.path = scratch / "tree"
        self._common = _git_common_dir(top)
        _refuse_repository_filters(top)
        if meanwhile is not None:
            meanwhile(scratch)
        with _worktrees_locked(self.repo, self._common, adding=True):
            # Set first: a signal that stops git halfway leaves it registered (and locked),
            # and remove() then removes it by its path.  A signal before (in the lock's wait)
            # leaves nothing registered, and nothing for git to do.
            self._registered = True
            git(
                "worktree", "add", "--detach", "--quiet", str(self.path), self.commit, cwd=self.repo
            )
        return self.path

    def problems(self) -> list[str]:
        """Why the worktree is not exactly the base commit (empty when it is).

        ``rev-parse HEAD`` must be the base commit and ``status --porcelain``
        (untracked and ignored files included) must be empty: a fresh checkout
        has neither, so anything there was put there by a filter (hooks never run).
        ``status`` trusts the repository's own index flags and configuration,
        which the patch's code may have written in ``.git`` (``skip-worktree``
        flags, a smudge filter with its inverse ``clean``), so every tracked
        file is also hashed afresh by a git that reads none of them
        (:meth:`_not_base`).
        """
        assert self.path is not None and self.scratch is not None, "create() first"
        # All read-only (no optional locks), so they run side by side; HEAD's error comes first.
        head_args = ("rev-parse", "HEAD")
        status_args = ("status", "--porcelain", "--untracked-files=all", "--ignored")
        tree_args = ("ls-tree", "-r", "-z", "--full-tree", self.commit)
        verifier = self.scratch / "verify.git"
        init_args = ("init", "-q", "--bare", "--template=", *_object_format(self.commit))
        with (
            _started(head_args, cwd=self.path) as head_call,
            _started(status_args, cwd=self.path) as status_call,
            _started(tree_args, cwd=self.repo) as tree_call,
            _started((*init_args, str(verifier)), cwd=self.scratch) as init_call,
        ):
            head = _answer(head_call, head_args).decode("utf-8", "replace").strip()
            status = _answer(status_call, status_args).decode("utf-8", "replace").splitlines()
            tree = _answer(tree_call, tree_args)
            _answer(init_call, init_args)
        found: list[str] = []
        if head != self.commit:
            found.append(f"worktree HEAD is {head}, expected base {self.commit}")
        if status:
            found.append(f"base worktree is not clean: {_shown(status)}")
        if differing := self._not_base(tree, verifier):
            found.append(
                f"base worktree does not hold the base commit's bytes: {_shown(differing)}"
            )
        return found

    def _not_base(self, tree: bytes, verifier: Path) -> list[str]:
        """The tracked paths (``ls-tree -r -z`` output) whose worktree bytes are not base's blob.

        Each regular file is hashed by ``git hash-object --stdin-paths`` with
        ``verifier`` (a new, empty repository) as its git directory: the
        conversions base's own ``.gitattributes`` names still apply, with the
        drivers of the CI's system and global configuration (``git lfs
        install``), while nothing of the repository's ``.git`` -- its config,
        ``info/attributes``, hooks or index -- takes part.  A symbolic link is
        compared by its target; a submodule is not checked out by git and is
        left out.
        """
        assert self.path is not None
        files: list[tuple[str, str]] = []
        differing: list[str] = []
        for entry in tree.split(b"\0"):
            if not entry:
                continue
            meta, _, raw = entry.partition(b"\t")
            mode, _kind, oid = meta.decode("ascii").split()
            name = os.fsdecode(raw)
            place = self.path / name
            if mode == "160000":
                continue
            if mode == "120000":
                same = place.is_symlink() and _blob_id(os.fsencode(os.readlink(place)), oid) == oid
            else:
                same = place.is_file() and not place.is_symlink()
                if same:
                    files.append((name, oid))
            if not same:
                differing.append(name)
        if files:
            stdin = b"".join(_stdin_path(os.fsencode(name)) for name, _ in files)
            args = (f"--git-dir={verifier}", f"--work-tree={self.path}", "hash-object")
            out = _git_bytes(*args, "--stdin-paths", cwd=self.path, stdin=stdin).split()
            differing += [
                name for (name, oid), got in zip(files, out, strict=True) if got != oid.encode()
            ]
        return sorted(differing)

    def start_removal(self) -> None:
        """Start git's removal of the worktree: what the caller does next runs beside it.

        For a caller done with the worktree itself (not with ``scratch``):
        :meth:`remove` waits for git and finishes the removal.
        """
        if not self._registered or self._removal is not None:
            return
        assert self._common is not None and self.path is not None
        from flakecore.gate.runtime import signals_deferred  # noqa: PLC0415 - see remove()

        with signals_deferred():
            self._removal = contextlib.ExitStack()
            try:
                # Held until remove() has git's answer: no other add or prune meanwhile.
                self._removal.enter_context(_worktrees_locked(self.repo, self._common))
            except GitError:  # no lock in time: the entry is left for a later prune
                self._registered = False
                return
            args = ("worktree", "remove", "--force", "--force", str(self.path))
            with contextlib.suppress(GitError):  # git's own failure, as a failed removal
                self._removing = self._removal.enter_context(_started(args, cwd=self.repo))

    def remove(self) -> None:
        """Remove the worktree and the temporary directory; prune git's bookkeeping if left.

        Signals are held meanwhile: a second Ctrl-C must not leave a
        half-removed worktree registered in the repository.
        """
        # The runtime is loaded here: a verb that only reads git (guard) never needs it.
        from flakecore.gate.runtime import signals_deferred  # noqa: PLC0415

        with signals_deferred():
            removed = False
            # Half-created or already gone: the rmtree and prune below finish it.
            self.start_removal()
            if self._removal is not None:
                with self._removal, contextlib.suppress(GitError):
                    if self._removing is not None:
                        _answer(self._removing, ("worktree",))
                        removed = True
                self._removal = self._removing = None
            if self.scratch is not None:
                import shutil  # noqa: PLC0415 - only a worktree's cleanup needs it (and zlib, bz2, lzma)

                shutil.rmtree(self.scratch, ignore_errors=True)
            # What git's remove did not unregister (a repository that is itself gone has
            # nothing left registered in it).
            if self._registered and not removed:
                assert self._common is not None
                with contextlib.suppress(GitError), _worktrees_locked(self.repo, self._common):
                    git("worktree", "prune", cwd=self.repo)
            self._registered = False
            self.path = None
            self.scratch = None

    def __enter__(self) -> DetachedWorktree:
        try:
            self.create()
        except BaseException:
            self.remove()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.remove()
