"""Cumulus Linux NVUE counter commands (``nv show interface <if> counters``, ``... qos roce
counters``): a switch's own view of a port, read before and after the pair rounds
(`rackops parse nvue-counters`)."""

from __future__ import annotations

from rackops.parsers.nvue_counters import parse_nvue_counters
from rackops.tools._phy import COUNTERS_ONLY
from rackops.tools.base import Tool

TOOL = Tool(
    "nvue-counters",
    "Cumulus NVUE port, PFC and ECN counters",
    parse=parse_nvue_counters,
    no_check=COUNTERS_ONLY.format(tool="nvue-counters"),
)
