"""GPU sensors that respond to load: SM and memory clocks, GPU and memory temperature,
power draw, utilisation and the clock event reasons, over one load log.

Every program that loads GPUs (``dcgmi diag`` from level 2, nccl-tests, dcgmproftester)
calls :func:`run_load`: it appends ``start end gpus`` to ``gpu-load.log`` in the state
directory and runs for ``hardware.load_s`` seconds. The sensors at time ``t`` follow from
the log: a GPU heats towards its load temperature while a load runs on it and cools after,
with a time constant of ``hardware.thermal_tau_s`` (seconds, not minutes: the lab's loads
last seconds). Faults show only under load, as they do on real boards:

* ``thermal``: the GPU heats past its slowdown temperature; HW Thermal Slowdown and HW
  Slowdown are asserted and the SM clock drops;
* ``power_brake``: the board asserts the external power brake (HW Power Brake Slowdown and
  HW Slowdown) while loaded; clock and power drop.

Each load has a kind, and the GPU answers it as a real one does (``captures/h200-580``,
an H200 at its 700 W limit, the same GH100 die and limit as the lab's H100 SXM):

* ``gemm`` (dense FP16 GEMM: dcgmproftester -t 1004, the DCGM stress plugins) is
  power-bound: the GPU sits at its power limit (median 691 W of 700) with SW Power Cap
  (0x4) active, its SM clock 1,365-1,545 MHz in steps of 15 (median 1,410), below the
  1,590 MHz base clock. A lower limit lowers the clock with it.
* ``copy`` (device memory copy, -t 1005) is memory-bound: 1,980 MHz at ~466 W, no reason.
* ``nccl``: bandwidth-bound like the copy (no capture of its power: below the cap).
"""

from __future__ import annotations

import math
import os
import time

from .node import STATE_DIR

LOAD_LOG = "gpu-load.log"
IDLE_C = 33.0
LOAD_C = 61.0
SLOWDOWN_C = 89.0  # H100/H800 absolute slowdown (H800 525.105.17 -q; research issue-24 §1c)
IDLE_W = 69.0
MAX_SM_MHZ = 1980
IDLE_SM_MHZ = 345
MEM_MHZ = 2619
# NVML clock event reason bits (nvml.h): idle, SW power cap, HW slowdown, HW thermal, brake
GPU_IDLE, SW_POWER_CAP, HW_SLOWDOWN, HW_THERMAL, HW_POWER_BRAKE = 0x1, 0x4, 0x8, 0x40, 0x80
# under a power-bound load at a 700 W limit (captures/h200-580/query-gpu-lms250.csv)
CAPPED_SM_MHZ = 1410  # the capture's median; samples range 1,365-1,545 in steps of 15
CAPPED_DRAW = 0.987  # of the limit (691 W of 700)
COPY_DRAW = 466.0 / 700.0  # a memory copy at 1,980 MHz draws ~466 W of 700, no reason
POWER_BOUND = ("gemm",)
KINDS = ("gemm", "copy", "nccl")


def _logs(node):
    """Where the node's load is logged: the state directory, and for a program that runs as
    a user who cannot write there (an MPI rank under the login user) a file in /tmp."""
    name = "%s-%s" % (node.name, LOAD_LOG)
    return [os.path.join(STATE_DIR, name), os.path.join("/tmp", "rackops-hwsim-" + name)]


def run_load(node, gpus, seconds=None, kind="gemm"):
    """Load ``gpus`` with a load of ``kind`` (``KINDS``) for ``seconds`` (default
    ``hardware.load_s``): logged, then slept."""
    seconds = float(node.hw.get("load_s", 1.0) if seconds is None else seconds)
    start = time.time()
    line = "%.3f %.3f %s %s\n" % (start, start + seconds, ",".join(str(g) for g in gpus), kind)
    for path in _logs(node):
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        except OSError:
            continue  # not ours to write: the next place
        try:
            os.write(fd, line.encode("ascii"))  # one short O_APPEND write: whole or nothing
        finally:
            os.close(fd)
        break
    time.sleep(seconds)


def loads(node):
    """Every (start, end, gpus, kind) in the node's load log (a line of an older hwsim,
    with no kind, is a power-bound load)."""
    out = []
    for path in _logs(node):
        try:
            with open(path, encoding="ascii") as fh:
                for row in fh:
                    parts = row.split()
                    if len(parts) in (3, 4):
                        gpus = {int(g) for g in parts[2].split(",") if g.isdigit()}
                        kind = parts[3] if len(parts) == 4 else "gemm"
                        out.append((float(parts[0]), float(parts[1]), gpus, kind))
        except (OSError, ValueError):
            continue
    return out


