"""lldpctl -f json: the switch and port every fabric interface's cable reaches (RoCE)."""

from __future__ import annotations

from typing import Any

from rackops.checks.cabling import check_cabling, seen_from_lldp
from rackops.findings import Finding, Status, Subject
from rackops.inventory.model import Cluster
from rackops.parsers._common import ParseError
from rackops.parsers.lldpctl import parse_lldpctl
from rackops.suites import Suite
from rackops.tools._common import needs_cluster, needs_node
from rackops.tools.base import Binary, Context, NodeCheck, Tool


def plan(suite: Suite, cluster: Cluster) -> list[NodeCheck]:
    phy = suite.checks.physical
    if not suite.checks.hca_ports or cluster.fabric.type != "roce" or not (phy and phy.cabling):
        return []
    return [NodeCheck("lldpctl", "lldpctl", ("lldpctl", "-f", "json"), 30, 1)]


def check(parsed: Any, ctx: Context, node: str | None) -> list[Finding]:
    cluster = needs_cluster(ctx, "lldpctl", "the cabling map")
    n = needs_node(ctx, "lldpctl")
    seen = seen_from_lldp(parsed, n.name, {h.netdev: h.device for h in n.hcas})
    out = check_cabling(cluster, seen, how="LLDP")
    if not parsed.complete:
        out.append(
            Finding("PARSE-000", Status.ERROR, Subject(node=node), "lldpctl output is cut off")
        )
    return out


def live(text: str, ctx: Context, node: str | None) -> tuple[list[Finding], Any]:
    """In a run, read only: the cabling stage judges every node's cables together (from
    this parse, which the run keeps)."""
    from rackops.tools import parse

    subj = Subject(node=node)
    try:
        parsed = parse("lldpctl", text)
    except ParseError as exc:
        return [
            Finding(
                "CAB-000",
                Status.ERROR,
                subj,
                f"LLDP neighbours unreadable, cabling not checked: {exc}",
                remediation="start lldpd on the host (and LLDP on the switch ports)",
            )
        ], None
    return [Finding("CAB-READ", Status.OK, subj, "LLDP neighbours read")], parsed


TOOL = Tool(
    "lldpctl",
    "LLDP neighbours of the fabric interfaces",
    parse=parse_lldpctl,
    check=check,
    live=live,
    plan=plan,
    hca=True,
    order=50,
    # the lab runs the real lldpd in every target and beside every leaf
    binaries=(Binary("lldpctl", "lldpd", simulated=False),),
)
