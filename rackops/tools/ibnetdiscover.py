"""ibnetdiscover: the InfiniBand fabric's topology (read only; iblinkinfo checks cables)."""

from __future__ import annotations

from rackops.parsers.ibnetdiscover import parse_ibnetdiscover
from rackops.tools._phy import COUNTERS_ONLY
from rackops.tools.base import Binary, Tool

TOOL = Tool(
    "ibnetdiscover",
    "InfiniBand fabric topology",
    parse=parse_ibnetdiscover,
    fabric_wide=True,
    binaries=(Binary("ibnetdiscover", "infiniband-diags"),),
    no_check=COUNTERS_ONLY.format(tool="ibnetdiscover"),
)
