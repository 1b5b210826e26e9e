"""The facts a fleet must share, read from one node's tool outputs.

A :class:`Fact` is one value of one device of one node (``node``: host-wide, ``gpu3``,
``mlx5_2``) with the command it came from. Which facts there are, how much a difference
weighs and what fixes it is :data:`KINDS`, written once: the golden comparison, the majority
and the version floors (``rackops/fleet/compare.py``) and the capture
(``rackops/validate/golden.py``) all read it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rackops.findings import Status
from rackops.inventory.model import Node
from rackops.tools import get as get_tool
from rackops.tools import registry
from rackops.tools.base import FactSink


def sources() -> tuple[str, ...]:
    """The tools whose outputs hold fleet facts (those that declare ``facts``)."""
    return tuple(sorted(t.name for t in registry().values() if t.facts is not None))


# mlxconfig keys that change what GPUDirect RDMA and RoCE do (config.md §8; NVIDIA's
# GPUDirect and ATS/ACS guidance, docs/research/issue-23-mlxconfig-outputs.md §16)


@dataclass(frozen=True)
class Kind:
    label: str  # how a message names it
    status: Status  # what a difference is
    fix: str  # what to do about a difference
    floor: str | None = None  # the profile's floor component judged on it
    # the fix group (findings.ACTIONS) where it is not the device's own (a GPU's, an
    # HCA's, the node's): software and settings on a card are the node's to fix
    action: str | None = None


FLASH = "flash the golden firmware (mlxfwmanager -u, or the vendor's update bundle)"
KINDS: dict[str, Kind] = {
    # host-wide versions
    "driver": Kind(
        "driver", Status.FAIL, "install the pinned driver (rackops provision)", "driver"
    ),
    "cuda": Kind("CUDA", Status.FAIL, "install the pinned driver (rackops provision)", "cuda"),
    "ofed": Kind("OFED", Status.FAIL, "install the pinned OFED (rackops provision)", "ofed"),
    "kernel": Kind("kernel", Status.FAIL, "boot the golden kernel", "kernel"),
    "os": Kind("OS release", Status.FAIL, "reinstall from the golden image"),
    "bios": Kind("BIOS", Status.FAIL, "flash the golden BIOS (BMC or vendor tool)", "bios"),
    "bios_date": Kind("BIOS date", Status.WARN, "flash the golden BIOS"),
    "bios_vendor": Kind("BIOS vendor", Status.FAIL, "a board of another vendor: check the order"),
    "system": Kind("system model", Status.FAIL, "a different server model: check the order"),
    "pkg.fabric_manager": Kind(
        "fabric manager",
        Status.FAIL,
        "install the fabric manager of the driver (rackops provision)",
        "fabric_manager",
    ),
    "pkg.nccl": Kind("NCCL", Status.FAIL, "install the golden libnccl2", "nccl"),
    "pkg.dcgm": Kind("DCGM", Status.WARN, "install the pinned DCGM (rackops provision)"),
    # per GPU
    "model": Kind("GPU model", Status.FAIL, "a different GPU: check the order"),
    "vbios": Kind(
        "VBIOS", Status.FAIL, "flash the golden VBIOS (nvfwupd / vendor bundle)", "vbios"
    ),
    "power_limit_w": Kind(
        "power limit (W)", Status.FAIL, "nvidia-smi -i GPU -pl WATTS, or reset it (-pl default)"
    ),
    "app_clock_graphics_mhz": Kind(
        "application clock (MHz)", Status.WARN, "nvidia-smi -i GPU -rac (reset application clocks)"
    ),
    "app_clock_memory_mhz": Kind(
        "memory application clock (MHz)", Status.WARN, "nvidia-smi -i GPU -rac"
    ),
    "ecc_mode": Kind("ECC mode", Status.FAIL, "nvidia-smi -i GPU -e 1, then reset the GPU"),
    "mig_mode": Kind("MIG mode", Status.FAIL, "nvidia-smi -i GPU -mig 0 (or as golden)"),
    "compute_mode": Kind("compute mode", Status.WARN, "nvidia-smi -i GPU -c DEFAULT"),
    "persistence": Kind(
        "persistence mode", Status.WARN, "systemctl enable --now nvidia-persistenced"
    ),
    "numa": Kind(
        "NUMA node", Status.FAIL, "the device sits in another slot/socket: check the riser"
    ),
    "topo": Kind(
        "path to its rail HCA", Status.FAIL, "GPU and HCA are not behind one switch: check the slot"
    ),
    # per HCA
    "firmware": Kind("firmware", Status.FAIL, FLASH, "hca_firmware", action="node"),
    "psid": Kind("PSID", Status.FAIL, "a card of another board/OEM (PSID): swap it or cross-flash"),
    # PCIe (GPU and HCA)
    "pcie.speed": Kind(
        "PCIe link speed (GT/s)",
        Status.FAIL,
        "reseat the card / check the riser; a link below its capability retrained down",
    ),
    "pcie.width": Kind(
        "PCIe link width", Status.FAIL, "reseat the card / check the riser and slot"
    ),
    "pcie.speed_max": Kind(
        "PCIe capable speed (GT/s)", Status.FAIL, "a different card or slot generation"
    ),
    "pcie.width_max": Kind("PCIe capable width", Status.FAIL, "a different card or slot"),
    "acs": Kind(
        "ACS on the bridge",
        Status.FAIL,
        "disable ACS redirect on that bridge (setpci ECAP_ACS+0x6.w=0000, or BIOS: ACS off"
        " / pci=disable_acs_redir=BDF)",
        action="node",
    ),
    "mlxconfig": Kind(
        "mlxconfig",
        Status.FAIL,
        "mlxconfig -d DEV set KEY=VALUE as golden, then reboot (or mlxfwreset)",
        action="node",
    ),
}

# A GPU's current link speed drops at idle (power saving: 2.5 GT/s while idle is normal), so
# a GPU's pcie.speed is a WARN: it is read again under load (issue 24). An HCA does not
# downclock: its speed is a FAIL.
GPU_IDLE_SPEED = "pcie.speed"


def kind_of(name: str) -> Kind:
    """``mlxconfig.ATS_ENABLED`` → the ``mlxconfig`` kind, ``acs.1`` → ``acs``."""
    if name in KINDS:
        return KINDS[name]
    return KINDS[name.split(".", 1)[0]]


@dataclass(frozen=True)
class Fact:
    device: str  # "node" | "gpu3" | "mlx5_2"
    name: str  # a KINDS key, or "mlxconfig.KEY", "acs.N"
    value: str
    source: str  # the command
    where: str = ""  # a PCI address, where it says more than the device

    @property
    def key(self) -> tuple[str, str]:
        return (self.device, self.name)

    def status(self) -> Status:
        if self.name == GPU_IDLE_SPEED and self.device.startswith("gpu"):
            return Status.WARN
        return kind_of(self.name).status


MAX_VALUE = 128  # the longest fact a tool prints is a VBIOS or a package version list


def _clean(value: str) -> str:
    """A fact as compared, stored and shown: a value no tool prints (too long, control
    characters) becomes a marker that differs from any real one, never the text itself."""
    if len(value) > MAX_VALUE or not value.isprintable():
        return f"<unreadable: {len(value)} characters>"
    return value


def node_facts(node: Node, parsed: Mapping[str, Any]) -> list[Fact]:
    """Every fleet fact of one node from its parsed node-check outputs (check name → parsed
    output; per-HCA checks as ``mlxconfig/mlx5_0``), each read by the tool that knows its
    output (``Tool.facts``); the tools that join on the others' PCI addresses last. A tool
    missing here gives no facts: its own step already says why it could not be read."""
    sink = FactSink(node)
    tools = {check: get_tool(check.partition("/")[0]) for check in parsed}
    for check in sorted(parsed, key=lambda c: (tools[c].facts_join, tools[c].order, c)):
        read = tools[check].facts
        if read is not None:
            read(parsed[check], sink, check)
    return [
        Fact(device, name, _clean(str(value)), source, _clean(where))
        for device, name, value, source, where in sink.rows
    ]
