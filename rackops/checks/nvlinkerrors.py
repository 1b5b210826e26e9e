"""NVLink error counters across the run's load (``nvidia-smi nvlink -e`` read before and
after it): a counter that grew is named on its GPU and link.

What grew matters, not what a counter held before (history, cleared only by a reset): a
link that needed a recovery, or lost data NVLink's own replay could not hide, under this
run's load FAILs; replays and CRC errors — corrected by the link layer's retransmission —
that grew are a WARN (a link that degrades shows them first). NVLink5's corrected-codeword
and raw (pre-FEC) counts and BERs (``FEC Errors - N``, ``Raw …``, ``… BER``, ``PLR …``) and
its successful recoveries are not errors: a healthy GB200 link shows them (research:
docs/research/issue-42-nvlink-e.md).
"""

from __future__ import annotations

from rackops.findings import Finding, Status, Subject
from rackops.parsers.nvidia_smi_nvlink_errors import NvlinkErrors

# data lost or a link that had to be brought back (NVLink1-4, NVLink5)
FAIL_GROWTH = frozenset(
    {
        "Recovery Errors",
        "Effective Errors",
        "Link recovery failed events",
        "Malformed packet Errors",
        "Buffer overrun Errors",
        "Rx Errors",
        "Rx remote Errors",
        "Rx General Errors",
        "Local link integrity Errors",
    }
)
# corrected by retransmission: a degrading link's first sign
WARN_GROWTH = frozenset(
    {"Replay Errors", "CRC Errors", "CRC Flit Errors", "CRC Data Errors", "Symbol Errors"}
)

FIX = (
    "a link whose errors grow under load: reseat or replace its NVLink cable cartridge (GB200: "
    "the tray's link to its NVLink switch tray; HGX: the baseboard) and check the switch side "
    "(NMX, fabric manager); reset the GPU, then run again"
)


def judge_growth(before: NvlinkErrors, after: NvlinkErrors, node: str) -> list[Finding]:
    """One finding per link whose error counters grew between the two reads."""
    out = _gone(before, after, node)
    seen = {g.index: g for g in before.gpus}
    links = 0
    for g in after.gpus:
        b = seen.get(g.index)
        if b is None:
            continue
        for link, counters in sorted(g.links.items()):
            links += 1
            grew = []
            for name, value in counters.items():
                was = b.links.get(link, {}).get(name)
                if value is None or was is None or name not in FAIL_GROWTH | WARN_GROWTH:
                    continue
                if value < was:
                    out.append(
                        Finding(
                            "NVE-002",
                            Status.WARN,
                            Subject(node=node, gpu=g.index, port=link),
                            f"GPU {g.index} NVLink link {link}: {name} went back from "
                            f"{was:g} to {value:g} during the run (the GPU was reset?): its "
                            "growth is not known",
                        )
                    )
                elif value > was:
                    grew.append((name, was, value))
            if not grew:
                continue
            fail = any(name in FAIL_GROWTH for name, _w, _v in grew)
            said = ", ".join(f"{name} +{v - w:g} ({w:g} → {v:g})" for name, w, v in grew)
            out.append(
                Finding(
                    "NVE-001",
                    Status.FAIL if fail else Status.WARN,
                    Subject(node=node, gpu=g.index, port=link),
                    f"GPU {g.index} NVLink link {link}: {said} during the run",
                    remediation=FIX,
                )
            )
    return out or [
        Finding(
            "NVE-000",
            Status.OK,
            Subject(node=node),
            f"no NVLink error counter grew during the run ({links} links of "
            f"{len(after.gpus)} GPUs)",
        )
    ]


def _gone(before: NvlinkErrors, after: NvlinkErrors, node: str) -> list[Finding]:
    """What the read before the load had and the read after it lacks: a GPU (the read is not
    the node's whole: an ERROR, never a pass), or links (down under the load: a FAIL)."""
    out = []
    now = {g.index: g for g in after.gpus}
    for b in before.gpus:
        a = now.get(b.index)
        if a is None:
            out.append(
                Finding(
                    "NVE-000",
                    Status.ERROR,
                    Subject(node=node, gpu=b.index),
                    f"GPU {b.index} is in the NVLink counter read before the run, not in the one "
                    "after: its counters were not compared",
                    remediation="check the GPU is still there (nvidia-smi -L), then run again",
                )
            )
            continue
        lost = sorted(set(b.links) - set(a.links))
        if lost:
            said = (
                "all its links are inactive"
                if a.all_inactive
                else f"link(s) {', '.join(map(str, lost))} no longer listed"
            )
            out.append(
                Finding(
                    "NVE-003",
                    Status.FAIL,
                    Subject(node=node, gpu=b.index),
                    f"GPU {b.index}: {said} after the run ({len(b.links)} links before)",
                    len(a.links),
                    len(b.links),
                    "links",
                    remediation=FIX,
                )
            )
    return out
