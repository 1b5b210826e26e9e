"""Stage 3: multi-node NCCL across the nodes nothing has been blamed on."""

from __future__ import annotations

from rackops.checks.mnnvl import judge_mnnvl
from rackops.checks.nccl import check_nccl
from rackops.findings import Finding, Status, Subject, worst
from rackops.parsers import ParseError
from rackops.tools import nccl_debug, nccl_tests, parse
from rackops.validate.executor import (
    CommandResult,
    MpiLauncher,
)
from rackops.validate.plan import Plan
from rackops.validate.stages.base import StageBase


class NcclStage(StageBase):
    def nccl_stage(self, plan: Plan, done: set[str], exclude: set[str]) -> None:
        params = self.suite.checks.nccl_multi_node
        if params is None:
            return
        for group in plan.nccl_groups:
            step = f"nccl/{group.name}"
            if step in done:
                continue
            nodes = [n for n in group.nodes if n not in exclude]
            if len(nodes) < 2:
                self._record(
                    step,
                    "nccl",
                    None,
                    "nccl-tests",
                    None,
                    [
                        Finding(
                            "NCCL-SKIP",
                            Status.WARN,
                            Subject(node=",".join(group.nodes)),
                            "multi-node NCCL not run: fewer than 2 nodes passed the node and pair "
                            "stages",
                        )
                    ],
                    {"nodes": nodes},
                )
                continue
            gpus = self.cluster.node(nodes[0]).gpus
            env: dict[str, str] = {}
            if self.cluster.fabric.roce and self.cluster.fabric.roce.nccl_ib_tc:
                env["NCCL_IB_TC"] = str(self.cluster.fabric.roce.nccl_ib_tc)
            if self.lab:
                env["RACKOPS_HWSIM_HOSTS"] = ",".join(nodes)
            domain = self._one_domain(nodes)
            if domain:  # NCCL's own log says whether the traffic stayed on NVLink
                env.update(nccl_debug.DOMAIN_ENV)
            argv = nccl_tests.argv(params, 1)  # a rank per GPU
            if isinstance(self.executor, MpiLauncher):
                result = self.executor.multi_node(
                    [self.targets[n] for n in nodes], gpus, argv, env, params.timeout_s
                )
            else:
                why = f"the {self.executor.info.name} launcher cannot launch a multi-node job"
                result = CommandResult(nodes[0], tuple(argv), None, "", "", 0.0, error=why)
            subj = Subject(node=",".join(nodes))
            if result.error or result.timed_out:
                findings = [
                    Finding(
                        "RUN-TIMEOUT" if result.timed_out else "NCCL-000",
                        Status.ERROR,
                        subj,
                        result.error or f"{params.collective} across {len(nodes)} nodes timed out",
                    )
                ]
            else:
                try:
                    parsed = parse("nccl-tests", result.stdout + "\n" + result.stderr)
                    findings = check_nccl(
                        parsed,
                        self.profiles[self.cluster.node(nodes[0]).profile],
                        node=subj.node,
                        gate_sizes_bytes=params.gate_sizes_bytes,
                        multi_node=True,
                    )
                    if domain:
                        findings += self._mnnvl(result, nodes)
                except ParseError as exc:
                    tail = " | ".join(result.stderr.strip().splitlines()[-3:])
                    findings = [
                        Finding(
                            "NCCL-000",
                            Status.ERROR,
                            subj,
                            f"the {self.executor.info.label} MPI launch exited {result.rc} "
                            f"without results ({exc})" + (f": {tail}" if tail else ""),
                            remediation=self.executor.info.mpi_fix,
                        )
                    ]
            self._record(step, "nccl", nodes[0], "nccl-tests", result, findings, {"nodes": nodes})
            self.progress(f"[nccl] {group.name}: {worst(findings).value}")

    def _one_domain(self, nodes: list[str]) -> str | None:
        """The multi-node NVLink domain all of ``nodes`` are trays of, if one is."""
        links = {self.cluster.node(n).nvlink for n in nodes}
        domains = {link.domain if link is not None else None for link in links}
        return next(iter(domains)) if len(domains) == 1 else None

    def _mnnvl(self, result: CommandResult, nodes: list[str]) -> list[Finding]:
        """The run across one domain's trays, from NCCL's own log (``checks/mnnvl.py``)."""
        try:
            log = parse("nccl-debug", result.stdout)  # NCCL writes its lines to stdout
        except ParseError as exc:
            return [
                Finding(
                    "NCCL-MNNVL-000",
                    Status.ERROR,
                    Subject(node=",".join(nodes)),
                    f"NCCL's own log was not printed ({exc}): whether the domain's traffic "
                    "stayed on NVLink is not shown",
                    remediation="let the launcher pass NCCL_DEBUG=INFO and "
                    "NCCL_DEBUG_SUBSYS=INIT to every rank",
                )
            ]
        return judge_mnnvl(log, nodes)
