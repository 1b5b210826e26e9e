"""ofed_info -s: the installed OFED/DOCA-OFED release against the pinned one."""

from __future__ import annotations

from typing import Any

from rackops.checks.host import check_ofed
from rackops.findings import Finding
from rackops.inventory.model import Cluster
from rackops.parsers.ofed_info import parse_ofed_info
from rackops.suites import Suite
from rackops.tools._common import needs_cluster
from rackops.tools.base import Binary, Context, FactSink, NodeCheck, Tool

ARGV = ("ofed_info", "-s")


def plan(suite: Suite, cluster: Cluster) -> list[NodeCheck]:
    if not suite.checks.hca_ports:
        return []
    return [NodeCheck("ofed_info", "ofed_info", ARGV, 30, 1)]


def check(parsed: Any, ctx: Context, node: str | None) -> list[Finding]:
    cluster = needs_cluster(ctx, "ofed_info", "the pinned version")
    return check_ofed(parsed, cluster.versions.ofed, node=node)


def facts(ofed: Any, out: FactSink, _check: str) -> None:
    out.add("node", "ofed", ofed.version, " ".join(ARGV))


TOOL = Tool(
    "ofed_info",
    "installed OFED release",
    parse=parse_ofed_info,
    check=check,
    plan=plan,
    hca=True,
    order=20,
    binaries=(Binary("ofed_info", "mlnx-ofed-kernel-utils"),),
    nvidia_stack=True,
    facts=facts,
)
