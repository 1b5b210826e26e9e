"""Run a plan across the rack: per-node stage, RDMA pair rounds, multi-node NCCL.

Each step's raw output is saved and its findings appended to ``results.jsonl`` the moment
it finishes; a step already in ``results.jsonl`` is not run again (``--resume``).
"""

from __future__ import annotations

import random
import shlex
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

from rackops.checks.nccl import check_nccl
from rackops.checks.perftest import check_perftest
from rackops.checks.repeat import combine_attempts
from rackops.checks.tuning import check_jumbo_ping, designed_mtu
from rackops.findings import Finding, Status, Subject, worst
from rackops.inventory.loader import LoadResult
from rackops.inventory.model import Cluster
from rackops.parsers import ParseError, parse
from rackops.profiles import Profile
from rackops.suites import Suite
from rackops.tools import get as get_tool
from rackops.tools import judge_live
from rackops.tools.base import Context
from rackops.validate.executor import (
    CommandResult,
    Executor,
    MpiLauncher,
    PairLauncher,
    Started,
    Target,
)
from rackops.validate.peergate import peer_findings
from rackops.validate.physical import Physical
from rackops.validate.plan import PERFTEST_PORT, NodeCheck, Plan, hca_on_rail
from rackops.validate.records import Kind, Record
from rackops.validate.rundir import RunDir

Progress = Callable[[str], None]


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def bar(done: int, total: int, width: int = 24) -> str:
    filled = int(width * done / total) if total else width
    return f"{'█' * filled}{'░' * (width - filled)} {done}/{total}"


def targets_from_inventory(result: LoadResult, cluster: Cluster) -> dict[str, Target]:
    out = {}
    for node in cluster.nodes:
        v = result.hostvars[node.name].values
        extra = result.hostvars[node.name]
        become = bool(extra.values.get("ansible_become", False))
        out[node.name] = Target(
            node.name,
            node.address,
            node.ssh_port,
            user=v.get("ansible_user"),
            key_file=v.get("ansible_ssh_private_key_file"),
            become=become,
            ssh_args=tuple(
                shlex.split(
                    f"{v.get('ansible_ssh_common_args') or ''} "
                    f"{v.get('ansible_ssh_extra_args') or ''}"
                )
            ),
        )
    return out


PORT_BLOCKS = "perftest-port-blocks.json"  # in the run directory: the blocks its runs used
# A server that finds its port held (a server left by a killed run, another user's test)
# tries the port this far up, once: each block of 200 ports has bandwidth servers at
# +0..+49, latency at +100..+149, and their second choices 50 above.
PORT_RETRY_SHIFTS = (0, 50)
# A server that exits before listening for another reason is tried once more after this long.
SERVER_RETRY_DELAY_S = 1.0


def _last_line(r: CommandResult) -> str:
    said = (r.stderr or r.stdout).strip().splitlines()[-1:]
    return said[0] if said else "no output"


