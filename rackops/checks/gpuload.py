"""GPUs under load (issue 24): the kernel log's GPU events and the samples taken during the
load, judged per GPU. Pure functions over parsed outputs; the run wires them (planned).

* Kernel log: an Xid the catalogue (``checks/xid.py``) classes as hardware, logged during the
  run, FAILs its GPU; one from before the run is history (WARN), never blamed on this run; a
  non-hardware Xid (application, GSP/driver) is a WARN with NVIDIA's action; a GPU off the
  bus always FAILs. SXids (NVSwitch) are WARNs on the node with their code.
* Samples: a reason that means the hardware held the clocks down (HW slowdown, HW thermal
  slowdown, HW power brake, SW thermal slowdown) active in any sample under load FAILs the
  GPU naming the reason and how many samples showed it.
* The clock floor: a GPU at its power limit lowers its clocks to stay there (SW Power Cap,
  0x4). Under a power-bound load (dense GEMM) a healthy H100/H200 at 700 W runs well below
  its base clock (a real H200: 1,365-1,545 MHz, median 1,410 in captures/h200-580, ~1,470
  in the issue's first run), so a
  clock the power cap explains is never held to the floor. The floor (the base clock) is
  for the samples that no benign reason explains; a GPU slower than its peers under the
  same load is the peer gate's business (LOAD-CLOCK). Sources: NVML's clocks event reasons
  (SwPowerCap: "clocks have been optimized to ensure not to exceed currently set power
  limits"); DCGM fails a diag only on HW slowdown, SW/HW thermal and power brake
  (nvvs DcgmRecorder CheckForClocksEvent), never on the power cap.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
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
        nvl = e.nvlink
        # an NVLink5 unit's non-fatal event (BER, RX pipe): NVIDIA's decode sheet says IGNORE
        # or evaluate the Xid 154 that follows; only a Fatal one blames the GPU's link
        hardware = x.hardware and not before_run and not (nvl is not None and not nvl.fatal)
        link = f" link {nvl.link}" if nvl is not None and nvl.link is not None else ""
        out.append(
            Finding(
                f"XID-{e.code}",
                Status.FAIL if hardware else Status.WARN,
                subj,
                f"Xid {e.code} ({x.meaning}) on {e.bdf}{link} {when}: {e.message}",
                remediation=x.action,
            )
        )
    return out


LOADED_UTIL_PCT = 50.0  # a sample with the GPU at least this busy is "under load"
# Reasons that explain a clock below base without a fault: the power cap (at its limit),
# application clocks set by an administrator, sync boost, a display clock setting.
EXPLAINED = ("sw_power_cap", "applications_clocks_setting", "sync_boost", "display_clock_setting")
# The power cap explains a low clock when the GPU draws at or near its limit: the capped
# samples' median draw at least this share of the limit in force. A real H200 under GEMM:
# median 690 W of 700 W (0.99), single samples as low as 255 W while the cap held (the draw
# is a 1 s average, the reason an instant), so the rule is on the median, not each sample.
POWER_CAP_NEAR = 0.85
# ... and only at the board's own limit: a limit in force under 95 % of the profile's
# load.power_limit_w was lowered (nvidia-smi -pl, a BMC or chassis cap), which explains
# nothing about the GPU: a crippled one must not hide behind it
BOARD_NEAR = 0.95
# the floor is judged only on at least this many unexplained loaded samples
MIN_UNEXPLAINED = 3


def _median(xs: Sequence[float]) -> float | None:
    return statistics.median(xs) if xs else None


def judge_samples(
    samples: Sequence[Any], node: str, limits: Any = None, *, expect_load: bool = True
) -> list[Finding]:
    """Samples from ``parse_smi_samples`` taken during the run, judged per GPU: a reason
    that means the hardware held the clocks down (any sample), a temperature above the
    profile's ceiling (any sample), the median SM clock under load below its floor. One FAIL
    per GPU lists every problem; a healthy GPU's median clock and power under load are OK
    findings with units, for the peer gate. ``limits``: the profile's ``load`` (or None);
    ``expect_load``: something loaded the GPUs while they were sampled (a GPU never seen
    under load is then a WARN; a resumed run whose loads were all done before is not)."""
    by_gpu: dict[tuple[int | None, str | None], list[Any]] = defaultdict(list)
    for s in samples:
        by_gpu[(s.index, s.bus_id)].append(s)
    out = []
    idle = []
    for (index, bus), rows in sorted(by_gpu.items(), key=lambda kv: (str(kv[0][0]), str(kv[0][1]))):
        out += _judge_gpu(index, bus, rows, node, limits)
        if not any(_loaded(s) for s in rows):
            idle.append(str(index if index is not None else bus))
    if idle and expect_load:
        out.append(
            Finding(
                "LOAD-003",
                Status.WARN,
                Subject(node=node),
                f"GPU {', '.join(idle)} never under load in the samples (busy < "
                f"{LOADED_UTIL_PCT:g} % or idle in every one): clocks and power not judged "
                "under load",
                remediation="run a suite that loads the GPUs (dcgm level >= 2, NCCL, "
                "gpu_load.gemm/hbm) with gpu_load sampling on",
            )
        )
    return out


def _loaded(s: Any) -> bool:
    """Under load: busy by utilization.gpu; where the driver prints none (MIG: [N/A]), not
    idle by the clock event reasons; with neither, taken as loaded (nothing says otherwise)."""
    if s.util_pct is not None:
        return bool(s.util_pct >= LOADED_UTIL_PCT)
    if s.reasons_mask is not None:
        return "gpu_idle" not in s.reasons
    return True


@dataclass(frozen=True)
class PowerCap:
    """The power cap of one GPU's loaded samples: how many showed it, their median draw
    against the limit in force, and whether that is at or near the limit."""

    samples: int
    loaded: int
    draw_w: float | None
    limit_w: float | None
    board_w: float | None = None  # the profile's power limit (load.power_limit_w)

    @property
    def lowered(self) -> bool:
        """The limit in force is below the board's: someone or something lowered it."""
        return bool(self.board_w and self.limit_w and self.limit_w < BOARD_NEAR * self.board_w)

    @property
    def near(self) -> bool:
        if self.lowered:
            return False
        if self.draw_w is None or not self.limit_w:
            return True  # no power field sampled: the driver's reason is all there is
        return self.draw_w >= POWER_CAP_NEAR * self.limit_w

    @property
    def why(self) -> str:
        at = (
            f" at {self.draw_w:.0f} W of its {self.limit_w:.0f} W limit"
            if self.draw_w is not None and self.limit_w
            else ""
        )
        head = f"power-capped (SW Power Cap){at} in {self.samples} of {self.loaded} loaded samples"
        if self.lowered:
            return (
                head + f": the limit is below the board's {self.board_w:.0f} W (profile), so a "
                "lowered power limit (nvidia-smi -pl, a BMC or chassis cap) held the clock"
            )
        if self.near:
            return head
        return (
            head + ": far below the limit, so something else capped it (a BMC or chassis "
            "power limit, an enforced limit below power.limit)"
        )


