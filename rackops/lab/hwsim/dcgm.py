"""dcgmi diag (text and -j) in the DCGM 2.x/3.x/4.x layouts."""

from __future__ import annotations

import json
import sys

from .node import BUS, emit
from .thermal import run_load

W = 46


def _row(name, value):
    return "| %-25s | %-46s |\n" % (name, value)


def _sec(name, first=False):
    label = "-----  %s  " % name
    return ("|%s%s+%s|\n" if first else "+%s%s+%s+\n") % (label, "-" * (27 - len(label)), "-" * 48)


def dcgmi(node, args):
    if not args or args[0] != "diag":
        sys.stderr.write("Usage: dcgmi diag -r <level>\n")
        return 2
    level = "1"
    if "-r" in args:
        level = args[args.index("-r") + 1]
    level = {"quick": "1", "short": "1", "medium": "2", "long": "3", "xlong": "4"}.get(level, level)
    lvl = int(level) if level.isdigit() else 1
    gpus = node.gpus()
    plugins = [("Deployment", "software")]
    if lvl >= 2:
        plugins += [("Hardware", "memory"), ("Integration", "pcie")]
    if lvl >= 3:
        plugins += [
            ("Hardware", "diagnostic"),
            ("Hardware", "nvbandwidth"),
            ("Stress", "targeted_stress"),
            ("Stress", "targeted_power"),
            ("Stress", "memory_bandwidth"),
        ]
    if lvl >= 4:
        plugins += [("Hardware", "memtest"), ("Stress", "pulse_test")]
    skip_all = bool(node.faults_of("dcgm_all_skip"))
    if lvl >= 2 and not skip_all:  # the stress plugins load every GPU: power-bound
        run_load(node, gpus, kind="gemm")
    results = {}
    for cat, p in plugins:
        per = {g: ("Skip" if skip_all and p != "software" else "Pass") for g in gpus}
        plugin_result = "Skip" if skip_all and p != "software" else "Pass"
        msgs = []
        for f in node.faults_of("dcgm_fail"):
            if f.get("plugin") == p and lvl >= int(f.get("min_level", 2)):
                g = f.get("gpu")
                if g is not None and int(g) in per:
                    per[int(g)] = "Fail"
                plugin_result = "Fail"
                msgs.append(f.get("message", "GPU %s: %s failed: simulated fault." % (g, p)))
        for f in node.faults_of("remap_pending"):
            if p == "software":
                plugin_result = "Fail"
                per[int(f["gpu"])] = "Fail"
                msgs.append(
                    "GPU %s had uncorrectable memory errors and row remapping is pending. Reset the GPU."
                    % f["gpu"]
                )
        results[p] = (cat, plugin_result, per, msgs)
    if "-j" in args or "--json" in args:
        return _dcgm_json(node, gpus, plugins, results)
    return _dcgm_table(node, gpus, plugins, results)


def _dcgm_json(node, gpus, plugins, results):
    """dcgmi diag -j: the JSON form."""
    cats = []
    for cat, p in plugins:
        _, res, per, msgs = results[p]
        entry = {
            "name": p,
            "results": [
                {"entity_group": "GPU", "entity_group_id": 1, "entity_id": g, "status": s}
                for g, s in per.items()
            ],
            "test_summary": {
                "status": res,
                "warnings": [{"warning": m, "error_id": 81} for m in msgs],
            },
        }
        for c in cats:
            if c["category"] == cat:
                c["tests"].append(entry)
                break
        else:
            cats.append({"category": cat, "tests": [entry]})
    text = (
        json.dumps(
            {
                "DCGM Diagnostic": {"test_categories": cats},
                "version": node.hw["dcgm"],
                "Driver Version Detected": node.hw["driver"],
                "GPU Device IDs": [node.hw["gpu_device_id"]] * len(gpus),
            },
            indent=4,
        )
        + "\n"
    )
    emit(node, "dcgmi", text)
    return 1 if any(r[1] == "Fail" for r in results.values()) else 0


