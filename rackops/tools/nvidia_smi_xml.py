"""nvidia-smi -q -x: every GPU's inventory, clocks, ECC, remapping and PCIe link."""

from __future__ import annotations

from typing import Any

from rackops.checks.gpu import check_gpu_xml
from rackops.findings import Finding
from rackops.inventory.model import Cluster
from rackops.parsers.nvidia_smi import parse_smi_xml
from rackops.suites import Suite
from rackops.tools._common import fact_num, gpu_device
from rackops.tools._smi import NVIDIA_SMI, driver
from rackops.tools.base import Context, FactSink, NodeCheck, Tool


def plan(suite: Suite, cluster: Cluster) -> list[NodeCheck]:
    if not suite.checks.gpu_inventory:
        return []
    return [NodeCheck("nvidia-smi-xml", "nvidia-smi-xml", ("nvidia-smi", "-q", "-x"), 60, 2)]


def check(parsed: Any, ctx: Context, node: str | None) -> list[Finding]:
    return check_gpu_xml(parsed, ctx.profile, node=node, driver_version=driver(ctx))


FACTS_SOURCE = "nvidia-smi -q -x"


def facts(smi: Any, out: FactSink, _check: str) -> None:
    """The driver and CUDA versions, and each GPU's model, VBIOS, limits, clocks and modes;
    each GPU's PCI address for the tools that join on it."""
    src = FACTS_SOURCE
    out.add("node", "driver", smi.driver_version, src)
    out.add("node", "cuda", smi.cuda_version, src)
    for g in smi.gpus:
        dev = gpu_device(g.index)
        if g.bus_id:  # nvidia-smi's 00000000:18:00.0 is lspci's 0000:18:00.0
            out.pci[dev] = g.bus_id.lower()[-12:]
        out.add(dev, "model", g.name, src)
        out.add(dev, "vbios", g.vbios_version, src)
        out.add(dev, "power_limit_w", fact_num(g.power_limit_w), src)
        out.add(dev, "app_clock_graphics_mhz", fact_num(g.app_clock_graphics_mhz), src)
        out.add(dev, "app_clock_memory_mhz", fact_num(g.app_clock_memory_mhz), src)
        out.add(dev, "ecc_mode", g.ecc_mode, src)
        out.add(dev, "mig_mode", g.mig_mode, src)
        out.add(dev, "compute_mode", g.compute_mode, src)
        out.add(dev, "persistence", g.persistence_mode, src)


TOOL = Tool(
    "nvidia-smi-xml",
    "GPU inventory and health (XML)",
    parse=parse_smi_xml,
    check=check,
    plan=plan,
    order=80,
    binaries=(NVIDIA_SMI,),
    facts=facts,
)
