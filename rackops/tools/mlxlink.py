"""mlxlink -c -e [-m]: a port's BER counters, FEC and (with -m) its module."""

from __future__ import annotations

from typing import Any

from rackops.checks.phy import PortReport, judge_ber, judge_optics
from rackops.findings import Finding, Status, Subject
from rackops.parsers.mlxlink import parse_mlxlink
from rackops.tools.base import Binary, Context, Tool


def check(parsed: Any, ctx: Context, node: str | None) -> list[Finding]:
    subj = Subject(node=node)
    report = PortReport()
    out = judge_ber(parsed, subj, ctx.profile, report)
    if parsed.optics is not None:
        out += judge_optics(parsed.optics, subj, report)
    return out or [Finding("PHY-OK", Status.OK, subj, "BER and optics within limits")]


def argv(device: str, module: bool) -> list[str]:
    """Counters and BER (-c), eye opening (-e), and the module's section (-m) where the
    optics are read from mlxlink (InfiniBand; RoCE reads them with ethtool -m)."""
    return ["mlxlink", "-d", device, "-c", "-e", *(["-m"] if module else [])]


TOOL = Tool(
    "mlxlink",
    "BER, FEC and optics of one port",
    parse=parse_mlxlink,
    check=check,
    binaries=(Binary("mlxlink", "mft"),),
    nvidia_stack=True,
)
