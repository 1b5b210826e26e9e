"""Stage 2: the RDMA pair rounds — bandwidth, then latency and the jumbo ping, per rail link;
servers started first and retried as a held port or a lost step needs."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from rackops.checks.perftest import check_perftest
from rackops.checks.repeat import combine_attempts
from rackops.checks.tuning import check_jumbo_ping, designed_mtu
from rackops.findings import Finding, Status, Subject, worst
from rackops.parsers import ParseError
from rackops.tools import parse, perftest, ping
from rackops.validate.executor import (
    CommandResult,
    PairLauncher,
    Started,
)
from rackops.validate.plan import Plan, hca_on_rail
from rackops.validate.stages.base import StageBase

# A server that finds its port held (a server left by a killed run, another user's test)
# tries the port this far up, once: each block of 200 ports has bandwidth servers at
# +0..+49, latency at +100..+149, and their second choices 50 above.
PORT_RETRY_SHIFTS = (0, 50)
# A server that exits before listening for another reason is tried once more after this long.
SERVER_RETRY_DELAY_S = 1.0
# After a client that failed (it could not connect: a miswired or dead link), the server is
# given this long to say why before it is stopped; it would otherwise wait for a client that
# never comes, for its whole timeout, holding up the round (twice per link: bandwidth and
# latency).
SERVER_GRACE_AFTER_FAILED_CLIENT_S = 3.0


def _last_line(r: CommandResult) -> str:
    said = (r.stderr or r.stdout).strip().splitlines()[-1:]
    return said[0] if said else "no output"


class PairStage(StageBase):
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
        argv = ping.argv(mtu, hca_c.netdev, hca_s.address)
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
        self,
        server: str,
        head: list[str],
        opts: list[str],
        timeout: float,
        step: str,
        meta: dict[str, Any],
    ) -> Started | str:
        """Start a perftest server (``head`` + ``opts``) and wait until it listens. A server
        that finds its port held moves up once (PORT_RETRY_SHIFTS), in ``opts`` itself, so
        the client goes where the server listens; one that exits before listening for any
        other reason (a launcher that lost the step, no output at all) is tried once more
        on the same port. What it said the last time is the error otherwise."""
        port_at = opts.index("-p") + 1
        port = int(opts[port_at])
        shifts = list(PORT_RETRY_SHIFTS)
        retried = False
        while True:
            opts[port_at] = str(port + shifts[0])
            argv = [*head, *opts]
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
            opts = perftest.lat_options(lat, port)
            tool, size, timeout = lat.tool, lat.message_size_bytes, lat.timeout_s
        else:
            port = self.port_base + rail
            opts = perftest.bw_options(bw, port)
            tool, size, timeout = bw.tool, bw.message_size_bytes, bw.timeout_s
        server_ip = hca_s.address or s_node.address
        started = self._start_server(server, [tool, "-d", dev_s], opts, timeout, step, meta)
        if isinstance(started, str):
            return [Finding("PAIR-000", Status.ERROR, subj, started)], None, meta
        handle = started
        result = self.executor.run(
            self.targets[client], [tool, "-d", dev_c, *opts, server_ip], timeout
        )
        client_failed = not result.ran or result.timed_out or result.rc != 0
        server_result = handle.wait(
            SERVER_GRACE_AFTER_FAILED_CLIENT_S if client_failed else timeout + 10
        )
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
