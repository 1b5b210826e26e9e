"""NVLink error counters around the run's load: ``nvidia-smi nvlink -e`` on every node whose
GPUs have NVLink, once before the first check and once after the last load, and what grew
judged per link (``checks/nvlinkerrors.py``). Runs with the GPU load checks
(``checks.gpu_load``)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from rackops.checks.nvlinkerrors import judge_growth
from rackops.errors import RackopsError
from rackops.findings import Finding, Status, Subject
from rackops.parsers import ParseError
from rackops.parsers.nvidia_smi_nvlink_errors import NvlinkErrors, parse_nvlink_errors
from rackops.tools._common import program_of
from rackops.tools.nvidia_smi_nvlink_errors import NVLINK_ERRORS_ARGV
from rackops.validate.executor import CommandResult
from rackops.validate.plan import Plan
from rackops.validate.stages.base import StageBase

TOOL = "nvidia-smi-nvlink-errors"


class NvlinkErrorStage(StageBase):
    _nvlink_before_recs: dict[str, dict[str, Any]]  # node -> its read before (phase "after")

    def nvlink_errors(self, phase: str, plan: Plan, done: set[str], unreachable: set[str]) -> None:
        """``phase`` "before" (a baseline, recorded) or "after" (judged against it)."""
        if self.suite.checks.gpu_load is None:
            return
        nodes = [
            n
            for n in plan.nodes
            if n not in unreachable
            and f"node/{n}/nvlink-errors-{phase}" not in done
            and self.profiles[self.cluster.node(n).profile].gpu.nvlink_links > 0
            and self.cluster.node(n).gpus > 0
        ]
        # the baselines, found once for every node (not a scan of the records per node)
        self._nvlink_before_recs = (
            {
                r["node"]: r
                for r in self.rundir.records()
                if r["id"] == f"node/{r['node']}/nvlink-errors-before"
            }
            if phase == "after"
            else {}
        )
        step = self._nvlink_before if phase == "before" else self._nvlink_after
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            list(pool.map(step, nodes))

    def _nvlink_read(self, node: str) -> tuple[CommandResult, NvlinkErrors | None, list[Finding]]:
        result = self.executor.run(self.targets[node], NVLINK_ERRORS_ARGV, 60)
        subj = Subject(node=node)
        if result.error is not None or result.timed_out or result.rc != 0:
            why = result.error or ("timed out" if result.timed_out else f"exit {result.rc}")
            return (
                result,
                None,
                [
                    Finding(
                        "NVE-000",
                        Status.ERROR,
                        subj,
                        f"NVLink error counters not read ({program_of(result.argv)}: {why})",
                    )
                ],
            )
        try:
            parsed = parse_nvlink_errors(result.stdout)
        except ParseError as exc:
            return (
                result,
                None,
                [Finding("NVE-000", Status.ERROR, subj, f"nvidia-smi nvlink -e unreadable: {exc}")],
            )
        if not parsed.complete:
            return (
                result,
                parsed,
                [
                    Finding(
                        "NVE-000",
                        Status.ERROR,
                        subj,
                        f"nvidia-smi nvlink -e not whole: {'; '.join(parsed.errors[:3])}",
                    )
                ],
            )
        return result, parsed, []

    def _nvlink_before(self, node: str) -> None:
        result, _parsed, findings = self._nvlink_read(node)
        if result.error is not None:
            return  # not reachable: stage 1 names it; the read after has no baseline
        findings = findings or [
            Finding(
                "NVE-000", Status.OK, Subject(node=node), "NVLink error counters before the run"
            )
        ]
        self._record(f"node/{node}/nvlink-errors-before", "node", node, TOOL, result, findings)

    def _nvlink_after(self, node: str) -> None:
        result, parsed, findings = self._nvlink_read(node)
        if parsed is not None and not findings:
            before = self._nvlink_baseline(node)
            findings = (
                judge_growth(before, parsed, node)
                if before is not None
                else [
                    Finding(
                        "NVE-000",
                        Status.WARN,
                        Subject(node=node),
                        "no NVLink error counters from before the run: what grew is not known",
                    )
                ]
            )
        self._record(f"node/{node}/nvlink-errors-after", "node", node, TOOL, result, findings)

    def _nvlink_baseline(self, node: str) -> NvlinkErrors | None:
        rec = self._nvlink_before_recs.get(node)
        if rec is None or any(f["status"] == "ERROR" for f in rec["findings"]):
            return None
        try:
            return parse_nvlink_errors(self.rundir.read_raw(rec) or "")
        except (RackopsError, ParseError):
            return None
