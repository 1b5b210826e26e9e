"""The switches' own counters in a run: every leaf and spine the inventory gives an SSH
connection is read right after the hosts' port snapshot before the pair rounds, and again
after the one after them (``rackops.validate.switches``: the commands per NOS). What grew on
every cabled port is judged by the host ports' rules and named by the cable on it: a host's
HCA, or the far end of an inter-switch link (``rackops.checks.switchports``).

Each command's output is recorded (``switch/<sw>/<phase>/<file>``, kind ``switch``) and the
judgement once per switch (``switch/<sw>``, with every port's deltas in ``meta.ports``). The
samples before are held in memory: a resumed run reads them again around what is left.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from typing import Any

from rackops.checks.phy import PortSample
from rackops.checks.switchports import judge_switch, judge_uplinks, port_views, samples
from rackops.findings import Finding, Status, Subject
from rackops.parsers._common import ParseError
from rackops.parsers.switch_ports import PortView, SwitchPorts
from rackops.tools import parse
from rackops.validate.stages.base import StageBase, resumed_warning
from rackops.validate.switches import (
    PORT_COMMANDS,
    PORTS_TOOL_OF,
    READ_TIMEOUT_S,
    TOOL_OF,
    commands,
    parse_output,
)

Read = tuple[dict[str, PortSample], float]


class SwitchStage(StageBase):
    switch_targets: dict[str, Any]
    switch_executor: Any
    _switch_before: dict[str, Read]  # each switch's counters read before the pair rounds
    _switch_pairs_done: int  # pair tests done before a resume (their traffic is unread)
    _switch_views: dict[str, dict[str, PortView]]  # each switch's ports as read after

    def switches_read(self, phase: str, done: set[str]) -> None:
        if not self.switch_targets or self.suite.checks.physical is None:
            return
        todo = sorted(s for s in self.switch_targets if f"switch/{s}" not in done)
        if not todo:
            return
        if phase == "after":
            self._switch_views = {}
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(todo))) as pool:
            reads = dict(
                zip(todo, pool.map(lambda s: self._read_switch(s, phase), todo), strict=True)
            )
        if phase == "before":
            self._switch_before = reads
            # pair tests a resumed run will not repeat: their traffic is before this read
            self._switch_pairs_done = sum(1 for d in done if d.startswith("pair/"))
            self.progress(
                f"[switch] {len(reads)} switches' port counters read before the pair rounds"
            )
            return
        before = self._switch_before
        for name, (after, t1) in reads.items():
            self._judge_switch(name, before.get(name), after, t1)
        earlier = self._switch_pairs_done
        if earlier and before:
            self._resumed_warning(earlier)
        self.progress(f"[switch] {len(reads)} switches' port counters judged")

    def _resumed_warning(self, earlier: int) -> None:
        """A resumed run's switch deltas miss the traffic of the pair tests done before."""
        finding = resumed_warning("SWP-005", "the switches' counters were read", earlier)
        self._record("switch/resumed", "switch", None, "switch-counters", None, [finding])

    def _read_switch(self, name: str, phase: str) -> Read:
        sw = self.cluster.switch(name)
        assert sw is not None
        prio = self.cluster.fabric.roce.priority if self.cluster.fabric.roce else 0
        outputs: list[tuple[str, Any]] = []
        for fname, cmd in commands(sw):
            result = self.switch_executor.run_cli(self.switch_targets[name], cmd, READ_TIMEOUT_S)
            findings = []
            subj = Subject(switch=name)
            if not result.ran and "cannot connect" in (result.error or ""):
                findings.append(
                    Finding(
                        "SWP-004",
                        Status.ERROR,
                        subj,
                        f"{name}: not read ({result.error}); its ports are not judged",
                        remediation="check the switch's address and SSH access, or mark it "
                        "render-only (ansible_connection: local)",
                    )
                )
                self._record(
                    f"switch/{name}/{phase}", "switch", None, TOOL_OF[sw.os], result, findings
                )
                break  # one finding for the switch, not one per command
            if not result.ran or result.rc != 0:
                why = result.error or f"exit {result.rc}: {result.stderr.strip()[-300:]}"
                findings.append(
                    Finding("SWP-003", Status.ERROR, subj, f"{name}: `{cmd}` failed: {why}")
                )
            else:
                parsed, why = parse_output(sw, result.stdout)
                if why is not None:
                    findings.append(
                        Finding("SWP-002", Status.ERROR, subj, f"{name}: `{cmd}`: {why}")
                    )
                else:
                    outputs.append((fname.split(".", 1)[0] if sw.os == "cumulus" else "", parsed))
            self._record(
                f"switch/{name}/{phase}/{fname}", "switch", None, TOOL_OF[sw.os], result, findings
            )
        if phase == "after" and sw.uplinks and outputs:  # a switch that answered
            self._read_views(name, sw)
        return samples(sw, outputs, prio), time.monotonic()

    def _read_views(self, name: str, sw: Any) -> None:
        """A leaf's own view of its ports (LLDP, status), for its uplinks; kept only whole."""
        parsed: list[SwitchPorts] = []
        for fname, cmd in PORT_COMMANDS.get(sw.os, ()):
            result = self.switch_executor.run_cli(self.switch_targets[name], cmd, READ_TIMEOUT_S)
            findings = []
            subj = Subject(switch=name)
            why: str | None = None
            if not result.ran or result.rc != 0:
                why = result.error or f"exit {result.rc}: {result.stderr.strip()[-300:]}"
            else:
                try:
                    got = parse(PORTS_TOOL_OF[sw.os], result.stdout)
                except ParseError as exc:
                    why = str(exc)
                else:
                    if isinstance(got, SwitchPorts) and got.complete:
                        parsed.append(got)
                    else:
                        why = "the output is cut; its uplinks are not judged"
            if why is not None:
                findings.append(Finding("SWP-006", Status.ERROR, subj, f"{name}: `{cmd}`: {why}"))
            self._record(
                f"switch/{name}/after/{fname}",
                "switch",
                None,
                PORTS_TOOL_OF[sw.os],
                result,
                findings,
            )
            if why is not None:
                return
        self._switch_views[name] = port_views(parsed)

    def _judge_switch(
        self, name: str, before: Read | None, after: dict[str, PortSample], t1: float
    ) -> None:
        sw = self.cluster.switch(name)
        assert sw is not None
        if before is None:
            findings = [
                Finding(
                    "SWP-001",
                    Status.ERROR,
                    Subject(switch=name),
                    f"{name}: no read before the pair rounds in this invocation; not judged",
                    remediation="rerun the validation (a resumed run reads both again)",
                )
            ]
            self._record(f"switch/{name}", "switch", None, TOOL_OF[sw.os], None, findings)
            return
        ports, t0 = before
        if not ports or not after:
            return  # a read that failed whole has its ERROR already (SWP-003/-004)
        phy = next(iter(self.profiles.values())).phy
        findings, reports = judge_switch(self.cluster, sw, ports, after, phy, t1 - t0)
        if name in self._switch_views:
            findings += judge_uplinks(self.cluster, sw, self._switch_views[name])
        meta = {
            "switch": name,
            "role": sw.role,
            "interval_s": round(t1 - t0, 3),
            "ports": {p: asdict(r) for p, r in reports.items()},
        }
        self._record(f"switch/{name}", "switch", None, TOOL_OF[sw.os], None, findings, meta)
