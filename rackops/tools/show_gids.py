"""show_gids: the RoCE GID table (a RoCEv2 IPv4 GID on every fabric port)."""

from __future__ import annotations

from typing import Any

from rackops.checks.host import check_gids
from rackops.findings import Finding
from rackops.inventory.model import Cluster
from rackops.parsers.show_gids import parse_show_gids
from rackops.suites import Suite
from rackops.tools._common import needs_node
from rackops.tools.base import Binary, Context, NodeCheck, Tool


def plan(suite: Suite, cluster: Cluster) -> list[NodeCheck]:
    if not suite.checks.hca_ports or cluster.fabric.type != "roce":
        return []
    return [NodeCheck("show_gids", "show_gids", ("show_gids",), 30, 1)]


def check(parsed: Any, ctx: Context, node: str | None) -> list[Finding]:
    return check_gids(parsed, needs_node(ctx, "show_gids").hcas, node=node)


TOOL = Tool(
    "show_gids",
    "RoCE GID table",
    parse=parse_show_gids,
    check=check,
    plan=plan,
    hca=True,
    order=60,
    binaries=(Binary("show_gids", "mlnx-tools"),),
    nvidia_stack=True,
)
