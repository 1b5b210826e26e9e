"""mlnx_qos -i IF: the live host QoS (trust, PFC, DSCP map, buffers) of one interface."""

from __future__ import annotations

from typing import Any

from rackops.checks.host import check_mlnx_qos
from rackops.design import HostRoce, node_design
from rackops.findings import Finding, Subject
from rackops.inventory.model import Cluster, RoceQos
from rackops.parsers.mlnx_qos import parse_mlnx_qos
from rackops.suites import Suite
from rackops.tools.base import Binary, Context, NodeCheck, Tool


def plan(suite: Suite, cluster: Cluster) -> list[NodeCheck]:
    # the live host QoS against the design (drift is a FAIL before any bandwidth test)
    if not suite.checks.hca_ports or cluster.fabric.type != "roce":
        return []
    return [NodeCheck("mlnx_qos", "mlnx_qos", ("mlnx_qos", "-i", "{netdev}"), 30, 1, per_hca=True)]


def apply_argvs(netdev: str, design: HostRoce) -> list[list[str]]:
    """The commands that set a host's design on one interface, as the roce_host_qos role
    runs them: trust and PFC in one, then each explicit DSCP→priority entry."""
    return [
        ["mlnx_qos", "-i", netdev, "--trust", design.trust, "--pfc", design.pfc_vector],
        *(
            ["mlnx_qos", "-i", netdev, "--dscp2prio", f"set,{dscp},{prio}"]
            for dscp, prio in sorted(design.dscp2prio.items())
        ),
    ]


def check(parsed: Any, ctx: Context, node: str | None) -> list[Finding]:
    roce = ctx.cluster.fabric.roce if ctx.cluster and ctx.cluster.fabric.roce else RoceQos()
    host = node_design(ctx.cluster, ctx.node).roce if ctx.cluster and ctx.node else None
    return check_mlnx_qos(parsed, roce, subject=Subject(node=node), host=host)


TOOL = Tool(
    "mlnx_qos",
    "host RoCE QoS of one interface",
    parse=parse_mlnx_qos,
    check=check,
    plan=plan,
    hca=True,
    order=70,
    binaries=(Binary("mlnx_qos", "mlnx-tools"),),
    nvidia_stack=True,
)
