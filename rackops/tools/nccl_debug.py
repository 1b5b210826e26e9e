"""NCCL's own log (NCCL_DEBUG=INFO, INIT) of a multi-node run across an NVLink domain: the
proof its traffic stayed on NVLink (``checks/mnnvl.py``). The nccl stage asks for it when a
run's nodes are trays of one domain (``validate/stages/nccl.py``); it is read out of the same
nccl-tests output, so it runs no command of its own."""

from __future__ import annotations

from typing import Any

from rackops.checks.mnnvl import judge_mnnvl
from rackops.findings import Finding
from rackops.parsers.nccl_debug import parse_nccl_debug
from rackops.tools.base import Context, Tool

# what the nccl stage sets for a run across one NVLink domain's trays
DOMAIN_ENV = {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT"}


def check(parsed: Any, ctx: Context, node: str | None) -> list[Finding]:
    """One log on its own: its trays are the hosts NCCL printed, and as many more as its
    communicator says it spans (a log of one rank per node names one)."""
    hosts = sorted({c.host for c in parsed.comms}) or [node or "?"]
    spans = max((c.nodes for c in parsed.comms), default=len(hosts))
    hosts += [f"(node {i + 1} of {spans})" for i in range(len(hosts), spans)]
    return judge_mnnvl(parsed, hosts, stage=False)


TOOL = Tool(
    "nccl-debug",
    "NCCL's INFO log: MNNVL across an NVLink domain (GB200/GB300 NVL72)",
    parse=parse_nccl_debug,
    check=check,
)
