"""``nvidia-smi`` clocks, clock event reasons, temperature and power: ``-q -d PERFORMANCE``
(also ``,CLOCK,TEMPERATURE,POWER`` and the full ``-q``) and the ``--query-gpu … -lms N`` CSV
sampling stream.

``-q`` text, per ``GPU 00000000:18:00.0`` block (research: docs/research/issue-24-clocks-dmon.md)::

    Performance State                     : P0
    Clocks Event Reasons                  (535+; "Clocks Throttle Reasons" before)
        Idle                              : Not Active
        HW Slowdown                       : Active
            HW Power Brake Slowdown       : Active
    Clocks Event Reasons Counters         (580+; values in us)
    Temperature
        GPU Current Temp                  : 29 C
        GPU T.Limit Temp                  : 56 C        (margin to slowdown)
        GPU Slowdown T.Limit Temp         : -2 C        (Hopper/Ada 535+: relative)
        GPU Slowdown Temp                 : 89 C        (older / Ampere: absolute)
    GPU Power Readings                    ("Power Readings" ≤525; "Average/Instantaneous
        Power Draw                        : 67.74 W      Power Draw" 590+)
        Current Power Limit               : 700.00 W    ("Enforced Power Limit" ≤525)
    Clocks
        SM                                : 86 MHz

Lines are split on the first ``:`` and matched by label within their section title, never by
column (the key column is 36, 42 or 55 wide) or indentation depth. Relative (T.Limit)
thresholds are never mixed with absolute ones: ``slowdown_relative`` says which form the
three thresholds (shutdown, slowdown, max operating) are in; ``tlimit_c`` is the current
margin that a relative threshold is compared with.

Not complete (``complete=False``, reason in ``errors``): a reasons/counters/temperature/
power/clocks section started without its known fields, a GPU header with no section, a full
``-q`` GPU block (it has ``Product Name``) without its ``Processes`` line, GPUs with
different section sets, fewer GPU blocks than ``Attached GPUs`` (a cut, or ``-i``), an
unreadable value, or text that stops without its final newline. ``NVIDIA-SMI has failed``
and text with no GPU block raise ParseError.

The CSV stream (``--format=csv[,nounits] -lms N``): one header, then rows; nvidia-smi is
expected to print one row per GPU per tick (no real multi-row capture was found, so a
repeated identical header line is accepted and skipped). Columns are mapped by header name.
``clocks_event_reasons.active`` (or ``clocks_throttle_reasons.active``) is the NVML bitmask,
decoded with :data:`REASON_BITS`; unknown bits come out as ``unknown_0x…``.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, field

from rackops.parsers._common import (
    MAX_COUNT,
    MAX_GPUS,
    ParseError,
    bounded,
    check_limits,
    is_na,
    plain,
)
from rackops.parsers.nvidia_smi import _UNIT

__all__ = [
    "REASON_BITS",
    "PerfGpu",
    "Sample",
    "SmiPerf",
    "SmiSamples",
    "parse_smi_any",
    "parse_smi_perf",
    "parse_smi_samples",
    "reasons",
]

# NVML nvmlClocksEventReason* / nvmlClocksThrottleReason* (nvml.h, same values since R418;
# DCGM field 112 uses the same bits). 0x200/0x400 are in the current NVML docs and the
# cuda-python binding (EVENT_REASON_BOARD_LIMIT 512, EVENT_REASON_RELIABILITY 1024); no
# capture sets them (``supported`` read 0x1FF up to 610.x).
REASON_BITS: dict[int, str] = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
    0x200: "board_limit",
    0x400: "reliability",
}

_MAX_MASK = (1 << 64) - 1


def reasons(mask: int) -> tuple[str, ...]:
    """The reason names of an NVML/DCGM bitmask, lowest bit first (``0x88`` →
    ``("hw_slowdown", "hw_power_brake_slowdown")``); unknown bits → ``unknown_0x…``."""
    if not 0 <= mask <= _MAX_MASK:
        raise ParseError(f"clock event reasons mask {mask:#x} is not a 64-bit value")
    names = []
    bit = 1
    while bit <= mask:
        if mask & bit:
            names.append(REASON_BITS.get(bit, f"unknown_{bit:#x}"))
        bit <<= 1
    return tuple(names)


# ------------------------------------------------------------------------------ -q text


@dataclass(frozen=True)
class PerfGpu:
    bus_id: str
    pstate: str | None
    reasons: dict[str, bool | None]  # canonical name -> Active / Not Active / N/A (None)
    sm_clock_mhz: int | None
    mem_clock_mhz: int | None
    temp_c: float | None
    mem_temp_c: float | None
    slowdown_temp_c: float | None  # absolute °C, or relative to T.Limit (slowdown_relative)
    slowdown_relative: bool
    power_w: float | None  # "Power Draw" (1 s average on Ampere+), else "Average Power Draw"
    power_limit_w: float | None  # in force: Current (535+), else Enforced, else Power Limit
    # the rest of what the sections print
    shutdown_temp_c: float | None = None  # same form as slowdown_temp_c
    max_operating_temp_c: float | None = None  # same form as slowdown_temp_c
    mem_max_operating_temp_c: float | None = None  # same form as slowdown_temp_c
    tlimit_c: float | None = None  # "GPU T.Limit Temp": current margin to slowdown
    power_instant_w: float | None = None
    power_default_limit_w: float | None = None
    power_min_limit_w: float | None = None
    power_max_limit_w: float | None = None
    reason_counters_us: dict[str, int | None] = field(default_factory=dict)
    sections: tuple[str, ...] = ()


@dataclass(frozen=True)
class SmiPerf:
    driver_version: str | None
    gpus: tuple[PerfGpu, ...]
    complete: bool
    errors: tuple[str, ...]
    attached_gpus: int | None = None


_REASON_LABELS = {
    "Idle": "gpu_idle",
    "Applications Clocks Setting": "applications_clocks_setting",
    "SW Power Cap": "sw_power_cap",
    "HW Slowdown": "hw_slowdown",
    "HW Thermal Slowdown": "hw_thermal_slowdown",
    "HW Power Brake Slowdown": "hw_power_brake_slowdown",
    "Sync Boost": "sync_boost",
    "SW Thermal Slowdown": "sw_thermal_slowdown",
    "Display Clock Setting": "display_clock_setting",
}
_COUNTER_LABELS = {
    "SW Power Capping": "sw_power_cap",
    "Sync Boost": "sync_boost",
    "SW Thermal Slowdown": "sw_thermal_slowdown",
    "HW Thermal Slowdown": "hw_thermal_slowdown",
    "HW Power Braking": "hw_power_brake_slowdown",
}
_SECTIONS = {
    "Clocks Throttle Reasons": "reasons",
    "Clocks Event Reasons": "reasons",
    "Clocks Throttle Reasons Counters": "counters",
    "Clocks Event Reasons Counters": "counters",
    "Clocks": "clocks",
    "Temperature": "temperature",
    "Power Readings": "power",
    "GPU Power Readings": "power",
}
# the fields each section always prints: one missing = the section was cut
_REQUIRED: dict[str, tuple[tuple[str, ...], ...]] = {
    "reasons": tuple((label,) for label in _REASON_LABELS),
    "counters": tuple((label,) for label in _COUNTER_LABELS),
    "clocks": (("SM",), ("Memory",)),
    "temperature": (("GPU Current Temp",),),
    "power": (
        ("Power Draw", "Average Power Draw"),
        ("Current Power Limit", "Enforced Power Limit", "Power Limit"),
    ),
}
_TEMP_THRESHOLDS = {
    "GPU Shutdown Temp": ("shutdown", False),
    "GPU Slowdown Temp": ("slowdown", False),
    "GPU Max Operating Temp": ("max_operating", False),
    "Memory Max Operating Temp": ("mem_max_operating", False),
    "GPU Shutdown T.Limit Temp": ("shutdown", True),
    "GPU Slowdown T.Limit Temp": ("slowdown", True),
    "GPU Max Operating T.Limit Temp": ("max_operating", True),
    "Memory Max Operating T.Limit Temp": ("mem_max_operating", True),
}
_GPU = re.compile(r"GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])")
_READING = re.compile(r"([-+]?\d{1,12}(?:\.\d{1,6})?)\s*(?:°C|C|W|MHz|us)?")
_FAILED = ("NVIDIA-SMI has failed", "Failed to initialize NVML", "No devices were found")


def _failed(text: str) -> None:
    for line in text.splitlines()[:20]:
        if line.strip().startswith(_FAILED):
            raise ParseError(f"nvidia-smi could not run: {line.strip()}")


class _Block:
    """One ``GPU …`` block while it is read: label → value per section of interest."""

    def __init__(self, bus_id: str) -> None:
        self.bus_id = bus_id
        self.values: dict[str, dict[str, str]] = {}
        self.order: list[str] = []
        self.pstate: str | None = None
        self.full_q = False  # "Product Name": a full -q block, which ends with Processes
        self.processes = False


def _reading(value: str, what: str, errors: list[str]) -> float | None:
    if is_na(value):
        return None
    m = _READING.fullmatch(value.strip())
    if not m:
        errors.append(f"unreadable {what}: {value.strip()!r}")
        return None
    return float(m.group(1))


def _state(value: str, what: str, errors: list[str]) -> bool | None:
    v = value.strip()
    if v == "Active":
        return True
    if v == "Not Active":
        return False
    if is_na(v):
        return None
    errors.append(f"unreadable {what}: {v!r}")
    return None


def _gpu(block: _Block, errors: list[str]) -> PerfGpu:
    v = block.values
    where = f"GPU {block.bus_id}"
    for section in block.order:
        for choices in _REQUIRED[section]:
            if not any(c in v[section] for c in choices):
                errors.append(f"{where}: section {section!r} has no {choices[0]!r} (cut short?)")
    if not block.order:
        errors.append(f"{where}: no clocks/reasons/temperature/power section (cut short?)")
    if block.full_q and not block.processes:
        errors.append(f"{where}: the -q block stops before its Processes line (cut short?)")

    def f(section: str, *labels: str) -> float | None:
        for label in labels:
            if label in v.get(section, {}):
                return _reading(v[section][label], f"{where} {label}", errors)
        return None

    def i(section: str, label: str) -> int | None:
        x = f(section, label)
        return None if x is None else int(x)

    # a reason label this parser does not know (a newer driver) keeps its own name
    rs = {
        _REASON_LABELS.get(k, re.sub(r"\W+", "_", k.lower())): _state(x, f"{where} {k}", errors)
        for k, x in v.get("reasons", {}).items()
    }
    counters: dict[str, int | None] = {}
    for label, key in _COUNTER_LABELS.items():
        if label in v.get("counters", {}):
            x = f("counters", label)
            counters[key] = None if x is None else int(x)
    thresholds: dict[str, float | None] = {}
    forms: set[bool] = set()
    for label, (name, relative) in _TEMP_THRESHOLDS.items():
        if label in v.get("temperature", {}):
            thresholds[name] = f("temperature", label)
            forms.add(relative)
    if len(forms) > 1:
        errors.append(f"{where}: absolute and T.Limit-relative thresholds in one block")
    return PerfGpu(
        bus_id=block.bus_id,
        pstate=block.pstate,
        reasons=rs,
        sm_clock_mhz=i("clocks", "SM"),
        mem_clock_mhz=i("clocks", "Memory"),
        temp_c=f("temperature", "GPU Current Temp"),
        mem_temp_c=f("temperature", "Memory Current Temp"),
        slowdown_temp_c=thresholds.get("slowdown"),
        slowdown_relative=forms == {True},
        power_w=f("power", "Power Draw", "Average Power Draw"),
        power_limit_w=f("power", "Current Power Limit", "Enforced Power Limit", "Power Limit"),
        shutdown_temp_c=thresholds.get("shutdown"),
        max_operating_temp_c=thresholds.get("max_operating"),
        mem_max_operating_temp_c=thresholds.get("mem_max_operating"),
        tlimit_c=f("temperature", "GPU T.Limit Temp"),
        power_instant_w=f("power", "Instantaneous Power Draw"),
        power_default_limit_w=f("power", "Default Power Limit"),
        power_min_limit_w=f("power", "Min Power Limit"),
        power_max_limit_w=f("power", "Max Power Limit"),
        reason_counters_us=counters,
        sections=tuple(block.order),
    )


def parse_smi_perf(text: str) -> SmiPerf:
    check_limits(text)
    text = text.replace("\r\n", "\n")
    _failed(text)
    errors: list[str] = []
    driver: str | None = None
    attached: int | None = None
    blocks: list[_Block] = []
    section: str | None = None
    title_indent = 0
    for raw in text.split("\n"):
        line = raw.strip()
        if not line:
            continue
        indent = len(raw) - len(raw.lstrip())
        if m := _GPU.fullmatch(line):
            blocks.append(_Block(m.group(1)))
            bounded(len(blocks), "GPU blocks", MAX_GPUS)
            section = None
            continue
        label, colon, value = line.partition(":")
        label = label.strip()
        if not colon:  # a section title (GPU Memory Power Readings has a trailing space)
            section = _SECTIONS.get(label)
            title_indent = indent
            if blocks and section is not None:
                if section in blocks[-1].values:
                    errors.append(f"GPU {blocks[-1].bus_id}: section {label!r} printed twice")
                blocks[-1].values[section] = {}
                blocks[-1].order.append(section)
            if blocks and label == "Processes":
                blocks[-1].processes = True
            continue
        if not blocks:
            if label == "Driver Version":
                driver = value.strip() or None
            elif label == "Attached GPUs":
                n = value.strip()
                if not n.isdigit():
                    raise ParseError(f"Attached GPUs is not a count: {n!r}")
                attached = bounded(int(n), "Attached GPUs", MAX_GPUS)
            continue
        block = blocks[-1]
        if section is not None and indent <= title_indent:
            section = None  # a GPU-level line after the section (Sparse Operation Mode)
        if label == "Performance State":
            block.pstate = None if is_na(value) else value.strip()
            section = None
        elif label == "Product Name":
            block.full_q = True
        elif label == "Processes":
            block.processes = True
        elif section is not None:
            if label in block.values[section]:  # Sync Boost etc. are never printed twice
                errors.append(f"GPU {block.bus_id}: {label!r} printed twice in one section")
            block.values[section][label] = value
    if not blocks:
        raise ParseError("no 'GPU 00000000:xx:00.0' block: this is not 'nvidia-smi -q' output")
    gpus = tuple(_gpu(b, errors) for b in blocks)
    if len({g.bus_id for g in gpus}) != len(gpus):
        errors.append("a GPU block is printed twice: not one nvidia-smi output")
    if len({frozenset(g.sections) for g in gpus}) > 1:
        errors.append("GPU blocks print different sections (a block cut short?)")
    if attached is not None and attached != len(gpus):
        errors.append(
            f"Attached GPUs says {attached} but {len(gpus)} GPU block(s) printed "
            "(cut short, or -i selected some GPUs)"
        )
    if not text.endswith("\n"):
        errors.append("the output stops without its final newline (cut mid-line?)")
    return SmiPerf(driver, gpus, not errors, tuple(errors), attached)


# ------------------------------------------------------------------ --query-gpu -lms N


@dataclass(frozen=True)
class Sample:
    t: str | None
    index: int | None
    bus_id: str | None
    sm_clock_mhz: float | None
    mem_clock_mhz: float | None
    temp_c: float | None
    mem_temp_c: float | None
    power_w: float | None
    power_limit_w: float | None
    reasons_mask: int | None
    reasons: tuple[str, ...]
    util_pct: float | None = None  # utilization.gpu, where sampled


@dataclass(frozen=True)
class SmiSamples:
    fields: tuple[str, ...]
    samples: tuple[Sample, ...]
    complete: bool
    errors: tuple[str, ...]

    def by_gpu(self) -> dict[str, tuple[Sample, ...]]:
        """Samples per GPU, in time order, keyed by bus id (else index)."""
        out: dict[str, list[Sample]] = {}
        for s in self.samples:
            out.setdefault(s.bus_id or str(s.index), []).append(s)
        return {k: tuple(v) for k, v in out.items()}


# what a run's sampler asks for (tools/nvidia_smi_perf.py builds its query from these), and
# the clock event reasons under their R535+ name, then the older one where the driver lacks it
SAMPLED = (
    "timestamp",
    "index",
    "pci.bus_id",
    "utilization.gpu",
    "clocks.sm",
    "clocks.mem",
    "temperature.gpu",
    "temperature.memory",
    "power.draw",
    "power.limit",
)
REASONS_FIELDS = ("clocks_event_reasons.active", "clocks_throttle_reasons.active")

# header field (unit stripped) -> Sample attribute; both names the driver accepts
_SAMPLE_FIELDS = {
    "timestamp": "t",
    "index": "index",
    "pci.bus_id": "bus_id",
    "gpu_bus_id": "bus_id",
    "clocks.sm": "sm_clock_mhz",
    "clocks.current.sm": "sm_clock_mhz",
    "clocks.mem": "mem_clock_mhz",
    "clocks.memory": "mem_clock_mhz",
    "clocks.current.memory": "mem_clock_mhz",
    "temperature.gpu": "temp_c",
    "temperature.memory": "mem_temp_c",
    "power.draw": "power_w",
    "power.limit": "power_limit_w",
    "clocks_event_reasons.active": "reasons_mask",
    "clocks_throttle_reasons.active": "reasons_mask",
    "utilization.gpu": "util_pct",
}
_FIELD = re.compile(r"[a-z][a-z0-9_.]*(?: \[[^\]]{1,16}\])?", re.I)
_CELL = re.compile(r"([-+]?\d{1,15}(?:\.\d{1,9})?)(?:\s*(?:W|MHz|C|%|us))?")
_MASK = re.compile(r"0x[0-9A-Fa-f]{1,16}")


def _base(cell: str) -> str:
    return _UNIT.sub(r"\1", cell.strip()).strip()


def _header(cells: list[str]) -> bool:
    return bool(cells) and all(_FIELD.fullmatch(c.strip()) for c in cells)


def _sample(cells: dict[str, str], row: int, errors: list[str]) -> Sample:
    values: dict[str, float | int | str | None] = {}
    for attr, cell in cells.items():
        c = cell.strip()
        if is_na(c) or (c.startswith("[") and c.endswith("]")):
            values[attr] = None
        elif attr in ("t", "bus_id"):
            values[attr] = c
        elif attr == "reasons_mask":
            if not _MASK.fullmatch(c):
                errors.append(f"row {row}: unreadable reasons bitmask {c!r}")
                values[attr] = None
            else:
                values[attr] = int(c, 16)
        elif attr == "index":
            if not c.isdigit() or len(c) > 6:
                errors.append(f"row {row}: unreadable GPU index {c!r}")
                values[attr] = None
            else:
                values[attr] = bounded(int(c), "GPU index", MAX_COUNT)
        else:
            m = _CELL.fullmatch(c)
            if not m:
                errors.append(f"row {row}: unreadable {attr} {c!r}")
                values[attr] = None
            else:
                values[attr] = float(m.group(1))

    def fl(name: str) -> float | None:
        x = values.get(name)
        return x if isinstance(x, float) else None

    def st(name: str) -> str | None:
        x = values.get(name)
        return x if isinstance(x, str) else None

    index = values.get("index")
    mask = values.get("reasons_mask")
    return Sample(
        t=st("t"),
        index=index if isinstance(index, int) else None,
        bus_id=st("bus_id"),
        sm_clock_mhz=fl("sm_clock_mhz"),
        mem_clock_mhz=fl("mem_clock_mhz"),
        temp_c=fl("temp_c"),
        mem_temp_c=fl("mem_temp_c"),
        power_w=fl("power_w"),
        power_limit_w=fl("power_limit_w"),
        reasons_mask=mask if isinstance(mask, int) else None,
        reasons=reasons(mask) if isinstance(mask, int) else (),
        util_pct=fl("util_pct"),
    )


def parse_smi_samples(text: str, fields: list[str] | None = None) -> SmiSamples:
    """The ``--query-gpu=… --format=csv[,nounits] -l/-lms`` stream. Pass ``fields`` for
    ``noheader`` output."""
    check_limits(text)
    text = plain(text)  # called directly by the run, not only through tools.parse
    _failed(text)
    errors: list[str] = []
    lines = text.split("\n")
    cut_last = not text.endswith("\n")
    if not cut_last:
        lines = lines[:-1]
    header: list[str] | None = [f.strip() for f in fields] if fields else None
    samples: list[Sample] = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            cells = next(csv.reader([line], skipinitialspace=True))
        except csv.Error as exc:
            raise ParseError(f"line {n}: not a CSV line ({exc}): {line.strip()[:80]!r}") from exc
        last = n == len(lines) and cut_last
        if _header(cells):
            stripped = [c.strip() for c in cells]
            if header is None:
                header = stripped
            elif stripped != header:
                raise ParseError(f"line {n}: a second, different CSV header: {line.strip()!r}")
            continue
        if header is None:
            raise ParseError(
                "no CSV header line: this is not 'nvidia-smi --query-gpu … --format=csv' "
                "output (pass the field names for noheader)"
            )
        if last:
            errors.append(f"line {n}: the last row has no final newline (cut mid-row?)")
            continue
        if len(cells) != len(header):
            errors.append(f"line {n}: {len(cells)} cells for {len(header)} fields (cut row?)")
            continue
        mapped = {
            _SAMPLE_FIELDS[_base(h)]: c
            for h, c in zip(header, cells, strict=True)
            if _base(h) in _SAMPLE_FIELDS
        }
        samples.append(_sample(mapped, n, errors))
        bounded(len(samples), "CSV rows", MAX_COUNT * 16)
    if header is None:
        raise ParseError("empty nvidia-smi CSV output")
    if not any(_base(h) in _SAMPLE_FIELDS for h in header):
        raise ParseError(f"no clock/temperature/power/reasons field in the header: {header}")
    if not samples:
        errors.append("a CSV header but no sample row")
    return SmiSamples(tuple(header), tuple(samples), not errors, tuple(errors))


def parse_smi_any(text: str) -> SmiPerf | SmiSamples:
    """Either form ``docs/parsers.md`` lists for this tool: the ``-q [-d …]`` report, or
    the ``--query-gpu=… --format=csv -l/-lms N`` stream (its first line is the CSV
    header)."""
    first = next((ln for ln in text.lstrip("\ufeff").splitlines() if ln.strip()), "")
    cells = [c.strip() for c in first.split(",")]
    if len(cells) > 1 and _header(cells):
        return parse_smi_samples(text)
    return parse_smi_perf(text)
