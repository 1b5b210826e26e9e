"""nccl-tests (``all_reduce_perf`` and the other collectives): busbw per size, on one node
(stage 1) or across the rack (stage 3, through the launcher's MPI)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rackops.suites import NCCL_COLLECTIVES
from rackops.tools.base import Binary, Context, NodeCheck, Tool

if TYPE_CHECKING:
    from rackops.findings import Finding
    from rackops.inventory.model import Cluster
    from rackops.suites import NcclParams, Suite

GPUS = "{gpus}"  # in a node check's argv: the node's GPU count, from its profile


def argv(p: NcclParams, gpus_per_rank: int | str) -> list[str]:
    """One run of the collective from min to max bytes, doubling; ``-g`` GPUs per rank (all
    of a node's GPUs on one node, ``{gpus}`` until the node is known; one per rank across
    nodes, a rank per GPU)."""
    sizes = ["-b", str(p.min_bytes), "-e", str(p.max_bytes), "-f", "2"]
    return [p.collective, *sizes, "-g", str(gpus_per_rank), "-n", str(p.iterations)]


SINGLE_NODE = "nccl-single-node"


def plan(suite: Suite, cluster: Cluster) -> list[NodeCheck]:
    p = suite.checks.nccl_single_node
    if not p:
        return []
    return [NodeCheck(SINGLE_NODE, "nccl-tests", tuple(argv(p, GPUS)), p.timeout_s, 60)]


def one_gpu_instead(collective: str, measured: bool) -> str:
    """What a one-GPU node does instead of the single-node collective, said once."""
    return (
        f"one GPU: {collective} not run (over one rank it moves no data between GPUs, its "
        "bus bandwidth is 0 by definition); "
        + (
            "this GPU is measured by the GEMM and HBM tests and its load samples"
            if measured
            else "nothing in this suite measures this GPU's throughput: enable gpu_load gemm/hbm"
        )
    )


def check(parsed: Any, ctx: Context, node: str | None) -> list[Finding]:
    from rackops.checks.nccl import check_nccl

    checks = ctx.suite.checks if ctx.suite else None
    multi = len({r.host for r in parsed.ranks}) > 1
    params = (checks.nccl_multi_node if multi else checks.nccl_single_node) if checks else None
    gate = params.gate_sizes_bytes if params else None
    return check_nccl(parsed, ctx.profile, node=node, gate_sizes_bytes=gate)


def _parse(text: str) -> Any:
    from rackops.parsers.nccl_tests import parse_nccl_tests

    return parse_nccl_tests(text)


TOOL = Tool(
    "nccl-tests",
    "NCCL collectives: bus bandwidth per size",
    parse=_parse,
    check=check,
    plan=plan,
    order=120,
    binaries=tuple(Binary(c, "nccl-tests") for c in NCCL_COLLECTIVES),
    both_streams=True,
    loads_gpus=True,
)
