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

import re
import time
from dataclasses import asdict
from typing import Any

from rackops.checks.cabling import short
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
from rackops.parsers.perfquery import PerfQuery
from rackops.scale import fabric_limits
from rackops.tools import ibdiagnet, parse, perfquery
from rackops.validate.plan import Plan
from rackops.validate.stages.base import StageBase, resumed_warning

# each sweep writes into its own directory, made private (0700) by mktemp on the sweep node
# and removed after: no other user's files are read as the sweep's
MKTEMP = ["mktemp", "-d", "-t", "rackops-ibdiag.XXXXXXXXXX"]
_TMPDIR = re.compile(r"/[A-Za-z0-9._/-]{1,200}")
SWEEP_TIMEOUT_S = 900.0  # a sweep of thousands of nodes takes minutes
READ_TIMEOUT_S = 60.0

Counters = dict[str, dict[str, PortSample]]  # switch -> design port -> sample


class IbdiagStage(StageBase):
    limited: bool
    _sweep_before: tuple[Counters, float] | None  # the counters swept before the pair rounds
    _sweep_pairs_done: int  # pair tests done before a resume (their traffic is unswept)

    def fabric_sweep(self, plan: Plan, phase: str, done: set[str], unreachable: set[str]) -> None:
        node = self._sweep_node(unreachable)
        if node is None or "fabric/judged" in done:
            return
        sweep, counters = self._sweep(node, phase)
        t = time.monotonic()
        if phase == "before":
            self._sweep_before = (counters, t)
            # pair tests a resumed run will not repeat: their traffic is before this sweep
            self._sweep_pairs_done = sum(1 for d in done if d.startswith("pair/"))
            self.progress(f"[fabric] swept from {node} before the pair rounds")
            return
        self._judge_sweep(sweep, counters, t, done)
        self._record("fabric/judged", "fabric", None, "ibdiagnet", None, [])
        self.progress(f"[fabric] swept from {node} after the pair rounds and judged")

    def _judge_sweep(self, sweep: Sweep, counters: Counters, t: float, done: set[str]) -> None:
        if sweep.console is not None and "fabric/stages" not in done:
            findings = judge_stages(sweep.console)
            self._record("fabric/stages", "fabric", None, "ibdiagnet", None, findings)
        if "fabric/sm" not in done:
            self._record("fabric/sm", "fabric", None, "ibdiagnet", None, judge_sm(sweep))
        if self._sweep_pairs_done:
            n = self._sweep_pairs_done
            finding = resumed_warning("IBF-RESUMED", "the fabric was swept", n)
            self._record("fabric/resumed", "fabric", None, "ibdiagnet", None, [finding])
        before = self._sweep_before
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

    def _sweep_node(self, unreachable: set[str]) -> str | None:
        """The node the fabric is swept from: the design's, else the first reachable one."""
        fabric = self.cluster.fabric
        if fabric.type != "infiniband" or self.suite.checks.physical is None:
            return None
        if self.limited:
            return None  # a --limit run: a part of the rack says nothing of its fabric
        name = fabric.sweep_node
        if name is not None and (name not in self.targets or name in unreachable):
            if "fabric/sweep" not in self._done:
                why = "is not a node of this run" if name not in self.targets else "is unreachable"
                finding = Finding(
                    "IBF-RUN",
                    Status.ERROR,
                    Subject(),
                    f"rackops_fabric.sweep_node {name!r} {why}: the fabric is not swept",
                    remediation="name a reachable node of the inventory, or leave it out (the "
                    "run's first reachable node)",
                )
                self._record("fabric/sweep", "fabric", None, "ibdiagnet", None, [finding])
                self._done.add("fabric/sweep")
            return None
        if name is not None:
            return name
        up = [n.name for n in self.cluster.nodes if n.name not in unreachable]
        return up[0] if up else None

    def _step(
        self,
        step: str,
        node: str,
        argv: list[str],
        timeout: float,
        subj: Subject | None = None,
        rcs: tuple[int, ...] = (0,),
    ) -> str | None:
        """Run one command of the sweep on the sweep node; its output, or None (recorded as
        an ERROR of the fabric, or of the switch read: the node is named in the text, not
        blamed)."""
        result = self.executor.run(self.targets[node], argv, timeout)
        if result.ran and result.rc in rcs:
            self._record(step, "fabric", node, argv[0], result, [])
            return result.stdout
        why = result.error or f"exit {result.rc}: {result.stderr.strip()[-300:]}"
        finding = Finding(
            "IBF-RUN",
            Status.ERROR,
            subj or Subject(),
            f"`{' '.join(argv)}` on the sweep node {node} failed: {why}",
            remediation="check ibutils2/infiniband-diags on the sweep node and its HCA's port "
            "(rackops_fabric.sweep_node chooses another)",
        )
        self._record(step, "fabric", node, argv[0], result, [finding])
        return None

    def _parsed(self, step: str, node: str, tool: str, text: str | None, kind: str) -> Any:
        """The parsed output, or None with an ERROR recorded: unreadable, cut, or another of
        ibdiagnet's files than the one asked for."""
        if text is None:
            return None
        parsed: Any = None
        try:  # a fabric-wide file is bounded by the design's size, not a rack's
            parsed = parse(tool, text, fabric_limits(self.cluster.size()))
        except ParseError as exc:
            why: str | None = str(exc)
        else:
            cut = getattr(parsed, "complete", True) is False
            why = "cut or garbled: " + "; ".join(parsed.errors[:2]) if cut else None
            if why is None and getattr(parsed, "kind", kind) != kind:
                why = f"not an ibdiagnet {kind} (it reads as a {parsed.kind})"
        if why is not None:
            finding = Finding("IBF-PARSE", Status.ERROR, Subject(), f"{step}: {why[:500]}")
            self._record(f"{step}/parsed", "fabric", node, tool, None, [finding])
            return None
        return parsed

    def _sweep(self, node: str, phase: str) -> tuple[Sweep, Counters]:
        step = f"fabric/sweep/{phase}"
        made = self._step(f"{step}/mktemp", node, MKTEMP, READ_TIMEOUT_S)
        out = (made or "").strip()
        if made is not None and not _TMPDIR.fullmatch(out):
            made = None
            finding = Finding(
                "IBF-RUN", Status.ERROR, Subject(), f"{step}: mktemp printed no directory"
            )
            self._record(f"{step}/mktemp/parsed", "fabric", node, "mktemp", None, [finding])
        if made is None:
            return Sweep(None, None, None), {}
        # ibdiagnet exits 1 when it found fabric errors: the console says whether it finished
        ran = self._step(
            f"{step}/console",
            node,
            ibdiagnet.sweep_argv(out),
            SWEEP_TIMEOUT_S,
            rcs=ibdiagnet.SWEEP_EXIT_CODES,
        )
        console = self._parsed(f"{step}/console", node, "ibdiagnet", ran, "console")
        files: dict[str, Any] = dict.fromkeys(ibdiagnet.SWEEP_FILES)
        for name in files if console is not None else ():
            text = self._step(
                f"{step}/{name}", node, ibdiagnet.file_argv(out, name), READ_TIMEOUT_S
            )
            files[name] = self._parsed(f"{step}/{name}", node, "ibdiagnet", text, name)
        self._step(f"{step}/cleanup", node, ["rm", "-rf", "--", out], READ_TIMEOUT_S)
        sweep = Sweep(console, files["sm"], files["net_dump"])
        return sweep, self._switch_counters(node, step, sweep)

    def _switch_counters(self, node: str, step: str, sweep: Sweep) -> Counters:
        """``perfquery -x -l`` of every designed switch the sweep found alone at one LID."""
        counters: Counters = {}
        by_short = {short(s.name): s for s in self.cluster.switches}
        lids = switch_lids(sweep.dump) if sweep.dump is not None else {}
        for name, lid in sorted(lids.items()):
            sw = by_short.get(name)
            if sw is None:
                continue
            read = f"{step}/perfquery/{sw.name}"
            argv = perfquery.switch_argv(lid)
            text = self._step(read, node, argv, READ_TIMEOUT_S, Subject(switch=sw.name))
            parsed = self._parsed(read, node, "perfquery", text, "perfquery")
            if not isinstance(parsed, PerfQuery):
                continue
            if any(b.lid != lid for b in parsed.ports):
                finding = Finding(
                    "IBF-PARSE",
                    Status.ERROR,
                    Subject(switch=sw.name),
                    f"{read}: blocks of another LID than the {lid} asked for; not judged",
                )
                self._record(f"{read}/parsed", "fabric", node, "perfquery", None, [finding])
                continue
            counters[sw.name] = switch_samples(sw, parsed)
        return counters
