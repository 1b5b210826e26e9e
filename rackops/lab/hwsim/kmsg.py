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
    # NVLink5 (a GB200 tray's lines in gpud's kmsg tests, their column padding kept): the
    # fault's `link` is the GPU's NVLink port
    145: "RLW_SRC_TRACK Fatal XC1 i0 Link %(link)02d (0x040988e2 0x00000008 0x00000000 "
    "0x00000000 0x00000000 0x00000000)",
    149: "NETIR_LINK_EVT  Fatal   XC0 i0 Link %(link)02d (0x021425c6 0x00000000 0x00000000 "
    "0x00000000 0x00000000 0x00000000)",
}
NVLINK5 = range(144, 151)
# what a GPU that shares the fabric logs after another GPU's fatal NVLink5 link event (each
# peer in the public B200 experiment: one RLW error, its channels killed naming the cause,
# its recovery action changed; the unit-wide NETIR line of gpud's GB200 tray), in seconds
# after its load began
FOLLOWER = (
    (0.30, 145, "RLW_SRC_TRACK Nonfatal XC1 i0 Link 12 (0x040988e2 0x00000008 0x00000000 "
     "0x00000000 0x00000000 0x00000000)"),
    (0.55, 45, "pid=%(pid)s, name=all_reduce_perf, Ch 00000001 caused by previous Xid %(code)d"),
    (0.60, 149, "NETIR Fatal XC0 i0 Link -1 (0x000fe406 0x00000000 0x00000000 0x00000000 "
     "0x00000000 0x00000000)"),
    (0.70, 154, "GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)"),
)  # fmt: skip


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
        bus = _bus(g)
        msg = "NVRM: Xid (PCI:%s): %d, " % (bus, code) + body % {
            "pid": 4100 + g,
            "gpu": g,
            "code": code,
            "link": int(f.get("link") or 0),
        }
        out.append((at, msg))
        if code == 79:
            out.append(
                (at + 0.001, "NVRM: GPU at PCI:%s: GPU-%08x-0000-0000-0000-000000000000" % (bus, g))
            )
        if code in NVLINK5:
            out.append(
                (at + 0.001, "NVRM: Xid (PCI:%s): 154, GPU recovery action changed from 0x0 "
                 "(None) to 0x4 (Drain and Reset)" % bus)
            )  # fmt: skip
    out += _followers(node, started)
    return sorted(out)


def _bus(g):
    return "0000:%s:00" % BUS[g % 16].lower()


def _domain(scenario, name):
    hw = dict(scenario.get("hardware", {}))
    hw.update(scenario.get("nodes", {}).get(name, {}).get("hardware", {}))
    return hw.get("nvlink_domain")


def _followers(node, started):
    """This tray's lines after a fatal NVLink5 link event of another GPU of its domain (an
    ``xid`` fault of code 144-150 during the run, on any tray of the domain): each of its
    GPUs loaded since follows."""
    domain = _domain(node.scenario, node.name)
    if not domain:
        return []
    origins = [
        (name, int(f["gpu"]), int(f["code"]))
        for name, spec in sorted(node.scenario.get("nodes", {}).items())
        if _domain(node.scenario, name) == domain
        for f in spec.get("faults", [])
        if f.get("kind") == "xid" and int(f.get("code", 0)) in NVLINK5
        and f.get("when", "during") == "during"
    ]  # fmt: skip
    if not origins:
        return []
    _name, _g, cause = origins[0]
    out = []
    for g in node.gpus():
        if any(name == node.name and og == g for name, og, _c in origins):
            continue
        after = [s for s, _e, gpus, _kind in loads(node) if g in gpus and s >= started]
        if not after:
            continue
        for dt, code, body in FOLLOWER:
            text = body % {"pid": 4100 + g, "code": cause}
            out.append((min(after) + dt, "NVRM: Xid (PCI:%s): %d, %s" % (_bus(g), code, text)))
    return out


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
