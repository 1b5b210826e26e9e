"""The peer gate over a whole run: every measured quantity, compared within the rack.

Every check that measures something reports it as the ``observed`` value of its passing
finding, with a unit. Here those values are grouped by what they measure (finding code,
unit, and the test that produced them: link bandwidth, link latency, single-node NCCL
busbw, per-GPU figures where a check reports them) and each group goes through
``rackops.checks.peers.peer_gate``. Values that already failed their floor are culprits
elsewhere and do not take part. Units say the direction: times (``us``, ``ms``) are
better low, rates (``Gb/s``, ``GB/s``) better high; other units are not compared.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from rackops.checks.peers import peer_gate
from rackops.findings import Finding, Subject
from rackops.inventory.model import Cluster
from rackops.profiles import Profile

LOWER_IS_BETTER = {"us", "ms"}
HIGHER_IS_BETTER = {"Gb/s", "GB/s"}


def peer_findings(
    records: list[dict[str, Any]], cluster: Cluster, profiles: dict[str, Profile]
) -> list[Finding]:
    groups: dict[tuple[str, str, str, str], dict[Subject, float]] = defaultdict(dict)
    profile_of = {n.name: n.profile for n in cluster.nodes}
    for rec in records:
        if rec["kind"] not in ("node", "pair"):
            continue
        for f in rec["findings"]:
            unit, value = f.get("unit"), f.get("observed")
            if f["status"] != "OK" or unit not in LOWER_IS_BETTER | HIGHER_IS_BETTER:
                continue
            if not isinstance(value, int | float) or isinstance(value, bool):
                continue
            node = f["subject"].get("node") or rec.get("node") or ""
            key = (f["code"], unit, rec["tool"], profile_of.get(node, ""))
            groups[key][Subject(**f["subject"])] = float(value)
    out: list[Finding] = []
    for (_code, unit, tool, profile), values in sorted(groups.items()):
        t = profiles[profile].thresholds if profile in profiles else None
        out += peer_gate(
            values,
            metric=_metric(tool, unit),
            unit=unit,
            k=t.peer_mad_k if t else 4.0,
            drop_pct=t.peer_drop_pct_min if t else 5.0,
            lower_is_better=unit in LOWER_IS_BETTER,
        )
    return out


def _metric(tool: str, unit: str) -> str:
    if tool == "perftest-lat" or unit in LOWER_IS_BETTER:
        return "latency"
    if tool == "perftest":
        return "link bandwidth"
    if tool == "nccl-tests":
        return "NCCL busbw"
    return f"{tool} figure"
