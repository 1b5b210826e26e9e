"""The cross-layer consistency rules (config.md §10) that compare a switch port or a host's
RoCE QoS with the design — each written once, here, over one normalised view.

Three feeds produce the same two views:
- the design (``design_port``, ``design_host``): what the inventory asks for — ``rackops lint``;
- a switch config, rendered or saved from a running switch (``rackops.render.verify`` readers
  for SONiC, NVUE and EOS): ``rackops render`` read-back and ``--diff``;
- live host state (``mlnx_qos`` output, ``rackops.checks.host``): ``rackops validate``.

A rule returns the problem in words and the fix; each caller adds where it was found (an
inventory file and line, a rendered file and port, a node and netdev).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from rackops.design import overridden, pfc_vector
from rackops.inventory.model import Cluster, Node, RoceQos, Switch

L2_HEADER_BYTES = 18  # Ethernet header + FCS
VLAN_TAG_BYTES = 4  # 802.1Q tag, when the fabric is tagged

Severity = Literal["error", "warning"]


@dataclass
class PortQos:
    """What one switch port does with RoCE, whatever the NOS or source."""

    mtu: int | None = None
    trust_dscp: bool = False
    dscp_to_tc: dict[int, int] = field(default_factory=dict)
    pfc: tuple[int, ...] = ()
    ecn_queue: int | None = None
    ecn_min: int | None = None
    ecn_max: int | None = None
    strict_queues: tuple[int, ...] = ()
    watchdog: bool = False
    queue_modes: dict[int, str] = field(default_factory=dict)  # queue -> strict | dwrr
    lossless_headroom: bool | None = None  # None: the source cannot tell


@dataclass
class HostQos:
    """What one host netdev does with RoCE (mlnx_qos view)."""

    trust: str | None
    pfc: tuple[int, ...]
    dscp2prio: dict[int, int] = field(default_factory=dict)  # explicit entries; else DSCP>>3

    def prio_of(self, dscp: int) -> int:
        return self.dscp2prio.get(dscp, dscp >> 3)  # NIC default (config.md §2.2)


@dataclass(frozen=True)
class Intent:
    """The design the views are held to."""

    roce: RoceQos | None
    host_mtu: int
    vlan_tagged: bool

    @property
    def l2_overhead(self) -> int:
        return L2_HEADER_BYTES + (VLAN_TAG_BYTES if self.vlan_tagged else 0)

    @property
    def min_switch_mtu(self) -> int:
        return self.host_mtu + self.l2_overhead

    @classmethod
    def of(cls, cluster: Cluster) -> Intent:
        from rackops.design import largest_host_mtu

        f = cluster.fabric
        roce = f.roce if f.type == "roce" else None
        return cls(roce, largest_host_mtu(cluster), f.mtu.vlan_tagged)


@dataclass(frozen=True)
class Violation:
    code: str
    severity: Severity
    message: str
    fix: str
    got: object = None
    want: object = None
    where: tuple[str | int, ...] = ()  # the design key it concerns: ("dscp_to_tc", 26)


@dataclass(frozen=True)
class Rule:
    code: str
    summary: str
    severity: Severity


PORT_RULES: list[tuple[Rule, Callable[[Intent, PortQos], list[Violation]]]] = []
HOST_RULES: list[tuple[Rule, Callable[[Intent, HostQos], list[Violation]]]] = []


def _port_rule(
    code: str, summary: str, severity: Severity = "error"
) -> Callable[
    [Callable[[Intent, PortQos, Rule], list[Violation]]],
    Callable[[Intent, PortQos, Rule], list[Violation]],
]:
    def register(
        fn: Callable[[Intent, PortQos, Rule], list[Violation]],
    ) -> Callable[[Intent, PortQos, Rule], list[Violation]]:
        r = Rule(code, summary, severity)
        PORT_RULES.append((r, lambda i, p: fn(i, p, r)))
        return fn

    return register


def _host_rule(
    code: str, summary: str, severity: Severity = "error"
) -> Callable[
    [Callable[[Intent, HostQos, Rule], list[Violation]]],
    Callable[[Intent, HostQos, Rule], list[Violation]],
]:
    def register(
        fn: Callable[[Intent, HostQos, Rule], list[Violation]],
    ) -> Callable[[Intent, HostQos, Rule], list[Violation]]:
        r = Rule(code, summary, severity)
        HOST_RULES.append((r, lambda i, h: fn(i, h, r)))
        return fn

    return register


def _v(
    r: Rule,
    message: str,
    fix: str,
    got: object = None,
    want: object = None,
    where: tuple[str | int, ...] = (),
) -> Violation:
    return Violation(r.code, r.severity, message, fix, got, want, where)


# ----------------------------------------------------------------- switch port rules


@_port_rule("C-22", "switch MTU ≥ host MTU + L2 headers (+4 with VLAN tags)")
def _port_mtu(i: Intent, p: PortQos, r: Rule) -> list[Violation]:
    need = i.min_switch_mtu
    if p.mtu is not None and p.mtu >= need:
        return []
    return [
        _v(
            r,
            f"MTU {p.mtu} is below host MTU {i.host_mtu} + {i.l2_overhead} bytes of L2 header "
            f"= {need}; jumbo RoCE frames would be dropped",
            f"raise the switch MTU to at least {need} (9216 is usual)",
            p.mtu,
            need,
            ("mtu",),
        )
    ]


@_port_rule("C-06", "switch ports classify on DSCP")
def _port_trust(i: Intent, p: PortQos, r: Rule) -> list[Violation]:
    if i.roce is None or p.trust_dscp:
        return []
    return [_v(r, "does not classify on DSCP", "trust DSCP (L3) on the port", False, True)]


@_port_rule("C-07", "every switch maps the RoCE DSCP to the lossless traffic class")
def _port_roce_class(i: Intent, p: PortQos, r: Rule) -> list[Violation]:
    q = i.roce
    if q is None or not p.trust_dscp:
        return []
    tc = p.dscp_to_tc.get(q.dscp)
    if tc == q.priority:
        return []
    return [
        _v(
            r,
            f"DSCP {q.dscp} maps to TC {tc}, expected the lossless TC {q.priority}; RoCE "
            f"would be lossy",
            f"map DSCP {q.dscp} to traffic class {q.priority}",
            tc,
            q.priority,
            ("dscp_to_tc", q.dscp),
        )
    ]


@_port_rule("C-08", "CNP DSCP maps to one strict-priority class on every switch")
def _port_cnp(i: Intent, p: PortQos, r: Rule) -> list[Violation]:
    q = i.roce
    if q is None or not p.trust_dscp:
        return []
    tc = p.dscp_to_tc.get(q.cnp_dscp)
    if tc != q.cnp_priority:
        return [
            _v(
                r,
                f"CNP DSCP {q.cnp_dscp} maps to TC {tc}, expected the strict TC {q.cnp_priority}",
                f"map DSCP {q.cnp_dscp} to traffic class {q.cnp_priority}",
                tc,
                q.cnp_priority,
                ("dscp_to_tc", q.cnp_dscp),
            )
        ]
    if q.cnp_priority not in p.strict_queues:
        mode = p.queue_modes.get(q.cnp_priority, "not strict")
        return [
            _v(
                r,
                f"the CNP queue {q.cnp_priority} is scheduled {mode}, expected strict; CNPs "
                f"must not wait behind data",
                f"make queue {q.cnp_priority} strict priority",
                mode,
                "strict",
                ("cnp_scheduler",),
            )
        ]
    return []


@_port_rule("SCH001", "the RoCE queue is weighted (DWRR), never strict", "warning")
def _port_roce_sched(i: Intent, p: PortQos, r: Rule) -> list[Violation]:
    q = i.roce
    if q is None or q.priority not in p.strict_queues:
        return []
    return [
        _v(
            r,
            f"the RoCE queue {q.priority} is strict priority: bulk RDMA would starve every "
            f"lower queue",
            f"schedule queue {q.priority} DWRR with a bandwidth share",
            "strict",
            "dwrr",
        )
    ]


def _pfc_violations(
    i: Intent, pfc: tuple[int, ...], where: str, r: Rule, exact: Rule
) -> list[Violation]:
    q = i.roce
    if q is None:
        return []
    out = []
    want = (q.priority,)
    fix = (
        f"mlnx_qos -i <netdev> --pfc {pfc_vector(want)}"
        if where == "host"
        else f"enable PFC on priority {q.priority} only (vector {pfc_vector(want)})"
    )
    if q.cnp_priority in pfc:
        out.append(
            _v(
                r,
                f"PFC is enabled on the CNP priority {q.cnp_priority} ({where} PFC set "
                f"{list(pfc)}); CNP is strict and lossy and must never be paused",
                fix,
                pfc_vector(pfc),
                pfc_vector(want),
                ("pfc_priorities",),
            )
        )
    rest = tuple(x for x in pfc if x != q.cnp_priority)
    if rest != want:
        out.append(
            _v(
                exact,
                f"{where} PFC is on priorities {list(pfc)}, expected exactly {list(want)} (the "
                f"RoCE priority; vector {pfc_vector(want)})",
                fix,
                pfc_vector(pfc),
                pfc_vector(want),
                ("pfc_priorities",),
            )
        )
    return out


C14 = Rule("C-14", "the CNP priority is in no PFC set", "error")


@_port_rule("C-13", "every switch port enables PFC on exactly the RoCE priority")
def _port_pfc(i: Intent, p: PortQos, r: Rule) -> list[Violation]:
    return _pfc_violations(i, p.pfc, "switch", C14, r)


@_port_rule("C-17", "lossless headroom exists for the RoCE priority on every port")
def _port_headroom(i: Intent, p: PortQos, r: Rule) -> list[Violation]:
    if i.roce is None or p.lossless_headroom is not False:
        return []
    return [
        _v(
            r,
            f"no lossless buffer (headroom) for priority {i.roce.priority}: PFC pauses too late "
            f"and drops",
            f"bind the RoCE priority group to a lossless profile (SONiC BUFFER_PG "
            f"<port>|{i.roce.priority}; NVUE qos roce mode lossless)",
        )
    ]


@_port_rule("C-18", "ECN marks the RoCE queue, with 0 < min ≤ max")
def _port_ecn(i: Intent, p: PortQos, r: Rule) -> list[Violation]:
    q = i.roce
    if q is None:
        return []
    if p.ecn_queue == q.priority and p.ecn_min and p.ecn_max and p.ecn_min <= p.ecn_max:
        return []
    return [
        _v(
            r,
            f"ECN on queue {p.ecn_queue} ({p.ecn_min}..{p.ecn_max} B); expected queue "
            f"{q.priority} with 0 < min <= max",
            f"mark ECN on queue {q.priority} between {q.ecn.min_threshold_bytes} and "
            f"{q.ecn.max_threshold_bytes} bytes",
        )
    ]


@_port_rule("C-16", "a PFC watchdog runs wherever PFC is on", "warning")
def _port_watchdog(i: Intent, p: PortQos, r: Rule) -> list[Violation]:
    if i.roce is None or not p.pfc or p.watchdog:
        return []
    return [
        _v(
            r,
            "PFC is on but the PFC watchdog is not; a stuck receiver can then pause the "
            "fabric indefinitely",
            "enable the PFC watchdog (rackops_fabric.roce.pfc_watchdog.enabled: true)",
        )
    ]


# ---------------------------------------------------------------------- host rules


@_host_rule("C-04", "host NICs trust DSCP (the switches classify on DSCP)")
def _host_trust(i: Intent, h: HostQos, r: Rule) -> list[Violation]:
    if i.roce is None or h.trust is None or h.trust == "dscp":
        return []
    return [
        _v(
            r,
            f"priority trust {h.trust}, expected dscp",
            "mlnx_qos -i <netdev> --trust dscp; persist in the boot unit "
            "(rackops_fabric.roce.trust: dscp)",
            h.trust,
            "dscp",
            ("trust",),
        )
    ]


@_host_rule("C-05", "host DSCP→priority sends RoCE and CNP DSCPs to their priorities")
def _host_dscp(i: Intent, h: HostQos, r: Rule) -> list[Violation]:
    q = i.roce
    if q is None or h.trust not in (None, "dscp"):
        return []
    out = []
    for dscp, want, what in ((q.dscp, q.priority, "RoCE"), (q.cnp_dscp, q.cnp_priority, "CNP")):
        got = h.prio_of(dscp)
        if got != want:
            out.append(
                _v(
                    r,
                    f"{what} DSCP {dscp} maps to priority {got}, expected {want}",
                    f"mlnx_qos -i <netdev> --dscp2prio set,{dscp},{want}",
                    got,
                    want,
                    ("dscp2prio", dscp),
                )
            )
    return out


@_host_rule("C-12", "every host enables PFC on exactly the RoCE priority")
def _host_pfc(i: Intent, h: HostQos, r: Rule) -> list[Violation]:
    return _pfc_violations(i, h.pfc, "host", C14, r)


NCCL_TC = Rule("C-01", "NCCL_IB_TC >> 2 equals the RoCE DSCP", "error")
ECT = Rule("C-02", "NCCL_IB_TC carries ECT(0) in its ECN bits", "warning")


def nccl_tc_violation(roce: RoceQos, tc: int | None) -> Violation | None:
    """C-01/C-02 on one traffic class value (the design's nccl_ib_tc, a host override, or
    NCCL_IB_TC read from a node)."""
    want = roce.dscp << 2 | 0b10
    if not tc:
        return _v(
            NCCL_TC,
            f"NCCL_IB_TC is {'unset' if tc is None else 0}; NCCL then sends RoCE with DSCP 0 "
            f"(lossy)",
            f"set nccl_ib_tc to {want} (DSCP {roce.dscp} << 2 | ECT(0))",
            tc,
            want,
        )
    if tc >> 2 != roce.dscp:
        return _v(
            NCCL_TC,
            f"NCCL_IB_TC {tc} carries DSCP {tc >> 2}, expected the RoCE DSCP {roce.dscp}",
            f"set it to {want}",
            tc,
            want,
        )
    if tc & 0b11 != 0b10:
        return _v(
            ECT,
            f"NCCL_IB_TC {tc} has ECN bits {tc & 0b11:02b}, expected 10 (ECT(0)) for DCQCN",
            f"use {want}",
            tc,
            want,
        )
    return None


CNP_DSCP = Rule("C-09", "the host CNP DSCP equals the switch CNP classifier DSCP", "error")


def cnp_dscp_violation(roce: RoceQos, host_cnp_dscp: int | None) -> Violation | None:
    """C-09 on a host's CNP DSCP override (None: the design's, which the switches classify)."""
    if host_cnp_dscp is None or host_cnp_dscp == roce.cnp_dscp:
        return None
    return _v(
        CNP_DSCP,
        f"host CNP DSCP {host_cnp_dscp} differs from the switch CNP DSCP {roce.cnp_dscp}; "
        "CNPs would miss the strict class",
        f"set cnp_dscp {roce.cnp_dscp} (the NIC operator default is 4)",
        host_cnp_dscp,
        roce.cnp_dscp,
    )


def host_violations(node: Node, roce: RoceQos, intent: Intent) -> list[Violation]:
    """Every §10 rule a host's own overrides (rackops_host_qos) can break: what lint names
    and what render refuses to write a host file for."""
    found = check_host(intent, design_host(node, roce))
    found += [
        v
        for v in (
            nccl_tc_violation(roce, node.qos.nccl_ib_tc)
            if node.qos.nccl_ib_tc is not None
            else None,
            cnp_dscp_violation(roce, node.qos.cnp_dscp),
        )
        if v is not None
    ]
    return found


def check_port(intent: Intent, port: PortQos) -> list[Violation]:
    return [v for _, fn in PORT_RULES for v in fn(intent, port)]


def check_host(intent: Intent, host: HostQos) -> list[Violation]:
    return [v for _, fn in HOST_RULES for v in fn(intent, host)]


# ------------------------------------------------------------------------ design feed


def switch_dscp_to_tc(sw: Switch, roce: RoceQos, dscp: int) -> int:
    """What rackops renders: the RoCE and CNP DSCPs to their classes, the rest to 0, unless
    the switch overrides an entry."""
    if dscp in sw.qos.dscp_to_tc:
        return sw.qos.dscp_to_tc[dscp]
    return {roce.dscp: roce.priority, roce.cnp_dscp: roce.cnp_priority}.get(dscp, 0)


def design_port(cluster: Cluster, sw: Switch) -> PortQos:
    """Every port of `sw` as the inventory designs it."""
    f = cluster.fabric
    mtu = sw.mtu or f.mtu.switch
    roce = f.roce if f.type == "roce" else None
    if roce is None:
        return PortQos(mtu=mtu)
    cnp_mode = sw.qos.cnp_scheduler or "strict"
    return PortQos(
        mtu=mtu,
        trust_dscp=True,
        dscp_to_tc={d: switch_dscp_to_tc(sw, roce, d) for d in range(64)},
        pfc=overridden(sw.qos.pfc_priorities, roce.pfc_priorities),
        ecn_queue=roce.priority,
        ecn_min=roce.ecn.min_threshold_bytes,
        ecn_max=roce.ecn.max_threshold_bytes,
        strict_queues=(roce.cnp_priority,) if cnp_mode == "strict" else (),
        watchdog=roce.pfc_watchdog.enabled,
        queue_modes={roce.cnp_priority: cnp_mode, roce.priority: "dwrr"},
        lossless_headroom=True,
    )


ISL = Rule("C-45", "both ends of an inter-switch link: one PFC set, one RoCE class", "error")


def isl_violations(leaf: PortQos, spine: PortQos, roce: RoceQos | None) -> list[Violation]:
    """An ISL is lossless only if both of its ends are: the same PFC priorities (a pause one
    end sends that the other ignores is a drop), and the RoCE DSCP queued in the same class on
    both. Each end's MTU is C-22's (every switch port, spines included): two ends that both
    carry the hosts' frames may differ (EOS 9214 facing SONiC 9216) without a drop."""
    out: list[Violation] = []
    if roce is None:
        return out
    if leaf.pfc != spine.pfc:
        out.append(
            _v(
                ISL,
                f"PFC on priorities {pfc_vector(leaf.pfc)} at the leaf end but "
                f"{pfc_vector(spine.pfc)} at the spine end: RoCE traffic is lossy across this link",
                "give both ends the design's PFC priorities (rackops_switch_qos.pfc_priorities)",
                spine.pfc,
                leaf.pfc,
                ("pfc_priorities",),
            )
        )
    lt, st = leaf.dscp_to_tc.get(roce.dscp), spine.dscp_to_tc.get(roce.dscp)
    if lt != st:
        out.append(
            _v(
                ISL,
                f"RoCE DSCP {roce.dscp} goes to class {lt} at the leaf end but {st} at the "
                "spine end",
                "map the RoCE DSCP to the same class on both ends (rackops_switch_qos.dscp_to_tc)",
                st,
                lt,
                ("dscp_to_tc", roce.dscp),
            )
        )
    return out


def design_host(node: Node | None, roce: RoceQos) -> HostQos:
    """A host as the inventory designs it (`node` None: the design's own defaults): the
    roce_host_qos role sets dscp2prio for the RoCE and CNP DSCPs, then a host's overrides."""
    if node is None:
        dscp2prio = {roce.dscp: roce.priority, roce.cnp_dscp: roce.cnp_priority}
        return HostQos(trust=roce.trust, pfc=tuple(roce.pfc_priorities), dscp2prio=dscp2prio)
    from rackops.design import host_roce

    d = host_roce(roce, node.qos)
    return HostQos(trust=d.trust, pfc=d.pfc, dscp2prio=dict(d.dscp2prio))
