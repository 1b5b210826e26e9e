"""Host tuning read back (``host-tuning``) against the design: netdev MTU, DCQCN and CNP
marking (config.md §2.4), fabric NIC IRQ affinity and irqbalance (§5), the hugepage pool
per NUMA node (§4); and the jumbo ping across each rail pair (C-25).

Every FAIL names the node, the HCA and its switch port where there is one, the setting,
the live value and the designed value. A value the host does not expose (an inbox driver
without the ECN directory, no NUMA information) is WARN: not verified is not a pass.
"""

from __future__ import annotations

from rackops.design import node_design
from rackops.findings import Finding, Status, Subject
from rackops.inventory.model import Cluster, Node
from rackops.parsers._common import ParseError
from rackops.parsers.host_tuning import HostTuning, cpus
from rackops.parsers.ping import Ping

MTU_FIX = "rerun provisioning (role net_mtu) so the interface MTU is the design's (C-23)"
ECN_FIX = "rerun provisioning (role roce_host_qos); rackops-roce-qos.service re-applies at boot"
IRQ_FIX = "rerun provisioning (role irq_affinity); rackops-irq-affinity.service re-applies at boot"
HP_FIX = "rerun provisioning (role hugepages); reserve 1 GiB pages at boot (config.md §4)"


def designed_mtu(node: Node, cluster: Cluster) -> int:
    return node_design(cluster, node).mtu


def check_host_tuning(parsed: HostTuning, node: Node, cluster: Cluster) -> list[Finding]:
    out: list[Finding] = []
    mtu = designed_mtu(node, cluster)
    # the host's DCQCN/CNP sysfs is mlx5's, set by roce_host_qos: not on an inbox-RDMA node
    roce = cluster.fabric.roce if cluster.fabric.type == "roce" and node.nvidia_stack else None
    for h in node.hcas:
        subj = Subject(node=node.name, hca=h.device, port=1, switch=h.switch, switch_port=h.port)
        nd = parsed.netdevs.get(h.netdev)
        if nd is None or nd.mtu is None:
            out.append(
                Finding(
                    "HOST-NETDEV",
                    Status.FAIL,
                    subj,
                    f"interface {h.netdev} does not exist",
                    None,
                    h.netdev,
                    None,
                    "fix the netdev in rackops_hcas, or load the NIC driver",
                    action="node",
                )
            )
            continue
        if nd.mtu != mtu:
            out.append(
                Finding(
                    "HOST-MTU",
                    Status.FAIL,
                    subj,
                    f"{h.netdev} MTU {nd.mtu}, designed {mtu}",
                    nd.mtu,
                    mtu,
                    "bytes",
                    MTU_FIX,
                    action="node",
                )
            )
        if roce is not None:
            out += _ecn(nd.sysfs, h.netdev, roce.priority, roce.cnp_dscp, roce.cnp_priority, subj)
        if node.tuning.irq_affinity:
            out += _irqs(nd.sysfs, nd.irqs, h.netdev, subj)
    stop = node.tuning.irq_affinity and node.tuning.irqbalance == "stop"
    if stop and parsed.irqbalance == "active":
        out.append(
            Finding(
                "C-37",
                Status.FAIL,
                Subject(node=node.name),
                "irqbalance is running; the design stops it (irqbalance: stop)",
                "active",
                "inactive",
                None,
                "systemctl disable --now irqbalance, or rerun provisioning (irq_affinity)",
                action="node",
            )
        )
    if node.tuning.hugepages is not None:
        out += _hugepages(parsed, node)
    if not any(f.status in (Status.FAIL, Status.ERROR) for f in out):
        out.append(
            Finding(
                "HOST-OK",
                Status.OK,
                Subject(node=node.name),
                f"host tuning as designed (MTU {mtu} on {len(node.hcas)} interfaces"
                + (", DCQCN, CNP" if roce else "")
                + (", IRQ affinity" if node.tuning.irq_affinity else "")
                + (", hugepages" if node.tuning.hugepages else "")
                + ")",
            )
        )
    return out


