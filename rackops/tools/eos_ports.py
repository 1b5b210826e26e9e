"""What a switch says is at each port (its LLDP neighbour, its speed and state), for the
design's inter-switch links: `rackops parse eos-ports`."""

from __future__ import annotations

from rackops.parsers.eos_ports import parse_eos_ports
from rackops.tools.base import Tool

TOOL = Tool(
    "eos-ports",
    "Arista EOS's ports: LLDP neighbours or speed and link status (| json)",
    parse=parse_eos_ports,
    no_check="no single-output check reads eos-ports: a port's neighbour and speed are "
    "judged against the design's inter-switch links; use `rackops parse` to read one output",
)
