"""Base-only trust (docs/trust.md): a record counts when base holds the same bytes there.

The default, with no keys at all: a lease, ledger row, freeze record,
observation, run record or packet found in the scored checkout is evidence
only when ``git cat-file`` of the same path in the base commit gives the
same bytes -- it landed through review, in its own commit (a lease lands
in its own reviewed commit, docs/policies.md).  A record that base...HEAD adds or
changes is refused *with that reason*; with keys configured it may still
count through a signature (:func:`read_trusted_record`).

"The same path" is meant strictly.  The checkout is walked one directory
at a time without following a symbolic link, and a directory that is a
submodule's checkout ends the walk; base's entry must be a regular file
too, not a link or a gitlink.  Otherwise a committed
``.flakecore/leases -> elsewhere`` link would make base's reviewed bytes
vouch for a file the patch chose.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import attrs

from flakecore.attestation import Kinds, is_envelope, open_statement, parse_envelope
from flakecore.codes import TrustReason
from flakecore.digest import is_commit_id
from flakecore.errors import InputError, Untrusted, UsageError
from flakecore.files import read_bytes, same_bytes_at
from flakecore.gate.nofollow import WALKED, normal_parts, read_in_checkout
from flakecore.gate.worktree import (
    TreeEntry,
    read_object,
    read_objects,
    repo_toplevel,
    tree_entries,
    tree_entry,
)
from flakecore.jsonio import MAX_DOCUMENT_BYTES, canonical_bytes, load_object, loads_strict
from flakecore.signing import RecordProblems, verify_signed
from flakecore.trust import TrustedKey, TrustVerdict, refused

__all__ = [
    "RecordTrust",
    "base_files",
    "judge_given_record",
    "read_record_file",
    "read_trusted_record",
    "trusted_by_base",
]

#: What :func:`base_files` read ahead: a base commit's entries by ``(top, commit, path)``,
#: its blobs by ``(top, oid)``, and each checkout's top (git's, and as resolved).  A
#: commit's content never changes, so these are the answers the one-path calls give.
_ENTRIES: dict[tuple[Path, str, str], TreeEntry | None] = {}
_BLOBS: dict[tuple[Path, str], bytes] = {}
_TOPS: dict[Path, Path] = {}
#: Where each of those records lies in its checkout (``_in_checkout``), by ``(top, path)``.
_PLACES: dict[tuple[Path, str], str] = {}
#: What :func:`_held_verdict` needs of each of those that base holds as a file, by
#: ``(top, base, path)``: its directory's ``WALKED`` key, its name there, base's bytes,
#: and the trusted verdict's detail.
_HELD: dict[tuple[Path, str, str], tuple[tuple[Path, tuple[str, ...]], str, bytes, str]] = {}


def _base_verdict(top: Path, base_sha: str, path: str) -> tuple[TrustVerdict, bytes | None]:
    """The base-only verdict, and the checkout's bytes when they could be read."""
    if not is_commit_id(base_sha):
        raise UsageError(f"base {base_sha!r} is not a full commit id (resolve the ref first)")
    try:
        data = read_in_checkout(top, path)
    except Untrusted as exc:
        return refused(path, exc.reason, exc.detail), None
    name = posixpath.normpath(path)
    key = (top, base_sha, name)
    entry = _ENTRIES[key] if key in _ENTRIES else tree_entry(top, base_sha, name)
    short = base_sha[:12]
    if entry is None:
        detail = f"base {short} has no file at this path: base...HEAD adds it"
        return refused(path, TrustReason.NOT_IN_BASE, detail), data
    if entry.mode == "120000":
        detail = f"a symbolic link in base {short}: not the same path"
        return refused(path, TrustReason.SYMLINK, detail), None
    if not entry.is_file:
        what = "a submodule (gitlink)" if entry.type == "commit" else f"a {entry.type}"
        return refused(path, TrustReason.NOT_A_FILE, f"{what} in base {short}"), None
    # No size: an object git could not read, which reading it now says (a GitError).
    if entry.size in (None, len(data)) and _blob(top, entry.oid) == data:
        detail = f"byte-identical in base {short}"
        return TrustVerdict(
            path=path, reason=TrustReason.BASE_IDENTICAL, detail=detail, data=data
        ), data
    detail = f"base {short} holds other bytes here: base...HEAD changed it"
    return refused(path, TrustReason.CHANGED_SINCE_BASE, detail), data


