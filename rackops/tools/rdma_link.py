"""rdma link show: every RDMA port's state (iproute2; the RoCE view of ibstat)."""

from __future__ import annotations

from typing import Any

from rackops.findings import Finding, Status, Subject
from rackops.parsers.rdma_link import PHYS_STATES, parse_rdma_link
from rackops.tools.base import Binary, Context, Tool


def check(parsed: Any, ctx: Context, node: str | None) -> list[Finding]:
    hcas = {h.device for h in ctx.node.hcas} if ctx.node else None
    out = [
        Finding(
            "HCA-001",
            Status.FAIL,
            Subject(node=node, hca=link.device, port=link.port),
            f"port {link.state}/{link.physical_state}, expected ACTIVE/LINK_UP",
            link.state,
            "ACTIVE",
        )
        for link in parsed.links
        if (hcas is None or link.device in hcas)
        and link.physical_state in PHYS_STATES  # a line cut inside its states says nothing
        and (link.state, link.physical_state) != ("ACTIVE", "LINK_UP")
    ]
    subj = Subject(node=node)
    if not parsed.complete:
        out.append(Finding("PARSE-000", Status.ERROR, subj, "rdma link output is cut off"))
    return out or [Finding("HCA-OK", Status.OK, subj, "every port ACTIVE/LINK_UP")]


TOOL = Tool(
    "rdma-link",
    "RDMA port states (iproute2)",
    parse=parse_rdma_link,
    check=check,
    binaries=(Binary("rdma", "iproute2", simulated=False),),
)
