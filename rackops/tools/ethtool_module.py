"""ethtool -m: the transceiver's EEPROM (optics power, temperature, lanes)."""

from __future__ import annotations

from typing import Any

from rackops.checks.phy import PortReport, judge_optics
from rackops.findings import Finding, Status, Subject
from rackops.parsers.ethtool_module import parse_ethtool_module
from rackops.tools.base import Binary, Context, Tool


def check(parsed: Any, ctx: Context, node: str | None) -> list[Finding]:
    subj = Subject(node=node)
    out = judge_optics(parsed.optics, subj, PortReport())
    if not parsed.complete:
        out.append(Finding("PHY-000", Status.ERROR, subj, "ethtool -m output is cut off"))
    return out or [Finding("PHY-OK", Status.OK, subj, "optics within the module's limits")]


def argv(netdev: str) -> list[str]:
    return ["ethtool", "-m", netdev]


TOOL = Tool(
    "ethtool-module",
    "transceiver optics",
    parse=parse_ethtool_module,
    check=check,
    binaries=(Binary("ethtool", "mlnx-ethtool"),),
)
