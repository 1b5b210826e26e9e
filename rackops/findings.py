"""Findings: what a check concludes about one subject, in a form a ticket can carry.

Status order: OK < WARN < FAIL, and ERROR beside them: ERROR means the test
could not be run or read (missing tool, timeout, garbled output). It is never a
pass and never blamed on hardware.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any


class Status(StrEnum):
    OK = "OK"
    WARN = "WARN"
    FAIL = "FAIL"
    ERROR = "ERROR"


# how bad a status is, to take the worst of several (a record, a port, a link)
STATUS_VALUE = {"OK": 0, "WARN": 1, "ERROR": 2, "FAIL": 3}


def exit_code(verdict: Status) -> int:
    """A command that judged outputs exits as its worst finding: 0 OK, 1 warnings,
    2 failures, 3 could not decide (rackops.errors.ExitCode)."""
    from rackops.errors import ExitCode

    codes = {
        Status.OK: ExitCode.OK,
        Status.WARN: ExitCode.WARNINGS,
        Status.FAIL: ExitCode.ERRORS,
        Status.ERROR: ExitCode.UNREADABLE,
    }
    return int(codes[verdict])


@dataclass(frozen=True)
class Subject:
    """What the finding is about; the most specific fields that apply are set."""

    node: str | None = None
    gpu: int | None = None
    gpu_uuid: str | None = None
    bus_id: str | None = None
    hca: str | None = None
    port: int | None = None
    peer: str | None = None
    switch: str | None = None
    switch_port: str | None = None

    def __str__(self) -> str:
        parts = [self.node or "?"]
        if self.gpu is not None:
            gpu = f"GPU {self.gpu}"
            if self.bus_id:
                gpu += f" ({self.bus_id})"
            parts.append(gpu)
        if self.hca:
            parts.append(self.hca if self.port is None else f"{self.hca}/{self.port}")
        text = " ".join(parts)
        if self.peer:
            text += f" <-> {self.peer}"
        if self.switch:
            text += f" [{self.switch}{' ' + self.switch_port if self.switch_port else ''}]"
        return text


# What a technician does first about a culprit: the report's fix groups (its first screen).
# A check that knows its finding needs something other than its subject's own fix says so
# (Finding.action); otherwise the fix is the subject's: the GPU, the HCA, the node.
ACTIONS = ("cable", "hca", "gpu", "switch", "node", "rerun")


@dataclass(frozen=True)
class Finding:
    code: str
    status: Status
    subject: Subject
    message: str
    observed: Any = None
    expected: Any = None
    unit: str | None = None
    remediation: str | None = None
    attempts: tuple[Finding, ...] = field(default=())
    action: str | None = None  # one of ACTIONS, where the subject's own fix is not it

    def __post_init__(self) -> None:
        if self.action is not None and self.action not in ACTIONS:
            raise ValueError(f"{self.code}: action {self.action!r} is none of {ACTIONS}")

    def human(self) -> str:
        text = f"{self.status.value:5} {self.code:9} {self.subject}: {self.message}"
        if self.remediation and self.status is not Status.OK:
            text += f" — {self.remediation}"
        return text

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["status"] = self.status.value
        out["attempts"] = [a.as_dict() for a in self.attempts]
        if self.action is None:
            del out["action"]
        return out


_ORDER = {Status.OK: 0, Status.WARN: 1, Status.ERROR: 2, Status.FAIL: 3}


def worst(findings: list[Finding]) -> Status:
    """The verdict of a set of findings: a FAIL rejects even when other tests could not
    run; otherwise an ERROR leaves the verdict undecided. No findings is undecided."""
    if not findings:
        return Status.ERROR
    return max((f.status for f in findings), key=lambda s: _ORDER[s])