def _blob(top: Path, oid: str) -> bytes:
    known = _BLOBS.get((top, oid))
    return known if known is not None else read_object(top, oid)


@contextlib.contextmanager
def base_files(trust: RecordTrust, paths: Sequence[str]) -> Iterator[None]:
    """Read what base holds at ``paths`` ahead, with two git calls per directory in all.

    For a reader of many records (``lease check`` over a directory): inside
    the block, every record of ``paths`` is judged exactly as alone, but
    base's entry and bytes come from one ``git ls-tree`` per directory and one
    ``git cat-file --batch``, not two git calls (and a ``rev-parse``) per
    file.  A path not read ahead (outside the checkout) is read alone, as
    always.  Each directory of ``paths`` is walked to (without following a
    link, as for one record) once, at its first record, and that fd serves
    the others: each file is still opened below it without following a link.
    """
    top = Path(os.path.realpath(trust.checkout))
    if trust.base is None or not is_commit_id(trust.base) or repo_toplevel(top) != top:
        yield  # nothing the one-path reading would ask git for in this shape
        return
    base = trust.base
    wanted: dict[str, list[str]] = {}
    places: dict[tuple[Path, str], str] = {}
    names: dict[str, str] = {}  # each path's name from the top, normalized
    for path, (where, name, directory) in _places(paths, top).items():
        places[(top, path)] = where
        names[path] = name
        wanted.setdefault(directory, []).append(name)
    listings: dict[str, TreeEntry | None] = {}
    for directory, listed_names in wanted.items():
        # A name the listing of its directory lacks has no entry alone either (nor has
        # one below a link or a submodule: git lists nothing below those).  No sizes
        # asked (git would open every blob for them): each blob read gives its own.
        listed = tree_entries(top, base, directory + "/" if directory else None, sizes=False)
        listings.update((n, listed.get(n)) for n in listed_names)
    oids = {e.oid for e in listings.values() if e is not None and e.is_file}
    blobs = read_objects(top, sorted(oids))
    held = {(top, oid): data for oid, data in blobs.items()}
    entries: dict[tuple[Path, str, str], TreeEntry | None] = {}
    for name, entry in listings.items():
        if entry is None or not entry.is_file or entry.oid in blobs:
            entries[top, base, name] = entry  # a blob's size: that of its bytes, held beside
        # else: a blob git could not read, left to the one-path reading (which says why)
    _ENTRIES.update(entries)
    _BLOBS.update(held)
    tops = {top: top, trust.checkout: top}  # git's top, and the checkout resolved
    _TOPS.update(tops)
    walks = [(top, tuple(d.split("/")) if d else ()) for d in wanted]
    walks = [w for w in walks if w not in WALKED]  # an enclosing block's stay its own
    WALKED.update(dict.fromkeys(walks))
    _PLACES.update(places)
    held_records = _held_records(top, base, names, entries, held)
    _HELD.update(held_records)
    try:
        yield
    finally:
        for held_key in held_records:
            _HELD.pop(held_key, None)
        for place in places:
            _PLACES.pop(place, None)
        for entry_key in entries:
            _ENTRIES.pop(entry_key, None)
        for blob_key in held:
            _BLOBS.pop(blob_key, None)
        for top_key in tops:
            _TOPS.pop(top_key, None)
        for walk in walks:
            fd = WALKED.pop(walk, None)
            if fd is not None:
                os.close(fd)


def _places(paths: Sequence[str], top: Path) -> dict[str, tuple[str, str, str]]:
    """Each path in the checkout: its :func:`_in_checkout`, that normalized, and its directory.

    A refused path is left out.  A directory's many records are placed from
    the directory's own place, worked out once: below a directory that lies
    in the checkout (a normalized place), a plain name (not empty, ``.`` or
    ``..``) lies there too, one ``/`` further, and is normalized already.
    Anything else, and a directory outside, is placed path by path.
    """
    cwd = os.getcwd()  # abspath asks for it per path (a tenth of a record's reading)
    plain = not (cwd.startswith("//") or str(top).startswith("//") or str(top) == "/")
    directories: dict[str, str | None] = {}
    places: dict[str, tuple[str, str, str]] = {}
    for path in paths:
        head, _, name = path.rpartition("/")
        if plain and head and name not in ("", ".", "..") and not path.startswith("//"):
            if head not in directories:
                try:
                    directories[head] = _in_checkout(head, top, cwd)
                except Untrusted:
                    directories[head] = None
            inside = directories[head]
            if inside == ".":
                places[path] = (name, name, "")
                continue
            if inside is not None:
                where = inside + "/" + name
                places[path] = (where, where, inside)
                continue
        try:
            where_written = _in_checkout(path, top, cwd)
        except Untrusted:
            continue
        if where_written is not None:
            normal = posixpath.normpath(where_written)
            places[path] = (where_written, normal, posixpath.dirname(normal))
    return places


