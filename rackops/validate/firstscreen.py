"""What the people who sign off a rack read first: the fixes grouped by what a technician
does (replace a cable, reseat an HCA, ...), and each measured stage's margin over its floor
(healthy with room, or just above the line).

Both read only what a run records (culprits, and findings with a numeric ``observed`` and
``expected``), so a new tool's findings get a stage line with no change here.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from typing import Any

from rackops.names import natural_key
from rackops.validate.peergate import HIGHER_IS_BETTER, LOWER_IS_BETTER
from rackops.validate.records import is_number

# the fix groups, in the order a technician walks the rack: hands on hardware first
ACTIONS: dict[str, str] = {
    "cable": "Replace, reseat or move a cable",
    "hca": "Reseat or replace an HCA",
    "gpu": "Cool, reseat or RMA a GPU",
    "switch": "Fix a switch or switch port",
    "node": "Fix the node's software or settings",
    "rerun": "Re-run to decide",
}


def fix_groups(culprits: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The culprits by fix group, groups in ACTIONS' order, each group's by node."""
    by: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for c in culprits:
        by[str(c["action"])].append(c)
    return [
        {
            "action": a,
            "title": title,
            "culprits": sorted(
                by[a], key=lambda c: (natural_key(c.get("node") or ""), natural_key(c.get("where")))
            ),
        }
        for a, title in ACTIONS.items()
        if by.get(a)
    ]


STAGE_NAMES = {
    ("pair", "perftest", "Gb/s"): "link bandwidth (ib_write_bw)",
    ("pair", "perftest-lat", "us"): "link latency (ib_write_lat)",
    ("node", "nccl-tests", "GB/s"): "NCCL within each node",
    ("nccl", "nccl-tests", "GB/s"): "NCCL across nodes",
    ("node", "dcgmproftester", "TFLOPS"): "GPU GEMM",
    ("node", "dcgmproftester", "GB/s"): "GPU memory bandwidth",
}


def margin(observed: float, expected: float, unit: str | None) -> float:
    """How far a figure is on the good side of its floor (or ceiling), as a fraction of it:
    negative below the floor."""
    if unit in LOWER_IS_BETTER:
        return (expected - observed) / expected
    return (observed - expected) / expected


def stage_margins(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One line per measured stage: how many figures, how many on the wrong side, the
    closest to its floor (with where it is) and the median margin."""
    stages: dict[tuple[str, str, str], list[tuple[float, dict[str, Any], dict[str, Any]]]] = (
        defaultdict(list)
    )
    for rec in records:
        for f in rec.get("findings") or []:
            obs, exp, unit = f.get("observed"), f.get("expected"), f.get("unit")
            if rec["kind"] == "peers" or unit not in LOWER_IS_BETTER | HIGHER_IS_BETTER:
                continue  # a unit whose direction is known; the peer gate is no floor
            if not (is_number(obs) and is_number(exp) and exp > 0):
                continue
            m = margin(obs, exp, unit)
            if math.isfinite(m):
                stages[(rec["kind"], rec["tool"], unit)].append((m, f, rec))
    out = []
    for (kind, tool, unit), rows in stages.items():
        worst_margin, worst, rec = min(rows, key=lambda r: r[0])
        subject = worst.get("subject") or {}
        where = " ".join(
            str(x)
            for x in (
                subject.get("node") or rec.get("node"),
                f"GPU {subject['gpu']}" if subject.get("gpu") is not None else None,
                subject.get("hca"),
                f"↔ {subject['peer']}" if subject.get("peer") else None,
            )
            if x
        )
        out.append(
            {
                "stage": STAGE_NAMES.get((kind, tool, unit), f"{tool} ({unit})"),
                "unit": unit,
                "measured": len(rows),
                "below_floor": sum(1 for m, _, _ in rows if m < 0),
                "worst": worst["observed"],
                "floor": worst["expected"],
                "worst_where": where or rec.get("id") or "",
                "worst_margin_pct": round(100 * worst_margin, 1),
                "median_margin_pct": round(100 * statistics.median(m for m, _, _ in rows), 1),
                "lower_is_better": unit in LOWER_IS_BETTER,
            }
        )
    return sorted(out, key=lambda s: s["worst_margin_pct"])
