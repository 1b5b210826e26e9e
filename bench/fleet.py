"""What the fleet costs: the fleet stage (every node's facts, judged by majority and against
a golden profile) and `rackops profile capture`, at 8/16/32 lab targets, as a ratio of the
slowest fleet tool's own run time on a node.

    sudo .venv/bin/python bench/fleet.py --nodes 8 16 32

One podman lab of the largest size, provisioned (stand-in hardware, host tuning); for each size a
`rackops validate --suite fleet --limit ...` over SSH (the node checks run for real on the
targets), then, on that run directory: the fleet stage alone (parse every saved output,
judge by majority, then against a golden profile captured from node01), and the capture
(`rackops profile capture --run`). The slowest tool's own time is the longest `duration_s`
of a fleet source step in the run (what one node spends in its slowest tool).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _lab import playbook

from rackops import lab
from rackops.fleet import judge, read_table
from rackops.fleet.facts import SOURCES
from rackops.inventory import load_inventory
from rackops.profiles import Profile, load_profile, load_profile_file
from rackops.validate.golden import capture
from rackops.validate.rundir import RunDir

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / ".venv" / "bin"


def best(fn: object, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - t)
    return min(times)


def one(inv: Path, n: int, tmp: Path) -> dict[str, float]:
    run = tmp / f"run-{n}"
    limit = ",".join(f"node{i:02d}" for i in range(1, n + 1))
    t = time.perf_counter()
    subprocess.run(
        [
            str(BIN / "rackops"),
            "validate",
            "-i",
            str(inv),
            "--suite",
            "fleet",
            "--limit",
            limit,
            "--run-dir",
            str(run),
            "--accept-new-host-keys",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    wall = time.perf_counter() - t
    rd = RunDir(run)
    slowest = max(
        r["duration_s"] for r in rd.records() if r["kind"] == "node" and r["tool"] in SOURCES
    )
    cluster = load_inventory(str(inv)).raise_for_errors()
    nodes = [f"node{i:02d}" for i in range(1, n + 1)]
    base = load_profile(cluster.node("node01").profile).profile
    majority = best(lambda: judge(read_table(rd, cluster, nodes), cluster, {base.name: base}))
    out = tmp / f"golden-{n}" / f"{base.name}.yaml"
    cap = best(lambda: capture(str(inv), "node01", out, run))
    golden: Profile = load_profile_file(out, check_peaks=False).profile
    against = best(lambda: judge(read_table(rd, cluster, nodes), cluster, {base.name: golden}))
    return {
        "nodes": n,
        "validate_wall_s": wall,
        "slowest_tool_s": slowest,
        "fleet_majority_s": majority,
        "fleet_golden_s": against,
        "capture_s": cap,
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, nargs="+", default=[8, 16, 32])
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="rackops-bench-fleet-"))
    inv = tmp / "inv"
    lab.up(nodes=max(args.nodes), inventory=str(inv))  # podman: 32 nspawn boots time out here
    try:
        tags = ("--tags", "net_mtu,hugepages,irq_affinity,roce_host_qos")
        for play, extra in (("lab-hardware.yml", ()), ("provision.yml", tags)):
            if not playbook(inv, play, *extra):
                return 1
        rows = [one(inv, n, tmp) for n in sorted(args.nodes)]
    finally:
        lab.down()
    print(
        "| targets | validate --suite fleet (s) | slowest tool (s) | fleet stage, majority (s) | "
        "fleet stage, golden (s) | capture (s) | fleet ÷ slowest tool | capture ÷ slowest tool |"
    )
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        worst = max(r["fleet_majority_s"], r["fleet_golden_s"])
        print(
            f"| {r['nodes']} | {r['validate_wall_s']:.1f} | {r['slowest_tool_s']:.2f} | "
            f"{r['fleet_majority_s']:.3f} | {r['fleet_golden_s']:.3f} | {r['capture_s']:.3f} | "
            f"{worst / r['slowest_tool_s']:.2f} | {r['capture_s'] / r['slowest_tool_s']:.2f} |"
        )
    print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