def _held_records(
    top: Path,
    base: str,
    names: Mapping[str, str],
    entries: Mapping[tuple[Path, str, str], TreeEntry | None],
    blobs: Mapping[tuple[Path, str], bytes],
) -> dict[tuple[Path, str, str], tuple[tuple[Path, tuple[str, ...]], str, bytes, str]]:
    """``_HELD``'s part for one :func:`base_files` block: the records base holds as files.

    ``names``: each path's place in the checkout, normalized (what
    :func:`~flakecore.gate.nofollow.normal_parts` splits).
    """
    detail = f"byte-identical in base {base[:12]}"
    held = {}
    for path, name in names.items():
        if "\0" in name:
            continue  # what _parts refuses before it normalizes
        try:
            parts = normal_parts(name)
        except Untrusted:
            continue  # the one-path reading refuses it
        entry = entries.get((top, base, name))
        if entry is None or not entry.is_file:
            continue
        blob = blobs.get((top, entry.oid))
        if blob is not None and len(blob) <= MAX_DOCUMENT_BYTES:
            held[top, base, path] = ((top, tuple(parts[:-1])), parts[-1], blob, detail)
    return held


def _held_verdict(
    path: str,
    held: tuple[tuple[Path, tuple[str, ...]], str, bytes, str],
    check: RecordProblems,
) -> TrustVerdict | None:
    """A read-ahead record that base holds byte for byte, read as one: the common case only.

    What :func:`read_record_file` gives a plain JSON object that is base's
    bytes exactly and that ``check`` finds nothing wrong with, without the
    one-path reading's layers (the walk, base's entry, three verdicts).
    None for anything else (not those bytes, not read so, not JSON, an
    envelope, a problem): the one-path reading then says what it is.
    """
    directory, name, blob, detail = held
    fd = WALKED.get(directory)
    if fd is None:  # the directory's first record walks to it, the one-path way
        return None
    data = same_bytes_at(fd, name, blob)
    if data is None:
        return None
    try:
        value = loads_strict(data, source=path)
    except InputError:
        return None
    if type(value) is not dict or "payloadType" in value or list(check(value)):
        return None  # an envelope (is_envelope) is opened the one-path way
    return TrustVerdict(
        path=path, reason=TrustReason.BASE_IDENTICAL, detail=detail, data=data, record=value
    )


def trusted_by_base(repo: Path, base_sha: str, path: str) -> TrustVerdict:
    """Whether ``path`` (relative to the repository top) counts because base holds it byte for byte.

    ``base_sha`` is the full commit id of the base (resolve refs first).  A
    trusted verdict carries the bytes in ``data``: read those, not the file
    again.  Refused: ``NOT_IN_BASE`` (the diff adds it), ``CHANGED_SINCE_BASE``,
    ``SYMLINK``, ``NOT_A_FILE``, ``OUTSIDE_REPOSITORY``.  A missing or
    unreadable file is an :class:`InputError`; a git failure a ``GitError``.
    """
    verdict, _ = _base_verdict(repo_toplevel(repo), base_sha, path)
    return verdict


def _open_record(
    verdict: TrustVerdict, data: bytes, kind: Kinds, test_id: str | None
) -> TrustVerdict:
    """A base-identical file as a record: its JSON object, or the record its envelope carries."""
    try:
        value = loads_strict(data, source=verdict.path)
        if is_envelope(value):
            payload = parse_envelope(value).payload
            opened = open_statement(payload, kind=kind, test_id=test_id).record
            return _evolved(verdict, path=verdict.path, record=opened)
    except InputError as exc:
        return refused(verdict.path, TrustReason.INVALID_RECORD, f"not JSON: {exc.message}")
    except Untrusted as exc:
        return refused(verdict.path, exc.reason, exc.detail)
    if not isinstance(value, dict):
        return refused(verdict.path, TrustReason.INVALID_RECORD, "not a JSON object")
    return _evolved(verdict, path=verdict.path, record=value)


