"""What the HCA port readers (ibstat, ibstatus, ibv_devinfo) share: one port check."""

from __future__ import annotations

from typing import Any

from rackops.checks.hca import check_hca_ports
from rackops.findings import Finding
from rackops.tools.base import Context


def check_ports(parsed: Any, ctx: Context, node: str | None) -> list[Finding]:
    return check_hca_ports(parsed, ctx.profile, node=node, hcas=ctx.node.hcas if ctx.node else None)
