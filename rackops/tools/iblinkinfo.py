"""iblinkinfo: every link of the InfiniBand fabric, from one node (the cabling check)."""

from __future__ import annotations

from typing import Any

from rackops.checks.cabling import check_cabling, seen_from_iblinkinfo
from rackops.findings import Finding, Status, Subject
from rackops.parsers.iblinkinfo import parse_iblinkinfo
from rackops.tools._common import needs_cluster
from rackops.tools.base import Binary, Context, Tool


def check(parsed: Any, ctx: Context, node: str | None) -> list[Finding]:
    cluster = needs_cluster(ctx, "iblinkinfo", "the cabling map")
    out = check_cabling(cluster, seen_from_iblinkinfo(parsed, cluster), how="iblinkinfo")
    if not parsed.complete:
        out.append(
            Finding("PARSE-000", Status.ERROR, Subject(node=node), "iblinkinfo output is cut off")
        )
    return out


ARGV = ("iblinkinfo",)

TOOL = Tool(
    "iblinkinfo",
    "InfiniBand fabric links (cabling)",
    parse=parse_iblinkinfo,
    fabric_wide=True,
    check=check,
    binaries=(Binary("iblinkinfo", "infiniband-diags"),),
)
