"""host-tuning: one shell script reading MTU, DCQCN/CNP, IRQ affinity and hugepages."""

from __future__ import annotations

from typing import Any

from rackops.checks.tuning import check_host_tuning
from rackops.errors import RackopsError
from rackops.findings import Finding
from rackops.inventory.model import Cluster
from rackops.parsers.host_tuning import SCRIPT, parse_host_tuning
from rackops.suites import Suite
from rackops.tools.base import Context, NodeCheck, Tool


def plan(suite: Suite, cluster: Cluster) -> list[NodeCheck]:
    # host tuning as provisioned (drift is a FAIL before any bandwidth test)
    if not suite.checks.hca_ports:
        return []
    argv = ("sh", "-c", SCRIPT, "host-tuning", "{hw_root}", "{netdevs}")
    return [NodeCheck("host-tuning", "host-tuning", argv, 30, 1)]


def check(parsed: Any, ctx: Context, node: str | None) -> list[Finding]:
    if ctx.cluster is None or ctx.node is None:
        raise RackopsError("checking host-tuning needs the design: pass -i INVENTORY --node N")
    return check_host_tuning(parsed, ctx.node, ctx.cluster)


TOOL = Tool(
    "host-tuning",
    "MTU, DCQCN/CNP, IRQ affinity and hugepages as provisioned",
    parse=parse_host_tuning,
    check=check,
    plan=plan,
    order=40,
)
