"""The InfiniBand fabric sweep in a run: from one node (``rackops_fabric.sweep_node``, else the
run's first), ``ibdiagnet`` and a ``perfquery -x -l`` of every switch it found, right after
the hosts' port snapshot before the pair rounds and again after the one after them.

Recorded (kind ``fabric``): each command's output (``fabric/sweep/<phase>/<file>``). Judged
after the second sweep (:mod:`rackops.checks.ibfabric`): the subnet manager
(``fabric/sm``), the stages ibdiagnet failed that no file shows (``fabric/stages``), and per
switch (``switch/<sw>``, kind ``switch``, as a RoCE switch's own read): its ISLs' far ends and
rates by the second sweep, what grew on every cabled port between the two. Not swept in a
``--limit`` run (a part of the rack says nothing about its fabric) nor on RoCE.
"""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import Any

from rackops.checks.ibfabric import (
    Sweep,
    judge_isls,
    judge_sm,
    judge_stages,
    switch_lids,
    switch_samples,
)
from rackops.checks.phy import PortSample
from rackops.checks.switchports import judge_switch
from rackops.findings import Finding, Status, Subject
from rackops.parsers._common import ParseError
from rackops.parsers.ibdiagnet import Ibdiagnet
from rackops.parsers.perfquery import PerfQuery
from rackops.tools import parse
from rackops.validate.plan import Plan
from rackops.validate.stages.base import StageBase

SWEEP_DIR = "/var/tmp/rackops-ibdiag"
SWEEP_TIMEOUT_S = 900.0  # a sweep of thousands of nodes takes minutes
READ_TIMEOUT_S = 60.0

Counters = dict[str, dict[str, PortSample]]  # switch -> design port -> sample


