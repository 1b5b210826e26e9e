"""ping -M do -s MTU-28: a jumbo frame across one link, unfragmented."""

from __future__ import annotations

from typing import Any

from rackops.checks.tuning import check_jumbo_ping, designed_mtu
from rackops.findings import Finding, Subject
from rackops.parsers.ping import parse_ping
from rackops.tools.base import Binary, Context, Tool


def argv(mtu: int, netdev: str, address: str) -> list[str]:
    """Three pings of the largest frame the MTU allows (IP + ICMP headers off), don't
    fragment, out of this interface to the far end's address."""
    once = ["-M", "do", "-s", str(mtu - 28), "-c", "3", "-i", "0.2", "-W", "1"]
    return ["ping", *once, "-I", netdev, address]


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
