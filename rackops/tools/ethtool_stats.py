"""ethtool -S: a RoCE port's counters (read before and after the pairs)."""

from __future__ import annotations

from rackops.parsers.ethtool_stats import parse_ethtool_stats
from rackops.tools._phy import COUNTERS_ONLY
from rackops.tools.base import Binary, Tool


def argv(netdev: str) -> list[str]:
    return ["ethtool", "-S", netdev]


TOOL = Tool(
    "ethtool-stats",
    "RoCE port counters",
    parse=parse_ethtool_stats,
    binaries=(Binary("ethtool", "mlnx-ethtool"),),
    no_check=COUNTERS_ONLY.format(tool="ethtool-stats"),
)
