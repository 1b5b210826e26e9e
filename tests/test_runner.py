"""The runner without a lab: a recorded lab run (tests/fixtures/replay/lab-2node, a clean
2-node rack, suite `lab`, recorded over SSH by `rackops validate`) served back by the
replaying launcher. Scheduling, timeouts, unreachable nodes, retries and resume are
checked against what the runner asked for and what it recorded."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from rackops import tools
from rackops.inventory import load_inventory
from rackops.profiles import load_profile
from rackops.suites import load_suite
from rackops.validate.executor import CommandResult, Target
from rackops.validate.plan import make_plan
from rackops.validate.replay import Recording, ReplayExecutor, Reply, key_of
from rackops.validate.report import write_reports
from rackops.validate.rundir import RunDir
from rackops.validate.runner import Runner, targets_from_inventory

ROOT = Path(__file__).resolve().parent.parent
REC = Path(__file__).parent / "fixtures" / "replay" / "lab-2node"
RAW = REC / "run" / "raw"


def recording() -> Recording:
    rec = Recording.from_rundir(REC / "run")
    # what the run directory keeps only as raw files: the servers and the jumbo pings
    server = (RAW / "pair_node01-node02_rail0_0_server.out").read_text()
    rec.add_tool("*", "ib_write_bw", Reply(stdout=server))
    rec.add_tool("*", "ib_write_lat", Reply(stdout=server))
    rec.add_tool("*", "ping", Reply(stdout=(RAW / "pair_node01-node02_rail0_ping.out").read_text()))
    return rec


def runner(run: Path, ex: ReplayExecutor, suite_overrides: dict[str, Any] | None = None) -> Any:
    inv = str(REC / "inventory")
    result = load_inventory(inv)
    cluster = result.raise_for_errors()
    suite = load_suite("lab", REC / "inventory")
    # the recording predates GPUs under load (issue 24): its stage is tested on the lab
    # (tests/test_lab.py) and on one machine (tests/test_gpuload_sim.py)
    overrides = {"gpu_load": None, **(suite_overrides or {})}
    suite = suite.model_copy(update={"checks": suite.checks.model_copy(update=overrides)})
    profiles = {n.profile: load_profile(n.profile).profile for n in cluster.nodes}
    r = Runner(
        cluster,
        suite,
        profiles,
        targets_from_inventory(result, cluster),
        ex,
        RunDir(run),
        concurrency=8,
        lab=True,
        progress=lambda _m: None,
    )
    return r, make_plan(cluster, suite)


def statuses(run: Path) -> dict[str, list[str]]:
    return {r["id"]: [f["status"] for f in r["findings"]] for r in RunDir(run).records()}


def test_the_replayed_run_gives_the_recorded_verdict_with_every_step_once(tmp_path: Path) -> None:
    ex = ReplayExecutor(recording(), delay_s=0.01)
    r, plan = runner(tmp_path, ex)
    r.run(plan)
    report, _, _ = write_reports(RunDir(tmp_path))
    recorded = json.loads((REC / "run" / "run.json").read_text())
    assert report["verdict"] == "ACCEPTED" and recorded["suite"] == "lab"
    want = {json.loads(x)["id"] for x in (REC / "run" / "results.jsonl").read_text().splitlines()}
    assert set(statuses(tmp_path)) == want
    # every per-node check ran once on each node, in parallel
    node_calls = [c for c in ex.calls if c.how == "run" and c.argv[0] != "ping"]
    per_node: dict[str, int] = {}
    for c in node_calls:
        per_node[c.node] = per_node.get(c.node, 0) + 1
    checks = len([i for i in want if i.startswith("node/node01/")])
    assert per_node["node01"] >= checks and per_node["node02"] >= checks
    assert ex.max_in_flight > 1
    # a server per link end and rail: 8 bandwidth and 8 latency servers, each started once
    starts = [c for c in ex.calls if c.how == "start"]
    assert len(starts) == 16 and {c.node for c in starts} == {"node01"}
    ports = {c.argv[c.argv.index("-p") + 1] for c in starts}
    assert len(ports) == 16  # no two servers share a port


def test_a_run_reads_its_results_once_and_localises_each_set_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stages share one result set in memory: results.jsonl is written once per record
    and read once per run (to find what an earlier run recorded), never again by a stage or
    the reports. Localisation runs once on the records before multi-node NCCL (which nodes
    to leave out) and once on the whole run, whose verdict every report file shares."""
    from rackops.validate import localise as loc
    from rackops.validate import report as rep

    sizes: list[int] = []
    real = loc.localise

    def counted(records: list[dict[str, Any]]) -> Any:
        sizes.append(len(records))
        return real(records)

    served = ReplayExecutor(recording(), delay_s=0)  # the recording reads its own raw/
    monkeypatch.setattr(loc, "localise", counted)
    monkeypatch.setattr(rep, "localise", counted)
    reread: list[str] = []
    read_raw = RunDir.read_raw

    def counted_raw(self: RunDir, rec: dict[str, Any], key: str = "stdout") -> str | None:
        if rec["kind"] == "node":
            reread.append(rec["id"])
        return read_raw(self, rec, key)

    monkeypatch.setattr(RunDir, "read_raw", counted_raw)
    r, plan = runner(tmp_path, served)
    r.run(plan)
    # the cabling and fleet stages read the node checks' outputs as the node stage parsed
    # them (lldpctl, lspci, nvidia-smi ...), never from raw/ again
    assert r.rundir._parsed and reread == []
    report, _, _ = write_reports(r.rundir)
    assert report["verdict"] == "ACCEPTED"
    assert r.rundir.reads == 1
    whole = len(RunDir(tmp_path).records())
    assert len(sizes) == 2 and sizes[0] < sizes[1] == whole, (sizes, whole)
    # what the set holds is what a fresh read of the log gives
    assert r.rundir.records() == RunDir(tmp_path).records()


