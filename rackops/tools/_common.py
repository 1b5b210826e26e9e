"""Helpers the tool modules share."""

from __future__ import annotations

from typing import Any

from rackops.errors import RackopsError
from rackops.findings import Finding, Status, Subject
from rackops.inventory.model import Cluster, Node
from rackops.tools.base import Context

# dmidecode lives in /usr/sbin (and lspci too on RHEL), which the PATH of a plain SSH command
# or of Slurm's HealthCheckProgram may not hold: run them with the sbin directories added
SBIN = 'PATH="$PATH:/usr/sbin:/sbin" exec "$0" "$@"'


def with_sbin(*argv: str) -> tuple[str, ...]:
    """``argv`` run through ``sh -c``, with /usr/sbin and /sbin on PATH."""
    return ("sh", "-c", SBIN, *argv)


def program_of(argv: tuple[str, ...] | list[str]) -> str:
    """The program a command runs (the one :func:`with_sbin` wraps)."""
    if len(argv) > 3 and tuple(argv[:3]) == ("sh", "-c", SBIN):
        return argv[3]
    return argv[0] if argv else ""


def not_whole(
    parsed: Any, code: str, subj: Subject, what: str, fix: str, lacks: str | None = None
) -> list[Finding]:
    """ERROR when a parsed output is not whole (cut, filtered, an error line) or ``lacks``
    what the check reads: ``what`` was not judged. Empty when it can be judged."""
    if getattr(parsed, "complete", True) and lacks is None:
        return []
    why = "; ".join(parsed.errors[-2:]) or lacks or "not whole"
    return [Finding(code, Status.ERROR, subj, f"{what} not judged: {why}", remediation=fix)]


def needs_node(ctx: Context, tool: str) -> Node:
    if ctx.node is None:
        raise RackopsError(f"checking {tool} needs the cabling map: pass -i INVENTORY --node N")
    return ctx.node


def needs_cluster(ctx: Context, tool: str, what: str) -> Cluster:
    if ctx.cluster is None:
        raise RackopsError(f"checking {tool} needs {what}: pass -i INVENTORY")
    return ctx.cluster


def gpu_device(i: int) -> str:
    """A GPU as a fleet fact's device: ``gpu3``."""
    return f"gpu{i}"


def fact_num(v: float | int | None) -> str | None:
    """A number as a fleet fact compares it: ``400`` and ``2.5``, never ``400.0``."""
    if v is None:
        return None
    return f"{v:g}" if isinstance(v, float) else str(v)
