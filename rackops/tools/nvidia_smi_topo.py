"""nvidia-smi topo -m: which HCA sits beside which GPU (PIX/PXB, not SYS)."""

from __future__ import annotations

from typing import Any

from rackops.checks.host import check_topo
from rackops.findings import Finding
from rackops.inventory.model import Cluster
from rackops.parsers.nvidia_smi import parse_smi_topo
from rackops.suites import Suite
from rackops.tools._common import gpu_device, needs_node
from rackops.tools._smi import NVIDIA_SMI
from rackops.tools.base import Context, FactSink, NodeCheck, Tool


def plan(suite: Suite, cluster: Cluster) -> list[NodeCheck]:
    if not suite.checks.gpu_inventory:
        return []
    argv = ("nvidia-smi", "topo", "-m")
    return [NodeCheck("nvidia-smi-topo", "nvidia-smi-topo", argv, 60, 1)]


def check(parsed: Any, ctx: Context, node: str | None) -> list[Finding]:
    return check_topo(parsed, needs_node(ctx, "nvidia-smi-topo").hcas, node=node)


def facts(topo: Any, out: FactSink, _check: str) -> None:
    """Each rail GPU's path to its HCA and its NUMA node, as the matrix prints them."""
    nic = {dev: label for label, dev in topo.nic_names.items()}
    for h in out.node.hcas:
        gpu = f"GPU{h.gpu}"
        label = nic.get(h.device, h.device)
        rel = topo.matrix.get(gpu, {}).get(label)
        out.add(gpu_device(h.gpu), f"topo.{h.device}", rel, "nvidia-smi topo -m")
        out.add(gpu_device(h.gpu), "numa", topo.numa_affinity.get(gpu), "nvidia-smi topo -m")


TOOL = Tool(
    "nvidia-smi-topo",
    "GPU–HCA PCIe topology",
    parse=parse_smi_topo,
    check=check,
    plan=plan,
    order=100,
    binaries=(NVIDIA_SMI,),
    facts=facts,
)
