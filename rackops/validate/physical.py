"""The physical-layer stages of a run: cabling against the map (first), the port snapshot
before the pair rounds, and the one after them with BER and optics.

* **Cabling** reads every node's ``lldpctl -f json`` (RoCE, a node check) or one
  ``iblinkinfo`` from the first reachable node (InfiniBand: the subnet manager's view of
  the whole fabric) and judges the rack at once (``rackops.checks.cabling``), so a swap is
  one finding. Recorded as kind ``cabling``; localisation sets aside the pair results of a
  miswired port as untrustworthy.
* **Snapshot before**: per node, one batch (``batch.py``): ``ibstat`` and, per cabled HCA,
  ``perfquery -x -C DEV -P 1`` (IB) or ``ethtool -S NETDEV`` plus the RDMA device's
  ``hw_counters`` (RoCE). *Hold-down*: while a cabled port is not Active yet, the snapshot
  is retaken every 2 s for up to the suite's ``hold_down_s``; a link that trained late
  settles before the baseline, so its bring-up events are not counted as flaps.
* **Snapshot after** the pair rounds: the same, plus ``mlxlink -d DEV -c -e`` (BER; ``-m``
  on IB for the module) and ``ethtool -m NETDEV`` (RoCE optics). Judged per port
  (``rackops.checks.phy``) on the deltas; recorded as a node check ``phy`` so a failing
  port is an HCA culprit at its switch port, with the per-port deltas, absolutes, BER and
  rx power in ``meta.ports`` for the reports.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rackops.checks.cabling import Key, Seen, check_cabling, seen_from_iblinkinfo, seen_from_lldp
from rackops.checks.phy import (
    PortReport,
    PortSample,
    judge_ber,
    judge_counters,
    judge_optics,
    judge_state,
    sample_ib,
    sample_roce,
)
from rackops.design import node_design
from rackops.findings import Finding, Status, Subject
from rackops.inventory.model import Cluster, Hca, Node
from rackops.parsers import ParseError
from rackops.profiles import Profile
from rackops.scale import fabric_limits
from rackops.suites import PhyParams
from rackops.tools import (
    ethtool_module,
    ethtool_stats,
    iblinkinfo,
    ibstat,
    mlxlink,
    parse,
    perfquery,
)
from rackops.validate.batch import Part, script, split
from rackops.validate.executor import CommandResult, Executor, Target
from rackops.validate.records import Record
from rackops.validate.rundir import RunDir

SETTLE_POLL_S = 2.0
IBSTAT_FIX = "run ibstat on this host: a hung or failing driver prints a cut output (dmesg)"
# the port states ibstat prints (infiniband-diags ibstat.c port_state_str; "???" is unknown)
PORT_STATES = {"down": "Down", "initializing": "Initializing", "armed": "Armed",
               "active": "Active", "actdefer": "ActDefer"}  # fmt: skip


@dataclass
class Physical:
    cluster: Cluster
    profiles: dict[str, Profile]
    targets: dict[str, Target]
    executor: Executor
    rundir: RunDir
    params: PhyParams
    concurrency: int = 32

    # ------------------------------------------------------------ cabling
    def cabling(self, nodes: tuple[str, ...], done: set[str], skip: set[str]) -> None:
        if "cabling" in done or not self.params.cabling:
            return
        ib = self.cluster.fabric.type != "roce"
        findings: list[Finding] = []
        seen: dict[Key, Seen | None] = {}
        meta: dict[str, Any] = {"source": "iblinkinfo" if ib else "lldpctl"}
        result = None
        if ib:
            first = next((n for n in nodes if n not in skip), None)
            if first is not None:
                result = self.executor.run(
                    self.targets[first], list(iblinkinfo.ARGV), self.params.timeout_s
                )
                meta["node"] = first
                try:
                    if result.error or result.timed_out:
                        raise ParseError(result.error or "timed out")
                    links = parse(
                        "iblinkinfo",
                        result.stdout + "\n" + result.stderr,
                        fabric_limits(self.cluster.size()),
                    )
                    if not links.complete:
                        raise ParseError("the output is cut off: " + "; ".join(links.errors[-2:]))
                    seen = seen_from_iblinkinfo(links, self.cluster)
                except ParseError as exc:
                    findings.append(
                        Finding(
                            "CAB-000",
                            Status.ERROR,
                            Subject(node=first),
                            f"iblinkinfo could not be read, cabling not checked: {exc}",
                            remediation="check the subnet manager is running and this node "
                            "reaches it (sminfo)",
                        )
                    )
        else:
            recs = {
                r["node"]: r
                for r in self.rundir.records()
                if r["kind"] == "node"
                and r["tool"] == "lldpctl"
                and r["node"] in nodes  # a run dir may name a node the inventory dropped
                and r["node"] not in skip
            }
            for name, rec in sorted(recs.items()):
                if any(f["status"] == "ERROR" for f in rec["findings"]):
                    continue  # could not be read: an ERROR of that node already
                parsed = self.rundir.parsed_output(rec)  # as the node stage parsed it
                if parsed is None:
                    continue
                node = self.cluster.node(name)
                seen.update(seen_from_lldp(parsed, name, {h.netdev: h.device for h in node.hcas}))
        if seen:
            findings += check_cabling(self.cluster, seen, how="iblinkinfo" if ib else "LLDP")
        meta["seen"] = {
            f"{k[0]}/{k[1]}": (asdict(v) if v else None) for k, v in sorted(seen.items())
        }
        output = self.rundir.save_output("cabling/iblinkinfo", result) if result else {}
        findings_json = [f.as_dict() for f in findings]
        self.rundir.append(
            Record("cabling", "cabling", None, meta["source"], findings_json, meta, output)
        )

    # ------------------------------------------------------------ snapshots
    def _commands(self, node: Node, after: bool) -> list[tuple[str, list[str]]]:
        ib = self.cluster.fabric.type != "roce"
        cmds: list[tuple[str, list[str]]] = [("ibstat", list(ibstat.ARGV))]
        for h in node.hcas:
            if ib:
                cmds.append((f"perfquery/{h.device}", perfquery.argv(h.device)))
            else:
                cmds.append((f"ethtool-S/{h.device}", ethtool_stats.argv(h.netdev)))
                hw = f"{node.hw_root}/sys/class/infiniband/{h.device}/ports/1/hw_counters"
                cmds.append(
                    (
                        f"hw/{h.device}",
                        ["grep", "-H", ".", f"{hw}/np_cnp_sent", f"{hw}/rp_cnp_handled"],
                    )
                )
            if after and self.params.ber:
                module = ib and self.params.optics
                cmds.append((f"mlxlink/{h.device}", mlxlink.argv(h.device, module)))
            if after and self.params.optics and not ib:
                cmds.append((f"ethtool-m/{h.device}", ethtool_module.argv(h.netdev)))
        return cmds

    def snapshot(self, nodes: tuple[str, ...], done: set[str], skip: set[str], phase: str) -> None:
        if not self.params.counters:
            return
        todo = [n for n in nodes if n not in skip and f"phy/{n}/{phase}" not in done]
        before = {}
        if phase == "after":
            before = {
                r["node"]: r
                for r in self.rundir.records()
                if r["id"].endswith("/before") and r["kind"] == "snapshot"
            }

        def one(name: str) -> None:
            if phase == "before":
                self._before(name)
            else:
                self._after(name, before.get(name))

        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            list(pool.map(one, todo))

    def _take(self, node: Node, after: bool) -> tuple[CommandResult, dict[str, Part]]:
        argv = script(self._commands(node, after), self.params.timeout_s / 2)
        result = self.executor.run(self.targets[node.name], argv, self.params.timeout_s)
        return result, split(result.stdout)

    def _states(self, parts: dict[str, Part], node: Node) -> dict[str, str | None]:
        """Each HCA's port state from ``ibstat``; None where it could not be read (no
        output, a parse error, a CA cut before its state, or a state that is not a word:
        a garbled output is never taken for a state)."""
        out: dict[str, str | None] = {h.device: None for h in node.hcas}
        part = parts.get("ibstat")
        if part is None:
            return out
        try:
            parsed = parse("ibstat", part.text)
        except ParseError:
            return out
        cas = list(parsed.cas)
        if not parsed.complete and cas:
            cas.pop()  # the output was cut: its last CA's state may be cut too ("Act")
        for ca in cas:
            if ca.name in out and ca.ports:
                state = ca.ports[0].state
                out[ca.name] = PORT_STATES.get(state.strip().lower()) if state else None
        return out

    def _samples(
        self, parts: dict[str, Part], node: Node
    ) -> tuple[dict[str, PortSample], dict[str, str]]:
        samples: dict[str, PortSample] = {}
        errors: dict[str, str] = {}
        roce = node_design(self.cluster, node).roce  # the host's own PFC, overrides included
        pfc = roce.pfc if roce is not None else ()
        for h in node.hcas:
            try:
                if self.cluster.fabric.type == "roce":
                    part = parts.get(f"ethtool-S/{h.device}")
                    if part is None or part.rc != 0:
                        why = (
                            "did not finish"
                            if part is None or part.rc is None
                            else f"exit {part.rc}"
                        )
                        raise ParseError(
                            f"ethtool -S {why}: {part.text.strip()[-200:] if part else ''}"
                        )
                    hw: dict[str, int] = {}
                    hw_part = parts.get(f"hw/{h.device}")
                    for line in hw_part.text.splitlines() if hw_part else []:
                        path, _, value = line.rpartition(":")
                        if value.strip().isdigit():
                            hw[Path(path).name] = int(value)
                    stats = parse("ethtool-stats", part.text)
                    if not stats.complete:
                        raise ParseError("ethtool -S output is cut off")
                    samples[h.device] = sample_roce(stats, hw, pfc)
                else:
                    part = parts.get(f"perfquery/{h.device}")
                    if part is None or part.rc is None:
                        raise ParseError("perfquery did not finish")
                    if part.rc == 124:
                        raise ParseError("perfquery timed out")
                    pq = parse("perfquery", part.text)
                    if not pq.ports or not pq.complete:
                        raise ParseError("perfquery output is cut off")
                    samples[h.device] = sample_ib(pq.ports[0])
            except ParseError as exc:
                errors[h.device] = str(exc)
        return samples, errors

    def _before(self, name: str) -> None:
        node = self.cluster.node(name)
        deadline = time.monotonic() + self.params.hold_down_s
        settled_after = 0.0
        started = time.monotonic()
        while True:
            result, parts = self._take(node, after=False)
            states = self._states(parts, node)
            down = [d for d, s in states.items() if s is not None and s.lower() != "active"]
            if result.error or not down or time.monotonic() + SETTLE_POLL_S > deadline:
                break
            time.sleep(SETTLE_POLL_S)  # a link still training: let it settle before the baseline
            settled_after = time.monotonic() - started
        subj = Subject(node=name)
        if result.error or result.timed_out:
            self._record(name, "before", result, [self._unread(subj, result)], {})
            return
        samples, errors = self._samples(parts, node)
        findings = [
            Finding(
                "PHY-000",
                Status.ERROR,
                self._subject(node, h),
                f"counters unreadable before the run, deltas unknown: {errors[h.device]}",
                remediation="check perfquery/ethtool on this host",
            )
            for h in node.hcas
            if h.device in errors
        ]
        findings += [
            Finding(
                "PHY-000",
                Status.ERROR,
                self._subject(node, h),
                "port state unreadable before the run (ibstat printed no state for it, or a "
                "cut or garbled one): a port going down under load cannot be told",
                remediation=IBSTAT_FIX,
            )
            for h in node.hcas
            if states.get(h.device) is None
        ]
        if any(r["kind"] == "pair" for r in self.rundir.records()):
            # resumed after the pairs ran: this baseline saw none of their traffic
            findings.append(
                Finding(
                    "PHY-009",
                    Status.WARN,
                    subj,
                    "the counters were first read after pair tests had already run (a resumed "
                    "run): what grew under load is unknown",
                    remediation="rerun the validation from the start to judge the counters",
                )
            )
        meta = {
            "t": time.time(),
            "ports": {d: s.as_dict() for d, s in samples.items()},
            "states": states,
            "hold_down_s": round(settled_after, 1),
        }
        self._record(name, "before", result, findings, meta)

    def _after(self, name: str, before: dict[str, Any] | None) -> None:
        node = self.cluster.node(name)
        profile = self.profiles[node.profile]
        result, parts = self._take(node, after=True)
        subj = Subject(node=name)
        if result.error or result.timed_out:
            self._record(name, "after", result, [self._unread(subj, result)], {"ports": {}})
            return
        samples, errors = self._samples(parts, node)
        states = self._states(parts, node)
        was = (before or {}).get("meta", {}).get("states", {})
        t0 = (before or {}).get("meta", {}).get("t")
        interval = time.time() - t0 if t0 else 0.0
        b_ports = (before or {}).get("meta", {}).get("ports", {})
        findings: list[Finding] = []
        reports: dict[str, PortReport] = {}
        for h in node.hcas:
            s = self._subject(node, h)
            rep = reports.setdefault(h.device, PortReport())
            port_findings: list[Finding] = []
            if h.device in errors:
                port_findings.append(
                    Finding(
                        "PHY-000",
                        Status.ERROR,
                        s,
                        f"counters unreadable after the run: {errors[h.device]}",
                    )
                )
            elif h.device not in b_ports:
                rep.absolute.update(samples[h.device].counters)
                port_findings.append(
                    Finding(
                        "PHY-009",
                        Status.WARN,
                        s,
                        "no counter snapshot before the run: what grew under load is unknown",
                    )
                )
            else:
                port_findings += judge_counters(
                    PortSample.from_dict(b_ports[h.device]),
                    samples[h.device],
                    s,
                    profile.phy,
                    interval,
                    rep,
                )
            if states.get(h.device) is None:
                port_findings.append(
                    Finding(
                        "PHY-000",
                        Status.ERROR,
                        s,
                        "port state unreadable after the run (ibstat printed no state for it, "
                        "or a cut or garbled one)",
                        remediation=IBSTAT_FIX,
                    )
                )
            elif str(was.get(h.device) or "").lower() == "active":
                port_findings += judge_state(states.get(h.device), s)
            port_findings += self._ber_and_optics(parts, h, s, profile, rep)
            if not port_findings:
                port_findings.append(
                    Finding(
                        "PHY-OK",
                        Status.OK,
                        s,
                        "no errors grew under load; BER and optics within limits",
                    )
                )
            findings += port_findings
        meta = {
            "interval_s": round(interval, 1),
            "ports": {d: asdict(r) for d, r in reports.items()},
        }
        self._record(name, "after", result, findings, meta)

    def _ber_and_optics(
        self, parts: dict[str, Part], h: Hca, s: Subject, profile: Profile, rep: PortReport
    ) -> list[Finding]:
        """BER (mlxlink) and optics (mlxlink -m on IB, ethtool -m on RoCE) of one port."""
        port_findings: list[Finding] = []
        ml = parts.get(f"mlxlink/{h.device}")
        if ml is not None:
            try:
                parsed = parse("mlxlink", ml.text)
                port_findings += judge_ber(parsed, s, profile, rep)
                if parsed.optics is not None and self.cluster.fabric.type != "roce":
                    port_findings += judge_optics(parsed.optics, s, rep)
            except ParseError as exc:
                port_findings.append(
                    Finding("PHY-000", Status.ERROR, s, f"mlxlink unreadable: {exc}")
                )
        em = parts.get(f"ethtool-m/{h.device}")
        if em is not None:
            try:
                mod = parse("ethtool-module", em.text)
                port_findings += judge_optics(mod.optics, s, rep)
                if not mod.complete:
                    port_findings.append(
                        Finding(
                            "PHY-000",
                            Status.ERROR,
                            s,
                            "ethtool -m output is cut off: optics not judged",
                        )
                    )
            except ParseError as exc:
                port_findings.append(
                    Finding("PHY-000", Status.ERROR, s, f"ethtool -m unreadable: {exc}")
                )
        return port_findings

    # ------------------------------------------------------------ records
    def _subject(self, node: Node, h: Hca) -> Subject:
        return Subject(node=node.name, hca=h.device, port=1, switch=h.switch, switch_port=h.port)

    def _unread(self, subj: Subject, result: CommandResult) -> Finding:
        why = result.error or f"timed out after {self.params.timeout_s:g} s"
        return Finding("PHY-000", Status.ERROR, subj, f"port snapshot not taken: {why}")

    def _record(
        self,
        name: str,
        phase: str,
        result: CommandResult,
        findings: list[Finding],
        meta: dict[str, Any],
    ) -> None:
        """The snapshot before the pairs is a baseline (kind ``snapshot``); the judged one
        after them is a node check (kind ``node``), so a failing port is an HCA culprit."""
        step = f"phy/{name}/{phase}"
        self.rundir.append(
            Record(
                step,
                "snapshot" if phase == "before" else "node",
                name,
                "phy",
                [f.as_dict() for f in findings],
                meta,
                self.rundir.save_output(step, result),
            )
        )