def _evolved(
    verdict: TrustVerdict, *, path: str, record: Mapping[str, object] | None
) -> TrustVerdict:
    """``attrs.evolve(verdict, path=path, record=record)`` for one ``__init__``'s cost.

    Every record read changes these two (evolve walks the class's fields per call).
    """
    return TrustVerdict(
        path=path,
        reason=verdict.reason,
        detail=verdict.detail,
        data=verdict.data,
        record=record,
        signers=verdict.signers,
    )


def read_trusted_record(
    repo: Path,
    base_sha: str,
    path: str,
    *,
    keys: Sequence[TrustedKey],
    kind: Kinds,
    check: RecordProblems,
    test_id: str | None = None,
) -> TrustVerdict:
    """One stored record as evidence: base-identical, or signed by a trusted key, or refused.

    ``kind`` is the record kind the reader expects, or a tuple of the kinds
    it accepts (a lease directory holds leases, ledger rows and decide
    packets): a signed record is then read as whichever its ``format`` names.

    A file base holds byte for byte counts (an envelope there is opened
    without its signature: review vouched for it).  A file the diff adds or
    changes counts only as a DSSE envelope that
    :func:`flakecore.signing.verify_signed` accepts against ``keys`` (which
    must come from the trusted configuration); an unsigned one is refused
    with the base reason.  Either way the record is then checked with
    ``check``, the reader's own rules for its kind, and handed back in
    ``record``.
    """
    top = _TOPS.get(repo) or repo_toplevel(repo)
    verdict, data = _base_verdict(top, base_sha, path)
    if data is None:
        return verdict
    if verdict.trusted:
        opened = _open_record(verdict, data, kind, test_id)
        if opened.record is None:
            return opened
        problems = list(check(opened.record))
        if problems:
            return refused(path, TrustReason.INVALID_RECORD, "; ".join(problems))
        return opened
    try:
        value = loads_strict(data, source=path)
    except InputError:
        value = None
    if not is_envelope(value):
        return attrs.evolve(verdict, detail=f"{verdict.detail}, and it is not signed", data=data)
    assert isinstance(value, dict)
    return verify_signed(
        data, keys=keys, kind=kind, check=check, test_id=test_id, path=path, parsed=value
    )


@attrs.frozen(kw_only=True)
class RecordTrust:
    """What a verb trusts a record file by: the base, the trusted keys, where the patch writes.

    ``checkout`` is the top of the scored checkout (every byte below it is the
    patch's); ``base`` the full commit id of the reviewed revision (None: no
    ``--base``); ``keys`` the public keys the *trusted* configuration names.
    """

    checkout: Path
    base: str | None = None
    keys: tuple[TrustedKey, ...] = ()

    def describe(self) -> str:
        """A few words for output: what a record must be to count."""
        ways = [f"byte-identical in base {self.base[:12]}"] if self.base else []
        if self.keys:
            ways.append("signed by " + ", ".join(k.keyid for k in self.keys))
        ways.append("written outside the checkout (the job's own)")
        return ", ".join(ways[:-1]) + " or " + ways[-1] if len(ways) > 1 else ways[0]


def _in_checkout(path: str, top: Path, cwd: str | None = None) -> str | None:
    """``path`` relative to ``top`` as written; None when it lies outside the checkout.

    A path that lies outside as written but resolves into the checkout
    reaches it through a symbolic link: :class:`Untrusted` (``SYMLINK``).
    ``cwd``: the working directory, when the caller asked for it once for
    many paths (``os.path.abspath`` is this join with it).
    """
    if cwd is None or path.startswith("/"):
        absolute = os.path.abspath(path)
    else:
        absolute = posixpath.normpath(posixpath.join(cwd, path))
    where = _below(absolute, top)
    if where is not None:
        return where
    if _below(os.path.realpath(path), top) is not None:
        raise Untrusted(
            TrustReason.SYMLINK, "reached through a symbolic link into the scored checkout"
        )
    return None


def _below(path: str, top: Path) -> str | None:
    """``path`` (absolute, normalized) relative to ``top`` when it is ``top`` or below it.

    ``Path(path).relative_to(top).as_posix()`` when ``top`` is ``path`` or one
    of its parents, else None; as string operations, since every record read
    asks it (a leading ``//``, which pathlib keeps as a root of its own, goes
    the pathlib way).
    """
    root = str(top)
    if path.startswith("//") or root.startswith("//"):
        written = Path(path)
        if written == top or top in written.parents:
            return written.relative_to(top).as_posix()
        return None
    if path == root:
        return "."
    prefix = root if root.endswith("/") else root + "/"
    return path[len(prefix) :] if path.startswith(prefix) else None


