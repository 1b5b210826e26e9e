"""A multi-node NVLink domain (GB200/GB300 NVL72) judged as one: every GPU of its trays in one
fabric partition — one clique, one cluster UUID — and all of the domain's GPUs there.

Each GPU's own fabric state is judged on its node (``checks/gpu.py``: GPU-009 off the fabric,
GPU-011 in no partition, GPU-012 unhealthy). Here the trays are compared with each other: a
tray whose GPUs joined another partition is named as the tray (not its four GPUs, and not the
other 68), a single GPU apart from its tray as that GPU, and a domain split with no majority
names each part. The domain's view (its partition, how many of its GPUs are in it, each
tray's slot and clique) is returned for the report.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rackops.checks.gpu import ZERO_UUID
from rackops.findings import Finding, Status, Subject
from rackops.parsers.nvidia_smi import SmiGpu

Partition = tuple[int | None, str | None]  # (clique, cluster UUID)

FIX_TRAY = (
    "this tray joined another NVLink partition than its domain: check its partition on the "
    "NVLink switch trays (NMX), then reboot the tray"
)


@dataclass(frozen=True)
class TrayRead:
    node: str
    slot: int
    gpus: tuple[SmiGpu, ...] | None  # None: the tray's nvidia-smi -q -x was not read


def _joined(g: SmiGpu) -> bool:
    return g.fabric_state == "Completed" and g.fabric_status == "Success"


def _says(p: Partition) -> str:
    return f"clique {p[0]}, cluster {p[1]}"


def judge_domain(
    name: str, trays: Sequence[TrayRead], size: int, pinned: int | None = None
) -> tuple[list[Finding], dict[str, Any]]:
    """Findings for the domain ``name`` of ``size`` GPUs, and its view for the report."""
    found: list[Finding] = []
    joined = {
        (t.node, g.index): (g.fabric_clique_id, g.fabric_cluster_uuid)
        for t in trays
        if t.gpus is not None
        for g in t.gpus
        if _in_partition(g)
    }
    found += [  # the tray's own step is the ERROR that says why: here, only a warning
        Finding(
            "NVL-005",
            Status.WARN,
            Subject(node=t.node),
            f"domain {name}: {t.node} (slot {t.slot}) was not read (its nvidia-smi -q -x "
            "step says why): the domain is judged without it",
            remediation="fix what kept the tray's GPU inventory from being read, run again",
        )
        for t in trays
        if t.gpus is None
    ]
    counts = Counter(joined.values())
    ranked = counts.most_common()
    if not ranked:
        return found + _no_partition(name, trays), {
            "domain": name,
            "size": size,
            **_view(trays, joined, (None, None), 0),
            "partition": None,
        }
    major, held = ranked[0]
    if len(ranked) > 1 and held * 2 <= sum(counts.values()):
        parts = "; ".join(
            f"{_says(p)}: {', '.join(sorted({n for (n, _), q in joined.items() if q == p}))}"
            for p, _ in ranked
        )
        found.append(
            Finding(
                "NVL-002",
                Status.FAIL,
                Subject(),
                f"domain {name} is split with no majority: {parts}",
                remediation="the NVLink switch trays put the domain's trays in more than one "
                "partition: fix the partition on NMX, then reboot the trays outside it",
                action="switch",
            )
        )
    else:
        found += _apart(name, trays, joined, major, held, size)
    if pinned is not None and major[0] != pinned:
        found.append(
            Finding(
                "NVL-003",
                Status.FAIL,
                Subject(),
                f"domain {name}'s partition is clique {major[0]}, the design pins clique {pinned}",
                major[0],
                pinned,
                remediation="assign the domain's partition on the NVLink switch trays (NMX), or "
                "correct rackops_nvlink.clique",
                action="switch",
            )
        )
    found += _off_fabric(name, trays, held, size)
    if held < size and not found:  # a GPU not listed at all (its node's GPU count names it)
        found.append(
            Finding(
                "NVL-006",
                Status.WARN,
                Subject(),
                f"domain {name}: {held} of {size} GPUs in its partition; the rest are not "
                "listed by their trays (the trays' GPU counts say which)",
                held,
                size,
                "GPUs",
            )
        )
    if not found:
        found.append(
            Finding(
                "NVL-000",
                Status.OK,
                Subject(),
                f"domain {name}: {held} of {size} GPUs in one partition ({_says(major)}), "
                f"{len(trays)} trays",
                held,
                size,
                "GPUs",
            )
        )
    return found, {"domain": name, "size": size, **_view(trays, joined, major, held)}


def _in_partition(g: SmiGpu) -> bool:
    """Joined the fabric and given a partition (a clique and cluster UUID, not 0 and zeros)."""
    partitioned = bool(g.fabric_clique_id) and g.fabric_cluster_uuid not in (None, ZERO_UUID)
    return _joined(g) and partitioned


def _no_partition(name: str, trays: Sequence[TrayRead]) -> list[Finding]:
    """No GPU of the domain is in a partition: one fault, the domain's (the switch trays
    configure it), whatever each GPU says."""
    states = Counter(
        f"{g.fabric_state}/{g.fabric_status}" for t in trays for g in t.gpus or ()
    ).most_common()
    if not states:
        return []
    said = ", ".join(f"{n} {s}" for s, n in states)
    return [
        Finding(
            "NVL-007",
            Status.FAIL,
            Subject(),
            f"no GPU of domain {name} is in an NVLink partition ({said}): the domain's fabric "
            "is not configured",
            0,
            sum(len(t.gpus or ()) for t in trays),
            "GPUs",
            remediation="the NVLink switch trays configure the domain before the trays boot: "
            "check NMX (fabric manager, partition) on them, then reboot the trays",
            action="switch",
        )
    ]


def _view(
    trays: Sequence[TrayRead],
    joined: dict[tuple[str, int], Partition],
    major: Partition | tuple[None, None],
    held: int,
) -> dict[str, Any]:
    """The domain as the report shows it: its partition, how many GPUs are in it, each tray."""
    return {
        "partition": {"clique": major[0], "cluster": major[1]},
        "in_partition": held,
        "trays": {
            t.node: {
                "slot": t.slot,
                "read": t.gpus is not None,
                "in_partition": sum(
                    1 for (n, _), p in joined.items() if n == t.node and p == major
                ),
                "gpus": 0 if t.gpus is None else len(t.gpus),
            }
            for t in trays
        },
    }


FIX_TRAY_OFF = (
    "none of this tray's GPUs is in the domain's partition: the NVLink switch trays (NMX) did "
    "not configure it (its NVLink cable cartridges, its place in the partition), or it booted "
    "before the fabric was up: check it on NMX, then reboot the tray"
)


def _off_fabric(name: str, trays: Sequence[TrayRead], held: int, size: int) -> list[Finding]:
    """The domain's GPUs that joined no partition: a tray none of whose GPUs did is that tray
    (NVL-008: the localiser folds its GPUs' own findings into it), else each GPU (GPU-009
    says why)."""
    whole = [
        t
        for t in trays
        if t.gpus is not None and len(t.gpus) > 1 and not any(_in_partition(g) for g in t.gpus)
    ]
    out = [
        Finding(
            "NVL-008",
            Status.FAIL,
            Subject(node=t.node),
            f"{t.node} (slot {t.slot} of {name}): none of its {len(t.gpus or ())} GPUs is in the "
            "domain's partition ("
            + ", ".join(
                f"{n} {st}"
                for st, n in Counter(
                    f"{g.fabric_state}/{g.fabric_status}" for g in t.gpus or ()
                ).most_common()
            )
            + f"); {held} of the domain's {size} GPUs are",
            held,
            size,
            "GPUs",
            remediation=FIX_TRAY_OFF,
            action="switch",
        )
        for t in whole
    ]
    gone = {t.node for t in whole}
    return out + [
        Finding(
            "NVL-004",
            Status.FAIL,
            Subject(node=t.node, gpu=g.index),
            f"{t.node} GPU {g.index} (slot {t.slot} of {name}) is not in the domain's "
            f"partition: fabric {g.fabric_state}/{g.fabric_status}, clique "
            f"{g.fabric_clique_id}; {held} of the domain's "
            f"{size} GPUs are",
            held,
            size,
            "GPUs",
            remediation="see GPU-009/GPU-011 for this GPU: the fabric did not take it",
        )
        for t in trays
        if t.node not in gone
        for g in t.gpus or ()
        if not _in_partition(g)
    ]


def _apart(
    name: str,
    trays: Sequence[TrayRead],
    joined: dict[tuple[str, int], Partition],
    major: Partition,
    held: int,
    size: int,
) -> list[Finding]:
    """The trays (or single GPUs) whose joined GPUs are in another partition than the
    domain's majority."""
    out: list[Finding] = []
    for t in trays:
        own = {i: p for (n, i), p in joined.items() if n == t.node}
        apart = {i: p for i, p in own.items() if p != major}
        if not apart:
            continue
        others = set(apart.values())
        if len(apart) == len(own) and len(others) == 1:  # the tray as one
            (p,) = others
            out.append(
                Finding(
                    "NVL-001",
                    Status.FAIL,
                    Subject(node=t.node),
                    f"{t.node} (slot {t.slot} of {name}) is in {_says(p)}; the domain's "
                    f"partition is {_says(major)} ({held} of its {size} GPUs)",
                    f"clique {p[0]}",
                    f"clique {major[0]}",
                    remediation=FIX_TRAY,
                    action="switch",  # the partition is set on the NVLink switch trays
                )
            )
            continue
        for i, p in sorted(apart.items()):
            out.append(
                Finding(
                    "NVL-001",
                    Status.FAIL,
                    Subject(node=t.node, gpu=i),
                    f"{t.node} GPU {i} (slot {t.slot} of {name}) is in {_says(p)}; its tray "
                    f"and the domain are in {_says(major)}",
                    f"clique {p[0]}",
                    f"clique {major[0]}",
                    remediation="reset the GPU (nvidia-smi -r) and read its fabric again; if it "
                    "stays apart, check its NVLinks on the NVLink switch trays",
                )
            )
    return out
