"""dmesg: NVIDIA GPU events in the kernel log (Xid, SXid, fallen off the bus). A run reads it
before and after its load and judges what appeared in between with the catalogue in
``checks/xid.py`` (``validate/stages/gpuload.py``)."""

from __future__ import annotations

from rackops.parsers.kernel_xid import parse_kernel_xid
from rackops.tools.base import Binary, Tool

# the ring buffer as the kernel stamps it (seconds since boot): a run reads it before and
# after its load, and a line keeps its stamp across the two reads even if the wall clock
# steps in between (NTP on a new rack), which `--time-format iso` would not
KERNEL_LOG_ARGV = ("dmesg",)

TOOL = Tool(
    "kernel-xid",
    "NVIDIA GPU events in the kernel log",
    parse=parse_kernel_xid,
    binaries=(Binary("dmesg", "util-linux"),),
    no_check="kernel-xid is judged against the read taken before a run (an event in both is "
    "history): use `rackops parse kernel-xid` to read one log",
)
