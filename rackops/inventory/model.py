"""The typed, immutable model of a rack, built from an Ansible inventory.

cluster → nodes (address, profile, GPUs, cabling map) → switches → fabric
design (type, MTU, RoCE QoS intent) and the software versions to pin.

Inventory variable → model field:

=========================  ============================================
``ansible_host``/``_port``  ``Node.address`` / ``Switch.address``, ``ssh_port``
``rackops_profile``         ``Node.profile`` (a file in validators/profiles)
``rackops_gpus``            ``Node.gpus`` (count; default: the profile's)
``rackops_hcas``            ``Node.hcas`` (the cabling map)
``rackops_host_qos``        ``Node.qos`` (per-host overrides of the design)
``rackops_host_tuning``     ``Node.tuning`` (hugepages, IRQ affinity, irqbalance)
``rackops_hw_root``         ``Node.hw_root`` (lab only: prefix of simulated /sys, /proc)
``rackops_switch_os``       ``Switch.os`` (default: its sonic/cumulus/eos group)
``rackops_switch_role``     ``Switch.role``
``rackops_switch_rail``     ``Switch.rail`` (rail of a rail-optimised leaf)
``rackops_switch_ports``    ``Switch.ports``
``rackops_switch_mtu``      ``Switch.mtu`` (default: the design's switch MTU)
``rackops_switch_qos``      ``Switch.qos`` (per-switch overrides)
``rackops_switch_os_version`` ``Switch.os_version`` (NOS release: NVUE syntax, e.g. ``5.15``)
``rackops_switch_port_lanes`` ``Switch.port_lanes`` (SONiC ``PORT.lanes`` per port)
``rackops_switch_port_speed_gbps`` ``Switch.port_speed_gbps`` (default 400)
``rackops_switch_cable_m``  ``Switch.cable_m`` (per-port cable length, metres: headroom)
``rackops_switch_buffers``  ``Switch.buffers`` (SONiC buffer model and platform numbers)
``rackops_switch_uplinks``  ``Switch.uplinks`` (a leaf's cables to spines: port, spine, port)
``rackops_switch_plane``    ``Switch.plane`` (the spine plane a leaf's uplinks or a spine is in)
``rackops_fabric``          ``Cluster.fabric``
``rackops_versions``        ``Cluster.versions``
=========================  ============================================
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Self, cast

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from rackops.names import address_problem, host_name_problem, port_problem
from rackops.scale import MAX_HCAS, Size

Dscp = int
Priority = int


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _priorities(values: tuple[int, ...]) -> tuple[int, ...]:
    for v in values:
        if not 0 <= v <= 7:
            raise ValueError(f"priority {v} is not in 0..7")
    if len(set(values)) != len(values):
        raise ValueError("a priority is listed twice")
    return tuple(sorted(values))


# names that reach commands, scripts and switch configs: no spaces, quotes, $ ; | & or
# newlines (a port name is a line of an EOS config; a netdev is a word of a shell script)
PORT_NAME = r"^[A-Za-z0-9][A-Za-z0-9/_.:-]*$"
PACKAGE_VERSION = r"^[0-9A-Za-z][0-9A-Za-z.+~:-]*$"  # Debian/RPM version characters


def _host_name(v: str) -> str:
    problem = host_name_problem(v)
    if problem:
        raise ValueError(problem)
    return v


def _address_of(v: str) -> str:
    problem = address_problem(v)
    if problem:
        raise ValueError(f"{problem}; ansible_host is where rackops connects")
    return v


class Hca(_Frozen):
    """One HCA of a node and where its cable goes."""

    device: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9_]*$", description="e.g. mlx5_0")
    netdev: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9_.-]*$", description="e.g. ibp24s0")
    rail: int = Field(ge=0, le=63)
    gpu: int = Field(ge=0, le=71, description="index of the GPU this HCA pairs with")
    switch: str = Field(min_length=1)
    port: str = Field(pattern=PORT_NAME)

    _switch = field_validator("switch")(classmethod(lambda cls, v: _host_name(v)))
    address: str | None = Field(default=None, description="fabric IP address (RoCE)")

    @field_validator("address")
    @classmethod
    def _ip(cls, v: str | None) -> str | None:
        import ipaddress

        if v is not None:
            try:
                ipaddress.ip_address(v)
            except ValueError as exc:
                raise ValueError(f"{v!r} is not an IP address") from exc
        return v


class HostQos(_Frozen):
    """Per-host overrides of the RoCE design; empty means 'as designed'."""

    dscp2prio: dict[Dscp, Priority] = Field(default_factory=dict)
    pfc_priorities: tuple[Priority, ...] | None = None
    cnp_dscp: Dscp | None = Field(default=None, ge=0, le=63)
    nccl_ib_tc: int | None = Field(default=None, ge=0, le=255)
    mtu: int | None = Field(default=None, ge=576, le=9216)

    @field_validator("pfc_priorities")
    @classmethod
    def _check_pfc(cls, v: tuple[int, ...] | None) -> tuple[int, ...] | None:
        return None if v is None else _priorities(v)

    @field_validator("dscp2prio")
    @classmethod
    def _check_map(cls, v: dict[int, int]) -> dict[int, int]:
        return _check_dscp_map(v, "priority")


def _check_dscp_map(mapping: dict[int, int], what: str) -> dict[int, int]:
    for dscp, value in mapping.items():
        if not 0 <= dscp <= 63:
            raise ValueError(f"DSCP {dscp} is not in 0..63")
        if not 0 <= value <= 7:
            raise ValueError(f"{what} {value} for DSCP {dscp} is not in 0..7")
    return mapping


class Hugepages(_Frozen):
    """The hugepage pool a node must have: per NUMA node, or a total the kernel spreads."""

    size_kb: Literal[2048, 1048576] = Field(
        default=1048576, description="page size: 2048 (2 MiB) or 1048576 (1 GiB)"
    )
    per_node: dict[int, int] = Field(
        default_factory=dict, description="NUMA node -> pages on that node"
    )
    total: int | None = Field(default=None, ge=0, description="pages in all, kernel-spread")
    boot: bool = Field(default=True, description="reserve on the kernel command line (GRUB)")
    max_ram_pct: int = Field(default=50, ge=1, le=90, description="policy cap, % of RAM")

    @model_validator(mode="after")
    def _one_way(self) -> Self:
        if self.per_node and self.total is not None:
            raise ValueError("give per_node or total, not both")
        if not self.per_node and self.total is None:
            raise ValueError("give per_node (NUMA node: pages) or total (pages)")
        for numa, pages in self.per_node.items():
            if not 0 <= numa <= 63 or pages < 0:
                raise ValueError(f"per_node {numa}: {pages} is not a NUMA node 0..63: pages >= 0")
        return self

    @property
    def pages(self) -> int:
        return sum(self.per_node.values()) if self.per_node else int(self.total or 0)

    @property
    def size_label(self) -> str:
        return "1G" if self.size_kb == 1048576 else "2M"


class HostTuning(_Frozen):
    """Host tuning beyond QoS (config.md §4-§5): hugepages and fabric NIC IRQ affinity."""

    hugepages: Hugepages | None = None
    irq_affinity: bool = Field(default=True, description="pin NIC IRQs to NUMA-local CPUs")
    irqbalance: Literal["stop", "ban"] = Field(
        default="ban", description="stop irqbalance, or keep it off the fabric NIC IRQs"
    )


class NvlinkDomain(_Frozen):
    """Where a compute tray sits in a multi-node NVLink domain (GB200/GB300 NVL72): the
    domain's name (one rack's 18 trays), the tray's slot in it, and the partition's clique
    when the site pins one (the NVLink switch trays assign it)."""

    domain: str
    slot: int = Field(ge=1, le=144)
    clique: int | None = Field(default=None, ge=1, le=65535)
    # the domain's GPUs where it is smaller than the tray profile's (gpu.nvlink_domain): a
    # GB200 NVL36 rack of 9 trays, the lab's domain of 4; every tray of it says the same
    gpus: int | None = Field(default=None, ge=2, le=576)

    _names = field_validator("domain")(classmethod(lambda cls, v: _host_name(v)))

    def size(self, profile_gpus: int) -> int:
        """The domain's GPUs: its own ``gpus`` where set, else the profile's domain."""
        return self.gpus if self.gpus is not None else profile_gpus


class Node(_Frozen):
    name: str
    address: str

    _names = field_validator("name")(classmethod(lambda cls, v: _host_name(v)))
    _address = field_validator("address")(classmethod(lambda cls, v: _address_of(v)))
    ssh_port: int = Field(default=22, ge=1, le=65535)
    profile: str = Field(min_length=1)
    gpus: int = Field(ge=1, le=72)
    hcas: tuple[Hca, ...] = Field(max_length=MAX_HCAS)  # [] (said so): a GPU-only node
    qos: HostQos = HostQos()
    tuning: HostTuning = HostTuning()
    hw_root: str = Field(default="", pattern=r"^(/[A-Za-z0-9_.-]+)*$")
    # false: the distribution's inbox RDMA stack, no DOCA-OFED, MFT or GPU driver (the VM
    # lab's Soft-RoCE nodes); checks of NVIDIA-only programs are not run there
    nvidia_stack: bool = True
    nvlink: NvlinkDomain | None = None  # a tray of a multi-node NVLink domain

    @property
    def mtu(self) -> int | None:
        """This node's designed netdev MTU, when it overrides the fabric's."""
        return self.qos.mtu


class SwitchQos(_Frozen):
    """Per-switch overrides of the RoCE design; empty means 'as designed'."""

    dscp_to_tc: dict[Dscp, int] = Field(default_factory=dict)
    pfc_priorities: tuple[Priority, ...] | None = None
    cnp_scheduler: Literal["strict", "dwrr"] | None = None

    @field_validator("pfc_priorities")
    @classmethod
    def _check_pfc(cls, v: tuple[int, ...] | None) -> tuple[int, ...] | None:
        return None if v is None else _priorities(v)

    @field_validator("dscp_to_tc")
    @classmethod
    def _check_map(cls, v: dict[int, int]) -> dict[int, int]:
        return _check_dscp_map(v, "traffic class")


class LosslessHeadroom(_Frozen):
    """A static lossless PG profile (SONiC traditional model): the platform's
    ``pg_profile_lookup.ini`` row for the port speed and cable length, in bytes."""

    size: int = Field(ge=0)
    xon: int = Field(ge=0)
    xoff: int = Field(gt=0)
    dynamic_th: int = Field(default=0, ge=-8, le=8)


class SwitchBuffers(_Frozen):
    """SONiC buffers. ``dynamic`` (the default; NVIDIA Spectrum platforms): buffermgrd
    computes the lossless headroom from speed, cable length and MTU, pools need no size.
    ``traditional`` (other ASICs): the platform's pool sizes and lossless headroom are given."""

    model: Literal["dynamic", "traditional"] = "dynamic"
    pools: dict[str, int] = Field(default_factory=dict)  # pool name -> bytes
    headroom: LosslessHeadroom | None = None

    @model_validator(mode="after")
    def _traditional_needs_numbers(self) -> Self:
        if self.model == "traditional":
            missing = [
                p
                for p in ("ingress_lossless_pool", "egress_lossless_pool", "egress_lossy_pool")
                if p not in self.pools
            ]
            if missing or self.headroom is None:
                raise ValueError(
                    "the traditional buffer model needs the platform's numbers: pools "
                    f"{missing or ''} and headroom {{size, xon, xoff}} from its "
                    "pg_profile_lookup.ini / buffers_defaults"
                )
        return self


