"""Lab scenarios: the simulated hardware of each node and the faults injected into it.

A scenario is YAML a user writes (``--scenario FILE``); every fault names where it
applies, and shows in hwsim's outputs there and nowhere else::

    hardware: {link_layer: Ethernet, rate_gbps: 400}     # overrides for every node
    formats: {nccl-tests: "2022"}                        # older output generations
    nodes:
      node02:
        faults:
          - {kind: cable_slow, hca: mlx5_1, peers: [node03], bw_gbps: 180}
          - {kind: switch_mtu, hca: mlx5_5, mtu: 1500}       # its leaf port drops jumbo
          - {kind: hca_port, hca: mlx5_6, settle_s: 4}       # trains late: Active after 4 s
          - {kind: miscabled, hca: mlx5_2, swap_with: node03}  # the two cables swapped
          - {kind: symbol_errors, hca: mlx5_4, ber: 1.0e-9}   # errors grow with traffic
      node04: {unreachable: true}
      node05:                          # --engine vm only: the kernel's own faults
        vm:
          - {kind: numa_memory, numa_node: 1, memory_mb: 768}  # no room for a 1 GiB page
          - {kind: irq_pinned, rail: 1, cpus: "0"}   # a boot script pins IRQs off-node
    fabric:                                                # a lab with --racks
      faults:
        - {kind: isl_errors, switch: leaf2-r3, per_packets: 10}    # a dirty uplink optic
        - {kind: isl_rate, switch: leaf1-r5}                       # the uplink at half rate
        - {kind: isl_miscabled, switch: leaf2-r6, spine_port: Ethernet16}  # wrong spine port
        # InfiniBand labs only (hardware: {link_layer: InfiniBand}; spine ports 3/1, ...):
        - {kind: sm, masters: 2}                                   # two master SMs (or 0)
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from rackops.errors import InventoryError
from rackops.tools import simulated_binaries
from rackops.yamlpos import read_yaml_file, yaml_error_location

HCA = r"^mlx5_\d+$"
DOMAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,31}")


class _F(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Fault(_F):
    kind: Literal[
        "hca_port",
        "link_rate",
        "cable_slow",
        "node_slow",
        "gpu_missing",
        "remap_pending",
        "ecc_uncorrectable",
        "dcgm_fail",
        "dcgm_all_skip",
        "nccl_degraded",
        "nccl_wrong",
        "hang",
        "missing",
        "garbled",
        "netdev_mtu",
        "switch_mtu",
        "nvlink_down",
        "nvlink_errors",  # gpu's NVLink `link` grows `counter` by `count` under the run's load
        "persistence_off",
        "fabric_manager_down",
        "gpu_processes",
        # the physical layer (issue 12): each grows or shows with traffic, where it is put
        "miscabled",  # swap_with: NODE (same leaf, ports swapped) or rail: R (other leaf)
        "symbol_errors",  # uncorrectable symbol errors at `ber` per bit received
        "ber",  # raw (pre-FEC) BER `ber`: FEC corrects it, only mlxlink/corrected bits show
        "optic_power",  # rx power of `lane` at `rx_power_dbm`
        "flap",  # the link goes down and retrains `count` times per test it carries
        "latency",  # the port adds latency: ib_*_lat through it reports `lat_us`
        # the fleet (issue 23): a node that differs from its siblings
        "hca_firmware",  # hca runs firmware `version` (default 28.39.1002)
        "vbios",  # gpu has VBIOS `version`
        "bios",  # the node's BIOS is `version`
        "pcie_downtrained",  # gpu or hca trained at `pcie_width` lanes / `pcie_gts` GT/s
        "acs_enabled",  # ACS redirect on the switch downstream port above gpu
        "mlxconfig",  # hca's firmware setting `key` is `value`
        "power_limit",  # gpu's power limit is `watts`
        # GPUs under load (issue 24): each shows only while a load runs on the GPU
        "thermal",  # gpu heats to its slowdown temperature under load (HW thermal slowdown)
        "power_brake",  # gpu's board asserts HW power brake under load
        "xid",  # gpu logs Xid `code`, `when` during the run's load or before the run
        "slow_gemm",  # gpu's GEMM (dcgmproftester -t 1004) at `factor` of its peers
        "slow_hbm",  # gpu's memory bandwidth (dcgmproftester -t 1005) at `factor`
        # a multi-node NVLink domain (issue 42): on a tray (hardware nvlink_domain)
        "fabric_insufficient",  # gpu: Completed/Insufficient Resources, clique 0, zero UUID
        "fabric_unhealthy",  # gpu: Completed/Success with health summary Unhealthy
        "fabric_clique",  # the tray (or gpu) joined partition `clique`, not the domain's
        "imex_down",  # the tray's IMEX daemon is down: UNAVAILABLE in every other tray's table
    ]
    hca: str | None = Field(default=None, pattern=HCA)
    state: Literal["Down", "Polling", "Disabled"] | None = None
    rate_gbps: int | None = Field(default=None, gt=0)
    width: Literal["1X", "2X", "4X"] | None = None
    peers: tuple[str, ...] = ()
    bw_gbps: float | None = Field(default=None, gt=0)
    factor: float | None = Field(default=None, gt=0, le=1)
    gpu: int | None = Field(default=None, ge=0)
    link: int | None = Field(default=None, ge=0)
    count: int | None = Field(default=None, ge=1)
    plugin: str | None = None
    min_level: int | None = Field(default=None, ge=1, le=4)
    message: str | None = None
    tool: str | None = None
    keep: float | None = Field(default=None, gt=0, lt=1)
    mtu: int | None = None
    swap_with: str | None = Field(default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    rail: int | None = Field(default=None, ge=0, le=31)
    clique: int | None = Field(default=None, ge=0, le=65535)
    ber: float | None = Field(default=None, gt=0, lt=1)
    lane: int | None = Field(default=None, ge=1, le=8)
    rx_power_dbm: float | None = Field(default=None, ge=-40, le=10)
    lat_us: float | None = Field(default=None, gt=0)
    version: str | None = Field(default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
    pcie_width: int | None = Field(default=None, ge=0, le=16)
    pcie_gts: float | None = Field(default=None, gt=0, le=64)
    key: str | None = Field(default=None, pattern=r"^[A-Z][A-Z0-9_]{0,63}$")
    value: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_()\[\].-]{1,64}$")
    watts: float | None = Field(default=None, gt=0, le=2000)
    code: int | None = Field(default=None, ge=1, le=65535, description="xid: the Xid code")
    when: Literal["during", "before"] | None = None  # xid: in the run's load, or before it
    pending: bool | None = None  # mlxconfig: set for the next boot only, not in force
    counter: Literal["replay", "recovery", "crc"] | None = None  # nvlink_errors
    settle_s: float | None = Field(
        default=None, ge=0, le=600, description="hca_port: Active this long after first seen"
    )

    @model_validator(mode="after")
    def _needs(self) -> Fault:
        need = {
            "hca_port": ("hca",),
            "link_rate": ("hca", "rate_gbps"),
            "cable_slow": ("hca",),
            "gpu_missing": ("gpu",),
            "remap_pending": ("gpu",),
            "ecc_uncorrectable": ("gpu",),
            "dcgm_fail": ("plugin",),
            "hang": ("tool",),
            "missing": ("tool",),
            "garbled": ("tool",),
            "nvlink_down": ("gpu", "link"),
            "nvlink_errors": ("gpu", "link"),
            "switch_mtu": ("hca", "mtu"),
            "miscabled": ("hca",),
            "symbol_errors": ("hca",),
            "ber": ("hca",),
            "optic_power": ("hca",),
            "flap": ("hca",),
            "latency": ("hca", "lat_us"),
            "hca_firmware": ("hca",),
            "vbios": ("gpu",),
            "acs_enabled": ("gpu",),
            "mlxconfig": ("hca", "key", "value"),
            "power_limit": ("gpu",),
            "thermal": ("gpu",),
            "power_brake": ("gpu",),
            "xid": ("gpu", "code"),
            "slow_gemm": ("gpu",),
            "slow_hbm": ("gpu",),
        }.get(self.kind, ())
        missing = [k for k in need if getattr(self, k) is None]
        if missing:
            raise ValueError(f"fault {self.kind} needs {', '.join(missing)}")
        if self.kind == "miscabled" and (self.swap_with is None) == (self.rail is None):
            raise ValueError(
                "fault miscabled needs exactly one of swap_with (a node on the same leaf) "
                "or rail (the rail whose leaf the cable sits on)"
            )
        if self.kind == "acs_enabled" and self.gpu is not None and self.gpu >= 8:
            raise ValueError("fault acs_enabled: hwsim puts GPUs 0-7 behind PCIe switches")
        if self.kind == "pcie_downtrained" and (self.gpu is None) == (self.hca is None):
            raise ValueError("fault pcie_downtrained needs exactly one of gpu or hca")
        if self.kind == "pcie_downtrained" and self.pcie_width is None and self.pcie_gts is None:
            raise ValueError("fault pcie_downtrained needs pcie_width or pcie_gts")
        simulated = simulated_binaries()
        if self.tool is not None and self.tool not in simulated:
            raise ValueError(f"tool {self.tool!r} is not simulated; one of {', '.join(simulated)}")
        return self


class VmFault(_F):
    """A fault of a VM lab node (``--engine vm``), in its real kernel: where a container
    lab can only simulate the file, here the kernel itself gets it wrong."""

    kind: Literal["numa_memory", "irq_pinned"]
    numa_node: Literal[0, 1] | None = Field(
        default=None, description="numa_memory: the NUMA node given less memory"
    )
    memory_mb: int | None = Field(
        default=None, ge=256, le=5120, description="numa_memory: that node's memory"
    )
    rail: int | None = Field(default=None, ge=0, le=1, description="irq_pinned: the rail NIC")
    cpus: str | None = Field(
        default=None,
        pattern=r"^\d{1,3}(?:-\d{1,3})?(?:,\d{1,3}(?:-\d{1,3})?){0,15}$",
        description="irq_pinned: the CPU list its completion IRQs are pinned to at boot",
    )

    @model_validator(mode="after")
    def _complete(self) -> VmFault:
        need = {"numa_memory": ("numa_node", "memory_mb"), "irq_pinned": ("rail", "cpus")}
        missing = [k for k in need[self.kind] if getattr(self, k) is None]
        if missing:
            raise ValueError(f"vm fault {self.kind} needs {', '.join(missing)}")
        return self


class NodeSpec(_F):
    hardware: dict[str, Any] = Field(default_factory=dict)
    faults: tuple[Fault, ...] = ()
    unreachable: bool = False
    # a VM lab's faults (--engine vm): the kernel's own, e.g. a hugepage pool it could not
    # fill on a NUMA node short of memory, or IRQs a boot script pins off the NIC's node
    vm: tuple[VmFault, ...] = ()


ISL_KINDS = ("isl_errors", "isl_rate", "isl_miscabled")


class FabricFault(_F):
    """A fault of the fabric past the host ports (a lab with ``--racks``). The ISL faults
    name the leaf whose one uplink they hit; ``sm`` is the subnet manager's."""

    kind: Literal["isl_errors", "isl_rate", "isl_miscabled", "sm"]
    switch: str | None = Field(
        default=None, pattern=r"^leaf\d+-r\d+$", description="the leaf, e.g. leaf2-r3"
    )
    per_packets: int = Field(
        default=10, ge=1, le=10**9, description="isl_errors: one error per N packets received"
    )
    spine_port: str | None = Field(
        default=None,
        pattern=r"^(?:Ethernet|swp)?\d{1,3}(?:/\d{1,2})?$",
        description="isl_miscabled: the spine port the uplink really sits in, e.g. 3/1 "
        "(InfiniBand) or Ethernet16 (SONiC spines)",
    )
    masters: Literal[0, 2] | None = Field(
        default=None, description="sm: no master subnet manager (0) or two (2)"
    )

    @model_validator(mode="after")
    def _complete(self) -> FabricFault:
        if self.kind in ISL_KINDS and self.switch is None:
            raise ValueError(f"{self.kind} needs 'switch': the leaf whose uplink it hits")
        if self.kind == "isl_miscabled" and self.spine_port is None:
            raise ValueError("isl_miscabled needs 'spine_port': where the uplink really is")
        if self.kind == "sm" and self.masters is None:
            raise ValueError("sm needs 'masters': 0 (none) or 2 (two)")
        return self


