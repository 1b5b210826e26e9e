"""GPUs under load (issue 24): the kernel log's GPU events and the samples taken during the
load, judged per GPU. Pure functions over parsed outputs; the run wires them (planned).

* Kernel log: an Xid the catalogue (``checks/xid.py``) classes as hardware, logged during the
  run, FAILs its GPU; one from before the run is history (WARN), never blamed on this run; a
  non-hardware Xid (application, GSP/driver) is a WARN with NVIDIA's action; a GPU off the
  bus always FAILs. SXids (NVSwitch) are WARNs on the node with their code.
* Samples: a reason that means the hardware held the clocks down (HW slowdown, HW thermal
  slowdown, HW power brake, SW thermal slowdown) active in any sample under load FAILs the
  GPU naming the reason and how many samples showed it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from rackops.checks.xid import info
from rackops.findings import Finding, Status, Subject

# the clock event reasons that are the hardware's doing under load (NVML bits 0x8, 0x40,
# 0x80 and 0x20); power cap (0x4) and idle (0x1) are the workload's or the limit's
THROTTLES = {
    "hw_slowdown": "HW Slowdown (the board or PSU asserted it: power or thermal)",
    "hw_thermal_slowdown": "HW Thermal Slowdown (the GPU reached its thermal limit)",
    "hw_power_brake_slowdown": "HW Power Brake (the board's external power brake)",
    "sw_thermal_slowdown": "SW Thermal Slowdown (the driver held clocks for temperature)",
}


def _gpu_of(bdf: str, gpus: Mapping[str, int]) -> int | None:
    """The GPU index of a PCI address (``0000:18:00.0``; Xid prints no function digit)."""
    return gpus.get(bdf.lower())


def judge_kernel_log(
    events: Sequence[Any], gpus: Mapping[str, int], node: str, *, before_run: bool
) -> list[Finding]:
    """``events`` from ``parse_kernel_xid``; ``gpus`` PCI address → GPU index (from
    ``nvidia-smi -q -x``); ``before_run``: these lines were logged before the run began."""
    out = []
    off_bus: set[str] = set()  # Xid 79 and its own "fallen off the bus" line: one finding
    for e in events:
        gpu = _gpu_of(e.bdf, gpus)
        subj = Subject(node=node, gpu=gpu, bus_id=e.bdf)
        when = "before the run (history)" if before_run else "during the run"
        if e.kind == "sxid":
            out.append(
                Finding(
                    "XID-SX",
                    Status.WARN,
                    Subject(node=node, bus_id=e.bdf),
                    f"NVSwitch {e.bdf} SXid {e.code} {when}: {e.message}",
                    remediation="check the fabric manager log and the NVSwitch (nvidia-smi nvlink)",
                )
            )
            continue
        if e.kind == "fallen_off_bus" or e.code == 79:
            if e.bdf in off_bus:
                continue
            off_bus.add(e.bdf)
            status = Status.WARN if before_run else Status.FAIL
            out.append(
                Finding(
                    "XID-79",
                    status,
                    subj,
                    f"GPU {e.bdf} fell off the bus {when}: {e.message}",
                    remediation="reseat the GPU/baseboard, check its power; RMA if it recurs",
                )
            )
            continue
        x = info(e.code)
        hardware = x.hardware and not before_run
        out.append(
            Finding(
                f"XID-{e.code}",
                Status.FAIL if hardware else Status.WARN,
                subj,
                f"Xid {e.code} ({x.meaning}) on {e.bdf} {when}: {e.message}",
                remediation=x.action,
            )
        )
    return out


def judge_samples(samples: Sequence[Any], node: str) -> list[Finding]:
    """Samples from ``parse_smi_samples`` taken during the load: each GPU's hardware throttle
    reasons, counted over the samples."""
    seen: dict[tuple[int | None, str | None], dict[str, int]] = defaultdict(dict)
    total: dict[tuple[int | None, str | None], int] = defaultdict(int)
    for s in samples:
        key = (s.index, s.bus_id)
        total[key] += 1
        for r in s.reasons:
            if r in THROTTLES:
                seen[key][r] = seen[key].get(r, 0) + 1
    out = []
    for (index, bus), reasons in sorted(seen.items(), key=lambda kv: str(kv[0])):
        for r, count in sorted(reasons.items()):
            out.append(
                Finding(
                    "GPU-THROTTLE",
                    Status.FAIL,
                    Subject(node=node, gpu=index, bus_id=bus),
                    f"{THROTTLES[r]} in {count} of {total[(index, bus)]} samples under load",
                    observed=count,
                    expected=0,
                    remediation="check the GPU's cooling (fans, cold plate, airflow) and the "
                    "board's power (PSU, cables); then run the load again",
                )
            )
    return out
