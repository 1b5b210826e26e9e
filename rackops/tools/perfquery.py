"""perfquery -x: an InfiniBand port's extended counters (read before and after the pairs)."""

from __future__ import annotations

from rackops.parsers.perfquery import parse_perfquery
from rackops.tools._phy import COUNTERS_ONLY
from rackops.tools.base import Binary, Tool


def argv(device: str) -> list[str]:
    """The extended (64-bit) counters of port 1 of this HCA."""
    return ["perfquery", "-x", "-C", device, "-P", "1"]


def switch_argv(lid: int) -> list[str]:
    """The extended counters of every port of the switch at ``lid`` (``-l``: each port)."""
    return ["perfquery", "-x", "-l", str(int(lid))]


TOOL = Tool(
    "perfquery",
    "InfiniBand port counters",
    parse=parse_perfquery,
    binaries=(Binary("perfquery", "infiniband-diags"),),
    no_check=COUNTERS_ONLY.format(tool="perfquery"),
)
