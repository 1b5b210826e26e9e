"""The fleet: facts every node of one SKU must share, read from a run's node-check outputs
and judged against the golden node (``Profile.golden``), or by majority without one, and
against the profile's version floors.

``facts.py`` what a fact is and what a difference weighs; ``compare.py`` the three
judgements. A golden profile is captured from an accepted node's run by
``rackops/validate/golden.py``; the validate stage that runs the fleet is
``rackops/validate/stages/fleet.py``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rackops.findings import Finding
from rackops.fleet.compare import against_floors, against_golden, below_capability, by_majority
from rackops.fleet.facts import Fact, node_facts, sources
from rackops.inventory.model import Cluster
from rackops.profiles import Profile

__all__ = ["Fact", "judge", "node_outputs", "read_table"]


def node_outputs(rundir: Any, nodes: Iterable[str]) -> dict[str, dict[str, Any]]:
    """node → check name (``lspci``, ``mlxconfig/mlx5_0``) → parsed output, for the fleet's
    source tools; an output that is unreadable or not whole gives nothing (its own step is
    already an ERROR that says why)."""
    wanted = set(nodes)
    out: dict[str, dict[str, Any]] = {n: {} for n in wanted}
    fact_tools = sources()
    for rec in rundir.records():
        if rec["kind"] != "node" or rec["tool"] not in fact_tools or rec["node"] not in wanted:
            continue
        if any(f["status"] == "ERROR" for f in rec["findings"]):
            continue
        parsed = rundir.parsed_output(rec)
        if parsed is None:
            continue
        if getattr(parsed, "complete", True) is False:
            continue
        out[rec["node"]][rec["id"].split("/", 2)[2]] = parsed
    return out


def read_table(rundir: Any, cluster: Cluster, nodes: Iterable[str]) -> dict[str, list[Fact]]:
    """Every node's fleet facts from a run directory."""
    outputs = node_outputs(rundir, nodes)
    return {n: node_facts(cluster.node(n), parsed) for n, parsed in sorted(outputs.items())}


def judge(
    table: Mapping[str, Sequence[Fact]], cluster: Cluster, profiles: Mapping[str, Profile]
) -> list[Finding]:
    """Per profile (one SKU): the golden node's facts when the profile has them, else the
    majority of the nodes of that profile; and every node against the profile's floors."""
    out: list[Finding] = []
    by_profile: dict[str, dict[str, Sequence[Fact]]] = {}
    for node, facts in table.items():
        by_profile.setdefault(cluster.node(node).profile, {})[node] = facts
    for name, group in sorted(by_profile.items()):
        profile = profiles[name]
        if profile.golden is not None:
            for node, facts in sorted(group.items()):
                out += against_golden(node, facts, profile.golden)
        else:
            out += by_majority(group)
        for node, facts in sorted(group.items()):
            out += against_floors(node, facts, profile.floors)
    said = {(f.subject.node, f.subject.hca) for f in out if f.code == "FLEET-PCIE"}
    for node, facts in sorted(table.items()):
        out += [
            f for f in below_capability(node, facts) if (f.subject.node, f.subject.hca) not in said
        ]
    return out
