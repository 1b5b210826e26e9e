"""The report's GPUs under load: every GPU's figures (GEMM, HBM, SM clock and power under
load, hottest sample) from the run's findings, and a clock/temperature/power trace of each
GPU a finding names, drawn from the samples the run saved."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from rackops.checks.gpuload import THROTTLES
from rackops.errors import RackopsError
from rackops.parsers import ParseError
from rackops.parsers.nvidia_smi_perf import parse_smi_samples
from rackops.validate.rundir import RunDir

TRACE_POINTS = 240  # at most, per trace: a long run is averaged down to this many
MAX_TRACES = 64  # GPUs drawn; the rest are named in the findings and in report.json
# finding code -> report field of the GPU's figure
FIGURES = {
    "GEMM-OK": "gemm_tflops",
    "GEMM-002": "gemm_tflops",
    "HBM-OK": "hbm_gbs",
    "HBM-002": "hbm_gbs",
    "LOAD-CLOCK": "sm_mhz",
    "GPU-LOAD": "sm_mhz",  # the failing GPU's median clock under load, where it has one
    "LOAD-POWER": "power_w",
}
SAMPLE_TOOL = "gpu-samples"


def gpu_figures(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per GPU with a figure: node, gpu, the figures, its worst status."""
    rows: dict[tuple[str, int], dict[str, Any]] = defaultdict(dict)
    rank = {"OK": 0, "WARN": 1, "ERROR": 2, "FAIL": 3}
    for rec in records:
        for f in rec["findings"]:
            s = f["subject"]
            if s.get("gpu") is None or not s.get("node"):
                continue
            key = (str(s["node"]), int(s["gpu"]))
            row = rows[key]
            field = FIGURES.get(f["code"])
            if f["code"] == "GPU-LOAD" and f.get("unit") != "MHz":
                field = None
            if field and isinstance(f.get("observed"), int | float):
                row[field] = f["observed"]
            if rank.get(f["status"], 0) >= rank.get(row.get("status", "OK"), 0):
                row["status"] = f["status"]
    return [
        {"node": n, "gpu": g, **row}
        for (n, g), row in sorted(rows.items())
        if any(k in row for k in FIGURES.values())
    ]


def named_gpus(records: list[dict[str, Any]]) -> list[tuple[str, int]]:
    """Every (node, GPU) a FAIL, ERROR or WARN finding names, in order."""
    out: dict[tuple[str, int], None] = {}
    for rec in records:
        for f in rec["findings"]:
            s = f["subject"]
            if f["status"] != "OK" and s.get("gpu") is not None and s.get("node"):
                out[(str(s["node"]), int(s["gpu"]))] = None
    return list(out)


def gpu_traces(run: RunDir, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The sampled trace of every named GPU whose node was sampled."""
    wanted = named_gpus(records)[:MAX_TRACES]
    by_node: dict[str, list[int]] = defaultdict(list)
    for node, gpu in wanted:
        by_node[node].append(gpu)
    out = []
    for rec in records:
        if rec["tool"] != SAMPLE_TOOL or rec.get("node") not in by_node:
            continue
        try:
            text = run.read_raw(rec)
            parsed = parse_smi_samples(text) if text and text.strip() else None
        except (ParseError, RackopsError):
            continue
        if parsed is None:
            continue
        for gpu in by_node[rec["node"]]:
            rows = [s for s in parsed.samples if s.index == gpu]
            if rows:
                out.append({"node": rec["node"], "gpu": gpu, **_series(rows)})
    return out


def _series(rows: list[Any]) -> dict[str, Any]:
    step = max(1, -(-len(rows) // TRACE_POINTS))
    chunks = [rows[i : i + step] for i in range(0, len(rows), step)]

    def avg(chunk: list[Any], attr: str) -> float | None:
        xs = [getattr(s, attr) for s in chunk if getattr(s, attr) is not None]
        return round(sum(xs) / len(xs), 1) if xs else None

    return {
        "samples": len(rows),
        "first": rows[0].t,
        "last": rows[-1].t,
        "sm_mhz": [avg(c, "sm_clock_mhz") for c in chunks],
        "temp_c": [avg(c, "temp_c") for c in chunks],
        "power_w": [avg(c, "power_w") for c in chunks],
        "throttled": [any(r in THROTTLE_NAMES for s in c for r in s.reasons) for c in chunks],
    }


THROTTLE_NAMES = set(THROTTLES)  # the reasons that are the hardware's doing, as judged
SERIES = (("sm_mhz", "SM MHz", "#2563eb"), ("temp_c", "°C", "#dc2626"), ("power_w", "W", "#16a34a"))


def svg_trace(trace: dict[str, Any]) -> str:
    """Three small lines (SM clock, temperature, power), each scaled to its own range, with
    the throttled samples shaded. Numbers only: nothing from the node reaches the SVG."""
    w, h, pad = 420, 120, 6
    n = len(trace["sm_mhz"])
    if n == 0:
        return ""
    dx = (w - 2 * pad) / max(1, n - 1)
    parts = [
        f'<svg viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" '
        'aria-label="SM clock, temperature and power over the run">'
    ]
    for i, hot in enumerate(trace["throttled"]):
        if hot:
            parts.append(
                f'<rect x="{pad + i * dx - dx / 2:.1f}" y="0" width="{max(dx, 1):.1f}" '
                f'height="{h}" fill="#fde68a"/>'
            )
    for key, label, colour in SERIES:
        vals = [(i, v) for i, v in enumerate(trace[key]) if isinstance(v, int | float)]
        if not vals:
            continue
        lo, hi = min(v for _, v in vals), max(v for _, v in vals)
        span = (hi - lo) or 1.0
        pts = " ".join(
            f"{pad + i * dx:.1f},{h - pad - (v - lo) / span * (h - 2 * pad):.1f}" for i, v in vals
        )
        parts.append(
            f'<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="{pts}">'
            f"<title>{label} {lo:g}–{hi:g}</title></polyline>"
        )
    parts.append("</svg>")
    return "".join(parts)