def _ecn(
    sysfs: dict[str, str], netdev: str, prio: int, cnp_dscp: int, cnp_prio: int, subj: Subject
) -> list[Finding]:
    if not any(k.startswith("ecn/") for k in sysfs):
        return [
            Finding(
                "HOST-ECN-000",
                Status.WARN,
                subj,
                f"{netdev} has no ecn/ directory (inbox driver?): DCQCN and CNP not verified",
                remediation="install OFED (role ofed), or check DCQCN with mlxconfig",
            )
        ]
    out = []
    for side in ("roce_np", "roce_rp"):
        value = sysfs.get(f"ecn/{side}/enable/{prio}")
        if value != "1":
            out.append(
                Finding(
                    "C-20",
                    Status.FAIL,
                    subj,
                    f"DCQCN off: ecn/{side}/enable/{prio} is {value or 'absent'}, designed 1",
                    value,
                    "1",
                    None,
                    ECN_FIX,
                    action="node",
                )
            )
    for key, code, want, what in (
        ("ecn/roce_np/cnp_dscp", "C-09", cnp_dscp, "CNP DSCP"),
        ("ecn/roce_np/cnp_802p_prio", "C-10", cnp_prio, "CNP priority"),
    ):
        value = sysfs.get(key)
        if value is not None and value != str(want):
            out.append(
                Finding(
                    code,
                    Status.FAIL,
                    subj,
                    f"{what} {value} ({key}), designed {want}",
                    value,
                    want,
                    None,
                    ECN_FIX,
                    action="node",
                )
            )
    return out


def _irqs(sysfs: dict[str, str], irqs: dict[int, str], netdev: str, subj: Subject) -> list[Finding]:
    local = sysfs.get("device/local_cpulist")
    if local is None or not irqs:
        return [
            Finding(
                "HOST-IRQ-000",
                Status.WARN,
                subj,
                f"{netdev}: no local_cpulist or MSI-X IRQs exposed: IRQ affinity not verified",
            )
        ]
    try:
        allowed = cpus(local)
    except ParseError:
        return [Finding("HOST-IRQ-000", Status.WARN, subj, f"{netdev}: local_cpulist {local!r}")]
    off = []
    for irq in sorted(irqs)[1:]:  # the first vector is the async/control IRQ (config.md §5)
        try:
            ok = cpus(irqs[irq]) <= allowed
        except ParseError:
            ok = False
        if not ok:
            off.append(f"IRQ {irq} on CPUs {irqs[irq]}")
    if not off:
        return []
    return [
        Finding(
            "C-37",
            Status.FAIL,
            subj,
            f"{len(off)} completion IRQ(s) of {netdev} off its NUMA-local CPUs {local}: "
            + ", ".join(off[:4])
            + (" …" if len(off) > 4 else ""),
            off,
            local,
            None,
            IRQ_FIX,
            action="node",
        )
    ]


def _hugepages(parsed: HostTuning, node: Node) -> list[Finding]:
    hp = node.tuning.hugepages
    assert hp is not None
    subj = Subject(node=node.name)
    want = {f"node{n}": p for n, p in sorted(hp.per_node.items())} or {"total": hp.pages}
    out = []
    for where, pages in want.items():
        have = parsed.hugepages.get(where, {}).get(hp.size_kb)
        if have is None:
            out.append(
                Finding(
                    "C-38",
                    Status.FAIL,
                    subj,
                    f"no {hp.size_label} hugepage counter for {where} (page size or NUMA node "
                    "missing)",
                    None,
                    pages,
                    "pages",
                    HP_FIX,
                    action="node",
                )
            )
        elif have != pages:
            out.append(
                Finding(
                    "C-38",
                    Status.FAIL,
                    subj,
                    f"{have} × {hp.size_label} hugepages on {where}, designed {pages}",
                    have,
                    pages,
                    "pages",
                    HP_FIX,
                    action="node",
                )
            )
    return out


def check_jumbo_ping(parsed: Ping, mtu: int, *, subject: Subject) -> list[Finding]:
    """C-25: a ping of the design MTU with DF set passes between two rail peers."""
    if parsed.received == parsed.transmitted and parsed.transmitted > 0:
        return [
            Finding(
                "C-25",
                Status.OK,
                subject,
                f"{parsed.packet_bytes or mtu}-byte frames pass with DF set",
                action="switch",
            )
        ]
    detail = f" ({parsed.messages[-1]})" if parsed.messages else ""
    status = Status.FAIL if parsed.received == 0 else Status.WARN
    return [
        Finding(
            "C-25",
            status,
            subject,
            f"jumbo ping {parsed.packet_bytes or mtu} B with DF set to {parsed.peer}: "
            f"{parsed.received}/{parsed.transmitted} answered{detail}",
            parsed.path_mtu,
            mtu,
            "bytes",
            "a hop drops jumbo frames: check the interface MTU of both hosts (C-23) and the "
            "switch port MTU >= host MTU + 18 (C-22)",
            action="switch",
        )
    ]
