"""dmidecode -t bios -t system: the BIOS version and the server model (fleet facts)."""

from __future__ import annotations

from typing import Any

from rackops.findings import Finding, Status, Subject
from rackops.inventory.model import Cluster
from rackops.parsers.dmidecode import parse_dmidecode
from rackops.suites import Suite
from rackops.tools._common import with_sbin
from rackops.tools.base import Binary, Context, NodeCheck, Tool


def plan(suite: Suite, cluster: Cluster) -> list[NodeCheck]:
    if not suite.checks.fleet:
        return []
    argv = with_sbin("dmidecode", "-t", "bios", "-t", "system")
    return [NodeCheck("dmidecode", "dmidecode", argv, 30, 1)]


def check(parsed: Any, ctx: Context, node: str | None) -> list[Finding]:
    subj = Subject(node=node)
    if not parsed.complete or parsed.bios is None:
        why = "; ".join(parsed.errors) or "no BIOS record"
        return [
            Finding(
                "FACT-010",
                Status.ERROR,
                subj,
                f"dmidecode output has no whole BIOS record ({why}): BIOS not compared",
                remediation="run dmidecode as root (ansible_become) and capture it whole",
            )
        ]
    b = parsed.bios
    return [Finding("FACT-010", Status.OK, subj, f"BIOS {b.vendor} {b.version} ({b.release_date})")]


TOOL = Tool(
    "dmidecode",
    "BIOS and system model (SMBIOS)",
    parse=parse_dmidecode,
    check=check,
    plan=plan,
    order=43,
    binaries=(Binary("dmidecode", "dmidecode"),),
)
