"""What a switch says is at each port (its LLDP neighbour, its speed and state), for the
design's inter-switch links: `rackops parse sonic-ports`."""

from __future__ import annotations

from rackops.parsers.sonic_ports import parse_sonic_ports
from rackops.tools.base import Tool

TOOL = Tool(
    "sonic-ports",
    "SONiC's ports: LLDP neighbours (show lldp table) or speed and state (show interfaces status)",
    parse=parse_sonic_ports,
    no_check="no single-output check reads sonic-ports: a port's neighbour and speed are "
    "judged against the design's inter-switch links; use `rackops parse` to read one output",
)