@dataclass
class Runner:
    cluster: Cluster
    suite: Suite
    profiles: dict[str, Profile]
    targets: dict[str, Target]
    executor: Executor
    rundir: RunDir
    concurrency: int = 32
    lab: bool = False
    progress: Progress = _stderr
    # Each invocation uses its own perftest ports: a killed run's servers may still hold the
    # previous ones until their remote timeout fires, and --resume must not collide. The
    # blocks used are kept in the run directory, so a resumed run never draws one again.
    port_base: int = 0
    _done: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        if self.port_base:
            return
        try:
            used = set(self.rundir.read_json(PORT_BLOCKS))
        except (OSError, ValueError, TypeError):
            used = set()
        free = [b for b in range(100) if b not in used] or list(range(100))
        block = random.choice(free)
        self.rundir.write_json(PORT_BLOCKS, sorted(used | {block}))
        self.port_base = PERFTEST_PORT + 200 * block

    def _ctx(self, node: str) -> Context:
        n = self.cluster.node(node)
        return Context(self.profiles[n.profile], n, self.cluster, self.suite)

    def _record(
        self,
        step_id: str,
        kind: Kind,
        node: str | None,
        tool: str,
        result: CommandResult | None,
        findings: list[Finding],
        meta: dict[str, Any] | None = None,
    ) -> None:
        output = self.rundir.save_output(step_id, result) if result is not None else {}
        findings_json = [f.as_dict() for f in findings]
        self.rundir.append(Record(step_id, kind, node, tool, findings_json, meta or {}, output))

    # ---------------------------------------------------------------- stage 1
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

        def one(item: list[tuple[str, NodeCheck]]) -> None:
            live = [(n, c) for n, c in item if n not in unreachable]
            if not live:
                return
            results = self.executor.run_many(
                [(self.targets[n], c.argv) for n, c in live], max(c.timeout_s for _, c in live)
            )
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
        findings = self._judge(node, check.tool, result, check.timeout_s)
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
                findings = self._judge(node, check.tool, result, check.timeout_s)
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

    def _expand(self, node: str, checks: Sequence[NodeCheck]) -> list[NodeCheck]:
        """Per-HCA checks become one check per cabled HCA of this node; ``{netdevs}`` and
        ``{hw_root}`` take this node's values."""
        out = []
        n = self.cluster.node(node)
        for c in checks:
            if "{netdevs}" in c.argv or "{hw_root}" in c.argv:
                argv: list[str] = []
                for a in c.argv:
                    if a == "{netdevs}":
                        argv += [h.netdev for h in n.hcas]
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
                        argv=tuple(a.replace("{netdev}", h.netdev) for a in c.argv),
                    )
                )
        return out

    def _judge(self, node: str, tool: str, result: CommandResult, timeout: float) -> list[Finding]:
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
            ]
        if result.rc == 127:
            return [
                Finding(
                    "RUN-MISSING",
                    Status.ERROR,
                    subj,
                    f"{result.argv[0]} is not installed ({result.stderr.strip()})",
                    remediation="run the provisioning playbook for this tool",
                )
            ]
        text = result.stdout
        if get_tool(tool).both_streams or not text.strip():
            text = result.stdout + "\n" + result.stderr
        return judge_live(tool, text, self._ctx(node), node)

    # ---------------------------------------------------------------- stage 2
    def pair_stage(self, plan: Plan, done: set[str], skip: set[str]) -> None:
        bw = self.suite.checks.perftest_bw
        if bw is None:
            return
        for rnd in plan.rounds:
            jobs = []
            for pair in rnd.pairs:
                for rail in plan.rails:
                    step = f"pair/{pair.server}-{pair.client}/rail{rail}"
                    lat_step = "lat/" + step.split("/", 1)[1]
                    if step in done and (
                        self.suite.checks.perftest_lat is None or lat_step in done
                    ):
                        continue  # a run killed between the two keeps its bandwidth result
                    jobs.append((pair.server, pair.client, rail, step))
            if not jobs:
                continue
            with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
                list(pool.map(lambda j: self._pair(*j, skip=skip), jobs))
            self.progress(
                f"[pairs] round {rnd.index + 1}/{len(plan.rounds)} done ({len(jobs)} links)"
            )

    def _pair(self, server: str, client: str, rail: int, step: str, *, skip: set[str]) -> None:
        bw = self.suite.checks.perftest_bw
        assert bw is not None
        if step in self._done:  # resumed between bandwidth and latency: latency only
            self._latency(server, client, rail, step, skip=skip, skipped=False)
            return
        attempts: list[tuple[list[Finding], CommandResult | None, dict[str, Any]]] = []
        jumbo = self._jumbo_ping(server, client, rail, step, skip=skip)
        for attempt in range(bw.repeats):
            findings, result, meta = self._pair_once(
                server, client, rail, f"{step}/{attempt}", skip=skip
            )
            attempts.append((findings, result, meta))
            if worst(findings) is Status.OK or meta.get("skipped"):
                break
        findings, result, meta = attempts[-1]
        if len(attempts) > 1:
            combined = combine_attempts([a[0] for a in attempts])
            findings = [combined]
            meta["attempts"] = [a[2].get("bw_gbps") for a in attempts]
        if jumbo is not None:
            findings = jumbo[0] + findings
            meta["jumbo_ping"] = jumbo[1]
        self._record(step, "pair", client, "perftest", result, findings, meta)
        self._latency(server, client, rail, step, skip=skip, skipped=bool(meta.get("skipped")))

    def _latency(
        self, server: str, client: str, rail: int, step: str, *, skip: set[str], skipped: bool
    ) -> None:
        """ib_write_lat between the two ends of a link, after its bandwidth test."""
        lat_step = "lat/" + step.split("/", 1)[1]
        if self.suite.checks.perftest_lat is None or lat_step in self._done or skipped:
            return
        findings, result, meta = self._pair_once(
            server, client, rail, lat_step + "/0", skip=skip, kind="lat"
        )
        meta["metric"] = "lat"
        self._record(lat_step, "pair", client, "perftest-lat", result, findings, meta)

    def _link_subject(self, server: str, client: str, rail: int) -> Subject:
        """A pair's link as findings name it: the client's HCA and switch port, the peer."""
        s_node, c_node = self.cluster.node(server), self.cluster.node(client)
        hca_c = next(h for h in c_node.hcas if h.rail == rail)
        return Subject(
            node=client,
            hca=hca_on_rail(c_node, rail),
            port=1,
            peer=f"{server}/{hca_on_rail(s_node, rail)}",
            switch=hca_c.switch,
            switch_port=hca_c.port,
        )

    def _jumbo_ping(
        self, server: str, client: str, rail: int, step: str, *, skip: set[str]
    ) -> tuple[list[Finding], str] | None:
        """C-25: a ping of the design MTU with DF set from the client's rail interface to
        the server's rail address (RoCE; IB pairs have no address in the cabling map)."""
        s_node, c_node = self.cluster.node(server), self.cluster.node(client)
        hca_s = next((h for h in s_node.hcas if h.rail == rail), None)
        hca_c = next((h for h in c_node.hcas if h.rail == rail), None)
        if (
            self.cluster.fabric.type != "roce"
            or hca_s is None
            or hca_c is None
            or hca_s.address is None
            or {server, client} & skip
        ):
            return None
        mtu = min(designed_mtu(s_node, self.cluster), designed_mtu(c_node, self.cluster))
        subj = self._link_subject(server, client, rail)
        argv = ["ping", "-M", "do", "-s", str(mtu - 28), "-c", "3", "-i", "0.2", "-W", "1"]
        argv += ["-I", hca_c.netdev, hca_s.address]
        result = self.executor.run(self.targets[client], argv, 15)
        saved = self.rundir.save_output(step + "/ping", result)["stdout"]
        if result.error is not None or result.timed_out:
            why = result.error or "ping timed out"
            return [Finding("PING-000", Status.ERROR, subj, why)], saved
        try:
            parsed = parse("ping", result.stdout + "\n" + result.stderr)
        except ParseError as exc:
            msg = f"ping exited {result.rc} without statistics ({exc})"
            return [Finding("PING-000", Status.ERROR, subj, msg)], saved
        return check_jumbo_ping(parsed, mtu, subject=subj), saved

    def _start_server(
        self, server: str, argv: list[str], timeout: float, step: str, meta: dict[str, Any]
    ) -> Started | str:
        """Start a perftest server and wait until it listens. A server that finds its port
        held moves up once (PORT_RETRY_SHIFTS); one that exits before listening for any other
        reason (a launcher that lost the step, no output at all) is tried once more on the
        same port. What it said the last time is the error otherwise."""
        port_at = argv.index("-p") + 1
        port = int(argv[port_at])
        shifts = list(PORT_RETRY_SHIFTS)
        retried = False
        while True:
            argv[port_at] = str(port + shifts[0])
            if not isinstance(self.executor, PairLauncher):
                return f"the {self.executor.info.name} launcher cannot run a pair test's server"
            try:
                handle = self.executor.start(self.targets[server], argv, timeout)
            except Exception as exc:
                return f"server did not start: {exc}"
            if handle.wait_for(b"Waiting for client", 15) or not handle.exited():
                return handle
            # the server quit before it listened: the client would only fail to connect,
            # so the server's own words are the finding
            gone = handle.wait(5)
            self.rundir.save_output(
                f"{step}/server-{shifts[0]}" + ("-again" if retried else ""), gone
            )
            text = gone.stderr + gone.stdout
            if "already in use" in text and len(shifts) > 1:
                meta["ports_in_use"] = [*meta.get("ports_in_use", []), port + shifts[0]]
                shifts.pop(0)
                continue
            if "already in use" not in text and not retried:
                retried = True
                meta["server_retried"] = f"rc {gone.rc}: {_last_line(gone)}"
                time.sleep(SERVER_RETRY_DELAY_S)
                continue
            return f"{argv[0]} server on {server} exited before listening (rc {gone.rc}): " + (
                _last_line(gone) if gone.error is None else gone.error
            )

    def _pair_once(
        self, server: str, client: str, rail: int, step: str, *, skip: set[str], kind: str = "bw"
    ) -> tuple[list[Finding], CommandResult | None, dict[str, Any]]:
        """One perftest between the two ends of a rail link: bandwidth (the suite's
        perftest_bw) or latency (perftest_lat), server first, identical options."""
        bw = self.suite.checks.perftest_bw
        lat = self.suite.checks.perftest_lat
        assert bw is not None
        s_node, c_node = self.cluster.node(server), self.cluster.node(client)
        dev_s, dev_c = hca_on_rail(s_node, rail), hca_on_rail(c_node, rail)
        hca_c = next(h for h in c_node.hcas if h.rail == rail)
        hca_s = next(h for h in s_node.hcas if h.rail == rail)
        subj = self._link_subject(server, client, rail)
        meta: dict[str, Any] = {
            "server": server,
            "client": client,
            "rail": rail,
            "server_hca": dev_s,
            "client_hca": dev_c,
            "server_switch_port": f"{hca_s.switch} {hca_s.port}",
            "client_switch_port": f"{hca_c.switch} {hca_c.port}",
        }
        if server in skip or client in skip or dev_s is None or dev_c is None:
            down = server if server in skip else client
            meta["skipped"] = True
            return (
                [Finding("PAIR-SKIP", Status.ERROR, subj, f"not run: {down} is unreachable")],
                None,
                meta,
            )
        tool: str
        if kind == "lat":
            assert lat is not None
            port = self.port_base + 100 + rail  # latency servers never meet bandwidth ones
            opts = ["-s", str(lat.message_size_bytes), "-n", str(lat.iterations), "-F"]
            opts += ["-p", str(port)]
            tool, size, timeout = lat.tool, lat.message_size_bytes, lat.timeout_s
        else:
            port = self.port_base + rail
            opts = [
                "-s",
                str(bw.message_size_bytes),
                "-D",
                str(bw.duration_s),
                "-q",
                str(bw.qps),
                "-F",
                "--report_gbits",
                "-p",
                str(port),
            ]
            if bw.bidirectional:
                opts.append("-b")
            tool, size, timeout = bw.tool, bw.message_size_bytes, bw.timeout_s
        server_ip = hca_s.address or s_node.address
        started = self._start_server(server, [tool, "-d", dev_s, *opts], timeout, step, meta)
        if isinstance(started, str):
            return [Finding("PAIR-000", Status.ERROR, subj, started)], None, meta
        handle = started
        result = self.executor.run(
            self.targets[client], [tool, "-d", dev_c, *opts, server_ip], timeout
        )
        server_result = handle.wait(timeout + 10)
        self.rundir.save_output(step + "/server", server_result)
        meta["client_output"] = self.rundir.save_output(step + "/client", result)["stdout"]
        if result.timed_out:
            findings = [
                Finding(
                    "RUN-TIMEOUT",
                    Status.ERROR,
                    subj,
                    f"{tool} did not finish in {timeout:g} s; killed",
                )
            ]
        else:
            try:
                parsed = parse("perftest", result.stdout + "\n" + result.stderr)
                findings = check_perftest(
                    parsed, self.profiles[c_node.profile], subject=subj, message_size_bytes=size
                )
                row = parsed.row_at(size) if parsed.rows else None
                if kind == "lat":
                    avg = getattr(row, "t_avg_us", None)
                    meta["lat_us"] = avg if avg is not None else getattr(row, "t_typical_us", None)
                else:
                    meta["bw_gbps"] = getattr(row, "bw_avg_gbps", None)
            except ParseError as exc:
                findings = [Finding("PARSE-000", Status.ERROR, subj, f"unreadable: {exc}")]
        return findings, result, meta

    # ---------------------------------------------------------------- stage 3
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
            argv = [
                params.collective,
                "-b",
                str(params.min_bytes),
                "-e",
                str(params.max_bytes),
                "-f",
                "2",
                "-g",
                "1",
                "-n",
                str(params.iterations),
            ]
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

    def run(self, plan: Plan) -> None:
        done = self._done = self.rundir.done_ids()
        started = time.monotonic()
        unreachable = self.node_stage(plan, done)
        phy = self.suite.checks.physical
        physical = None
        if phy is not None:
            physical = Physical(
                self.cluster,
                self.profiles,
                self.targets,
                self.executor,
                self.rundir,
                phy,
                self.concurrency,
            )
            physical.cabling(plan.nodes, done, unreachable)  # first: a miswired port's
            # bandwidth is not the HCA's
            physical.snapshot(plan.nodes, done, unreachable, "before")
            self.progress("[phy] cabling checked; port counters read before the pair rounds")
        self.pair_stage(plan, done, unreachable)
        if physical is not None:
            physical.snapshot(plan.nodes, done, unreachable, "after")
            self.progress("[phy] port counters, BER and optics read after the pair rounds")
        if self.suite.checks.peer_gate and "peers" not in done:
            self._record(
                "peers",
                "peers",
                None,
                "peer-gate",
                None,
                peer_findings(self.rundir.records(), self.cluster, self.profiles),
            )
        from rackops.validate.localise import failing_nodes

        bad = failing_nodes(self.rundir.records()) | unreachable
        self.nccl_stage(plan, done, bad)
        self.progress(f"[run] finished in {time.monotonic() - started:.1f} s")