@pytest.mark.parametrize("batch", [1, 256])
def test_a_launcher_that_fans_out_gets_one_call_per_check(tmp_path: Path, batch: int) -> None:
    """SSH takes one node per call; Slurm one srun per check across the nodes."""
    ex = ReplayExecutor(recording(), batch=batch)
    r, plan = runner(tmp_path, ex)
    r.node_stage(plan, set())
    checks = {i.split("/", 2)[2] for i in statuses(tmp_path) if i.startswith("node/")}
    if batch == 1:
        assert all(len(b) == 1 for b in ex.batches) and len(ex.batches) == 2 * len(checks)
    else:
        assert sorted(ex.batches) == [("node01", "node02")] * len(checks)  # both, once


def test_a_hung_tool_times_out_on_that_node_only(tmp_path: Path) -> None:
    rec = recording()
    dcgm = next(k for k in rec.exact if k[0] == "node02" and k[1][0] == "dcgmi")
    rec.exact[dcgm] = [Reply(rc=124, stdout="", timed_out=True)]
    ex = ReplayExecutor(rec)
    r, plan = runner(tmp_path, ex)
    r.run(plan)
    got = statuses(tmp_path)
    assert got["node/node02/dcgmi-diag"] == ["ERROR"]
    assert got["node/node01/dcgmi-diag"] == ["OK"]
    (rec02,) = [x for x in RunDir(tmp_path).records() if x["id"] == "node/node02/dcgmi-diag"]
    assert rec02["findings"][0]["code"] == "RUN-TIMEOUT"
    # the timeout given is the suite's, and the run went on to the pairs
    (call,) = [c for c in ex.calls if c.node == "node02" and c.argv[0] == "dcgmi"]
    assert call.timeout == 10
    assert "pair/node01-node02/rail0" in got
    report, _, _ = write_reports(RunDir(tmp_path))
    assert report["verdict"] != "ACCEPTED"


def test_an_unreachable_node_is_one_error_and_its_links_are_skipped(tmp_path: Path) -> None:
    ex = ReplayExecutor(recording().down("node02", "cannot connect to 127.0.0.1:2302"))
    r, plan = runner(tmp_path, ex)
    r.run(plan)
    records = RunDir(tmp_path).records()
    unreachable = [x for x in records if x["kind"] == "unreachable"]
    assert [(x["node"], x["findings"][0]["code"]) for x in unreachable] == [("node02", "NODE-000")]
    assert "not reachable over SSH: cannot connect" in unreachable[0]["findings"][0]["message"]
    pairs = [x for x in records if x["id"].startswith("pair/")]
    assert len(pairs) == 8 and all(x["findings"][0]["code"] == "PAIR-SKIP" for x in pairs)
    # nothing was started for a pair with it, and no node check judged it
    assert not [c for c in ex.calls if c.how == "start"]
    assert not [x for x in records if x["kind"] == "node" and x["node"] == "node02"]
    report, _, _ = write_reports(RunDir(tmp_path))
    assert report["verdict"] != "ACCEPTED" and report["culprits"] == []