class IbdiagStage(StageBase):
    limited: bool

    def fabric_sweep(self, plan: Plan, phase: str, done: set[str], unreachable: set[str]) -> None:
        node = self._sweep_node(plan, unreachable)
        if node is None or "fabric/sm" in done:
            return
        sweep, counters = self._sweep(node, phase)
        t = time.monotonic()
        if phase == "before":
            self._sweep_before: tuple[Counters, float] = (counters, t)
            self.progress(f"[fabric] swept from {node} before the pair rounds")
            return
        if sweep.console is not None:
            self._record(
                "fabric/stages", "fabric", None, "ibdiagnet", None, judge_stages(sweep.console)
            )
        self._record("fabric/sm", "fabric", None, "ibdiagnet", None, judge_sm(sweep))
        before = getattr(self, "_sweep_before", None)
        isls = judge_isls(self.cluster, sweep.dump) if sweep.dump is not None else {}
        for sw in self.cluster.switches:
            if f"switch/{sw.name}" in done:
                continue
            findings = list(isls.get(sw.name, []))
            meta: dict[str, Any] = {"switch": sw.name, "role": sw.role, "ports": {}}
            if before is not None and sw.name in before[0] and sw.name in counters:
                phy = next(iter(self.profiles.values())).phy
                found, reports = judge_switch(
                    self.cluster, sw, before[0][sw.name], counters[sw.name], phy, t - before[1]
                )
                findings += found
                meta.update(
                    interval_s=round(t - before[1], 3),
                    ports={p: asdict(r) for p, r in reports.items()},
                )
            elif sweep.dump is not None and sw.ports:
                findings.append(
                    Finding(
                        "IBF-COUNTERS",
                        Status.ERROR,
                        Subject(switch=sw.name),
                        f"{sw.name}: its port counters were not read both before and after "
                        "the pair rounds (not found by the sweep, or a read failed); not judged",
                        remediation="check that the switch is in the fabric the sweep node sees",
                    )
                )
            if findings:
                self._record(f"switch/{sw.name}", "switch", None, "ibdiagnet", None, findings, meta)
        self.progress(f"[fabric] swept from {node} after the pair rounds and judged")

    def _sweep_node(self, plan: Plan, unreachable: set[str]) -> str | None:
        fabric = self.cluster.fabric
        if fabric.type != "infiniband" or self.suite.checks.physical is None:
            return None
        if self.limited:
            return None  # a --limit run: a part of the rack says nothing of its fabric
        if fabric.sweep_node is not None and fabric.sweep_node not in self.targets:
            if "fabric/sweep" not in self._done:
                finding = Finding(
                    "IBF-RUN",
                    Status.ERROR,
                    Subject(),
                    f"rackops_fabric.sweep_node {fabric.sweep_node!r} is not a node of this "
                    "run: the fabric is not swept (`rackops lint` says so too)",
                    remediation="name one of the inventory's nodes, or leave it out",
                )
                self._record("fabric/sweep", "fabric", None, "ibdiagnet", None, [finding])
                self._done.add("fabric/sweep")
            return None
        if fabric.sweep_node is not None:
            return fabric.sweep_node
        up = [n for n in plan.nodes if n not in unreachable]
        return up[0] if up else None

    def _step(self, step: str, node: str, argv: list[str], timeout: float) -> str | None:
        """Run one command of the sweep on the sweep node; its output, or None (recorded)."""
        result = self.executor.run(self.targets[node], argv, timeout)
        if result.ran and result.rc == 0:
            self._record(step, "fabric", node, argv[0], result, [])
            return result.stdout
        why = result.error or f"exit {result.rc}: {result.stderr.strip()[-300:]}"
        finding = Finding(
            "IBF-RUN",
            Status.ERROR,
            Subject(node=node),
            f"`{' '.join(argv)}` on {node} failed: {why}",
            remediation="check ibutils2/infiniband-diags on the sweep node and its HCA's port "
            "(rackops_fabric.sweep_node chooses another)",
        )
        self._record(step, "fabric", node, argv[0], result, [finding])
        return None

    def _parsed(self, step: str, node: str, tool: str, text: str | None) -> Any:
        if text is None:
            return None
        parsed: Any = None
        try:
            parsed = parse(tool, text)
        except ParseError as exc:
            why: str | None = str(exc)
        else:
            cut = getattr(parsed, "complete", True) is False
            why = "cut or garbled: " + "; ".join(parsed.errors[:2]) if cut else None
        if why is not None:
            finding = Finding("IBF-PARSE", Status.ERROR, Subject(node=node), f"{step}: {why}")
            self._record(f"{step}/parsed", "fabric", node, tool, None, [finding])
            return None
        return parsed

    def _sweep(self, node: str, phase: str) -> tuple[Sweep, Counters]:
        out = f"{SWEEP_DIR}/{phase}"
        step = f"fabric/sweep/{phase}"
        # an earlier sweep's files are never read as this one's: the directory goes first,
        # and the files are read only after an ibdiagnet that finished
        self._step(f"{step}/clean", node, ["rm", "-rf", "--", out], READ_TIMEOUT_S)
        ran = self._step(f"{step}/console", node, ["ibdiagnet", "-o", out], SWEEP_TIMEOUT_S)
        console = self._parsed(f"{step}/console", node, "ibdiagnet", ran)
        files: dict[str, Any] = {"sm": None, "net_dump": None}
        for name in files if ran is not None else ():
            text = self._step(
                f"{step}/{name}", node, ["cat", f"{out}/ibdiagnet2.{name}"], READ_TIMEOUT_S
            )
            files[name] = self._parsed(f"{step}/{name}", node, "ibdiagnet", text)
        sweep = Sweep(_whole(console), _whole(files["sm"]), _whole(files["net_dump"]))
        counters: Counters = {}
        lids = switch_lids(sweep.dump) if sweep.dump is not None else {}
        for name, lid in sorted(lids.items()):
            sw = self.cluster.switch(name)
            if sw is None:
                continue
            text = self._step(
                f"{step}/perfquery/{name}",
                node,
                ["perfquery", "-x", "-l", str(lid)],
                READ_TIMEOUT_S,
            )
            parsed = self._parsed(f"{step}/perfquery/{name}", node, "perfquery", text)
            if isinstance(parsed, PerfQuery) and parsed.complete:
                counters[name] = switch_samples(sw, parsed)
        return sweep, counters


def _whole(parsed: Any) -> Ibdiagnet | None:
    return parsed if isinstance(parsed, Ibdiagnet) and parsed.complete else None
