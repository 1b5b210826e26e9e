"""One NVLink fault and the GPUs that followed it (GB200/GB300 NVL72, HGX B200): the link the
first fatal NVLink5 Xid names, not every GPU that logged an Xid after it.

When one NVLink5 link fails, its GPU logs a fatal, link-named Xid (``149, NETIR_LINK_EVT
Fatal … Link 01``) and then the rest of the NVLink group follows: its peers log non-fatal
RLW errors, the unit-wide ``NETIR Fatal … Link -1``, Xid 45 "caused by previous Xid 149/145"
as their channels are killed, and Xid 154 as their recovery action changes (a public B200
experiment: the victim GPU Xid 149 ×1, 145 ×1, 154, 45 ×64; each peer 145 ×1, 45 ×32; a GB200
tray's sequence in gpud's kmsg tests: research docs/research/issue-42-xid-nccl-mnnvl.md §1.3).

The group is the GPUs that share an NVLink fabric: a multi-node domain's trays, or one HGX
node. The origin is a link-named fatal event (Xid 144-150 whose body says ``Fatal`` and a
link 0-63); every other NVLink event in the group followed. Origins are ordered by the
kernel's clock (dmesg's seconds since boot), which only orders lines of one kernel: the first
origin of a tray is its earliest line, and origins on several trays, whose clocks are not
each other's, are each named (a handful of links, never the domain's 72 GPUs). A group with
NVLink events but no link-named fatal one names nothing here: its GPUs' own findings stand.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rackops.findings import Finding, Status, Subject
from rackops.parsers.kernel_xid import NVLINK5_XIDS, GpuEvent

# Xids that follow an NVLink fault on the GPUs that share the fabric: the NVLink5 units' own,
# the channel cleanup (45, when it names an NVLink Xid as its cause), the recovery action
# (154) and the software-defined NVLink error (155)
FOLLOWER_XIDS = frozenset({*NVLINK5_XIDS, 154, 155})
NVLINK_CAUSES = frozenset({*NVLINK5_XIDS, 74})
# the same, as the kernel log's findings name them (checks/gpuload.py: XID-<code>), for the
# localiser's fold; an Xid 45 follows only where its message names an NVLink cause
FOLLOWER_CODES = frozenset(f"XID-{c}" for c in FOLLOWER_XIDS)
CAUSED_BY_NVLINK = re.compile(
    r"caused by previous Xid (" + "|".join(str(c) for c in sorted(NVLINK_CAUSES)) + r")\b"
)


def follows_finding(code: object, message: object) -> bool:
    """Whether a kernel-log finding (its code and message) is part of an NVLink fault."""
    if code in FOLLOWER_CODES:
        return True
    return code == "XID-45" and bool(CAUSED_BY_NVLINK.search(str(message)))


def follows_nvlink(e: GpuEvent) -> bool:
    """Whether an event is part of an NVLink fault (a cascade's origin or a follower)."""
    if e.kind != "xid" or e.code is None:
        return False
    if e.code == 45:
        return e.caused_by in NVLINK_CAUSES
    return e.code in FOLLOWER_XIDS


def _origin(e: GpuEvent) -> bool:
    nvl = e.nvlink
    return e.code in NVLINK5_XIDS and nvl is not None and nvl.fatal and nvl.link is not None


@dataclass(frozen=True)
class TrayLog:
    node: str
    gpus: Mapping[str, int]  # PCI address (0000:18:00.0) → GPU index
    events: Sequence[GpuEvent] | None  # this run's events; None: the log was not read


def _when(e: GpuEvent) -> tuple[float, int]:
    return (e.uptime_s if e.uptime_s is not None else float("inf"), e.line)


def judge_cascade(group: str, logs: Sequence[TrayLog]) -> tuple[list[Finding], dict[str, Any]]:
    """Findings for the NVLink group ``group`` (a domain's name, or a node's), and its view:
    the origin link(s) and which GPUs followed, for the localiser to fold them into it."""
    nvl = [(t, e) for t in logs if t.events is not None for e in t.events if follows_nvlink(e)]
    view: dict[str, Any] = {"group": group, "trays": [t.node for t in logs], "origins": []}
    unread = [t.node for t in logs if t.events is None]
    view["unread"] = unread
    if not nvl and unread and len(unread) == len(logs):
        return [
            Finding(
                "NVX-000",
                Status.WARN,
                Subject(),
                f"{group}: no tray's kernel log was read after the load: NVLink Xids not judged",
            )
        ], view
    if not nvl:
        return [
            Finding("NVX-000", Status.OK, Subject(), f"{group}: no NVLink Xid during the run")
        ], view
    firsts: dict[str, tuple[TrayLog, GpuEvent]] = {}
    for t, e in nvl:
        if _origin(e) and (t.node not in firsts or _when(e) < _when(firsts[t.node][1])):
            firsts[t.node] = (t, e)
    if not firsts:
        return [
            Finding(
                "NVX-000",
                Status.OK,
                Subject(),
                f"{group}: {len(nvl)} NVLink Xids during the run, none a link-named fatal "
                "event: each GPU's own finding stands",
            )
        ], view
    out = []
    for t, e in sorted(firsts.values(), key=lambda te: te[0].node):
        assert e.nvlink is not None and e.nvlink.link is not None
        gpu = t.gpus.get(e.bdf)
        followed = sorted(
            {(ft.node, ft.gpus.get(fe.bdf, -1)) for ft, fe in nvl}
            - {(t.node, -1 if gpu is None else gpu)}
        )
        on_trays = len({n for n, _g in followed})
        view["origins"].append(
            {
                "node": t.node,
                "gpu": gpu,
                "bus_id": e.bdf,
                "link": e.nvlink.link,
                "xid": e.code,
                "unit": e.nvlink.unit,
                "uptime_s": e.uptime_s,
                "followed": [{"node": n, "gpu": g if g >= 0 else None} for n, g in followed],
            }
        )
        since = f" at {e.uptime_s:.6f} s" if e.uptime_s is not None else ""
        alone = (
            f"; {len(followed)} other GPUs on {on_trays} trays followed it"
            if followed
            else "; no other GPU followed it"
        )
        many = (
            f" ({len(firsts)} trays each logged a first fatal link event: their kernel clocks "
            "are not each other's, so each is named)"
            if len(firsts) > 1
            else ""
        )
        out.append(
            Finding(
                "NVX-001",
                Status.FAIL,
                Subject(node=t.node, gpu=gpu, bus_id=e.bdf, port=e.nvlink.link),
                f"{group}: NVLink link {e.nvlink.link} of {t.node} GPU "
                f"{gpu if gpu is not None else e.bdf} failed first (Xid {e.code} "
                f"{e.nvlink.unit} Fatal{since}){alone}{many}",
                remediation=f"fix link {e.nvlink.link} of this GPU, not the GPUs that "
                f"followed: nvidia-smi nvlink -s -i {gpu if gpu is not None else e.bdf} on "
                f"{t.node} shows it inactive; reseat its NVLink cable cartridge and check the "
                "NVLink switch tray port it reaches (NMX), reset this GPU, then reset the GPUs "
                "that followed (Xid 154: GPU Reset Required)",
                action="cable",
            )
        )
    return out, view
