"""SONiC's counter commands (portstat, pfcstat, queuestat, wredstat): a leaf's or spine's own
view of its ports, read before and after the pair rounds (`rackops parse sonic-counters`)."""

from __future__ import annotations

from rackops.parsers.sonic_counters import parse_sonic_counters
from rackops.tools._phy import COUNTERS_ONLY
from rackops.tools.base import Tool

TOOL = Tool(
    "sonic-counters",
    "SONiC switch port, PFC, queue and ECN counters",
    parse=parse_sonic_counters,
    no_check=COUNTERS_ONLY.format(tool="sonic-counters"),
)
