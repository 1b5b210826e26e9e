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
from rackops.parsers.lspci import ACS_REDIRECT_FLAGS, link_capable
from rackops.tools.mlxconfig import MLXCONFIG_KEYS

# the node checks whose outputs hold fleet facts (tool registry names)
SOURCES = (
    "nvidia-smi-xml",
    "ibv_devinfo",
    "ofed_info",
    "host-facts",
    "dmidecode",
    "lspci",
    "mlxconfig",
    "nvidia-smi-topo",
)

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


def gpu_device(i: int) -> str:
    return f"gpu{i}"


def _bdf(bus_id: str | None) -> str | None:
    """nvidia-smi's ``00000000:18:00.0`` → lspci's ``0000:18:00.0``."""
    if not bus_id:
        return None
    return bus_id.lower()[-12:]


def _num(v: float | int | None) -> str | None:
    if v is None:
        return None
    return f"{v:g}" if isinstance(v, float) else str(v)


MAX_VALUE = 128  # the longest fact a tool prints is a VBIOS or a package version list


def _clean(value: str) -> str:
    """A fact as compared, stored and shown: a value no tool prints (too long, control
    characters) becomes a marker that differs from any real one, never the text itself."""
    if len(value) > MAX_VALUE or not value.isprintable():
        return f"<unreadable: {len(value)} characters>"
    return value


class _Out:
    def __init__(self) -> None:
        self.facts: list[Fact] = []

    def add(self, device: str, name: str, value: object, source: str, where: str = "") -> None:
        if value is None or value == "":
            return
        self.facts.append(Fact(device, name, _clean(str(value)), source, _clean(where)))


def _smi(out: _Out, smi: Any) -> dict[str, str]:
    """GPU facts; returns GPU device → its PCI address."""
    src = "nvidia-smi -q -x"
    out.add("node", "driver", smi.driver_version, src)
    out.add("node", "cuda", smi.cuda_version, src)
    bdfs: dict[str, str] = {}
    for g in smi.gpus:
        dev = gpu_device(g.index)
        if (bdf := _bdf(g.bus_id)) is not None:
            bdfs[dev] = bdf
        out.add(dev, "model", g.name, src)
        out.add(dev, "vbios", g.vbios_version, src)
        out.add(dev, "power_limit_w", _num(g.power_limit_w), src)
        out.add(dev, "app_clock_graphics_mhz", _num(g.app_clock_graphics_mhz), src)
        out.add(dev, "app_clock_memory_mhz", _num(g.app_clock_memory_mhz), src)
        out.add(dev, "ecc_mode", g.ecc_mode, src)
        out.add(dev, "mig_mode", g.mig_mode, src)
        out.add(dev, "compute_mode", g.compute_mode, src)
        out.add(dev, "persistence", g.persistence_mode, src)
    return bdfs


def _pcie(out: _Out, lspci: Any, dev: str, bdf: str) -> None:
    d = lspci.device(bdf)
    if d is None or d.caps_denied:
        return
    src = "lspci -vvv"
    if d.link_sta is not None:
        out.add(dev, "pcie.speed", _num(d.link_sta.speed_gts), src, bdf)
        out.add(dev, "pcie.width", _num(d.link_sta.width), src, bdf)
    speed, width = link_capable(lspci, d)
    out.add(dev, "pcie.speed_max", _num(speed), src, bdf)
    out.add(dev, "pcie.width_max", _num(width), src, bdf)


def acs_state(bridge: Any) -> str:
    """A bridge's ACS as one comparable word: the flags that send peer-to-peer traffic up to
    the root complex (``ACS_REDIRECT_FLAGS``, the lspci check's rule), or ``off``; ``none``
    without the capability."""
    ctl = bridge.acs_ctl
    if ctl is None:
        return "none"
    on = [k for k in ACS_REDIRECT_FLAGS if ctl.get(k, False)]
    return "+".join(on) if on else "off"


def _lspci(out: _Out, lspci: Any, node: Node, gpus: dict[str, str], hcas: dict[str, str]) -> None:
    for dev, bdf in sorted({**gpus, **hcas}.items()):
        _pcie(out, lspci, dev, bdf)
    for h in node.hcas:  # the bridges a GPUDirect transfer of each rail crosses
        gpu, hbdf = gpu_device(h.gpu), hcas.get(h.device)
        if gpu not in gpus or hbdf is None:
            continue
        if lspci.device(gpus[gpu]) is None or lspci.device(hbdf) is None:
            continue
        for i, bridge in enumerate(lspci.path_between(gpus[gpu], hbdf)):
            if not bridge.caps_denied:  # not root: unknown, never "none" (lspci says so)
                out.add(gpu, f"acs.{h.device}.{i}", acs_state(bridge), "lspci -vvv", bridge.bdf)


