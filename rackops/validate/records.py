"""What one line of ``results.jsonl`` is: a typed record with a schema version.

Every stage writes a :class:`Record`; readers get the line back as a plain dict (what the
report, localisation and the peer gate read) once :func:`accept` has checked it. Schema 1 is
what rackops wrote before records carried a version (the same fields, no ``schema`` key): it
is read as it is. A record of a newer schema is refused with a message that says so, never
half-read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from rackops.errors import InputError

SCHEMA = 2
Kind = Literal["node", "unreachable", "pair", "snapshot", "cabling", "peers", "nccl"]
KINDS: tuple[str, ...] = ("node", "unreachable", "pair", "snapshot", "cabling", "peers", "nccl")


@dataclass(frozen=True)
class Record:
    id: str  # the step: node/<n>/<check>, pair/<a>-<b>/rail<r>, lat/..., phy/<n>/<phase>, ...
    kind: Kind
    node: str | None
    tool: str
    findings: list[dict[str, Any]]
    meta: dict[str, Any] = field(default_factory=dict)
    # the command's evidence (RunDir.save_output): host, argv, rc, duration_s, timed_out,
    # error, and the stdout/stderr files under raw/
    output: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, rec: dict[str, Any]) -> Record:
        """A record given as its JSON form (tests, tools that build run directories)."""
        base = {"id", "kind", "node", "tool", "findings", "meta", "schema"}
        output = {k: v for k, v in rec.items() if k not in base}
        return cls(
            rec["id"],
            rec["kind"],
            rec.get("node"),
            rec.get("tool", ""),
            rec["findings"],
            rec.get("meta") or {},
            output,
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "id": self.id,
            "kind": self.kind,
            "node": self.node,
            "tool": self.tool,
            "findings": self.findings,
            "meta": self.meta,
            **self.output,
        }


class NewerSchema(InputError):
    pass


def accept(rec: object, where: str) -> dict[str, Any] | None:
    """The record as a dict if it is one this rackops reads; None for a line that is not a
    record (cut by a crash, or not ours); NewerSchema for one a newer rackops wrote."""
    if not isinstance(rec, dict) or not {"id", "kind", "findings"} <= rec.keys():
        return None
    schema = rec.get("schema", 1)
    if not isinstance(schema, int) or isinstance(schema, bool) or schema < 1:
        return None
    if schema > SCHEMA:
        raise NewerSchema(
            f"{where}: a record of schema {schema}, written by a newer rackops; this one reads "
            f"schemas 1 to {SCHEMA}: read the run with the rackops that wrote it, or upgrade"
        )
    if rec["kind"] not in KINDS or not isinstance(rec["id"], str):
        return None
    if not isinstance(rec["findings"], list):
        return None
    return rec
