"""host-facts: kernel, OS release, the PCI address and NUMA node of every cabled HCA, and the
package versions a fleet shares (fabric manager, NCCL, DCGM), for the fleet comparison."""

from __future__ import annotations

from typing import Any

from rackops.findings import Finding, Status, Subject
from rackops.inventory.model import Cluster
from rackops.parsers.host_facts import SCRIPT, parse_host_facts
from rackops.suites import Suite
from rackops.tools._common import fact_num
from rackops.tools.base import Context, FactSink, NodeCheck, Tool


def plan(suite: Suite, cluster: Cluster) -> list[NodeCheck]:
    if not suite.checks.fleet:
        return []
    argv = ("sh", "-c", SCRIPT, "host-facts", "{hw_root}", "{devices}")
    return [NodeCheck("host-facts", "host-facts", argv, 30, 1)]


def check(parsed: Any, ctx: Context, node: str | None) -> list[Finding]:
    out = []
    for dev, pci in sorted(parsed.hcas.items()):
        if pci.bdf is None:
            out.append(
                Finding(
                    "FACT-001",
                    Status.WARN,
                    Subject(node=node, hca=dev),
                    f"{dev} has no PCI device in sysfs (/sys/class/infiniband/{dev}/device): "
                    "its PCIe link and ACS path are not compared",
                    remediation="check the driver (mlx5_core) is bound to the card",
                    action="node",
                )
            )
    return out or [
        Finding("FACT-000", Status.OK, Subject(node=node), f"kernel {parsed.kernel}, {parsed.os}")
    ]


PACKAGES = {  # fact name → package name prefixes (dpkg and rpm names)
    "pkg.fabric_manager": ("nvidia-fabricmanager", "nvidia-fabric-manager"),
    "pkg.nccl": ("libnccl2", "libnccl"),
    "pkg.dcgm": ("datacenter-gpu-manager",),
}


def facts(hf: Any, out: FactSink, _check: str) -> None:
    """The kernel, the OS release, each cabled HCA's NUMA node (and its PCI address for the
    tools that join on it), the versions of the packages the fleet compares."""
    out.add("node", "kernel", hf.kernel, "uname -r")
    out.add("node", "os", hf.os, "/etc/os-release")
    cabled = {h.device for h in out.node.hcas}
    for dev, pci in sorted(hf.hcas.items()):
        if dev not in cabled:
            continue
        if pci.bdf:
            out.pci[dev] = pci.bdf
        src = f"host-facts: /sys/class/infiniband/{dev}/device"
        out.add(dev, "numa", fact_num(pci.numa), src)
    for name, prefixes in PACKAGES.items():
        found = sorted(
            v
            for p, v in hf.packages.items()
            if p.startswith(prefixes) and not p.endswith(("-dev", "-devel")) and "-dev-" not in p
        )
        if found:
            out.add("node", name, ",".join(found), "dpkg-query -W")


TOOL = Tool(
    "host-facts",
    "kernel, OS, HCA PCI addresses and package versions (fleet facts)",
    parse=parse_host_facts,
    check=check,
    plan=plan,
    order=42,
    facts=facts,
)
