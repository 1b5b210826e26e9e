"""Run a plan across the rack: per-node stage, RDMA pair rounds, multi-node NCCL.

Each step's raw output is saved and its findings appended to ``results.jsonl`` the moment
it finishes; a step already in ``results.jsonl`` is not run again (``--resume``).
"""

from __future__ import annotations

import random
import shlex
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from rackops.inventory.loader import LoadResult
from rackops.inventory.model import Cluster
from rackops.profiles import Profile
from rackops.suites import Suite
from rackops.validate.executor import (
    Executor,
    Target,
)
from rackops.validate.peergate import peer_findings, peer_limits
from rackops.validate.physical import Physical
from rackops.validate.plan import PERFTEST_PORT, Plan
from rackops.validate.rundir import RunDir
from rackops.validate.stages.base import Progress, bar
from rackops.validate.stages.fleet import FleetStage
from rackops.validate.stages.gpuload import GpuLoadStage
from rackops.validate.stages.ibdiag import IbdiagStage
from rackops.validate.stages.nccl import NcclStage
from rackops.validate.stages.nodes import NodeStage
from rackops.validate.stages.nvldomain import NvlDomainStage
from rackops.validate.stages.nvlinkerrors import NvlinkErrorStage
from rackops.validate.stages.pairs import PairStage
from rackops.validate.stages.switches import SwitchStage

__all__ = ["Progress", "Runner", "bar", "targets_from_inventory"]


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


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


@dataclass
class Runner(
    NodeStage,
    FleetStage,
    NvlDomainStage,
    NvlinkErrorStage,
    GpuLoadStage,
    PairStage,
    SwitchStage,
    IbdiagStage,
    NcclStage,
):
    """A run: its stages (``rackops.validate.stages``) in order, over one state."""

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
    # the leaves and spines the inventory gives an SSH connection, read around the pair rounds
    switch_targets: dict[str, Target] = field(default_factory=dict)
    switch_executor: Any = None
    # a --limit run: some nodes only, so nothing of the whole fabric (sweep, switch reads)
    limited: bool = False
    # what the stages keep between the reads around the pair rounds (declared here, never
    # made on the fly): the fabric sweep's and the switches' "before", and the pair tests a
    # resumed run had already done
    _sweep_before: Any = field(default=None, init=False)
    _sweep_pairs_done: int = field(default=0, init=False)
    _switch_before: dict[str, Any] = field(default_factory=dict, init=False)
    _switch_pairs_done: int = field(default=0, init=False)
    _switch_views: dict[str, Any] = field(default_factory=dict, init=False)

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

    def run(self, plan: Plan) -> None:
        done = self._done = self.rundir.done_ids()
        started = time.monotonic()
        unreachable = {r["node"] for r in self.rundir.records() if r["kind"] == "unreachable"}
        self.load_begin(plan, done, unreachable)  # GPU samplers on, kernel log baseline
        self.nvlink_errors("before", plan, done, unreachable)
        try:
            unreachable |= self.node_stage(plan, done)
            self._loaded_stages(plan, done, unreachable)
        except BaseException:
            self.load_abort()  # samplers stopped, nothing recorded: --resume watches anew
            raise
        self.load_end(plan, done, unreachable)  # samplers stopped, kernel log judged
        self.nvlink_errors("after", plan, done, unreachable)
        self._peers(done)
        self.progress(f"[run] finished in {time.monotonic() - started:.1f} s")

    def _loaded_stages(self, plan: Plan, done: set[str], unreachable: set[str]) -> None:
        """Everything between the first check and the last load: fleet, physical, pair
        rounds, multi-node NCCL."""
        self.fleet_stage(plan, done, unreachable)
        self.nvl_domain_stage(plan, done, unreachable)
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
            self.switches_read("before", done)
            self.fabric_sweep(plan, "before", done, unreachable)
        self.pair_stage(plan, done, unreachable)
        if physical is not None:
            physical.snapshot(plan.nodes, done, unreachable, "after")
            self.progress("[phy] port counters, BER and optics read after the pair rounds")
            self.switches_read("after", done)
            self.fabric_sweep(plan, "after", done, unreachable)
        from rackops.validate.localise import failing_nodes

        bad = failing_nodes(self.rundir.records()) | unreachable
        self.nccl_stage(plan, done, bad)

    def _peers(self, done: set[str]) -> None:
        """The peer gate, over every figure of the run (the load's samples included)."""
        if self.suite.checks.peer_gate and "peers" not in done:
            records = self.rundir.records()
            self._record(
                "peers",
                "peers",
                None,
                "peer-gate",
                None,
                peer_findings(records, self.cluster, self.profiles),
                {"limits": peer_limits(records, self.cluster, self.profiles)},
            )
