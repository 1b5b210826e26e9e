"""The per-switch view the templates get: its ports (host-facing or fabric), the MTU and
the QoS intent computed once from the design — never raw inventory. The host side of the
same intent (mlnx_qos, ECN, ToS, NCCL) is computed here too, so roles and switches are fed
from one computation."""

from __future__ import annotations

from dataclasses import dataclass, field

from rackops.consistency import (
    Intent,
    check_host,
    design_host,
    host_violations,
    nccl_tc_violation,
)
from rackops.design import node_design, overridden
from rackops.errors import RackopsError
from rackops.inventory.model import Cluster, Switch, SwitchBuffers

# SONiC's defaults by link role (buffers_config.j2 ports2cable): server links 5 m, uplinks 40 m
CABLE_M = {"host": 5, "fabric": 40}


class RenderError(RackopsError):
    """The design cannot be rendered into a consistent configuration."""


@dataclass(frozen=True)
class PortView:
    name: str
    kind: str  # "host" | "fabric"
    peer: str  # "node01/mlx5_0"
    speed_gbps: int
    lanes: str | None = None  # SONiC PORT.lanes, from the inventory
    cable_m: int = 5


@dataclass(frozen=True)
class QosView:
    roce_dscp: int
    roce_tc: int
    cnp_dscp: int
    cnp_tc: int
    pfc_priorities: tuple[int, ...]
    dscp_to_tc: tuple[int, ...]  # all 64 DSCPs
    ecn_min_bytes: int
    ecn_max_bytes: int
    ecn_probability_pct: int
    watchdog: bool
    watchdog_detect_ms: int
    watchdog_restore_ms: int
    watchdog_action: str
    nccl_ib_tc: int


@dataclass(frozen=True)
class SwitchView:
    name: str
    os: str
    role: str
    rail: int | None
    mtu: int
    ports: tuple[PortView, ...]
    fabric: str  # infiniband | roce
    qos: QosView | None
    ib_mtu: int | None
    os_version: str | None = None
    buffers: SwitchBuffers = field(default_factory=SwitchBuffers)


@dataclass(frozen=True)
class HostView:
    node: str
    netdevs: tuple[str, ...]
    devices: tuple[str, ...]
    mtu: int
    qos: QosView | None


def qos_view(cluster: Cluster) -> QosView | None:
    roce = cluster.fabric.roce
    if cluster.fabric.type != "roce" or roce is None:
        return None
    problems = []
    if roce.dscp == roce.cnp_dscp:
        problems.append(f"RoCE and CNP share DSCP {roce.dscp}: they need separate classes")
    if roce.priority == roce.cnp_priority:
        problems.append(
            f"RoCE and CNP share priority {roce.priority}: CNP must be strict and "
            f"lossy, RoCE lossless"
        )
    # the design's own host view must pass the §10 host rules (C-04, C-05, C-12, C-14)
    intent = Intent.of(cluster)
    problems += [
        f"{v.code} {v.message}"
        for v in check_host(intent, design_host(None, roce))
        if v.severity == "error"
    ]
    tc = nccl_tc_violation(roce, roce.nccl_ib_tc)
    if tc is not None and tc.severity == "error":
        problems.append(f"{tc.code} {tc.message}")
    if problems:
        raise RenderError("refusing to render: " + "; ".join(problems))
    table = [0] * 64
    table[roce.dscp] = roce.priority
    table[roce.cnp_dscp] = roce.cnp_priority
    wd = roce.pfc_watchdog
    return QosView(
        roce.dscp,
        roce.priority,
        roce.cnp_dscp,
        roce.cnp_priority,
        tuple(roce.pfc_priorities),
        tuple(table),
        roce.ecn.min_threshold_bytes,
        roce.ecn.max_threshold_bytes,
        roce.ecn.mark_probability_pct,
        wd.enabled,
        wd.detection_time_ms,
        wd.restoration_time_ms,
        wd.action,
        roce.nccl_ib_tc or 0,  # checked non-zero above
    )


def switch_view(cluster: Cluster, sw: Switch) -> SwitchView:
    fabric = cluster.fabric
    mtu = sw.mtu or fabric.mtu.switch
    qos = qos_view(cluster)
    if qos is not None and (sw.qos.dscp_to_tc or sw.qos.pfc_priorities is not None):
        # per-switch overrides are rendered as given; verification then names the switch
        table = list(qos.dscp_to_tc)
        for dscp, tc in sw.qos.dscp_to_tc.items():
            table[dscp] = tc
        qos = QosView(
            **{
                **qos.__dict__,
                "dscp_to_tc": tuple(table),
                "pfc_priorities": overridden(sw.qos.pfc_priorities, qos.pfc_priorities),
            }
        )
    if fabric.type == "roce":
        need = Intent.of(cluster).min_switch_mtu  # C-22, the rule every layer uses
        if mtu < need:
            raise RenderError(
                f"refusing to render {sw.name}: C-22 switch MTU {mtu} < host MTU + L2 "
                f"headers = {need}"
            )
    cabled = {
        (h.port): f"{n.name}/{h.device}"
        for n in cluster.nodes
        for h in n.hcas
        if h.switch == sw.name
    }
    ports = tuple(
        PortView(
            p,
            kind := "host" if p in cabled else "fabric",
            cabled.get(p, "uplink"),
            sw.port_speed_gbps,
            sw.port_lanes.get(p),
            sw.cable_m.get(p, CABLE_M[kind]),
        )
        for p in sw.ports
    )
    return SwitchView(
        sw.name,
        sw.os,
        sw.role,
        sw.rail,
        mtu,
        ports,
        fabric.type,
        qos if sw.os != "mlnx-os" else None,
        fabric.mtu.ib,
        sw.os_version,
        sw.buffers,
    )


def host_view(cluster: Cluster, node_name: str) -> HostView:
    node = cluster.node(node_name)
    roce = cluster.fabric.roce
    if cluster.fabric.type == "roce" and roce is not None:
        # the host's own overrides, by the rules lint names them with: a host file the
        # roce_host_qos role would refuse to apply is never written
        bad = [v for v in host_violations(node, roce, Intent.of(cluster)) if v.severity == "error"]
        if bad:
            raise RenderError(
                f"refusing to render {node.name}'s host file: "
                + "; ".join(f"{v.code} {v.message} — {v.fix}" for v in bad)
                + " (rackops_host_qos in its host_vars; `rackops lint` lists them all)"
            )
    return HostView(
        node.name,
        tuple(h.netdev for h in node.hcas),
        tuple(h.device for h in node.hcas),
        node_design(cluster, node).mtu,
        qos_view(cluster),
    )
