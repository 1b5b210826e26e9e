"""ibstatus: the HCA ports as the older script prints them (offline checks only)."""

from __future__ import annotations

from rackops.parsers.ibstatus import parse_ibstatus
from rackops.tools._hca import check_ports
from rackops.tools.base import Binary, Tool

TOOL = Tool(
    "ibstatus",
    "HCA port state and rate (the ibstatus script)",
    parse=parse_ibstatus,
    check=check_ports,
    binaries=(Binary("ibstatus", "infiniband-diags"),),
)