def _heat(node, g, t):
    """0 idle .. 1 at the load's steady temperature; and the kinds of load running now."""
    tau = float(node.hw.get("thermal_tau_s", 0.3))
    h, active = 0.0, set()
    for start, end, gpus, kind in loads(node):
        if g not in gpus or t < start:
            continue
        if t <= end:
            active.add(kind)
            h = max(h, 1 - math.exp(-(t - start) / tau))
        else:
            h = max(h, (1 - math.exp(-(end - start) / tau)) * math.exp(-(t - end) / tau))
    return h, active


def capped_sm(limit, t):
    """The SM clock of a power-capped GPU: the capture's median at 700 W, a lower limit
    lower (clock ~ sqrt(power) near the cap), wandering +-45 MHz in 15 MHz steps as the
    capture's does."""
    base = CAPPED_SM_MHZ * math.sqrt(limit / 700.0)
    wander = 45.0 * math.sin(t * 7.3) * math.cos(t * 1.9)  # 1,365-1,455: the capture's bulk
    return int(min(MAX_SM_MHZ, round((base + wander) / 15.0) * 15))


def sensors(node, g, t=None):
    """The GPU's readings at time ``t`` (now): a dict of the sampled quantities."""
    t = time.time() if t is None else t
    h, active = _heat(node, g, t)
    pl = node.fault("power_limit", gpu=g)
    limit = float(pl.get("watts", 500)) if pl else 700.0
    load_c = LOAD_C + 0.7 * g
    if node.fault("thermal", gpu=g):
        load_c = SLOWDOWN_C + 8.0  # passes slowdown within the first second of a load
    temp = IDLE_C + 0.3 * g + (load_c - IDLE_C - 0.3 * g) * h
    reasons = 0 if active else GPU_IDLE
    sm = MAX_SM_MHZ if active else IDLE_SM_MHZ
    # power follows the load at once (the driver's 1 s average); only the heat lags
    power = (COPY_DRAW * 700.0 if active else IDLE_W) + 0.6 * g
    if active and power > CAPPED_DRAW * limit:  # a copy against a lowered limit: capped too
        active = active | set(POWER_BOUND)
    if active & set(POWER_BOUND):  # at the power limit: the driver caps the clock
        reasons |= SW_POWER_CAP
        sm = capped_sm(limit, t)
        power = CAPPED_DRAW * limit - 0.6 * g
    if temp >= SLOWDOWN_C:
        reasons = (reasons & ~SW_POWER_CAP) | HW_THERMAL | HW_SLOWDOWN
        sm = 1305
        power *= 0.8
    if active and node.fault("power_brake", gpu=g):
        reasons = (reasons & ~SW_POWER_CAP) | HW_POWER_BRAKE | HW_SLOWDOWN
        sm = 1095
        power = min(power, 0.45 * limit)
    return {
        "sm": sm,
        "mem": MEM_MHZ,
        "temp": round(temp),
        "mem_temp": round(temp + 4),
        "power": power,
        "limit": limit,
        "util": 100 if active else 0,
        "reasons": reasons,
    }


def reason_counters(node, g, t=None):
    """The R535+ ``Clocks Event Reasons Counters`` of a GPU (microseconds since boot that
    each reason held the clocks), from its load log: a power-bound load holds SW Power Cap
    for as long as it ran (a real H200 after 15 s of GEMM: 15,431,345 us), a thermal or
    power-brake fault its own reason for as long as any load ran."""
    t = time.time() if t is None else t
    capped = busy = 0.0
    for start, end, gpus, kind in loads(node):
        if g not in gpus or t < start:
            continue
        ran = min(t, end) - start
        busy += ran
        if kind in POWER_BOUND:
            capped += ran
    thermal = busy if node.fault("thermal", gpu=g) else 0.0
    brake = busy if node.fault("power_brake", gpu=g) else 0.0
    return {
        "SW Power Capping": int((capped - thermal - brake) * 1e6)
        if capped > thermal + brake
        else 0,
        "Sync Boost": 0,
        "SW Thermal Slowdown": 0,
        "HW Thermal Slowdown": int(thermal * 1e6),
        "HW Power Braking": int(brake * 1e6),
    }