LAB_GPU_COUNTS = (4, 8)  # GPUs (and HCAs, rails) per lab node


class FabricSpec(_F):
    faults: tuple[FabricFault, ...] = ()


class Scenario(_F):
    hardware: dict[str, Any] = Field(default_factory=dict)
    formats: dict[str, str] = Field(default_factory=dict)
    nodes: dict[str, NodeSpec] = Field(default_factory=dict)
    fabric: FabricSpec = FabricSpec()

    @model_validator(mode="after")
    def _ib_faults(self) -> Scenario:
        if any(f.kind == "sm" for f in self.fabric.faults) and not self.ib:
            raise ValueError(
                "fabric fault sm: a subnet manager is InfiniBand's; set "
                "hardware.link_layer: InfiniBand"
            )
        return self

    def refuse_engine(self, engine: str) -> None:
        """Faults the engine cannot show are refused, not ignored: a VM lab runs no hwsim
        (its RDMA is the kernel's Soft-RoCE), a container lab has no kernel of its own."""
        for name, node in sorted(self.nodes.items()):
            if engine == "vm" and (node.faults or node.hardware):
                raise InventoryError(
                    f"nodes.{name}: faults and hardware are the simulated hardware's, which a "
                    "VM lab does not run; use vm: [...] faults (numa_memory, irq_pinned)"
                )
            if engine != "vm" and node.vm:
                raise InventoryError(
                    f"nodes.{name}.vm: VM faults need --engine vm (a container shares this "
                    "machine's kernel)"
                )
        if engine == "vm" and (self.fabric.faults or self.hardware or self.formats):
            raise InventoryError(
                "a VM lab takes node vm: faults only (no hardware, formats or fabric faults)"
            )
        _ = self.nvlink_domain  # not a name, or not 4-GPU trays on RoCE: refused here, first

    @property
    def ib(self) -> bool:
        """An InfiniBand lab: its fabric is swept by ibdiagnet, its leaves are Quantum."""
        return self.hardware.get("link_layer") == "InfiniBand"

    @property
    def nvlink_domain(self) -> str | None:
        """The rack's trays form one multi-node NVLink domain of this name (hardware
        ``nvlink_domain``: GB200 NVL72 trays, reduced to the lab's nodes): a lab of 4-GPU
        trays, one rack, RoCE between them."""
        domain = self.hardware.get("nvlink_domain")
        if domain is None:
            return None
        if not isinstance(domain, str) or not DOMAIN_NAME.fullmatch(domain):
            raise InventoryError(f"hardware.nvlink_domain {domain!r}: a name (letters, digits, -)")
        if self.gpus != 4 or self.ib:
            raise InventoryError(
                "hardware.nvlink_domain: a lab NVLink domain is of 4-GPU trays on RoCE "
                "(profile lab-gb200-roce400): set hardware.gpus: 4, no link_layer"
            )
        return domain

    @property
    def gpus(self) -> int:
        """GPUs per node, and so HCAs and rails (GPU n beside HCA n on rail n): the rack's
        ``hardware.gpus`` / ``hardware.hcas`` (8 when neither is set; 4: a 4-GPU node)."""
        gpus, hcas = self.hardware.get("gpus"), self.hardware.get("hcas")
        if gpus is not None and hcas is not None and gpus != hcas:
            raise InventoryError(
                f"hardware: gpus {gpus} and hcas {hcas}: the lab pairs GPU n with HCA n on rail "
                "n, so the two counts are one (set both, or one of them)"
            )
        n = gpus if gpus is not None else hcas if hcas is not None else 8
        if not isinstance(n, int) or isinstance(n, bool) or n not in LAB_GPU_COUNTS:
            raise InventoryError(
                f"hardware.gpus {n!r}: a lab node has one of "
                + ", ".join(map(str, LAB_GPU_COUNTS))
                + " GPUs (a profile per count: lab/inventory.py)"
            )
        for name, node in self.nodes.items():
            if {"gpus", "hcas"} & node.hardware.keys():
                raise InventoryError(
                    f"nodes.{name}.hardware: the GPU and HCA count is the rack's "
                    "(hardware.gpus), the same on every node"
                )
        return n

    def for_hwsim(self, names: list[str], rails: dict[str, dict[int, str]]) -> dict[str, Any]:
        """The JSON every target reads: scenario + each node's index and rail addresses."""
        nodes = {}
        for i, name in enumerate(names, 1):
            spec = self.nodes.get(name, NodeSpec())
            nodes[name] = {
                "index": i,
                "rails": {str(r): ip for r, ip in rails.get(name, {}).items()},
                "hardware": spec.hardware,
                "faults": [f.model_dump(exclude_none=True) for f in spec.faults],
            }
        return {
            "hardware": self.hardware,
            "formats": self.formats,
            "nodes": nodes,
            "fabric": {"faults": [f.model_dump(exclude_none=True) for f in self.fabric.faults]},
        }


def load_scenario(path: str | Path | None) -> Scenario:
    if path is None:
        return Scenario()
    p = Path(path)
    try:
        data, lines = read_yaml_file(p)
    except OSError as exc:
        raise InventoryError(f"cannot read scenario: {exc.strerror}", path=str(p)) from exc
    except yaml.YAMLError as exc:
        line, reason = yaml_error_location(exc)
        raise InventoryError(reason, path=str(p), line=line) from exc
    try:
        return Scenario.model_validate(data or {})
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = tuple(err["loc"])
        line = next((lines[loc[:n]] for n in range(len(loc), 0, -1) if loc[:n] in lines), None)
        raise InventoryError(
            f"{'.'.join(map(str, loc))}: {err['msg']}", path=str(p), line=line
        ) from exc
