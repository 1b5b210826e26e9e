"""ping -M do -s MTU-28: a jumbo frame across one link, unfragmented."""

from __future__ import annotations

from typing import Any

from rackops.checks.tuning import check_jumbo_ping, designed_mtu
from rackops.findings import Finding, Subject
from rackops.parsers.ping import parse_ping
from rackops.tools.base import Binary, Context, Tool


def check(parsed: Any, ctx: Context, node: str | None) -> list[Finding]:
    if ctx.node and ctx.cluster:
        mtu = designed_mtu(ctx.node, ctx.cluster)
    else:
        mtu = parsed.packet_bytes or 9000
    return check_jumbo_ping(parsed, mtu, subject=Subject(node=node))


TOOL = Tool(
    "ping",
    "jumbo-frame ping across a link",
    parse=parse_ping,
    check=check,
    binaries=(Binary("ping", "iputils-ping", simulated=False),),
)
