"""nvidia-smi --query-gpu=... --format=csv: GPU inventory from a CSV query."""

from __future__ import annotations

from typing import Any

from rackops.checks.gpu import check_gpu_query
from rackops.findings import Finding
from rackops.parsers.nvidia_smi import parse_query_gpu
from rackops.tools._smi import NVIDIA_SMI, driver
from rackops.tools.base import Context, Tool


def check(parsed: Any, ctx: Context, node: str | None) -> list[Finding]:
    return check_gpu_query(parsed, ctx.profile, node=node, driver_version=driver(ctx))


TOOL = Tool(
    "nvidia-smi-query",
    "GPU inventory (CSV query)",
    parse=parse_query_gpu,
    check=check,
    binaries=(NVIDIA_SMI,),
)
