"""journalctl -k / dmesg: NVIDIA GPU events in the kernel log (Xid, SXid, fallen off the bus).
Parsed now; judged against the run's start with the catalogue in ``checks/xid.py`` (issue 24,
planned: docs/design.md "GPUs under load")."""

from __future__ import annotations

from rackops.parsers.kernel_xid import parse_kernel_xid
from rackops.tools.base import Tool

TOOL = Tool(
    "kernel-xid",
    "NVIDIA GPU events in the kernel log",
    parse=parse_kernel_xid,
    no_check="kernel-xid is judged against a run's start (planned, issue 24): use "
    "`rackops parse kernel-xid` to read one log",
)
