"""dmidecode -t bios -t system: the BIOS version and the server model (fleet facts)."""

from __future__ import annotations

from typing import Any

from rackops.findings import Finding, Status, Subject
from rackops.inventory.model import Cluster
from rackops.parsers.dmidecode import parse_dmidecode
from rackops.suites import Suite
from rackops.tools._common import not_whole, with_sbin
from rackops.tools.base import Binary, Context, FactSink, NodeCheck, Tool


def plan(suite: Suite, cluster: Cluster) -> list[NodeCheck]:
    if not suite.checks.fleet:
        return []
    argv = with_sbin("dmidecode", "-t", "bios", "-t", "system")
    return [NodeCheck("dmidecode", "dmidecode", argv, 30, 1)]


def check(parsed: Any, ctx: Context, node: str | None) -> list[Finding]:
    subj = Subject(node=node)
    lacks = "no BIOS record" if parsed.bios is None else None
    fix = "run dmidecode as root (ansible_become) and capture it whole"
    if bad := not_whole(parsed, "FACT-010", subj, "BIOS", fix, lacks):
        return bad
    b = parsed.bios
    return [Finding("FACT-010", Status.OK, subj, f"BIOS {b.vendor} {b.version} ({b.release_date})")]


def facts(dmi: Any, out: FactSink, _check: str) -> None:
    """The BIOS (version, vendor, date) and the server model."""
    if dmi.bios is None:
        return
    out.add("node", "bios", dmi.bios.version, "dmidecode -t bios")
    out.add("node", "bios_vendor", dmi.bios.vendor, "dmidecode -t bios")
    out.add("node", "bios_date", dmi.bios.release_date, "dmidecode -t bios")
    if dmi.system is not None:
        model = " ".join(x for x in (dmi.system.manufacturer, dmi.system.product_name) if x)
        out.add("node", "system", model, "dmidecode -t system")


TOOL = Tool(
    "dmidecode",
    "BIOS and system model (SMBIOS)",
    parse=parse_dmidecode,
    check=check,
    plan=plan,
    order=43,
    binaries=(Binary("dmidecode", "dmidecode"),),
    facts=facts,
)
