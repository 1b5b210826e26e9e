"""dcgmi dmon -e FIELDS: DCGM's samples of clocks, temperatures, power and clock event
reasons per GPU. Parsed now; judged over a run's load window (issue 24, planned)."""

from __future__ import annotations

from rackops.parsers.dcgmi_dmon import parse_dcgmi_dmon
from rackops.tools.base import Tool

TOOL = Tool(
    "dcgmi-dmon",
    "DCGM field samples per GPU",
    parse=parse_dcgmi_dmon,
    no_check="dcgmi-dmon is judged over the load window of a run (planned, issue 24): use "
    "`rackops parse dcgmi-dmon` to read one output",
)
