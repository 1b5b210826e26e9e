"""``rackops node-check``: one node checks itself, with no controller.

For Slurm's ``HealthCheckProgram`` or a prolog/epilog: the suite's per-node checks (port
and GPU state, DCGM at the suite's level, single-node NCCL, host tuning) run on this machine
through the local launcher and are judged exactly as ``rackops validate`` judges them. The
pair rounds, multi-node NCCL and the fabric-wide physical checks need other nodes and are
left to ``validate``.

Output follows what NHC users parse: nothing and exit 0 when healthy; one line
``ERROR: rackops: Health check failed: <what, where>`` and exit 1 when not. With
``--drain`` (the HealthCheckProgram mode) the node drains itself with that reason, and a
node that rackops drained is resumed once it passes again; a drain of anyone else's is
never touched.
"""

from __future__ import annotations

import fcntl
import os
import socket
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from rackops.errors import InputError
from rackops.findings import STATUS_VALUE, Status
from rackops.inventory import load_inventory
from rackops.profiles import load_profile
from rackops.scheduler.actions import (
    REASON_PREFIX,
    apply,
    drain_reason,
    slurm_drain,
    slurm_resume,
)
from rackops.suites import load_suite
from rackops.tools import nccl_tests
from rackops.validate.executor import Executor, Target
from rackops.validate.local import LocalExecutor
from rackops.validate.plan import NodeCheck, Plan, make_plan
from rackops.validate.replay import ReplayExecutor, from_captures
from rackops.validate.rundir import RunDir
from rackops.validate.runner import Runner

LOCK_ENV = "RACKOPS_NODE_CHECK_LOCK"


@contextmanager
def only_one() -> Iterator[bool]:
    """True while this is the only node-check running on the machine. Slurm starts its
    HealthCheckProgram every HealthCheckInterval whether or not the last one finished (and
    kills each after 60 s): on a loaded node, checks that overlap slow each other down until
    none finishes and a drained node is never resumed. One runs; the others step aside."""
    path = Path(os.environ.get(LOCK_ENV) or _lock_dir() / f"rackops-node-check-{os.getuid()}.lock")
    try:
        fh = path.open("a")
    except OSError as exc:  # no lock to be had: check anyway, and say so
        print(
            f"rackops: node-check runs without its lock ({path}: {exc.strerror})", file=sys.stderr
        )
        yield True
        return
    with fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _lock_dir() -> Path:
    run = Path("/run/lock")
    return run if os.access(run, os.W_OK) else Path(tempfile.gettempdir())


@dataclass
class Health:
    node: str
    status: Status
    failures: list[dict[str, Any]]  # the failing findings, as results.jsonl holds them
    seconds: float
    action: str | None = None  # what --drain did
    not_captured: tuple[str, ...] = ()  # --replay: checks with no capture, not judged

    @property
    def reason(self) -> str:
        if not self.failures:
            return ""
        f = self.failures[0]
        subj = f.get("subject") or {}
        gpu = subj.get("gpu")
        where = " ".join(x for x in (subj.get("hca"), None if gpu is None else f"GPU {gpu}") if x)
        more = f" (+{len(self.failures) - 1} more)" if len(self.failures) > 1 else ""
        return f"{f['code']} {where + ': ' if where else ''}{f['message']}{more}"

    def line(self) -> str:
        if self.status in (Status.OK, Status.WARN):
            return ""
        return f"ERROR: rackops: Health check failed: {self.reason}"


def node_check(
    inventory: str,
    suite_name: str,
    node: str | None = None,
    run_dir: str | None = None,
    executor: Executor | None = None,
    replay: str | None = None,
) -> Health:
    """``replay``: a directory of this node's captured outputs (``replay.from_captures``)
    answers the commands instead of this machine; a check with no capture is not run and
    is listed as not captured, never judged."""
    node = node or socket.gethostname().split(".")[0]
    result = load_inventory(inventory)
    cluster = result.raise_for_errors()
    if node not in {n.name for n in cluster.nodes}:
        raise InputError(
            f"{inventory}: no node {node!r} (this host's name; pass --node with its inventory name)"
        )
    inv_dir = Path(inventory) if Path(inventory).is_dir() else Path(inventory).parent
    suite = load_suite(suite_name, inv_dir)
    local = suite.model_copy(
        update={
            "checks": suite.checks.model_copy(
                update={
                    "perftest_bw": None,
                    "perftest_lat": None,
                    "nccl_multi_node": None,
                    "physical": None,
                    "peer_gate": False,
                }
            )
        }
    )
    me = cluster.node(node)
    profiles = {me.profile: load_profile(me.profile, inv_dir).profile}
    plan = make_plan(cluster, local, pairing=None, suspects=())
    plan = replace(plan, nodes=(node,))
    if replay is not None:
        executor = ReplayExecutor(from_captures(Path(replay), node))
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="rackops-node-check-") as tmp:
        rundir = RunDir(Path(run_dir or tmp))
        runner = Runner(
            cluster,
            local,
            profiles,
            {node: Target(node, "localhost")},
            executor or LocalExecutor(),
            rundir,
            concurrency=4,
            progress=lambda _msg: None,
            port_base=1,  # no pair tests: no port block to draw
        )
        missing: tuple[str, ...] = ()
        if isinstance(executor, ReplayExecutor):
            plan, missing = _captured_only(runner, plan, node, executor)
        runner.node_stage(plan, set())
        findings = [f for r in rundir.records() for f in r["findings"]]
    bad = [f for f in findings if f["status"] in ("FAIL", "ERROR")]
    bad.sort(key=lambda f: f["status"] != "FAIL")  # a failed part before a tool error
    if not findings:
        bad = [{"code": "RUN-000", "status": "ERROR", "message": "no check ran"}]
    # no findings is undecided, as everywhere
    status = Status(
        max((f["status"] for f in findings), key=STATUS_VALUE.__getitem__, default="ERROR")
    )
    if missing and status is Status.OK:
        status = Status.WARN  # healthy as far as it was captured: not a whole check
    return Health(node, status, bad, time.monotonic() - started, not_captured=missing)


def _captured_only(
    runner: Runner, plan: Plan, node: str, replay: ReplayExecutor
) -> tuple[Plan, tuple[str, ...]]:
    """The plan's checks of this node that the captures answer (expanded: per HCA, this
    node's values), and the names of the others."""
    keep: list[NodeCheck] = []
    missing: list[NodeCheck] = []
    for c in runner._expand(node, plan.node_checks):
        (keep if replay.answers(node, c.argv) else missing).append(c)
    if runner.cluster.node(node).gpus == 1:  # said, not run (NodeStage._one_gpu_nodes)
        keep += [c for c in plan.node_checks if c.name == nccl_tests.SINGLE_NODE]
    return replace(plan, node_checks=tuple(keep)), tuple(c.name for c in missing)


def slurm_self_action(check: Health, env: Mapping[str, str]) -> str:
    """Drain this node with the failure as reason, or resume it if rackops drained it."""
    from rackops.scheduler.slurm import SlurmError, node_states

    try:
        state, reason = node_states([check.node], env).get(check.node, ("unknown", ""))
    except SlurmError as exc:
        return f"not applied: {exc}"
    if check.line():
        if "drain" in state and reason == drain_reason(check.reason):
            return "already drained with this reason"
        cmd, verb = slurm_drain(check.node, check.reason), "drained"
    elif "drain" in state and reason.startswith(REASON_PREFIX):
        cmd, verb = slurm_resume(check.node), "resumed"
    else:
        return "nothing to do"
    (done,) = apply([cmd], env)
    return verb if done.ok else f"scontrol failed: {done.output}"
