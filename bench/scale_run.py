"""A whole cluster's run through every controller step, at 1,024 to 4,096 nodes.

    .venv/bin/python bench/scale_run.py --nodes 1024 2048 4096 [--chromium]

For each size: a designed two-tier NDR fabric (rackops.lab.synthfabric: 32 nodes a leaf
group, 8 rails, 64-port switches) written as an inventory, its sweep's files printed by
hwsim, and a run directory (rackops.validate.synthscale: node checks, 8 GPUs under load,
port counters, 3 sampled pair rounds on 8 rails, every node's fleet outputs). Then each
controller step in a process of its own, as a run takes it, with its wall time, CPU (user
and system) and peak RSS from the kernel's rusage of that process:

- ``inventory``: load_inventory of the design (ansible-core, then the model);
- ``fleet``: the fleet stage (every node's saved outputs parsed, judged by majority);
- ``sweep``: the InfiniBand sweep before and after and its judgement (the stage's code,
  its commands answered by a replay of the sweep's files);
- ``localise``: the whole run's findings to culprits;
- ``reports``: report.json, report.html, junit.xml, metrics.prom;
- ``compare``: ``rackops report --compare`` of a second such run (seed 2) against it;
- ``whole`` (``--whole``): a third run's fleet, sweep and reports in one process, as one
  ``rackops validate`` holds them: its peak RSS is the run's.

Then every planted fault is looked for where a user would: the run's findings (fabric,
fleet) and report.json's culprits (synthrun's four); a fault not named exactly exits 1.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
STEPS = ("inventory", "fleet", "sweep", "localise", "reports", "compare")


def run_step(step: str, base: Path) -> None:
    """One controller step, in this process (the parent measures it)."""
    from rackops.validate import synthscale
    from rackops.validate.rundir import RunDir

    if step == "inventory":
        from rackops.inventory import load_inventory

        cluster = load_inventory(str(base / "inv")).raise_for_errors()
        (base / "cluster.pickle").write_bytes(pickle.dumps(cluster))
        return
    if step in ("fleet", "sweep", "sweep-b", "fleet-b"):
        cluster = pickle.loads((base / "cluster.pickle").read_bytes())
        run = base / ("run-b" if step.endswith("-b") else "run")
        if step.startswith("fleet"):
            synthscale.fleet_step(cluster, run)
        else:
            synthscale.sweep_step(cluster, base / "sweep", run)
        return
    if step == "localise":
        from rackops.validate.localise import localise

        localise(RunDir(base / "run").records())
        return
    if step == "reports":
        from rackops.validate.report import write_reports

        write_reports(RunDir(base / "run"))
        return
    if step == "whole":  # what one validate process holds: every step over one run, in turn
        from rackops.validate.report import write_reports

        cluster = pickle.loads((base / "cluster.pickle").read_bytes())
        run = RunDir(base / "run-c")
        synthscale.fleet_step(cluster, run.path)
        synthscale.sweep_step(cluster, base / "sweep", run.path)
        write_reports(run)
        return
    if step == "compare":
        proc = subprocess.run(
            [sys.executable, "-m", "rackops", "report", "--compare", str(base / "run-b"),
             str(base / "run")],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if proc.returncode not in (0, 1, 2):  # 1/2: regressions or a rejected run
            raise SystemExit(f"compare: exit {proc.returncode}: {proc.stderr[-500:]}")
        return
    raise SystemExit(f"no step {step!r}")


def measured(step: str, base: Path) -> dict[str, Any]:
    """Run the step in a child process: its wall, CPU and peak RSS (the child's own)."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, __file__, "--step", step, "--base", str(base)], cwd=ROOT
    )
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"step {step} failed: exit {proc.returncode}")
    return {
        "step": step,
        "wall_s": round(wall, 1),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
        "peak_rss_mb": round(usage.ru_maxrss / 1024),
    }