def power_cap(loaded: Sequence[Any], board_w: float | None = None) -> PowerCap | None:
    capped = [s for s in loaded if "sw_power_cap" in s.reasons]
    if not capped:
        return None
    return PowerCap(
        len(capped),
        len(loaded),
        _median([s.power_w for s in capped if s.power_w is not None]),
        _median([s.power_limit_w for s in capped if s.power_limit_w is not None]),
        board_w,
    )


def _explained(s: Any, cap: PowerCap | None) -> bool:
    """A loaded sample whose clock a benign reason explains (the power cap only when the
    GPU's capped samples draw at or near the limit)."""
    for r in s.reasons:
        if r == "sw_power_cap":
            if cap is not None and cap.near:
                return True
        elif r in EXPLAINED:
            return True
    return False


def _judge_gpu(
    index: int | None, bus: str | None, rows: list[Any], node: str, limits: Any
) -> list[Finding]:
    subj = Subject(node=node, gpu=index, bus_id=bus)
    loaded = [s for s in rows if _loaded(s)]
    problems: list[str] = []
    counts: dict[str, int] = {}
    for s in rows:
        for r in s.reasons:
            if r in THROTTLES:
                counts[r] = counts.get(r, 0) + 1
    problems += [f"{THROTTLES[r]} in {n} of {len(rows)} samples" for r, n in sorted(counts.items())]
    hottest = max((s.temp_c for s in rows if s.temp_c is not None), default=None)
    mem_hottest = max((s.mem_temp_c for s in rows if s.mem_temp_c is not None), default=None)
    clock = _median([s.sm_clock_mhz for s in loaded if s.sm_clock_mhz is not None])
    power = _median([s.power_w for s in loaded if s.power_w is not None])
    cap = power_cap(loaded, getattr(limits, "power_limit_w", None))
    free = [s for s in loaded if not _explained(s, cap)]
    free_clock = _median([s.sm_clock_mhz for s in free if s.sm_clock_mhz is not None])
    if limits is not None:
        if hottest is not None and hottest > limits.gpu_temp_c_max:
            problems.append(f"{hottest:g} °C, above the {limits.gpu_temp_c_max:g} °C ceiling")
        if mem_hottest is not None and mem_hottest > limits.mem_temp_c_max:
            problems.append(
                f"memory {mem_hottest:g} °C, above the {limits.mem_temp_c_max:g} °C ceiling"
            )
        if (
            free_clock is not None
            and len(free) >= MIN_UNEXPLAINED
            and free_clock < limits.sm_clock_mhz_min
        ):
            problems.append(
                f"SM clock {free_clock:g} MHz under load with no reason that explains it "
                f"(median of {len(free)} of {len(loaded)} loaded samples), below the "
                f"{limits.sm_clock_mhz_min:g} MHz floor"
                + (f"; {cap.why}" if cap is not None and not cap.near else "")
            )
    trace = (
        f"; under load: SM {clock:g} MHz, {power:.0f} W, hottest {hottest:g} °C"
        if clock is not None and power is not None and hottest is not None
        else ""
    )
    if cap is not None:
        trace += f"; {cap.why}"
    if problems:
        return [
            Finding(
                "GPU-LOAD",
                Status.FAIL,
                subj,
                "under load: " + "; ".join(problems),
                observed=free_clock if free_clock is not None else hottest,
                expected=limits.sm_clock_mhz_min if limits is not None and free_clock else None,
                unit="MHz" if free_clock is not None else "°C",
                remediation="check the GPU's cooling (fans, cold plate, airflow, inlet "
                "temperature) and the board's power (PSU, cables, power brake); run the "
                "load again; RMA if it follows the GPU",
            )
        ]
    out = [Finding("GPU-LOAD-OK", Status.OK, subj, f"{len(rows)} samples{trace}")]
    # The figures the peer gate compares come from one regime: a run's loads are a mix
    # (GEMM at the power cap ~690 W and ~1,410 MHz, a copy or NCCL at ~466 W and full clock),
    # and each GPU's share of each differs with timing, so a median over the mix is
    # bimodal and GPUs differ by their samples, not their silicon. Under the cap every GPU
    # draws its limit and its clock says how well it runs there; without a cap in the run,
    # the loaded samples as they are.
    capped = [s for s in loaded if "sw_power_cap" in s.reasons]
    regime, how = (capped, " (power-capped samples)") if capped else (loaded, "")
    peer_clock = _median([s.sm_clock_mhz for s in regime if s.sm_clock_mhz is not None])
    peer_power = _median([s.power_w for s in regime if s.power_w is not None])
    if peer_clock is not None:
        out.append(
            Finding(
                "LOAD-CLOCK", Status.OK, subj, f"median SM clock under load{how}", peer_clock,
                None, "MHz",
            )
        )  # fmt: skip
    if peer_power is not None:
        out.append(
            Finding(
                "LOAD-POWER", Status.OK, subj, f"median power under load{how}", peer_power,
                None, "W",
            )
        )  # fmt: skip
    return out
