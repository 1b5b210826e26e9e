"""Arista EOS counter commands as JSON (errors, discards, PFC frames, ECN marks per queue,
queue drops): a switch's own view of its ports, read before and after the pair rounds
(`rackops parse eos-counters`)."""

from __future__ import annotations

from rackops.parsers.eos_counters import parse_eos_counters
from rackops.tools._phy import COUNTERS_ONLY
from rackops.tools.base import Tool

TOOL = Tool(
    "eos-counters",
    "Arista EOS port error, discard, PFC, ECN and queue-drop counters (JSON)",
    parse=parse_eos_counters,
    no_check=COUNTERS_ONLY.format(tool="eos-counters"),
)
