"""What watching GPUs under load costs: the controller's CPU for a run with and without the
GPU-load stage (a background sampler per node, read every second, judged at the end, and
the kernel log read twice), and the sampler's CPU on a node, at 8/16/32 lab targets.

    sudo .venv/bin/python bench/gpuload.py --nodes 8 16 32

One podman lab of the largest size with its stand-in hardware installed. For each size, two
`rackops validate --limit node01..N` over SSH with the same checks (the `fleet` suite's:
seconds of state checks), one with `gpu_load` (samples every second, kernel log before and
after, no GEMM/HBM tests) and one without; the controller's CPU is the user+system time of
the validate process (getrusage of the waited child). On the node: the run's own sampler
script run alone for 30 s with hwsim's nvidia-smi on PATH, as a lab target has it (its shell
and nvidia-smi; getrusage of the waited children).
The lab's nvidia-smi is hwsim's (a Python process); the real one is a C program, so the
node figure is an upper bound of what the script costs.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml
from _lab import playbook

from rackops import lab
from rackops.tools.nvidia_smi_perf import sampler_argv
from rackops.validate.rundir import RunDir

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / ".venv" / "bin"


def suites(tmp: Path) -> tuple[Path, Path]:
    base = yaml.safe_load((ROOT / "validators/suites/fleet.yaml").read_text())
    off = tmp / "bench-off.yaml"
    off.write_text(yaml.safe_dump({**base, "name": "bench-off"}))
    on = tmp / "bench-on.yaml"
    checks = {**base["checks"], "gpu_load": {"sample_interval_ms": 1000, "kernel_log": True}}
    on.write_text(yaml.safe_dump({**base, "name": "bench-on", "checks": checks}))
    return off, on


def validate(inv: Path, suite: Path, n: int, run: Path) -> tuple[float, float]:
    """Wall seconds and controller CPU seconds (user+system) of one validate."""
    limit = ",".join(f"node{i:02d}" for i in range(1, n + 1))
    argv = [
        str(BIN / "rackops"),
        "validate",
        "-i",
        str(inv),
        "--suite",
        str(suite),
        "--limit",
        limit,
        "--run-dir",
        str(run),
        "--accept-new-host-keys",
    ]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=1800, check=False)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def node_cpu(tmp: Path, seconds: int = 30) -> float:
    """CPU seconds the run's sampler script (sh and the nvidia-smi it runs) uses in
    ``seconds`` of sampling 8 GPUs every second, with hwsim's nvidia-smi on PATH as a lab
    target has it (run here: the same program, without a container around it)."""
    b = tmp / "bin"
    b.mkdir(exist_ok=True)
    (b / "nvidia-smi").write_text(
        f'#!/bin/sh\nexec env PYTHONPATH={ROOT / "rackops/lab"} python3 -m hwsim nvidia-smi "$@"\n'
    )
    (b / "nvidia-smi").chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{b}:{os.environ['PATH']}",
        "RACKOPS_HWSIM_NODE": "node01",
        "RACKOPS_HWSIM_STATE": str(tmp / "state"),
        "RACKOPS_HWSIM_SCENARIO": str(tmp / "none"),
    }
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(
        ["timeout", str(seconds), *sampler_argv(1000)], env=env, capture_output=True, check=False
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def one(inv: Path, n: int, tmp: Path, off: Path, on: Path) -> dict[str, float]:
    wall_off, cpu_off = validate(inv, off, n, tmp / f"off-{n}")
    wall_on, cpu_on = validate(inv, on, n, tmp / f"on-{n}")
    rd = RunDir(tmp / f"on-{n}")
    samples = [r for r in rd.records() if r.get("tool") == "gpu-samples"]
    size = sum((rd.path / r["stdout"]).stat().st_size for r in samples if r.get("stdout"))
    return {
        "nodes": n,
        "wall_off_s": wall_off,
        "wall_on_s": wall_on,
        "cpu_off_s": cpu_off,
        "cpu_on_s": cpu_on,
        "sampled_nodes": len(samples),
        "sample_bytes": size,
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, nargs="+", default=[8, 16, 32])
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="rackops-bench-gpuload-"))
    inv = tmp / "inv"
    off, on = suites(tmp)
    lab.up(nodes=max(args.nodes), inventory=str(inv))  # podman: 32 nspawn boots time out here
    try:
        if not playbook(inv, "lab-hardware.yml"):
            return 1
        rows = [one(inv, n, tmp, off, on) for n in sorted(args.nodes)]
        sampler = node_cpu(tmp)
    finally:
        lab.down()
    print(
        "| targets | validate without (s) | with GPU load (s) | controller CPU without (s) | "
        "with (s) | CPU ratio | wall ratio | nodes sampled | sample bytes |"
    )
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(
            f"| {r['nodes']} | {r['wall_off_s']:.1f} | {r['wall_on_s']:.1f} | "
            f"{r['cpu_off_s']:.1f} | {r['cpu_on_s']:.1f} | {r['cpu_on_s'] / r['cpu_off_s']:.2f} | "
            f"{r['wall_on_s'] / r['wall_off_s']:.2f} | {r['sampled_nodes']} | {r['sample_bytes']} |"
        )
    print(
        f"\nnode01: the sampler script used {sampler:.2f} CPU s in 30 s of sampling 8 GPUs "
        f"every second ({sampler / 30 * 100:.1f} % of one core)"
    )
    print(json.dumps({"rows": rows, "sampler_cpu_s_per_30s": sampler}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
