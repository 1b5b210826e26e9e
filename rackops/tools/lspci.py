"""lspci -vvv: each GPU's and HCA's PCIe link (trained against capable) and the ACS state of
the bridges between each GPU and its rail HCA. Compared across the fleet (``rackops/fleet``);
on its own: an HCA link below its capability, ACS redirecting a rail's GPUDirect traffic."""

from __future__ import annotations

from typing import Any

from rackops.findings import Finding, Status, Subject
from rackops.inventory.model import Cluster
from rackops.parsers.lspci import ACS_REDIRECT_FLAGS, link_capable, parse_lspci
from rackops.suites import Suite
from rackops.tools._common import fact_num, gpu_device, not_whole, with_sbin
from rackops.tools.base import Binary, Context, FactSink, NodeCheck, Tool


def plan(suite: Suite, cluster: Cluster) -> list[NodeCheck]:
    if not suite.checks.fleet:
        return []
    return [NodeCheck("lspci", "lspci", with_sbin("lspci", "-vvv"), 60, 2)]


def _link(parsed: Any, d: Any, subj: Subject) -> list[Finding]:
    sta = d.link_sta
    speed, width = link_capable(parsed, d)
    if sta is None:
        return []
    out = []
    for what, now, most in (("width x", sta.width, width), ("speed ", sta.speed_gts, speed)):
        if now is not None and most is not None and now < most:
            unit = "" if what.startswith("width") else " GT/s"
            out.append(
                Finding(
                    "PCIE-001",
                    Status.FAIL,
                    subj,
                    f"HCA {d.bdf} PCIe link trained at {what}{now:g}{unit}, it and its slot "
                    f"capable of {what}{most:g}{unit}",
                    observed=now,
                    expected=most,
                    remediation="reseat the card, check the riser and slot; then reboot",
                )
            )
    return out


# a node has at most 72 GPUs (GB200 NVL72 tray sets: 4) and a few dozen HCAs: more is not a
# node's output, and the GPU x HCA path walk below must stay bounded
MAX_JUDGED = 128


def check(parsed: Any, ctx: Context, node: str | None) -> list[Finding]:
    subj = Subject(node=node)
    if bad := not_whole(parsed, "PCIE-000", subj, "PCIe links", "capture lspci -vvv again, whole"):
        return bad
    out: list[Finding] = []
    judged = [d for d in parsed.devices if d.kind in ("gpu", "hca")]
    if len(judged) > MAX_JUDGED:
        return [
            Finding(
                "PCIE-000",
                Status.ERROR,
                subj,
                f"lspci lists {len(judged)} GPUs and HCAs, more than {MAX_JUDGED}: not a node's "
                "output, not judged",
                remediation="capture lspci -vvv of one node",
            )
        ]
    if any(d.caps_denied for d in judged):
        out.append(
            Finding(
                "PCIE-002",
                Status.WARN,
                subj,
                "lspci shows no capabilities (<access denied>): PCIe links and ACS not read",
                remediation="run lspci as root (ansible_become: true)",
            )
        )
    for d in judged:
        if d.kind == "hca":  # a GPU's speed drops at idle; its width nvidia-smi judges
            out += _link(parsed, d, Subject(node=node, bus_id=d.bdf))
    out += _acs(parsed, ctx, node)
    return out or [Finding("PCIE-000", Status.OK, subj, f"{len(judged)} GPU/HCA links as capable")]


