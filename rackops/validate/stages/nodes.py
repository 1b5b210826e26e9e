"""Stage 1: every per-node check on every node at once (the tool registry says what each
reads and how it is judged)."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

from rackops.findings import Finding, Status, Subject, worst
from rackops.tools import get as get_tool
from rackops.tools import judge_live, nccl_tests
from rackops.tools._common import program_of
from rackops.validate.executor import (
    CommandResult,
)
from rackops.validate.plan import NodeCheck, Plan
from rackops.validate.stages.base import StageBase, bar


class NodeStage(StageBase):
    def node_stage(self, plan: Plan, done: set[str]) -> set[str]:
        """Per-node checks on all nodes at once; returns the nodes that were unreachable."""
        unreachable: set[str] = set()
        # Longest expected check first (LPT): every node's slowest tool starts at once and
        # the quick ones fill the remaining workers, so the stage lasts about as long as the
        # slowest tool rather than queueing it behind quick ones.
        todo = sorted(
            (
                (n, c)
                for n in plan.nodes
                for c in self._expand(n, plan.node_checks)
                if f"node/{n}/{c.name}" not in done
            ),
            key=lambda nc: (-nc[1].expected_s, nc[1].name),  # a check's nodes side by side
        )
        for rec in self.rundir.records():
            if rec["kind"] == "unreachable":
                unreachable.add(rec["node"])
        self._one_gpu_nodes(plan, done)
        # one work item: a check on up to executor.batch nodes (SSH: one node; Slurm: one
        # srun across many), each node's result judged and recorded as it comes back
        items: list[list[tuple[str, NodeCheck]]] = []
        for nc in todo:
            last = items[-1] if items else None
            if (
                last is not None
                and len(last) < self.executor.batch
                and last[0][1].name == nc[1].name
            ):
                last.append(nc)
            else:
                items.append([nc])

        # a check that loads every GPU (DCGM, NCCL, GEMM/HBM) waits for another on its node:
        # two at once would each measure half the GPUs, and the per-GPU figures would fail
        gpu_locks = {n: threading.Lock() for n in plan.nodes}

        def one(item: list[tuple[str, NodeCheck]]) -> None:
            live = [(n, c) for n, c in item if n not in unreachable]
            if not live:
                return
            held = sorted({n for n, c in live if get_tool(c.tool).loads_gpus})
            for n in held:  # in name order: two batches never wait for each other's nodes
                gpu_locks[n].acquire()
            try:
                results = self.executor.run_many(
                    [(self.targets[n], c.argv) for n, c in live],
                    max(c.timeout_s for _, c in live),
                )
            finally:
                for n in held:
                    gpu_locks[n].release()
            for (node, check), result in zip(live, results, strict=True):
                self._node_result(node, check, result, unreachable)

        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            for i, _ in enumerate(pool.map(one, items), 1):
                if i % max(1, len(items) // 10) == 0 or i == len(items):
                    self.progress(f"[nodes] {bar(i, len(items))} checks")
        return unreachable

    def _node_result(
        self, node: str, check: NodeCheck, result: CommandResult, unreachable: set[str]
    ) -> None:
        step = f"node/{node}/{check.name}"
        if result.error is not None:
            if node not in unreachable:
                unreachable.add(node)
                self._record(
                    f"unreachable/{node}",
                    "unreachable",
                    node,
                    self.executor.info.name,
                    None,
                    [
                        Finding(
                            "NODE-000",
                            Status.ERROR,
                            Subject(node=node),
                            f"not reachable over {self.executor.info.label}: {result.error}",
                            remediation=self.executor.info.unreachable_fix,
                        )
                    ],
                )
            return
        findings, parsed = self._judge(node, check.tool, result, check.timeout_s)
        meta: dict[str, Any] = {}
        phy = self.suite.checks.physical
        if get_tool(check.tool).settles and phy is not None and worst(findings) is Status.FAIL:
            # hold-down: a link still training at bring-up settles before it is judged
            deadline = time.monotonic() + phy.hold_down_s
            tries = 1
            while worst(findings) is Status.FAIL and time.monotonic() + 2 <= deadline:
                time.sleep(2)
                again = self.executor.run(self.targets[node], check.argv, check.timeout_s)
                if again.error is not None:
                    break
                result, tries = again, tries + 1
                findings, parsed = self._judge(node, check.tool, result, check.timeout_s)
            meta = {"hold_down_tries": tries}
        if "/" in check.name:  # a per-HCA check: its findings name the HCA and its port
            dev = check.name.split("/", 1)[1]
            h = next(x for x in self.cluster.node(node).hcas if x.device == dev)
            findings = [
                replace(
                    f,
                    subject=replace(
                        f.subject, hca=dev, port=1, switch=h.switch, switch_port=h.port
                    ),
                )
                for f in findings
            ]
        self._record(step, "node", node, check.tool, result, findings, meta)
        if parsed is not None:  # the stages after (cabling, fleet) read it, not raw/ again
            self.rundir.keep_parsed(step, parsed)

    def _gpus(self, node: str) -> int:
        """The node's GPU count (the inventory's, else its profile's: ``Node.gpus``)."""
        return self.cluster.node(node).gpus

    def _one_gpu_nodes(self, plan: Plan, done: set[str]) -> None:
        """A one-GPU node runs no single-node collective (its bus bandwidth is 0 by
        definition): it says so, and what measures that GPU instead."""
        single = next((c for c in plan.node_checks if c.name == nccl_tests.SINGLE_NODE), None)
        if single is None:
            return
        # measured: a GEMM or HBM check is in this plan (a replay plans only what it has)
        measured = any(c.tool == "dcgmproftester" for c in plan.node_checks)
        for n in plan.nodes:
            step = f"node/{n}/{single.name}"
            if self._gpus(n) != 1 or step in done:
                continue
            said = nccl_tests.one_gpu_instead(single.argv[0], measured)
            finding = Finding("NCCL-1GPU", Status.OK if measured else Status.WARN, Subject(n), said)
            self._record(step, "node", n, single.tool, None, [finding])

    def _expand(self, node: str, checks: Sequence[NodeCheck]) -> list[NodeCheck]:
        """Per-HCA checks become one check per cabled HCA of this node; ``{netdevs}``,
        ``{hw_root}`` and ``{gpus}`` take this node's values; a one-GPU node runs no
        single-node collective (``_one_gpu_nodes``)."""
        out = []
        n = self.cluster.node(node)
        gpus = n.gpus
        for c in checks:
            if not n.nvidia_stack and get_tool(c.tool).nvidia_stack:
                continue  # an inbox-RDMA node has no DOCA-OFED or MFT program to run
            if not n.hcas and get_tool(c.tool).hca:
                continue  # a GPU-only node: no HCA to read
            if n.nvlink is None and get_tool(c.tool).nvlink_domain:
                continue  # IMEX: only a tray of a multi-node NVLink domain runs it
            if c.name == nccl_tests.SINGLE_NODE and gpus == 1:
                continue
            if {"{netdevs}", "{devices}", "{hw_root}", nccl_tests.GPUS} & set(c.argv):
                argv: list[str] = []
                for a in c.argv:
                    if a == "{netdevs}":
                        argv += [h.netdev for h in n.hcas]
                    elif a == "{devices}":
                        argv += [h.device for h in n.hcas]
                    elif a == nccl_tests.GPUS:
                        argv.append(str(gpus))
                    else:
                        argv.append(n.hw_root if a == "{hw_root}" else a)
                c = replace(c, argv=tuple(argv))
            if not c.per_hca:
                out.append(c)
                continue
            for h in self.cluster.node(node).hcas:
                out.append(
                    replace(
                        c,
                        name=f"{c.name}/{h.device}",
                        per_hca=False,
                        argv=tuple(
                            a.replace("{netdev}", h.netdev).replace("{device}", h.device)
                            for a in c.argv
                        ),
                    )
                )
        return out

    def _judge(
        self, node: str, tool: str, result: CommandResult, timeout: float
    ) -> tuple[list[Finding], Any]:
        """The findings on one output, and its parse (None where there is none to keep)."""
        subj = Subject(node=node)
        if result.timed_out:
            return [
                Finding(
                    "RUN-TIMEOUT",
                    Status.ERROR,
                    subj,
                    f"{' '.join(result.argv)} did not finish in {timeout:g} s; killed",
                    remediation="the tool hangs: check the driver/daemon it talks to "
                    "(dmesg, nv-hostengine), then rerun",
                )
            ], None
        if result.rc == 127:
            return [
                Finding(
                    "RUN-MISSING",
                    Status.ERROR,
                    subj,
                    f"{program_of(result.argv)} is not installed ({result.stderr.strip()})",
                    remediation="run the provisioning playbook for this tool",
                )
            ], None
        if result.rc not in (0, None) and not (result.stdout + result.stderr).strip():
            return [
                Finding(
                    "RUN-FAILED",
                    Status.ERROR,
                    subj,
                    f"{' '.join(result.argv)[:200]} exited {result.rc} and printed nothing",
                    remediation="run it by hand on this node; check the driver or daemon it "
                    "talks to (dmesg)",
                )
            ], None
        text = result.stdout
        if get_tool(tool).both_streams or not text.strip():
            text = result.stdout + "\n" + result.stderr
        findings, parsed = judge_live(tool, text, self._ctx(node), node)
        said = _reason(result)
        if said is None:
            return findings, parsed
        # an output that could not be read from a tool that failed: the tool's own words
        return [
            replace(f, message=f"{f.message} (exit {result.rc}: {said})")
            if f.code == "PARSE-000" and said not in f.message
            else f
            for f in findings
        ], parsed


def _reason(result: CommandResult) -> str | None:
    """A failed command's own words on stderr: its first line, and its last where that is
    another (the reason is either: "Invalid number of GPUs ..." comes first, then advice;
    "Failed to initialize NVML: ..." is the last), or None."""
    if result.rc in (0, None):
        return None
    lines = [ln.strip() for ln in result.stderr.splitlines() if ln.strip()]
    if not lines:
        return None
    said = lines[0] if len(lines) == 1 else f"{lines[0]} … {lines[-1]}"
    return said[:300]
