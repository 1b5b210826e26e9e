"""Stage 1c: each multi-node NVLink domain (GB200/GB300 NVL72) judged as one — its trays'
GPUs in one fabric partition, all of the domain's GPUs there (``checks/nvldomain.py``), one
nodes_config.cfg on every tray (``checks/imex.py``). It reads the trays' ``nvidia-smi -q -x``
and ``imex-node`` that stage 1 saved; it runs no command of its own."""

from __future__ import annotations

from typing import Any

from rackops.checks.imex import judge_nodes_configs
from rackops.checks.nvldomain import TrayRead, judge_domain
from rackops.inventory.model import Node
from rackops.validate.plan import Plan
from rackops.validate.stages.base import StageBase

SOURCE = "nvidia-smi-xml"
IMEX = "imex-node"


class NvlDomainStage(StageBase):
    def nvl_domain_stage(self, plan: Plan, done: set[str], unreachable: set[str]) -> None:
        """One record per domain with a tray in the plan (``nvldomain/<domain>``)."""
        domains: dict[str, list[Node]] = {}
        for name in plan.nodes:
            node = self.cluster.node(name)
            if node.nvlink is not None:
                domains.setdefault(node.nvlink.domain, []).append(node)
        if not domains or not self.suite.checks.gpu_inventory:
            return
        names = {n.name for ns in domains.values() for n in ns}
        read = self._smi_reads(names, unreachable)
        configs = {
            n: tuple(p.nodes)
            for n, p in self._reads(IMEX, names, unreachable).items()
            if p.complete and p.nodes
        }
        for domain, trays in sorted(domains.items()):
            step = f"nvldomain/{domain}"
            if step in done:
                continue
            link = trays[0].nvlink
            size = self.profiles[trays[0].profile].gpu.nvlink_domain
            size = link.size(size) if link is not None else size
            pinned = next((t.nvlink.clique for t in trays if t.nvlink and t.nvlink.clique), None)
            reads = [
                TrayRead(t.name, t.nvlink.slot if t.nvlink else 0, read.get(t.name))
                for t in sorted(trays, key=lambda t: (t.nvlink.slot if t.nvlink else 0, t.name))
            ]
            findings, view = judge_domain(domain, reads, size, pinned)
            findings += judge_nodes_configs(
                domain, {t.name: configs[t.name] for t in trays if t.name in configs}
            )
            self._record(step, "nvldomain", None, "nvldomain", None, findings, {"domain": view})
            self.progress(
                f"[nvlink] domain {domain}: {view.get('in_partition', 0)} of {size} GPUs in "
                f"one partition, {len(trays)} trays"
            )

    def _smi_reads(self, trays: set[str], unreachable: set[str]) -> dict[str, Any]:
        """Each tray's parsed GPU list, where its nvidia-smi -q -x was read whole."""
        return {
            n: tuple(p.gpus)
            for n, p in self._reads(SOURCE, trays, unreachable).items()
            if getattr(p, "gpus", None) is not None
        }

    def _reads(self, tool: str, trays: set[str], unreachable: set[str]) -> dict[str, Any]:
        """Each reachable tray's parsed output of ``tool``, where it parsed."""
        out: dict[str, Any] = {}
        for rec in self.rundir.records():
            if rec["kind"] != "node" or rec["tool"] != tool or rec["node"] not in trays:
                continue
            if rec["node"] in unreachable:
                continue
            parsed = self.rundir.parsed_output(rec)
            if parsed is not None:
                out[rec["node"]] = parsed
        return out
