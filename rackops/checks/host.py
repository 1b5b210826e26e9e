"""Host configuration read back from the tools: RoCE QoS (mlnx_qos), OFED version,
RoCE v2 GIDs, and GPU↔NIC locality (topo -m). Expected values come from the design."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rackops.consistency import HostQos, Intent, check_host
from rackops.design import HostRoce
from rackops.findings import Finding, Status, Subject
from rackops.inventory.model import Hca, RoceQos
from rackops.parsers.mlnx_qos import MlnxQos
from rackops.parsers.nvidia_smi import SmiTopo
from rackops.parsers.ofed_info import OfedInfo
from rackops.parsers.show_gids import ShowGids

GDR_OK = ("PIX", "PXB")


def qos_drift(
    parsed: MlnxQos, pfc: Sequence[int], dscp2prio: Mapping[int, int]
) -> list[tuple[str, object, object]]:
    """Where one interface's live QoS is not its host's design: trust, the PFC vector, each
    DSCP→priority entry the design sets (RoCE, CNP, the host's own). (what, live, designed)
    each; empty when as designed. The roce_host_qos role repairs what this names, and the
    validate check below names the same: one reading of mlnx_qos for both."""
    view = HostQos(parsed.trust, tuple(parsed.pfc_priorities), dict(parsed.dscp2prio))
    out: list[tuple[str, object, object]] = []
    if parsed.trust != "dscp":
        out.append(("trust", parsed.trust, "dscp"))
    if tuple(parsed.pfc_enabled) != tuple(pfc):
        out.append(("PFC", _vector(parsed.pfc_enabled), _vector(pfc)))
    if parsed.trust == "dscp":  # under another trust no DSCP entry applies: trust says it
        for dscp, want in sorted(dscp2prio.items()):
            if view.prio_of(dscp) != want:
                out.append((f"DSCP {dscp} priority", view.prio_of(dscp), want))
    return out


def _vector(flags: Sequence[int]) -> str:
    return ",".join(str(int(f)) for f in flags)


def check_mlnx_qos(
    parsed: MlnxQos, roce: RoceQos, *, subject: Subject, host: HostRoce | None = None
) -> list[Finding]:
    """The §10 host rules (rackops.consistency: C-04, C-05, C-12, C-14) on live mlnx_qos;
    with the node's own design (``host``), every DSCP→priority entry it sets, its
    ``rackops_host_qos.dscp2prio`` overrides included (QOS-002)."""
    view = HostQos(parsed.trust, tuple(parsed.pfc_priorities), dict(parsed.dscp2prio))
    intent = Intent(roce, 0, False)
    out = [
        Finding(v.code, Status.FAIL, subject, v.message, v.got, v.want, None, v.fix, action="node")
        for v in check_host(intent, view)
    ]
    ruled = {roce.dscp, roce.cnp_dscp}  # C-05's own
    for dscp, want in sorted(host.dscp2prio.items()) if host else ():
        live = view.prio_of(dscp)
        if dscp not in ruled and live != want and view.trust in (None, "dscp"):
            out.append(
                Finding(
                    "QOS-002",
                    Status.FAIL,
                    subject,
                    f"DSCP {dscp} maps to priority {live}; this host's design "
                    f"(rackops_host_qos.dscp2prio) maps it to {want}",
                    live,
                    want,
                    None,
                    f"mlnx_qos -i <netdev> --dscp2prio set,{dscp},{want}, or run the "
                    "roce_host_qos role",
                    action="node",
                )
            )
    pfc = ",".join(str(v) for v in parsed.pfc_enabled)
    return out or [
        Finding(
            "QOS-OK",
            Status.OK,
            subject,
            f"trust {parsed.trust}, PFC {pfc}, DSCP {roce.dscp}→{roce.priority}",
        )
    ]


def check_ofed(parsed: OfedInfo, pinned: str, *, node: str | None = None) -> list[Finding]:
    subj = Subject(node=node)
    if parsed.matches(pinned):
        return [Finding("OFED-OK", Status.OK, subj, f"{parsed.flavour} {parsed.version}")]
    return [
        Finding(
            "OFED-001",
            Status.FAIL,
            subj,
            f"OFED {parsed.version} ({parsed.flavour}), pinned {pinned}",
            parsed.version,
            pinned,
            None,
            "run the ofed role; reboot after the upgrade",
            action="node",
        )
    ]


def check_gids(parsed: ShowGids, hcas: Sequence[Hca], *, node: str | None = None) -> list[Finding]:
    out = []
    if not parsed.complete:
        out.append(
            Finding(
                "GID-000",
                Status.ERROR,
                Subject(node=node),
                f"show_gids lists {len(parsed.gids)} GIDs but says "
                f"n_gids_found={parsed.n_gids_found}",
                remediation="rerun show_gids",
            )
        )
        return out
    for h in hcas:
        subj = Subject(node=node, hca=h.device, port=1)
        gid = parsed.roce_v2(h.device, h.address)
        if gid is None:
            out.append(
                Finding(
                    "C-26",
                    Status.FAIL,
                    subj,
                    f"no RoCE v2 GID bound to {h.address or 'an IPv4 address'}",
                    None,
                    "RoCE v2 GID",
                    None,
                    f"assign {h.address or 'the fabric address'} to {h.netdev} and "
                    f"check 'devlink dev param show' enable_roce",
                    action="node",
                )
            )
        elif gid.netdev not in (None, h.netdev):
            out.append(
                Finding(
                    "C-26",
                    Status.FAIL,
                    subj,
                    f"RoCE v2 GID {gid.index} is on {gid.netdev}, expected {h.netdev}",
                    gid.netdev,
                    h.netdev,
                    None,
                    "fix the netdev naming/cabling map",
                    action="node",
                )
            )
        else:
            out.append(Finding("GID-OK", Status.OK, subj, f"RoCE v2 GID index {gid.index}"))
    return out


def check_topo(parsed: SmiTopo, hcas: Sequence[Hca], *, node: str | None = None) -> list[Finding]:
    names = {dev: nic for nic, dev in parsed.nic_names.items()}
    if not hcas:  # a GPU-only node: no GPU↔HCA pair to place
        gpus = [d for d in parsed.devices if d.startswith("GPU")]
        return [
            Finding(
                "TOPO-OK",
                Status.OK,
                Subject(node=node),
                f"no HCA in the design: {len(gpus)} GPUs in the matrix, no GPUDirect pair to place",
            )
        ]
    out = []
    for h in hcas:
        subj = Subject(node=node, gpu=h.gpu, hca=h.device)
        nic = names.get(h.device, h.device)
        link = parsed.link(f"GPU{h.gpu}", nic)
        if link is None:
            out.append(
                Finding(
                    "TOPO-000",
                    Status.ERROR,
                    subj,
                    f"GPU{h.gpu} or {h.device} is not in the topology matrix",
                )
            )
        elif link not in GDR_OK:
            out.append(
                Finding(
                    "TOPO-001",
                    Status.WARN,
                    subj,
                    f"GPU{h.gpu} ↔ {h.device} is {link}; GPUDirect RDMA wants PIX/PXB",
                    link,
                    "PIX|PXB",
                    None,
                    "pair the HCA with the GPU under the same PCIe switch "
                    "(fix 'gpu' in the cabling map)",
                )
            )
        else:
            out.append(Finding("TOPO-OK", Status.OK, subj, f"GPU{h.gpu} ↔ {h.device} {link}"))
    return out