def test_a_failed_attempt_is_retried_and_a_flaky_link_is_named(tmp_path: Path) -> None:
    rec = recording()
    link = next(k for k in rec.exact if k[1][0] == "ib_write_bw" and "mlx5_3" in k[1])
    good = rec.exact[link][0]
    slow = Reply(
        stdout=re.sub(
            r"(\n \d+\s+\d+\s+)([\d.]+)(\s+)([\d.]+)", r"\g<1>0.00\g<3>90.00", good.stdout
        )
    )
    assert slow.stdout != good.stdout
    rec.exact[link] = [slow, good]
    bw = load_suite("lab", REC / "inventory").checks.perftest_bw
    assert bw is not None
    ex = ReplayExecutor(rec)
    r, plan = runner(tmp_path, ex, {"perftest_bw": bw.model_copy(update={"repeats": 3})})
    r.run(plan)
    (pair,) = [x for x in RunDir(tmp_path).records() if x["id"] == "pair/node01-node02/rail3"]
    assert len(pair["meta"]["attempts"]) == 2  # stopped at the first pass
    assert pair["meta"]["attempts"][0] == 90.0
    assert [f["status"] for f in pair["findings"] if f["code"].startswith("PERF")] == ["WARN"]
    other = [x for x in RunDir(tmp_path).records() if x["id"] == "pair/node01-node02/rail0"]
    assert "attempts" not in other[0]["meta"]  # a link that passed at once ran once


def test_a_server_port_held_on_the_node_moves_up_once(tmp_path: Path) -> None:
    rec = recording()
    held = Reply(
        rc=1,
        stderr=" Couldn't bind the server socket to port 18515: Address already in use\n",
        listens=False,
    )
    server = rec.by_tool[("*", "ib_write_bw")]
    rec.by_tool[("*", "ib_write_bw")] = [held, *server]
    ex = ReplayExecutor(rec)
    r, plan = runner(tmp_path, ex)
    r.run(plan)
    starts = [c for c in ex.calls if c.how == "start" and c.argv[0] == "ib_write_bw"]
    assert len(starts) == 9  # one link's server tried twice
    first, second = starts[0], next(c for c in starts[1:] if c.argv[2] == starts[0].argv[2])
    p1, p2 = (int(c.argv[c.argv.index("-p") + 1]) for c in (first, second))
    assert p2 == p1 + 50
    assert all(s == ["OK"] * len(s) for k, s in statuses(tmp_path).items() if k.startswith("pair/"))


def test_after_a_port_shift_the_client_goes_to_the_port_the_server_listens_on(
    tmp_path: Path,
) -> None:
    rec = recording()
    held = Reply(
        rc=1, stderr=" Couldn't bind the server socket: Address already in use\n", listens=False
    )
    rec.by_tool[("*", "ib_write_bw")] = [held, *rec.by_tool[("*", "ib_write_bw")]]
    ex = ReplayExecutor(rec)
    r, plan = runner(tmp_path, ex)
    r.run(plan)
    bw = [c for c in ex.calls if c.argv[0] == "ib_write_bw"]
    first = next(c for c in bw if c.how == "start")
    dev = first.argv[2]
    servers = [c for c in bw if c.how == "start" and c.argv[2] == dev]
    (client,) = [c for c in bw if c.how == "run" and c.node != first.node and c.argv[2] == dev]

    def port(c: Any) -> str:
        return str(c.argv[c.argv.index("-p") + 1])

    assert port(servers[1]) != port(servers[0])  # moved up
    assert port(client) == port(servers[1]), (client.argv, servers[1].argv)


