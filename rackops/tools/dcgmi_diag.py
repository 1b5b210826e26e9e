"""dcgmi diag -r LEVEL: DCGM's diagnostics per plugin and GPU."""

from __future__ import annotations

from typing import Any

from rackops.checks.dcgm import check_dcgm
from rackops.findings import Finding
from rackops.inventory.model import Cluster
from rackops.parsers.dcgmi_diag import parse_dcgmi_diag
from rackops.suites import Suite
from rackops.tools.base import Binary, Context, NodeCheck, Tool

# how long each level runs on a healthy 8-GPU node (the estimate)
EXPECTED_S = {1: 30, 2: 120, 3: 900, 4: 3600}


def plan(suite: Suite, cluster: Cluster) -> list[NodeCheck]:
    d = suite.checks.dcgm
    if not d:
        return []
    argv = ("dcgmi", "diag", "-r", str(d.level))
    return [NodeCheck("dcgmi-diag", "dcgmi-diag", argv, d.timeout_s, EXPECTED_S[d.level])]


def check(parsed: Any, ctx: Context, node: str | None) -> list[Finding]:
    checks = ctx.suite.checks if ctx.suite else None
    level = checks.dcgm.level if checks and checks.dcgm else None
    return check_dcgm(parsed, node=node, level=level)


TOOL = Tool(
    "dcgmi-diag",
    "DCGM diagnostics",
    parse=parse_dcgmi_diag,
    check=check,
    plan=plan,
    order=110,
    loads_gpus=True,
    binaries=(
        Binary("dcgmi", "datacenter-gpu-manager"),
        Binary("nv-hostengine", "datacenter-gpu-manager", daemon=True),
    ),
)
