"""Running the gate: the procedures around the four pure policies.

The policies judge recorded evidence; this package records it, on real git
repositories and real test commands (base replay in a detached worktree,
seed-budget runs, the ledger, leases and guards), so that CI calls one
command and never scripts the procedures by hand (docs/gate.md).  Like the rest of the
core it never imports the adapters, jsonschema or the CLI: what needs them
is injected by the caller.
"""

from __future__ import annotations

__all__: list[str] = []