def test_a_server_that_exits_before_listening_without_a_word_is_tried_once_more(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A launcher that loses a server step (srun exits with no output) costs one retry on
    the same port, not a pair ERROR; a server that keeps failing is an ERROR with its rc."""
    monkeypatch.setattr("rackops.validate.stages.pairs.SERVER_RETRY_DELAY_S", 0.0)
    rec = recording()
    lost = Reply(rc=1, listens=False)
    server = rec.by_tool[("*", "ib_write_bw")]
    rec.by_tool[("*", "ib_write_bw")] = [lost, *server]
    ex = ReplayExecutor(rec)
    r, plan = runner(tmp_path, ex)
    r.run(plan)
    starts = [c for c in ex.calls if c.how == "start" and c.argv[0] == "ib_write_bw"]
    assert len(starts) == 9  # one link's server tried twice, on the same port
    again = next(c for c in starts[1:] if c.argv[2] == starts[0].argv[2])
    assert again.argv == starts[0].argv
    assert all(s == ["OK"] * len(s) for k, s in statuses(tmp_path).items() if k.startswith("pair/"))

    rec.by_tool[("*", "ib_write_bw")] = [lost]  # it never listens
    ex = ReplayExecutor(rec)
    r, plan = runner(tmp_path / "never", ex)
    r.run(plan)
    (pair,) = [
        x for x in RunDir(tmp_path / "never").records() if x["id"] == "pair/node01-node02/rail0"
    ]
    (err,) = [f for f in pair["findings"] if f["status"] == "ERROR"]
    assert "exited before listening (rc 1): no output" in err["message"], err
    starts = [
        c for c in ex.calls if c.how == "start" and c.argv[:3] == ("ib_write_bw", "-d", "mlx5_0")
    ]
    assert len(starts) == 2  # tried twice, then reported


class RunOnly:
    """A launcher with no pair or MPI capability (as the local launcher is)."""

    def __init__(self, inner: ReplayExecutor) -> None:
        self.inner, self.batch, self.info = inner, inner.batch, inner.info

    def run(self, t: Any, argv: Any, timeout: float, become: bool | None = None) -> Any:
        return self.inner.run(t, argv, timeout)

    def run_many(self, jobs: Any, timeout: float) -> Any:
        return self.inner.run_many(jobs, timeout)

    def close(self) -> None:
        return None


def test_a_launcher_without_pair_or_mpi_capability_gives_errors_not_a_crash(
    tmp_path: Path,
) -> None:
    from rackops.validate.executor import MpiLauncher, PairLauncher
    from rackops.validate.local import LocalExecutor

    assert not isinstance(LocalExecutor(), PairLauncher | MpiLauncher)
    assert isinstance(ReplayExecutor(recording()), PairLauncher)
    ex = RunOnly(ReplayExecutor(recording()))
    r, plan = runner(tmp_path, ex)
    r.run(plan)
    recs = RunDir(tmp_path).records()
    pairs = [x for x in recs if x["kind"] == "pair"]
    assert pairs
    for x in pairs:
        (err,) = [f for f in x["findings"] if f["code"] == "PAIR-000"]
        assert err["status"] == "ERROR", err
        assert "the ssh launcher cannot run a pair test's server" in err["message"]
    assert all(s == ["OK"] * len(s) for k, s in statuses(tmp_path).items() if k.startswith("node/"))


def test_each_stage_runs_alone_on_the_replaying_launcher(tmp_path: Path) -> None:
    """The stages (rackops.validate.stages) are separable: each writes its own kind of
    record and nothing else, every step once."""
    ex = ReplayExecutor(recording())
    r, plan = runner(tmp_path / "nodes", ex)
    assert r.node_stage(plan, set()) == set()
    kinds = {x["kind"] for x in RunDir(tmp_path / "nodes").records()}
    ids = [x["id"] for x in RunDir(tmp_path / "nodes").records()]
    assert kinds == {"node"} and len(ids) == len(set(ids))
    assert {c.how for c in ex.calls} == {"run"}

    ex = ReplayExecutor(recording())
    r, plan = runner(tmp_path / "pairs", ex)
    r.pair_stage(plan, set(), set())
    recs = RunDir(tmp_path / "pairs").records()
    assert {x["kind"] for x in recs} == {"pair"}
    links = len(plan.rails) * sum(len(rnd.pairs) for rnd in plan.rounds)
    assert sorted({x["id"].split("/", 1)[0] for x in recs}) == ["lat", "pair"]
    assert len(recs) == 2 * links  # bandwidth and latency of every link, once

    ex = ReplayExecutor(recording())
    r, plan = runner(tmp_path / "nccl", ex)
    r.nccl_stage(plan, set(), set())
    recs = RunDir(tmp_path / "nccl").records()
    assert [x["kind"] for x in recs] == ["nccl"] * len(plan.nccl_groups)
    assert [c.how for c in ex.calls] == ["multi_node"] * len(plan.nccl_groups)


class Killed(BaseException):  # as a kill: nothing of the runner catches it
    pass


class KilledAfter(ReplayExecutor):
    """Stops answering after n answers, as a killed controller would."""

    def __init__(self, rec: Recording, n: int) -> None:
        super().__init__(rec)
        self.left = n
        self._gate = threading.Lock()

    def _answer(self, how: str, t: Any, argv: Any, timeout: float) -> Reply:
        with self._gate:
            self.left -= 1
            if self.left < 0:
                raise Killed
        return super()._answer(how, t, argv, timeout)


@pytest.mark.parametrize("kill_after", [5, 40, 60])
def test_resume_runs_only_what_is_missing(tmp_path: Path, kill_after: int) -> None:
    first = KilledAfter(recording(), kill_after)
    r, plan = runner(tmp_path, first)
    with pytest.raises(Killed):
        r.run(plan)
    done_before = set(statuses(tmp_path))
    recorded = (REC / "run" / "results.jsonl").read_text().count("\n")
    assert done_before and len(done_before) < recorded
    again = ReplayExecutor(recording())
    r2, plan2 = runner(tmp_path, again)
    r2.run(plan2)
    ids = [x["id"] for x in RunDir(tmp_path).records()]
    assert len(ids) == len(set(ids))  # no step recorded twice
    full = {json.loads(x)["id"] for x in (REC / "run" / "results.jsonl").read_text().splitlines()}
    assert set(ids) == full
    # the resumed run asked nothing of a step it already had
    step_of = {
        (x["host"], key_of(x["argv"])): x["id"]
        for x in RunDir(REC / "run").records()
        if x.get("argv") and x["kind"] in ("node", "phy")
    }
    asked = {step_of.get((c.node, key_of(c.argv))) for c in again.calls} - {None}
    assert asked and not asked & done_before
    assert r2.port_base != r.port_base  # a new port block: the killed run's servers may linger
    report, _, _ = write_reports(RunDir(tmp_path))
    assert report["verdict"] == "ACCEPTED"


# --- node-check: the same judgement on one node, NHC's output ---------------------------------


def _recorded_suite(tmp: Path) -> str:
    """The lab suite as the recording ran it (before GPUs under load), as a suite file."""
    data = yaml.safe_load((ROOT / "validators/suites/lab.yaml").read_text())
    del data["checks"]["gpu_load"]
    (tmp / "lab.yaml").write_text(yaml.safe_dump(data))
    return str(tmp / "lab.yaml")


def test_node_check_is_silent_when_healthy_and_names_the_failure_when_not(tmp_path: Path) -> None:
    from rackops.validate.nodecheck import node_check

    inv = str(REC / "inventory")
    suite = _recorded_suite(tmp_path)
    healthy = node_check(inv, suite, "node01", executor=ReplayExecutor(recording()))
    assert healthy.line() == "" and healthy.status.value == "OK"
    rec = recording()
    smi = next(k for k in rec.exact if k[0] == "node02" and k[1][:2] == ("nvidia-smi", "-q"))
    xml = rec.exact[smi][0].stdout
    # a GPU fallen off the bus: the driver lists one GPU fewer, its whole <gpu> element gone
    cut = xml[: xml.rindex("<gpu id=")] + xml[xml.rindex("</gpu>") + len("</gpu>") :]
    cut = re.sub(r"<attached_gpus>\s*8\s*</attached_gpus>", "<attached_gpus>7</attached_gpus>", cut)
    rec.exact[smi] = [Reply(stdout=cut)]
    sick = node_check(inv, suite, "node02", executor=ReplayExecutor(rec))
    assert sick.status.value == "FAIL"
    assert sick.line().startswith("ERROR: rackops: Health check failed: GPU-"), sick.line()
    # no other node was asked anything
    timed = recording()
    dcgm = next(k for k in timed.exact if k[0] == "node02" and k[1][0] == "dcgmi")
    timed.exact[dcgm] = [Reply(rc=124, timed_out=True)]
    ex = ReplayExecutor(timed)
    hung = node_check(inv, suite, "node02", executor=ex)
    assert {c.node for c in ex.calls} == {"node02"}
    assert hung.status.value == "ERROR" and "RUN-TIMEOUT" in hung.line()


def test_a_second_node_check_steps_aside_while_one_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Slurm starts its HealthCheckProgram every interval whether or not the last one
    finished: a node-check that finds another running exits at once, running nothing."""
    from rackops.cli import main
    from rackops.validate.nodecheck import LOCK_ENV, only_one

    monkeypatch.setenv(LOCK_ENV, str(tmp_path / "lock"))
    with only_one() as first:
        assert first
        rc = main(["node-check", "-i", str(tmp_path / "no-inventory"), "--drain"])
        assert rc == 0
        assert "already running on this node" in capsys.readouterr().err
        with only_one() as second:
            assert not second
    with only_one() as again:  # released: the next one runs (and here finds no inventory)
        assert again
    assert main(["node-check", "-i", str(tmp_path / "no-inventory")]) != 0
    # a lock that cannot be had does not stop the check; it says so
    monkeypatch.setenv(LOCK_ENV, str(tmp_path / "no-such-dir" / "lock"))
    with only_one() as unlocked:
        assert unlocked
    assert "runs without its lock" in capsys.readouterr().err


def test_after_a_client_that_could_not_connect_the_server_is_stopped_not_waited_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A miswired or dead link: the client cannot connect and exits. Its server, still
    waiting for a client, gets a short grace and is stopped; waiting to its timeout held up
    the whole round, twice per bad link (bandwidth, then latency)."""
    from rackops.validate.replay import ReplayHandle
    from rackops.validate.stages.pairs import SERVER_GRACE_AFTER_FAILED_CLIENT_S

    waits: list[tuple[str, float]] = []
    real_wait = ReplayHandle.wait

    def wait(self: ReplayHandle, timeout: float) -> Any:
        waits.append((self.argv[0], timeout))
        return real_wait(self, timeout)

    monkeypatch.setattr(ReplayHandle, "wait", wait)
    ex = ReplayExecutor(recording())
    r, plan = runner(tmp_path / "good", ex)
    r.run(plan)
    clients = {c.node for c in ex.calls if c.how == "run" and c.argv[0] == "ib_write_bw"}
    bw_timeout = r.suite.checks.perftest_bw.timeout_s
    assert waits and {t for tool, t in waits if tool == "ib_write_bw"} == {bw_timeout + 10}

    waits.clear()
    rec = recording()
    refused = Reply(
        rc=1,
        stderr="Couldn't connect to 198.18.0.11:18515\nUnable to open file descriptor for "
        "socket connection Unable to init the socket connection\n",
    )
    rec.exact = {k: v for k, v in rec.exact.items() if k[1][0] != "ib_write_bw"}
    for node in clients:  # every client: refused
        rec.add_tool(node, "ib_write_bw", refused)
    r, plan = runner(tmp_path / "bad", ReplayExecutor(rec))
    r.run(plan)
    assert {t for tool, t in waits if tool == "ib_write_bw"} == {SERVER_GRACE_AFTER_FAILED_CLIENT_S}
    pairs = [x for x in RunDir(tmp_path / "bad").records() if x["id"].startswith("pair/")]
    assert pairs and all(
        any(f["status"] != "OK" for f in x["findings"] if f["code"] != "C-25") for x in pairs
    )


class Overlaps(ReplayExecutor):
    """Replays, holding each GPU-loading command a moment, and notes any two on one node at
    once."""

    def __init__(self, rec: Recording) -> None:
        super().__init__(rec)
        self.busy: dict[str, int] = {}
        self.overlaps: list[tuple[str, str]] = []
        self.guard = threading.Lock()

    def run_many(
        self, jobs: Sequence[tuple[Target, Sequence[str]]], timeout: float
    ) -> list[CommandResult]:
        loads = [t.name for t, argv in jobs if argv[0] in ("dcgmi", "all_reduce_perf")]
        with self.guard:
            for n in loads:
                if self.busy.get(n):
                    self.overlaps.append((n, jobs[0][1][0]))
                self.busy[n] = self.busy.get(n, 0) + 1
        if loads:
            time.sleep(0.3)
        try:
            return super().run_many(jobs, timeout)
        finally:
            with self.guard:
                for n in loads:
                    self.busy[n] -= 1


def test_checks_that_load_the_gpus_never_run_together_on_a_node(tmp_path: Path) -> None:
    """DCGM and single-node NCCL each load every GPU of a node: run at once, each would
    measure half the GPUs (and per-GPU GEMM/HBM figures would fall below their floors)."""
    ex = Overlaps(recording())
    r, plan = runner(tmp_path / "run", ex)
    loads = {c.tool for c in plan.node_checks if tools.get(c.tool).loads_gpus}
    assert loads == {"dcgmi-diag", "nccl-tests"}
    r.run(plan)
    assert ex.overlaps == []
    assert statuses(tmp_path / "run")  # the run went on to the end
