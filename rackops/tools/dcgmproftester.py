"""dcgmproftester12/13 --no-dcgm-validation -t 1004[,1005] -d SECONDS: DCGM's CUDA load
generator (the binary of the CUDA flavour of DCGM installed), read for its per-GPU figures
(FP16 HGEMM gflops, device-memory copy 10⁹ B/s). Parsed now; judged per GPU over a run against
the profile's floors and the peers (issue 24, planned: docs/design.md "GPUs under load")."""

from __future__ import annotations

from rackops.parsers.dcgmproftester import parse_dcgmproftester
from rackops.tools.base import Binary, Tool

TOOL = Tool(
    "dcgmproftester",
    "per-GPU FP16 GEMM (gflops) and HBM copy (GB/s) figures from DCGM's load generator",
    parse=parse_dcgmproftester,
    binaries=(
        Binary("dcgmproftester12", "datacenter-gpu-manager"),
        Binary("dcgmproftester13", "datacenter-gpu-manager"),
    ),
    no_check="dcgmproftester is judged per GPU in a run, against the profile's floors and the "
    "node's peers (planned, issue 24): use `rackops parse dcgmproftester` to read one output",
)
