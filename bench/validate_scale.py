"""Scale of the controller side of `rackops validate`, no lab needed.

    .venv/bin/python bench/validate_scale.py

1. Plan for 4,096 nodes × 8 rails (full pairing): build the plan, and separately walk every
   round (8.4 million node pairs) as the runner would.
2. Reports (report.json, junit.xml, metrics.prom, report.html) from a synthetic run
   directory of 1,024 nodes (8 node checks each, 3 sampled pair rounds × 8 rails, one
   NCCL group), in a child process so its peak memory can be read.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rackops.findings import Finding, Status, Subject
from rackops.inventory.model import Cluster, Fabric, Hca, Mtu, Node, Versions
from rackops.suites import load_suite
from rackops.validate.plan import make_plan, random_matchings


def cluster(n: int) -> Cluster:
    nodes = tuple(
        Node(
            name=f"n{i:04d}",
            address=f"10.{i // 250}.{i % 250}.1",
            profile="h100-sxm-ndr",
            gpus=8,
            hcas=tuple(
                Hca(
                    device=f"mlx5_{r}",
                    netdev=f"ibp{r}s0",
                    rail=r,
                    gpu=r,
                    switch=f"leaf-{r}",
                    port=f"{i}",
                )
                for r in range(8)
            ),
        )
        for i in range(n)
    )
    return Cluster(
        name="bench",
        fabric=Fabric(type="infiniband", mtu=Mtu(host=4092, switch=4096, ib=4096)),
        versions=Versions(ofed="1", driver="580.95.05", dcgm="4.4.1"),
        nodes=nodes,
        switches=(),
    )


def bench_plan() -> None:
    c = cluster(4096)
    suite = load_suite("acceptance")
    t0 = time.perf_counter()
    plan = make_plan(c, suite)
    t1 = time.perf_counter()
    pairs = sum(len(r.pairs) for r in plan.rounds)
    t2 = time.perf_counter()
    print(
        f"plan 4096 nodes x 8 rails: {t1 - t0:.3f} s to plan ({len(plan.rounds)} rounds), "
        f"{t2 - t1:.1f} s to walk all {pairs} pairs"
    )


def make_run_dir(path: Path, n: int = 1024) -> None:
    path.mkdir(parents=True)
    (path / "raw").mkdir()
    names = [f"n{i:04d}" for i in range(n)]

    def f(code: str, status: str, **s: Any) -> dict[str, Any]:
        return Finding(code, Status(status), Subject(**s), code, remediation="").as_dict()

    with (path / "results.jsonl").open("w") as fh:
        for i, node in enumerate(names):
            for tool in (
                "ibstat",
                "ofed_info",
                "nvidia-smi-xml",
                "nvidia-smi-nvlink",
                "nvidia-smi-topo",
                "dcgmi-diag",
                "nccl-tests",
                "show_gids",
            ):
                bad = tool == "ibstat" and i % 97 == 0
                fs = (
                    [
                        f(
                            "HCA-002",
                            "FAIL",
                            node=node,
                            hca="mlx5_3",
                            switch="leaf-3",
                            switch_port=str(i),
                        )
                    ]
                    if bad
                    else [f("OK", "OK", node=node)]
                )
                fh.write(
                    json.dumps(
                        {
                            "id": f"node/{node}/{tool}",
                            "kind": "node",
                            "node": node,
                            "tool": tool,
                            "findings": fs,
                            "meta": {},
                        }
                    )
                    + "\n"
                )
        for rnd in random_matchings(names, 3, seed=1):
            for a, b in rnd:
                for r in range(8):
                    bw = 150.0 if (a == "n0005" or b == "n0005") and r == 2 else 392.0
                    st = "FAIL" if bw < 360 else "OK"
                    fh.write(
                        json.dumps(
                            {
                                "id": f"pair/{a}-{b}/rail{r}",
                                "kind": "pair",
                                "node": b,
                                "tool": "perftest",
                                "findings": [f("PERF", st, node=b)],
                                "meta": {
                                    "server": a,
                                    "client": b,
                                    "rail": r,
                                    "server_hca": f"mlx5_{r}",
                                    "client_hca": f"mlx5_{r}",
                                    "server_switch_port": f"leaf-{r} {a}",
                                    "client_switch_port": f"leaf-{r} {b}",
                                    "bw_gbps": bw,
                                },
                            }
                        )
                        + "\n"
                    )
    (path / "run.json").write_text(
        json.dumps({"inventory": "bench", "suite": "acceptance", "started": "bench"})
    )


def bench_report() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run"
        make_run_dir(run)
        lines = (run / "results.jsonl").read_text().count("\n")
        code = (
            "import resource,sys,time; from pathlib import Path;"
            "from rackops.validate.report import write_reports;"
            "from rackops.validate.rundir import RunDir;"
            "t=time.perf_counter(); write_reports(RunDir(Path(sys.argv[1])));"
            "print(time.perf_counter()-t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
        )
        out = subprocess.run(
            [sys.executable, "-c", code, str(run)], capture_output=True, text=True, check=True
        ).stdout.split()
        seconds, peak_kib = float(out[0]), int(out[1])
        size = sum(p.stat().st_size for p in run.iterdir() if p.is_file())
        print(
            f"report 1024 nodes ({lines} records): {seconds:.2f} s, peak RSS "
            f"{peak_kib / 1024:.0f} MB, run dir {size / 1e6:.1f} MB"
        )


if __name__ == "__main__":
    bench_plan()
    bench_report()
    print(
        f"(bench process peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MB)"
    )
