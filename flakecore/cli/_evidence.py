"""Records a verb reads as evidence: files through the trusted reader, ``-`` as the caller's own.

Every verb that reads a stored record (a run record, a budget observation, a
lease) reads it here, so the rule of docs/trust.md is applied in one place:
a file in the scored checkout counts only byte-identical in base or signed
by a trusted key; one outside it, or a record on standard input, is the
job's own (an envelope must still verify).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from flakecore.attestation import Kinds
from flakecore.cli._common import read_one, read_packets
from flakecore.cli._config import Configured
from flakecore.errors import InputError
from flakecore.gate.basetrust import judge_given_record, read_record_file
from flakecore.trust import TrustVerdict

__all__ = ["each_evidence", "one_evidence", "refusal"]


def _accept_all(_: object) -> tuple[str, ...]:
    return ()  # the verb judges the record by its kind itself, after trust


def one_evidence(
    name: str, configured: Configured, *, kind: Kinds, test_id: str | None = None
) -> TrustVerdict:
    """The verdict on one record, from a file or ``-``; an unusable input raises its error."""
    trust = configured.trust
    if name == "-":
        record = read_one(name)
        return judge_given_record(
            name, record, trust=trust, kind=kind, check=_accept_all, test_id=test_id
        )
    return read_record_file(name, trust=trust, kind=kind, check=_accept_all, test_id=test_id)


def each_evidence(
    names: Sequence[str], configured: Configured, *, kind: Kinds
) -> Iterator[tuple[str, TrustVerdict | InputError]]:
    """Each record of files and ``-`` (JSON Lines), in order, with its verdict or its error."""
    for name in names:
        if name != "-":
            try:
                yield name, one_evidence(name, configured, kind=kind)
            except InputError as exc:
                yield name, exc
            continue
        for packet in read_packets([name]):
            if packet.data is None:
                assert packet.error is not None
                yield packet.source, packet.error
                continue
            verdict = judge_given_record(
                packet.source, packet.data, trust=configured.trust, kind=kind, check=_accept_all
            )
            yield packet.source, verdict


def refusal(verdict: TrustVerdict) -> InputError:
    """The one-line error for a record that does not count (a verb whose refusal exits 65)."""
    return InputError(
        f"not evidence: {verdict.reason.value}: {verdict.detail}", source=verdict.path
    )
