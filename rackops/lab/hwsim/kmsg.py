"""dmesg: the node's kernel ring buffer, with the NVIDIA driver's lines and the Xids the
scenario injects.

The lab's targets share the machine's one kernel, so its real ring buffer is nobody's node:
the ``rackops-hwsim`` package diverts ``dmesg`` (dpkg-divert, as a vendor package would) to
this simulation. The buffer starts at the node's simulated boot (the scenario's time) with
the driver's load lines; an ``xid`` fault with ``when: before`` is logged at boot, one with
``when: during`` (the default) at the first load on its GPU after the scenario was written,
so a run's own load is what logs it and the next run sees it as history.
"""

from __future__ import annotations

import os
import sys
import time

from .node import BUS, SCENARIO, emit
from .thermal import loads

# what the driver printed for each code (message bodies as NVIDIA's driver prints them;
# docs/research/issue-24-xid.md): anything else gets a generic body
BODIES = {
    13: "pid=%(pid)s, name=python3, Graphics SM Warp Exception on (GPC 3, TPC 1, SM 0): "
    "Out Of Range Address",
    31: "pid=%(pid)s, name=python3, Ch 00000008, intr 00000000. MMU Fault: ENGINE GRAPHICS "
    "GPCCLIENT_T1_0 faulted @ 0x7f3a_4b000000. Fault is of type FAULT_PDE ACCESS_TYPE_READ",
    48: "pid='<unknown>', name=<unknown>, An uncorrectable double bit error (DBE) has been "
    "detected on GPU in the framebuffer at physAddr 0x7fffa8860",
    74: "pid='<unknown>', name=<unknown>, NVLink: fatal error detected on link 4(0x0, 0x0, "
    "0x10000, 0x0, 0x0, 0x0, 0x0)",
    79: "pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
    94: "pid=%(pid)s, name=python3, Contained: SM (0x1). RST: No, D-RST: No",
    95: "pid=%(pid)s, name=python3, Uncontained: FBHUB. RST: Yes, D-RST: No",
    119: "pid=%(pid)s, name=python3, Timeout after 6s of waiting for RPC response from GPU%(gpu)s "
    "GSP! Expected function 76 (GSP_RM_CONTROL) (0x20800a4c 0x4).",
    120: "GSP kernel exception: store access page fault (cause:0xf) @ pc:0xffffffff93003d42, "
    "partition:4#0",
}


def _boot(node):
    try:
        return os.stat(SCENARIO).st_mtime - 120.0
    except OSError:
        return time.time() - 120.0


def _events(node):
    """(time, message) of every line in the node's buffer, in time order."""
    boot = _boot(node)
    out = [
        (boot + 4.1, "NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  %s  Release "
         "Build  (dvs-builder@U22-I3-AE18-23-3)  Wed Sep 17 02:28:01 UTC 2025" % node.hw["driver"]),
        (boot + 4.3, "nvidia-nvswitch: Probing device 0000:05:00.0, Vendor Id = 0x10de, "
         "Device Id = 0x22a3, Class = 0x68000"),
        (boot + 9.8, "mlx5_core 0000:%s:00.0: firmware version: %s" % (BUS[0].lower(), node.hca_fw("mlx5_0"))),
    ]  # fmt: skip
    started = boot + 120.0
    for f in node.faults_of("xid"):
        g = int(f["gpu"])
        code = int(f["code"])
        if f.get("when", "during") == "before":
            at = boot + 30.0
        else:
            after = [s for s, _e, gpus, _kind in loads(node) if g in gpus and s >= started]
            if not after:
                continue
            at = min(after) + 0.25
        body = BODIES.get(code, "pid=%(pid)s, name=python3, simulated Xid %(code)d")
        bus = "0000:%s:00" % BUS[g % 16].lower()
        msg = "NVRM: Xid (PCI:%s): %d, " % (bus, code) + body % {
            "pid": 4100 + g,
            "gpu": g,
            "code": code,
        }
        out.append((at, msg))
        if code == 79:
            out.append(
                (at + 0.001, "NVRM: GPU at PCI:%s: GPU-%08x-0000-0000-0000-000000000000" % (bus, g))
            )
    return sorted(out)


def _stamp(t, boot, fmt):
    if fmt == "iso":
        lt = time.localtime(t)
        off = time.strftime("%z", lt)
        return "%s,%06d%s:%s" % (
            time.strftime("%Y-%m-%dT%H:%M:%S", lt),
            int((t % 1) * 1e6),
            off[:3],
            off[3:],
        )
    if fmt == "ctime":
        return "[%s]" % time.strftime("%a %b %e %H:%M:%S %Y", time.localtime(t))
    return "[%12.6f]" % (t - boot)


def dmesg(node, args):
    fmt = "raw"
    for i, a in enumerate(args):
        if a == "--time-format" and i + 1 < len(args):
            fmt = args[i + 1]
        elif a.startswith("--time-format="):
            fmt = a.split("=", 1)[1]
        elif a in ("-T", "--ctime"):
            fmt = "ctime"
    if fmt not in ("raw", "iso", "ctime", "reltime", "delta", "notime"):
        sys.stderr.write("dmesg: unknown time format: %s\n" % fmt)
        return 1
    boot = _boot(node)
    text = "".join("%s %s\n" % (_stamp(t, boot, fmt), m) for t, m in _events(node))
    emit(node, "dmesg", text)
    return 0
