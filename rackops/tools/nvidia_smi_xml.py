"""nvidia-smi -q -x: every GPU's inventory, clocks, ECC, remapping and PCIe link."""

from __future__ import annotations

from typing import Any

from rackops.checks.gpu import check_gpu_xml
from rackops.findings import Finding
from rackops.inventory.model import Cluster
from rackops.parsers.nvidia_smi import parse_smi_xml
from rackops.suites import Suite
from rackops.tools._smi import NVIDIA_SMI, driver
from rackops.tools.base import Context, NodeCheck, Tool


def plan(suite: Suite, cluster: Cluster) -> list[NodeCheck]:
    if not suite.checks.gpu_inventory:
        return []
    return [NodeCheck("nvidia-smi-xml", "nvidia-smi-xml", ("nvidia-smi", "-q", "-x"), 60, 2)]


def check(parsed: Any, ctx: Context, node: str | None) -> list[Finding]:
    return check_gpu_xml(parsed, ctx.profile, node=node, driver_version=driver(ctx))


TOOL = Tool(
    "nvidia-smi-xml",
    "GPU inventory and health (XML)",
    parse=parse_smi_xml,
    check=check,
    plan=plan,
    order=80,
    binaries=(NVIDIA_SMI,),
)