def prepare(nodes: int, base: Path) -> dict[str, Any]:
    """The design, its inventory and sweep files, and two run directories (not measured:
    what a real run's nodes and tools produce)."""
    from rackops.lab import synthfabric
    from rackops.validate import synthscale

    design = synthfabric.Design(nodes)
    planted = [p.as_dict() for p in synthfabric.faults(design)]
    drift = next(p["subject"] for p in planted if p["kind"] == "fleet_drift")
    started = time.perf_counter()
    synthfabric.write_inventory(design, base / "inv")
    sweep = synthfabric.write_sweep(design, base / "sweep")
    size = design.size()
    synthscale.make_run_dir(size, design.rails, drift, base / "inv", base / "run")
    synthscale.make_run_dir(size, design.rails, drift, base / "inv", base / "run-b", seed=2)
    return {
        "nodes": nodes,
        "switches": size.switches,
        "isls": len(design.isls),
        "net_dump_rows": sweep["net_dump_rows"],
        "planted": planted,
        "prepare_s": round(time.perf_counter() - started, 1),
    }


def check_named(base: Path, planted: list[dict[str, Any]], nodes: int) -> list[str]:
    """Every planted fault, named exactly: the fabric's and the fleet's by a finding at its
    subject, synthrun's by a culprit in report.json. What was not."""
    from rackops.validate.synthrun import planted as run_planted
    from rackops.validate.synthscale import named

    missing = [k for k, found in named(base / "run", planted).items() if not found]
    report = json.loads((base / "run" / "report.json").read_text())
    culprits = {(c["kind"], c["node"], c["hca"], c["gpu"]) for c in report["culprits"]}
    for p in run_planted(nodes):
        if (p["kind"], p["node"], p["hca"], p["gpu"]) not in culprits:
            missing.append(p["fault"])
    return missing


def one_size(nodes: int, chromium: bool, whole: bool) -> dict[str, Any]:
    base = Path(tempfile.mkdtemp(prefix=f"bench-scale-{nodes}-"))
    try:
        info = prepare(nodes, base)
        rows = [measured("inventory", base)]
        for step in ("fleet-b", "sweep-b"):  # the second run's own (the compare reads both)
            measured(step, base)
        rows += [measured(step, base) for step in STEPS[1:]]
        if whole:
            from rackops.lab import synthfabric
            from rackops.validate import synthscale

            design = synthfabric.Design(nodes)
            drift = next(p.subject for p in synthfabric.faults(design) if p.kind == "fleet_drift")
            synthscale.make_run_dir(
                design.size(), design.rails, drift, base / "inv", base / "run-c"
            )
            rows.append(measured("whole", base))
        run = base / "run"
        info.update(
            steps=rows,
            results_mb=round((run / "results.jsonl").stat().st_size / 2**20, 1),
            report_json_mb=round((run / "report.json").stat().st_size / 2**20, 1),
            report_html_kb=round((run / "report.html").stat().st_size / 1000),
            missing=check_named(base, info.pop("planted"), nodes),
        )
        if chromium:
            sys.path.insert(0, str(Path(__file__).parent))
            from report_view import render_times

            load, paint = render_times(run / "report.html", 3)
            info.update(chromium_load_s=round(load, 2), first_paint_s=round(paint, 2))
        return info
    finally:
        shutil.rmtree(base, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, nargs="*", default=[1024, 2048, 4096])
    ap.add_argument("--chromium", action="store_true")
    ap.add_argument(
        "--whole", action="store_true", help="and a third run's steps in one process (its peak)"
    )
    ap.add_argument("--step")
    ap.add_argument("--base", type=Path)
    args = ap.parse_args()
    if args.step:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        run_step(args.step, args.base)
        return
    results = [one_size(n, args.chromium, args.whole) for n in args.nodes]
    print(json.dumps(results, indent=2))
    print("| nodes | step | wall (s) | CPU (s) | peak RSS (MB) |")
    print("| ---: | --- | ---: | ---: | ---: |")
    for r in results:
        for s in r["steps"]:
            cells = (r["nodes"], s["step"], s["wall_s"], s["cpu_s"], s["peak_rss_mb"])
            print("| " + " | ".join(str(c) for c in cells) + " |")
    if any(r["missing"] for r in results):
        raise SystemExit(f"not named: {[(r['nodes'], r['missing']) for r in results]}")


if __name__ == "__main__":
    main()
