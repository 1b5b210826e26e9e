"""nvidia-imex-ctl -N -H: the IMEX domain as each tray of a multi-node NVLink domain sees it
(GB200/GB300 NVL72). Run only on trays of a domain (``Node.nvlink``)."""

from __future__ import annotations

from typing import Any

from rackops.checks.imex import check_imex
from rackops.findings import Finding
from rackops.inventory.model import Cluster
from rackops.parsers.nvidia_imex import parse_imex_domain
from rackops.suites import Suite
from rackops.tools._smi import driver
from rackops.tools.base import Binary, Context, NodeCheck, Tool

# hwsim prints it (lab/hwsim/imex.py); the lab's repository holds it in nvidia-imex-<branch>
IMEX_CTL = Binary("nvidia-imex-ctl", "nvidia-imex")


def plan(suite: Suite, cluster: Cluster) -> list[NodeCheck]:
    if not suite.checks.gpu_inventory or not any(n.nvlink for n in cluster.nodes):
        return []
    return [NodeCheck("nvidia-imex", "nvidia-imex", ("nvidia-imex-ctl", "-N", "-H"), 30, 1)]


def check(parsed: Any, ctx: Context, node: str | None) -> list[Finding]:
    return check_imex(parsed, node=ctx.node, cluster=ctx.cluster, driver=driver(ctx))


TOOL = Tool(
    "nvidia-imex",
    "IMEX domain state (GB200/GB300 NVL72 trays)",
    parse=parse_imex_domain,
    check=check,
    plan=plan,
    order=85,
    binaries=(IMEX_CTL,),
    nvlink_domain=True,
)
