"""ibv_devinfo: in a run, read for each port's active MTU only (ibstat judges the ports)."""

from __future__ import annotations

from typing import Any

from rackops.findings import Finding, Status, Subject
from rackops.inventory.model import Cluster
from rackops.parsers.ibv_devinfo import parse_ibv_devinfo
from rackops.suites import Suite
from rackops.tools._hca import check_ports
from rackops.tools.base import Binary, Context, FactSink, NodeCheck, Tool


def plan(suite: Suite, cluster: Cluster) -> list[NodeCheck]:
    # active_mtu (ibstat does not show it): a RoCE netdev below 4192 caps it at 1024
    if not suite.checks.hca_ports:
        return []
    return [NodeCheck("ibv_devinfo", "ibv_devinfo", ("ibv_devinfo",), 30, 1)]


def live(text: str, ctx: Context, node: str | None) -> tuple[list[Finding], Any]:
    from rackops.tools import judged

    found, parsed = judged("ibv_devinfo", text, ctx, node)
    findings = [f for f in found if f.code == "HCA-007" or f.status is Status.ERROR]
    ok = Finding("HCA-007", Status.OK, Subject(node=node), "active MTU as expected")
    return findings or [ok], parsed


def facts(ibv: Any, out: FactSink, _check: str) -> None:
    """Each cabled HCA's firmware and PSID (a device the inventory does not cable is no
    key: its name came from the node's output)."""
    cabled = {h.device for h in out.node.hcas}
    for h in (x for x in ibv.hcas if x.hca_id in cabled):
        out.add(h.hca_id, "firmware", h.fw_ver, "ibv_devinfo")
        out.add(h.hca_id, "psid", h.board_id, "ibv_devinfo")


TOOL = Tool(
    "ibv_devinfo",
    "verbs devices: port state and active MTU",
    parse=parse_ibv_devinfo,
    check=check_ports,
    live=live,
    plan=plan,
    hca=True,
    order=30,
    binaries=(Binary("ibv_devinfo", "ibverbs-utils"),),
    facts=facts,
)
