"""dcgmproftester12/13 --no-dcgm-validation -t 1004|1005 -d SECONDS: DCGM's CUDA load
generator (the binary of the CUDA flavour of DCGM installed), read for its per-GPU figures:
FP16 HGEMM (gflops, node check ``gemm``) and device-memory copy (10⁹ B/s read+write, node
check ``hbm``), judged per GPU against the profile's ``load`` floors and by the peer gate."""

from __future__ import annotations

from typing import Any

from rackops.checks.gpuperf import TESTS, check_proftester
from rackops.findings import Finding, Status, Subject
from rackops.inventory.model import Cluster
from rackops.parsers.dcgmproftester import parse_dcgmproftester
from rackops.suites import Suite
from rackops.tools.base import Binary, Context, NodeCheck, Tool


def plan(suite: Suite, cluster: Cluster) -> list[NodeCheck]:
    load = suite.checks.gpu_load
    if load is None:
        return []
    out = []
    for name, test, params in (("gemm", 1004, load.gemm), ("hbm", 1005, load.hbm)):
        if params is None:
            continue
        argv = (
            load.proftester,
            "--no-dcgm-validation",
            "-t",
            str(test),
            "-d",
            str(params.duration_s),
        )
        out.append(
            NodeCheck(name, "dcgmproftester", argv, params.timeout_s, params.duration_s + 15)
        )
    return out


def check(parsed: Any, ctx: Context, node: str | None) -> list[Finding]:
    gpus = ctx.profile.gpu.count
    tests = [t for t in TESTS if parsed.gpus(t)]
    if not tests:
        why = "; ".join(parsed.errors[:3]) or "no per-GPU reading of -t 1004 or -t 1005"
        return [
            Finding(
                "PROF-000",
                Status.ERROR,
                Subject(node=node),
                f"dcgmproftester printed no GEMM or memory figure: {why}",
                remediation="run it as root with the DCGM CUDA package of the driver's CUDA "
                "major (dcgmproftester12 or 13) and -t 1004 or -t 1005",
            )
        ]
    out = []
    for t in tests:
        out += check_proftester(parsed, t, node, gpus, ctx.profile.load)
    return out


TOOL = Tool(
    "dcgmproftester",
    "per-GPU FP16 GEMM (TFLOPS) and memory bandwidth (GB/s) from DCGM's load generator",
    parse=parse_dcgmproftester,
    check=check,
    plan=plan,
    order=115,  # after dcgmi diag, a load of its own
    loads_gpus=True,
    binaries=(
        Binary("dcgmproftester12", "datacenter-gpu-manager"),
        Binary("dcgmproftester13", "datacenter-gpu-manager"),
    ),
)
