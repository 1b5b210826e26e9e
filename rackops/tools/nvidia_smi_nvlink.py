"""nvidia-smi nvlink -s: every NVLink's speed."""

from __future__ import annotations

from typing import Any

from rackops.checks.gpu import check_nvlink
from rackops.findings import Finding
from rackops.inventory.model import Cluster
from rackops.parsers.nvidia_smi import parse_smi_nvlink
from rackops.suites import Suite
from rackops.tools._smi import NVIDIA_SMI
from rackops.tools.base import Context, NodeCheck, Tool


def plan(suite: Suite, cluster: Cluster) -> list[NodeCheck]:
    if not suite.checks.gpu_inventory:
        return []
    argv = ("nvidia-smi", "nvlink", "-s")
    return [NodeCheck("nvidia-smi-nvlink", "nvidia-smi-nvlink", argv, 60, 1)]


def check(parsed: Any, ctx: Context, node: str | None) -> list[Finding]:
    return check_nvlink(parsed, ctx.profile, node=node)


TOOL = Tool(
    "nvidia-smi-nvlink",
    "NVLink speeds",
    parse=parse_smi_nvlink,
    check=check,
    plan=plan,
    order=90,
    binaries=(NVIDIA_SMI,),
)