def _acs(parsed: Any, ctx: Context, node: str | None) -> list[Finding]:
    """A bridge between a GPU and an HCA that redirects peer-to-peer requests up to the root
    complex: GPUDirect RDMA still works, through the CPU, at a fraction of the bandwidth."""
    gpus = [d for d in parsed.devices if d.kind == "gpu"]
    hcas = [d for d in parsed.devices if d.kind == "hca"]
    seen: set[str] = set()
    out = []
    for g in gpus:
        above = {b.bdf for b in parsed.path_to_root(g.bdf)}
        for h in hcas:
            if not above & {b.bdf for b in parsed.path_to_root(h.bdf)}:
                continue  # under different root ports: their traffic crosses the CPU anyway
            for b in parsed.path_between(g.bdf, h.bdf):
                if b.bdf in seen or not b.acs_redirects:
                    continue
                seen.add(b.bdf)
                on = "+".join(k for k, v in (b.acs_ctl or {}).items() if v)
                out.append(
                    Finding(
                        "PCIE-003",
                        Status.WARN,
                        Subject(node=node, bus_id=b.bdf),
                        f"ACS on bridge {b.bdf} ({on}) between GPU {g.bdf} and HCA {h.bdf}: "
                        "GPUDirect RDMA goes through the root complex (bare metal wants it "
                        "off; a VM with ATS may want it on)",
                        remediation=f"setpci -s {b.bdf} ECAP_ACS+0x6.w=0000, or turn ACS off "
                        "in the BIOS",
                    )
                )
    return out


def live(text: str, ctx: Context, node: str | None) -> tuple[list[Finding], Any]:
    """In a run, an HCA trained below its capability is the fleet stage's to name: it knows
    the HCA's RDMA device from host-facts, this output only its PCI address."""
    from rackops.tools import judged

    found, parsed = judged("lspci", text, ctx, node)
    out = [f for f in found if f.code != "PCIE-001"]
    return out or [Finding("PCIE-000", Status.OK, Subject(node=node), "PCIe links read")], parsed


FACTS_SOURCE = "lspci -vvv"


def _pcie(out: FactSink, lspci: Any, dev: str, bdf: str) -> None:
    d = lspci.device(bdf)
    if d is None or d.caps_denied:
        return
    src = FACTS_SOURCE
    if d.link_sta is not None:
        out.add(dev, "pcie.speed", fact_num(d.link_sta.speed_gts), src, bdf)
        out.add(dev, "pcie.width", fact_num(d.link_sta.width), src, bdf)
    speed, width = link_capable(lspci, d)
    out.add(dev, "pcie.speed_max", fact_num(speed), src, bdf)
    out.add(dev, "pcie.width_max", fact_num(width), src, bdf)


def acs_state(bridge: Any) -> str:
    """A bridge's ACS as one comparable word: the flags that send peer-to-peer traffic up to
    the root complex (``ACS_REDIRECT_FLAGS``, the lspci check's rule), or ``off``; ``none``
    without the capability."""
    ctl = bridge.acs_ctl
    if ctl is None:
        return "none"
    on = [k for k in ACS_REDIRECT_FLAGS if ctl.get(k, False)]
    return "+".join(on) if on else "off"


def facts(lspci: Any, out: FactSink, _check: str) -> None:
    """Each GPU's and HCA's PCIe link (as trained and as capable), and the ACS of every
    bridge a GPUDirect transfer of each rail crosses: joined on the PCI addresses the other
    tools read (``facts_join``)."""
    for dev, bdf in sorted(out.pci.items()):
        _pcie(out, lspci, dev, bdf)
    for h in out.node.hcas:
        gpu = gpu_device(h.gpu)
        gbdf, hbdf = out.pci.get(gpu), out.pci.get(h.device)
        if gbdf is None or hbdf is None:
            continue
        if lspci.device(gbdf) is None or lspci.device(hbdf) is None:
            continue
        for i, bridge in enumerate(lspci.path_between(gbdf, hbdf)):
            if not bridge.caps_denied:  # not root: unknown, never "none" (lspci says so)
                out.add(gpu, f"acs.{h.device}.{i}", acs_state(bridge), FACTS_SOURCE, bridge.bdf)


TOOL = Tool(
    "lspci",
    "PCIe links and ACS between GPUs and HCAs",
    parse=parse_lspci,
    check=check,
    live=live,
    plan=plan,
    order=45,
    binaries=(Binary("lspci", "pciutils"),),
    facts=facts,
    facts_join=True,
)
