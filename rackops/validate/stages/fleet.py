"""Stage 1b: the fleet — every node's facts (versions, firmware, PCIe links, ACS, firmware
configuration, GPU settings) against the golden node, or the majority, and the floors. It
reads what stage 1 saved; it runs no command of its own."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rackops.findings import Finding, Status, Subject
from rackops.fleet import Fact, judge, read_table
from rackops.inventory.model import Cluster
from rackops.profiles import Profile
from rackops.validate.plan import Plan
from rackops.validate.stages.base import StageBase

FLEET_FILE = "fleet.json"  # in the run directory: every node's facts (the report's table)


def fleet_json(
    table: Mapping[str, Sequence[Fact]],
    cluster: Cluster,
    profiles: Mapping[str, Profile],
    how: str,
) -> dict[str, Any]:
    """The facts as one table, compact for thousands of nodes: the fact keys once, each
    node's values in that order (null: not read), and each profile's golden values."""
    keys = sorted({f"{f.device}/{f.name}" for fs in table.values() for f in fs})
    index = {k: i for i, k in enumerate(keys)}
    rows: dict[str, list[str | None]] = {}
    for node, facts in table.items():
        row: list[str | None] = [None] * len(keys)
        for f in facts:
            row[index[f"{f.device}/{f.name}"]] = f.value
        rows[node] = row
    used = {cluster.node(n).profile for n in table}
    return {
        "how": how,
        "keys": keys,
        "nodes": rows,
        "profiles": {n: cluster.node(n).profile for n in table},
        "golden": {
            name: {
                "node": p.golden.node,
                "facts": {
                    f"{d}/{k}": g.value for d, fs in p.golden.facts.items() for k, g in fs.items()
                },
            }
            for name, p in profiles.items()
            if name in used and p.golden is not None
        },
    }


class FleetStage(StageBase):
    def fleet_stage(self, plan: Plan, done: set[str], unreachable: set[str]) -> None:
        if not self.suite.checks.fleet or "fleet" in done:
            return
        nodes = [n for n in plan.nodes if n not in unreachable]
        table = read_table(self.rundir, self.cluster, nodes)
        findings = judge(table, self.cluster, self.profiles)
        goldens = sorted({p.golden.node for p in self.profiles.values() if p.golden is not None})
        how = f"golden {', '.join(goldens)}" if goldens else "majority of the rack"
        facts = sum(len(f) for f in table.values())
        empty = sorted(n for n, fs in table.items() if not fs)
        if empty:
            findings.append(
                Finding(
                    "FLEET-001",
                    Status.WARN,
                    Subject(),
                    f"no fleet facts read from {len(empty)} node(s) ({', '.join(empty[:8])}): "
                    "they are not compared (their tools' own steps say why)",
                    remediation="fix what kept the node checks from reading them, run again",
                )
            )
        if not findings:
            findings = [
                Finding(
                    "FLEET-000",
                    Status.OK,
                    Subject(),
                    f"{len(table)} nodes agree on {facts} facts ({how})",
                )
            ]
        self.rundir.write_json(FLEET_FILE, fleet_json(table, self.cluster, self.profiles, how))
        self._record("fleet", "fleet", None, "fleet", None, findings, {"how": how})
        bad = sum(1 for f in findings if f.status is not Status.OK)
        self.progress(f"[fleet] {facts} facts of {len(table)} nodes ({how}): {bad} differences")
