"""nvidia-smi nvlink -s: every NVLink's speed. It prints nothing, exit 0, where no GPU has
an NVLink: an answer, judged against the profile, not an unreadable output."""

from __future__ import annotations

from typing import Any

from rackops.checks.gpu import check_nvlink
from rackops.findings import Finding
from rackops.inventory.model import Cluster
from rackops.parsers.nvidia_smi import SmiNvlink, parse_smi_nvlink
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
    # no line at all, exit 0: no GPU has an NVLink (a PCIe GPU, one passed through alone;
    # a real H200 VM, captures/h200-580/nvidia-smi-nvlink-s): judged against the profile
    empty=lambda: SmiNvlink(gpus=(), no_nvlink=True),
    check=check,
    plan=plan,
    order=90,
    binaries=(NVIDIA_SMI,),
)