def _judge_bytes(
    path: str,
    data: bytes,
    *,
    trust: RecordTrust,
    kind: Kinds,
    check: RecordProblems,
    test_id: str | None,
    unsigned: str | None,
    own: str = "outside the scored checkout, unsigned: this job's own output",
) -> TrustVerdict:
    """Bytes no base vouches for: an envelope that verifies, else the job's own or refused.

    They must be a JSON object (else :class:`InputError`: unusable, like any
    input).  An envelope is always verified (without keys: ``NO_TRUSTED_KEYS``).
    A plain record is refused ``NOT_SIGNED`` with ``unsigned`` as the reason
    (a record in the checkout), or, with ``unsigned`` None, counts as the
    job's own (``OUTSIDE_CHECKOUT``, detail ``own``).
    """
    value = load_object(data, source=path)
    if is_envelope(value):
        return verify_signed(
            data, keys=trust.keys, kind=kind, check=check, test_id=test_id, path=path, parsed=value
        )
    if unsigned is not None:
        verdict = refused(path, TrustReason.NOT_SIGNED, f"{unsigned}, and it is not signed")
        return attrs.evolve(verdict, data=data)
    problems = list(check(value))
    if problems:
        return refused(path, TrustReason.INVALID_RECORD, "; ".join(problems))
    return TrustVerdict(
        path=path, reason=TrustReason.OUTSIDE_CHECKOUT, detail=own, data=data, record=value
    )


def read_record_file(
    path: str,
    *,
    trust: RecordTrust,
    kind: Kinds,
    check: RecordProblems,
    test_id: str | None = None,
) -> TrustVerdict:
    """One record file, wherever it lies, as evidence (docs/trust.md, "which records count").

    In the scored checkout: base-identical (with a base) or signed by a
    trusted key, else refused.  Outside it, an envelope must verify, and a
    plain record is the job's own output (``OUTSIDE_CHECKOUT``), which the
    caller re-verifies: a signature made by a key the same job holds would
    vouch for no more than the job's own steps do.  A verb that needs a
    signer (the clean run) asks for one on top
    (:func:`flakecore.trust.require_other_signer`).  A path that reaches
    the checkout through a link is ``SYMLINK``.  ``check`` is the
    reader's own check of the record.  A missing or unreadable file, and one
    no base vouches for that is not a JSON object, is an :class:`InputError`.
    """
    top = _TOPS.get(trust.checkout) or Path(os.path.realpath(trust.checkout))
    if trust.base is not None and (held := _HELD.get((top, trust.base, path))) is not None:
        fast = _held_verdict(path, held, check)
        if fast is not None:
            return fast
    try:
        where = _PLACES.get((top, path)) or _in_checkout(path, top)
        if where is not None and trust.base is not None:
            verdict = read_trusted_record(
                top, trust.base, where, keys=trust.keys, kind=kind, check=check, test_id=test_id
            )
            return _evolved(verdict, path=path, record=verdict.record)
        if where is not None:
            data = read_in_checkout(top, where)
    except Untrusted as exc:
        return refused(path, exc.reason, exc.detail)
    unsigned = None
    if where is not None:
        unsigned = "in the scored checkout with no base revision to compare it with"
    else:
        data = read_bytes(path, MAX_DOCUMENT_BYTES)
    return _judge_bytes(
        path, data, trust=trust, kind=kind, check=check, test_id=test_id, unsigned=unsigned
    )


def judge_given_record(
    source: str,
    record: Mapping[str, object],
    *,
    trust: RecordTrust,
    kind: Kinds,
    check: RecordProblems,
    test_id: str | None = None,
) -> TrustVerdict:
    """A record the caller handed over rather than stored (a line of standard input).

    Like a file outside the checkout: an envelope must verify, a plain
    record is the caller's own (``OUTSIDE_CHECKOUT``).  The envelope's
    signature covers its payload, so re-encoding the parsed object loses
    nothing a verifier needs.
    """
    return _judge_bytes(
        source,
        canonical_bytes(record),
        trust=trust,
        kind=kind,
        check=check,
        test_id=test_id,
        unsigned=None,
        own="standard input, unsigned: the caller's own",
    )
