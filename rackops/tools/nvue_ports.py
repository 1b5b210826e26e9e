"""What a switch says is at each port (its LLDP neighbour, its speed and state), for the
design's inter-switch links: `rackops parse nvue-ports`."""

from __future__ import annotations

from rackops.parsers.nvue_ports import parse_nvue_ports
from rackops.tools.base import Tool

TOOL = Tool(
    "nvue-ports",
    "Cumulus NVUE's interface table: state, speed and LLDP neighbour (nv show interface)",
    parse=parse_nvue_ports,
    no_check="no single-output check reads nvue-ports: a port's neighbour and speed are "
    "judged against the design's inter-switch links; use `rackops parse` to read one output",
)