def _dcgm_table(node, gpus, plugins, results):
    """dcgmi diag: the boxed table."""
    top = "+" + "-" * 27 + "+" + "-" * 48 + "+\n"
    out = "Successfully ran diagnostic for group.\n" + top
    out += (
        "| Diagnostic                | Result                                         |\n+"
        + "=" * 27
        + "+"
        + "=" * 48
        + "+\n"
    )
    out += (
        _sec("Metadata", True)
        + _row("DCGM Version", node.hw["dcgm"])
        + _row("Driver Version Detected", node.hw["driver"])
    )
    out += _row("GPU Device IDs Detected", ", ".join([node.hw["gpu_device_id"]] * len(gpus))[:46])
    seen = []
    first = True
    for cat, p in sorted(
        plugins, key=lambda t: ["Deployment", "Hardware", "Integration", "Stress"].index(t[0])
    ):
        if cat not in seen:
            out += _sec(cat, first)
            first = False
            seen.append(cat)
        _, res, per, msgs = results[p]
        out += _row(p, res)
        for m in msgs:
            chunks = [m[i : i + 45] for i in range(0, len(m), 45)]
            for j, c in enumerate(chunks):
                out += _row("Warning" if j == 0 else "", c)
        for g, s in per.items():
            out += _row("", "GPU%d: %s" % (g, s))
    out += top
    emit(node, "dcgmi", out)
    return 1 if any(r[1] == "Fail" for r in results.values()) else 0


# dcgmproftester: per-GPU FP16 HGEMM (-t 1004, gflops) and device memory copy (-t 1005,
# 10^9 B/s read+write, labelled GiB/sec), in the DCGM >= 3.2.5 layout
# (dcgmproftester/PhysicalGpu.cpp; docs/research/issue-24-gemm-hbm.md §1)
# FP16 GEMM at the 700 W power cap: ~650 TFLOP/s on a real H200 (torch, 12288^3,
# captures/h200-580/load-fp16.txt; 744 before the cap bites), the same die and limit as H100
GEMM_GFLOPS = 6.5e5
HBM_GBS = 2540.0  # H100 80GB HBM3: NVIDIA's own -t 1005 reading (diag-skus.yaml.in l.173)


def dcgmproftester(node, args, tool="dcgmproftester13"):
    test = args[args.index("-t") + 1] if "-t" in args and args.index("-t") + 1 < len(args) else ""
    if test not in ("1004", "1005"):
        sys.stdout.write("Skipping CreateDcgmGroups() since DCGM validation is disabled\n")
        sys.stderr.write("A test for fieldId %s has not been implemented yet.\n" % test)
        return 1
    gpus = node.gpus()
    run_load(node, gpus, kind="gemm" if test == "1004" else "copy")
    out = ["Skipping CreateDcgmGroups() since DCGM validation is disabled\n"] * 2
    for g in gpus:
        out.append("Worker %d:0[%s]: Message: Bus ID 00000000:%s:00.0 mapped to cuda device ID %d\n"
                   % (g, test, BUS[g % 16], g))  # fmt: skip
    out.append("DCGM CudaContext Init completed successfully.\n")
    for tick in range(6):
        ramp = 0.93 if tick == 0 else 1.0 - 0.002 * (tick % 2)
        for g in gpus:
            if test == "1004":
                f = node.fault("slow_gemm", gpu=g)
                v = float(node.hw.get("gemm_gflops", GEMM_GFLOPS)) * (1 - 0.004 * g) * ramp
                v *= float(f.get("factor", 0.8)) if f else 1.0
                out.append("Worker %d:0 [1004]: TensorEngineActive:  generated ???, dcgm 0 "
                           "(%s gflops).\n" % (g, format(v, "#.3")))  # fmt: skip
            else:
                f = node.fault("slow_hbm", gpu=g)
                v = float(node.hw.get("hbm_gbs", HBM_GBS)) * (1 - 0.003 * g) * ramp
                v *= float(f.get("factor", 0.8)) if f else 1.0
                out.append("Worker %d:0[1005]: DramUtil generated %s/%s, dcgm 0 (%s GiB/sec). "
                           "bandwidthDivisor %s\n" % (g, format(v / 2, "#.3"), format(v / 2, "#.3"),
                                                      format(v, "#.3"), format(1.0, "#.3")))  # fmt: skip
    emit(node, tool, "".join(out))
    return 0
