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

from rackops.checks.peers import gate_limit, peer_gate
from rackops.findings import Finding, Status, Subject
from rackops.inventory.model import Cluster
from rackops.profiles import Profile
from rackops.validate.localise import shared_ends

LOWER_IS_BETTER = {"us", "ms"}
HIGHER_IS_BETTER = {"Gb/s", "GB/s", "TFLOPS", "MHz", "W"}


def peer_findings(
    records: list[dict[str, Any]], cluster: Cluster, profiles: dict[str, Profile]
) -> list[Finding]:
    groups, links = _groups(records, cluster)
    out: list[Finding] = []
    for (_code, unit, tool, profile), values in sorted(groups.items()):
        k, drop = _gate_of(profiles, profile)
        flagged = peer_gate(
            values,
            metric=_metric(tool, unit),
            unit=unit,
            k=k,
            drop_pct=drop,
            lower_is_better=unit in LOWER_IS_BETTER,
        )
        out += _by_shared_end(flagged, links, _metric(tool, unit))
    return out


def peer_limits(
    records: list[dict[str, Any]], cluster: Cluster, profiles: dict[str, Profile]
) -> list[dict[str, Any]]:
    """Each group's gate, where it has enough peers (the report draws it as a line)."""
    groups, _ = _groups(records, cluster)
    out = []
    for (code, unit, tool, profile), values in sorted(groups.items()):
        if len(values) < MIN_PEERS:
            continue
        k, drop = _gate_of(profiles, profile)
        med, mad, limit = gate_limit(list(values.values()), k, drop, unit in LOWER_IS_BETTER)
        out.append(
            {
                "code": code,
                "unit": unit,
                "tool": tool,
                "profile": profile,
                "median": round(med, 3),
                "mad": round(mad, 3),
                "limit": round(limit, 3),
            }
        )
    return out


MIN_PEERS = 4  # peer_gate's own default: fewer values say nothing about a straggler


def _gate_of(profiles: dict[str, Profile], profile: str) -> tuple[float, float]:
    t = profiles[profile].thresholds if profile in profiles else None
    return (t.peer_mad_k, t.peer_drop_pct_min) if t else (4.0, 5.0)


def _groups(
    records: list[dict[str, Any]], cluster: Cluster
) -> tuple[dict[tuple[str, str, str, str], dict[Subject, float]], dict[Subject, dict[str, Any]]]:
    """The passing figures by what they measure (code, unit, tool, profile), and each
    pair measurement's pair."""
    groups: dict[tuple[str, str, str, str], dict[Subject, float]] = defaultdict(dict)
    links: dict[Subject, dict[str, Any]] = {}  # a pair's measurement -> the pair (its meta)
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
            subj = Subject(**f["subject"])
            groups[key][subj] = float(value)
            if rec["kind"] == "pair" and isinstance(rec.get("meta"), dict):
                links[subj] = rec["meta"]
    return groups, links


def _by_shared_end(
    flagged: list[Finding], links: dict[Subject, dict[str, Any]], metric: str
) -> list[Finding]:
    """Straggler links localised as failing ones are (localise.shared_ends): an end shared
    by several straggler links is one WARN on that HCA and port, never on its partners; a
    straggler link left alone stays a link (both ends named)."""
    pairs = {str(i): links[f.subject] for i, f in enumerate(flagged) if f.subject in links}
    groups, _alone = shared_ends(
        {i: ((m["server"], m["rail"]), (m["client"], m["rail"])) for i, m in pairs.items()}
    )
    taken: set[str] = set()
    out = []
    for (node, rail), ids in groups:
        taken |= set(ids)
        worst = max(
            (flagged[int(i)] for i in ids),
            key=lambda f: abs(float(f.observed) - float(f.expected)),
        )
        m = pairs[ids[0]]
        side = "server" if m["server"] == node else "client"
        switch, port = [*m[f"{side}_switch_port"].split(maxsplit=1), ""][:2]
        hca = m[f"{side}_hca"]
        partners = sorted(
            {pairs[i]["client" if pairs[i]["server"] == node else "server"] for i in ids}
        )
        out.append(
            Finding(
                "PEER-001",
                Status.WARN,
                Subject(node=node, hca=hca, port=1, switch=switch, switch_port=port or None),
                f"{metric} through {node}/{hca} (rail {rail}) is a straggler with "
                f"{len(partners)} partners ({', '.join(partners)}), who are not with others; "
                f"worst {worst.observed:.2f} {worst.unit} against a limit of "
                f"{worst.expected} {worst.unit}",
                worst.observed,
                worst.expected,
                worst.unit,
                "this HCA, its cable or its switch port is slower than its peers though "
                "within the floor: check its PCIe link, NUMA placement, firmware and the "
                "port's counters; re-test with --pairing suspects",
            )
        )
    return out + [f for i, f in enumerate(flagged) if str(i) not in taken]


def _metric(tool: str, unit: str) -> str:
    named = {"MHz": "SM clock under load", "W": "power under load", "TFLOPS": "FP16 GEMM"}
    if unit in named:
        return named[unit]
    if tool == "dcgmproftester":
        return "HBM bandwidth"
    if tool == "perftest-lat" or unit in LOWER_IS_BETTER:
        return "latency"
    if tool == "perftest":
        return "link bandwidth"
    if tool == "nccl-tests":
        return "NCCL busbw"
    return f"{tool} figure"