class Uplink(_Frozen):
    """One inter-switch link, from the leaf's side: its port, the spine and the spine's
    port, and the speed both ends are designed for (default: the leaf's port speed)."""

    port: str = Field(pattern=PORT_NAME)
    spine: str = Field(min_length=1)
    spine_port: str = Field(pattern=PORT_NAME)
    speed_gbps: int | None = Field(default=None, ge=1, le=1600)

    _spine = field_validator("spine")(classmethod(lambda cls, v: _host_name(v)))


class Switch(_Frozen):
    name: str
    address: str

    _names = field_validator("name")(classmethod(lambda cls, v: _host_name(v)))
    _address = field_validator("address")(classmethod(lambda cls, v: _address_of(v)))
    ssh_port: int = Field(default=22, ge=1, le=65535)
    os: Literal["sonic", "cumulus", "eos", "mlnx-os"]
    role: Literal["leaf", "spine"]
    rail: int | None = Field(default=None, ge=0, le=63)
    ports: tuple[str, ...] = Field(min_length=1)
    mtu: int | None = Field(default=None, ge=1500, le=9216)

    qos: SwitchQos = SwitchQos()
    os_version: str | None = Field(default=None, pattern=r"^[0-9][0-9A-Za-z.\-]*$")
    port_lanes: dict[str, str] = Field(default_factory=dict)
    port_speed_gbps: int = Field(default=400, ge=1, le=1600)
    cable_m: dict[str, int] = Field(default_factory=dict)
    buffers: SwitchBuffers = SwitchBuffers()
    uplinks: tuple[Uplink, ...] = ()
    plane: int | None = Field(default=None, ge=0, le=63)

    def uplink_speed(self, up: Uplink) -> int:
        return up.speed_gbps or self.port_speed_gbps

    @model_validator(mode="after")
    def _uplinks_from_leaves(self) -> Self:
        if self.uplinks and self.role != "leaf":
            raise ValueError(
                "rackops_switch_uplinks describes a leaf's cables to its spines; a spine's "
                "ISLs are read from its leaves' uplinks — move them to the leaves"
            )
        return self

    @field_validator("ports")
    @classmethod
    def _port_names(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        bad = [p for p in v if not re.fullmatch(PORT_NAME, p)]
        if bad:
            raise ValueError(f"port names {bad} hold characters no switch port name has")
        return v

    @field_validator("os_version", mode="before")
    @classmethod
    def _quoted_release(cls, v: object) -> object:
        if isinstance(v, float | int) and not isinstance(v, bool):
            raise ValueError(
                f'quote the release (e.g. rackops_switch_os_version: "5.10"): YAML read '
                f"it as the number {v}, and an unquoted 5.10 is the number 5.1"
            )
        return v

    @field_validator("port_lanes")
    @classmethod
    def _lanes(cls, v: dict[str, str]) -> dict[str, str]:
        for port, lanes in v.items():
            if not re.fullmatch(r"\d+(,\d+)*", str(lanes)):
                raise ValueError(f"port {port!r}: lanes {lanes!r} is not a list like '0,1,2,3'")
        return v

    @model_validator(mode="after")
    def _nos_port_names(self) -> Self:
        bad = [p for p in (port_problem(self.os, p) for p in self.ports) if p]
        if bad:
            raise ValueError(f"{bad[0]}{f' (and {len(bad) - 1} more)' if len(bad) > 1 else ''}")
        return self

    @model_validator(mode="after")
    def _known_ports(self) -> Self:
        for var, table in (("port_lanes", self.port_lanes), ("cable_m", self.cable_m)):
            unknown = sorted(set(table) - set(self.ports))
            if unknown:
                raise ValueError(f"{var}: {unknown} not in the switch's ports {list(self.ports)}")
        return self

    @field_validator("ports")
    @classmethod
    def _unique_ports(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        seen: set[str] = set()
        for p in v:
            if p in seen:
                raise ValueError(f"port {p!r} is listed twice")
            seen.add(p)
        return v


class Ecn(_Frozen):
    min_threshold_bytes: int = Field(gt=0)
    max_threshold_bytes: int = Field(gt=0)
    mark_probability_pct: int = Field(ge=1, le=100)

    @model_validator(mode="after")
    def _min_le_max(self) -> Self:
        if self.min_threshold_bytes > self.max_threshold_bytes:
            raise ValueError(
                f"min_threshold_bytes {self.min_threshold_bytes} is above max_threshold_bytes "
                f"{self.max_threshold_bytes}; marking must start below its maximum"
            )
        return self


class PfcWatchdog(_Frozen):
    enabled: bool = True
    detection_time_ms: int = Field(default=200, ge=100, le=5000)
    restoration_time_ms: int = Field(default=400, ge=100, le=60000)
    action: Literal["drop", "forward", "alert"] = "drop"

    @model_validator(mode="after")
    def _restore_after_detect(self) -> Self:
        if self.restoration_time_ms < self.detection_time_ms:
            raise ValueError(
                f"restoration_time_ms {self.restoration_time_ms} is below detection_time_ms "
                f"{self.detection_time_ms}; SONiC and EOS require restoration >= detection"
            )
        return self


class RoceQos(_Frozen):
    """The lossless-RoCE intent every host and switch is configured from."""

    dscp: Dscp = Field(default=26, ge=0, le=63)
    priority: Priority = Field(default=3, ge=0, le=7)
    cnp_dscp: Dscp = Field(default=48, ge=0, le=63)
    cnp_priority: Priority = Field(default=6, ge=0, le=7)
    pfc_priorities: tuple[Priority, ...] = (3,)
    nccl_ib_tc: int | None = Field(default=None, ge=0, le=255)
    trust: Literal["dscp", "pcp"] = "dscp"
    ecn: Ecn = Ecn(
        min_threshold_bytes=150000, max_threshold_bytes=1500000, mark_probability_pct=100
    )
    pfc_watchdog: PfcWatchdog = PfcWatchdog()

    @field_validator("pfc_priorities")
    @classmethod
    def _check_pfc(cls, v: tuple[int, ...]) -> tuple[int, ...]:
        return _priorities(v)


class Mtu(_Frozen):
    host: int = Field(ge=576, le=9216, description="netdev MTU (IPoIB MTU on InfiniBand)")
    switch: int = Field(ge=1500, le=9216, description="switch port MTU")
    ib: Literal[256, 512, 1024, 2048, 4096] | None = Field(
        default=None, description="IB link MTU set by the subnet manager (mtu=5 is 4096)"
    )
    vlan_tagged: bool = False


class Fabric(_Frozen):
    type: Literal["infiniband", "roce"]
    mtu: Mtu
    roce: RoceQos | None = None
    oversubscription: float = Field(
        default=1.0,
        ge=1.0,
        le=16.0,
        description="largest ratio of a leaf's host bandwidth to its uplink bandwidth",
    )
    sweep_node: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$",
        description="InfiniBand: the node every run sweeps the fabric from (ibdiagnet); "
        "default: the first node of the run",
    )

    @model_validator(mode="after")
    def _roce_needs_qos(self) -> Self:
        if self.type == "roce" and self.roce is None:
            raise ValueError("a roce fabric needs a 'roce' block (DSCP, priorities, ECN, PFC)")
        if self.type == "roce" and self.sweep_node is not None:
            raise ValueError(
                "sweep_node is for an infiniband fabric (the ibdiagnet sweep); a roce "
                "fabric's switches are read over their own connections"
            )
        return self


class Versions(_Frozen):
    """Software versions to pin on every node, as exact package version strings."""

    ofed: str = Field(pattern=PACKAGE_VERSION)
    driver: str = Field(pattern=r"^\d+\.\d+(\.\d+)?$")
    driver_branch: str | None = Field(default=None, pattern=r"^\d+$")
    fabric_manager: str | None = Field(default=None, pattern=PACKAGE_VERSION)
    dcgm: str = Field(pattern=PACKAGE_VERSION)

    @property
    def branch(self) -> str:
        return self.driver_branch or self.driver.split(".", 1)[0]


class _Memo(dict[tuple[Any, ...], tuple[tuple[object, ...], Any]]):
    """Lookups a model keeps of itself: never part of what it is (two equal clusters are
    equal whatever each has looked up)."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Memo)

    __hash__ = None


@dataclass(frozen=True)
class Cable:
    """One designed cable at a switch port: a node's HCA, or an ISL's far end (``peer``)."""

    port: str
    node: str | None = None
    hca: str | None = None
    peer: str | None = None


class Cluster(_Frozen):
    name: str
    fabric: Fabric
    versions: Versions
    nodes: tuple[Node, ...]
    switches: tuple[Switch, ...]

    # Lookups by name and by switch, built once (a run asks them per node, per check, per
    # switch: a scan each time grows with the square of the cluster). Each is kept with the
    # tuples it was built from: a copy with other nodes (``--limit``) builds its own.
    _memo: _Memo = PrivateAttr(default_factory=lambda: _Memo())

    def _memoised(self, key: str, source: tuple[object, ...], build: Callable[[], Any]) -> Any:
        # keyed by the sources' identity too: a copy shares this dict (pydantic copies
        # private attributes shallowly) and finds its own entry, never the original's
        slot = (key, *map(id, source))
        kept = self._memo.get(slot)
        if kept is None or any(a is not b for a, b in zip(kept[0], source, strict=True)):
            kept = (source, build())
            self._memo[slot] = kept
        return kept[1]

    @property
    def _nodes_by_name(self) -> dict[str, Node]:
        nodes = self.nodes
        return cast(
            dict[str, Node], self._memoised("nodes", (nodes,), lambda: {n.name: n for n in nodes})
        )

    @property
    def _switches_by_name(self) -> dict[str, Switch]:
        sws = self.switches
        return cast(
            dict[str, Switch], self._memoised("switches", (sws,), lambda: {s.name: s for s in sws})
        )

    @property
    def _cables(self) -> dict[str, tuple[Cable, ...]]:
        source = (self.nodes, self.switches)
        return cast(
            dict[str, tuple[Cable, ...]], self._memoised("cables", source, self._build_cables)
        )

    def _build_cables(self) -> dict[str, tuple[Cable, ...]]:
        out: dict[str, list[Cable]] = {}
        for node in self.nodes:
            for hca in node.hcas:
                out.setdefault(hca.switch, []).append(Cable(hca.port, node.name, hca.device))
        for leaf in self.switches:
            for up in leaf.uplinks:
                out.setdefault(leaf.name, []).append(
                    Cable(up.port, peer=f"{up.spine} port {up.spine_port}")
                )
                out.setdefault(up.spine, []).append(
                    Cable(up.spine_port, peer=f"{leaf.name} port {up.port}")
                )
        return {sw: tuple(cables) for sw, cables in out.items()}

    def node(self, name: str) -> Node:
        """The node of that name (a KeyError where the design has none)."""
        return self._nodes_by_name[name]

    def switch(self, name: str) -> Switch | None:
        return self._switches_by_name.get(name)

    def cables(self, switch: str) -> tuple[Cable, ...]:
        """What is cabled into the switch's ports by the design: host HCAs, then the ISLs'
        ends, in the design's order (a port named twice: the later one is what it holds)."""
        return self._cables.get(switch, ())

    def size(self, pair_tests: int = 0) -> Size:
        """The design's size, which bounds what a run of it reads (rackops.scale)."""
        return Size(
            nodes=len(self.nodes),
            switches=len(self.switches),
            host_ports=sum(len(n.hcas) for n in self.nodes),
            pair_tests=pair_tests,
        )

    def isls(self) -> list[tuple[Switch, Uplink]]:
        """Every inter-switch link, as (leaf, uplink)."""
        return [(sw, up) for sw in self.switches for up in sw.uplinks]

    @property
    def spines(self) -> tuple[Switch, ...]:
        return tuple(s for s in self.switches if s.role == "spine")