def node_facts(node: Node, parsed: Mapping[str, Any]) -> list[Fact]:
    """Every fleet fact of one node from its parsed node-check outputs (tool name → parsed
    output; per-HCA tools as ``mlxconfig/mlx5_0``). A tool missing here gives no facts: its
    own step already says why it could not be read."""
    out = _Out()
    gpus: dict[str, str] = {}
    if (smi := parsed.get("nvidia-smi-xml")) is not None:
        gpus = _smi(out, smi)
    cabled = {h.device for h in node.hcas}  # a name from the node's output is only a key if
    if (ibv := parsed.get("ibv_devinfo")) is not None:  # the inventory names that device
        for h in (x for x in ibv.hcas if x.hca_id in cabled):
            out.add(h.hca_id, "firmware", h.fw_ver, "ibv_devinfo")
            out.add(h.hca_id, "psid", h.board_id, "ibv_devinfo")
    if (ofed := parsed.get("ofed_info")) is not None:
        out.add("node", "ofed", ofed.version, "ofed_info -s")
    hcas: dict[str, str] = {}
    if (hf := parsed.get("host-facts")) is not None:
        _host(out, hf, hcas, cabled)
    if (dmi := parsed.get("dmidecode")) is not None and dmi.bios is not None:
        out.add("node", "bios", dmi.bios.version, "dmidecode -t bios")
        out.add("node", "bios_vendor", dmi.bios.vendor, "dmidecode -t bios")
        out.add("node", "bios_date", dmi.bios.release_date, "dmidecode -t bios")
        if dmi.system is not None:
            model = " ".join(x for x in (dmi.system.manufacturer, dmi.system.product_name) if x)
            out.add("node", "system", model, "dmidecode -t system")
    if (lspci := parsed.get("lspci")) is not None:
        _lspci(out, lspci, node, gpus, hcas)
    for h in node.hcas:
        if (cfg := parsed.get(f"mlxconfig/{h.device}")) is not None and cfg.devices:
            dev = cfg.devices[0]
            for key in MLXCONFIG_KEYS:
                out.add(h.device, f"mlxconfig.{key}", dev.value(key), f"mlxconfig -d {h.device} q")
    if (topo := parsed.get("nvidia-smi-topo")) is not None:
        _topo(out, topo, node)
    return out.facts


PACKAGES = {  # fact name → package name prefixes (dpkg and rpm names)
    "pkg.fabric_manager": ("nvidia-fabricmanager", "nvidia-fabric-manager"),
    "pkg.nccl": ("libnccl2", "libnccl"),
    "pkg.dcgm": ("datacenter-gpu-manager",),
}


def _host(out: _Out, hf: Any, hcas: dict[str, str], cabled: set[str]) -> None:
    src = "host-facts"
    out.add("node", "kernel", hf.kernel, "uname -r")
    out.add("node", "os", hf.os, "/etc/os-release")
    for dev, pci in sorted(hf.hcas.items()):
        if dev not in cabled:
            continue
        if pci.bdf:
            hcas[dev] = pci.bdf
        out.add(dev, "numa", _num(pci.numa), f"{src}: /sys/class/infiniband/{dev}/device")
    for name, prefixes in PACKAGES.items():
        found = sorted(
            v
            for p, v in hf.packages.items()
            if p.startswith(prefixes) and not p.endswith(("-dev", "-devel")) and "-dev-" not in p
        )
        if found:
            out.add("node", name, ",".join(found), "dpkg-query -W")


def _topo(out: _Out, topo: Any, node: Node) -> None:
    nic = {dev: label for label, dev in topo.nic_names.items()}
    for h in node.hcas:
        gpu = f"GPU{h.gpu}"
        label = nic.get(h.device, h.device)
        rel = topo.matrix.get(gpu, {}).get(label)
        out.add(gpu_device(h.gpu), f"topo.{h.device}", rel, "nvidia-smi topo -m")
        numa = topo.numa_affinity.get(gpu)
        out.add(gpu_device(h.gpu), "numa", numa, "nvidia-smi topo -m")
