"""What the physical-layer stages add to a run, against real SSH targets (the lab).

    sudo .venv/bin/python bench/physical.py --nodes 8 16 32

Per size: bring up a lab whose tools take realistic times (scenario
``hardware.tool_seconds``: mlxlink 1.5 s — register reads through MFT —, ethtool 0.2 s,
ibstat 0.5 s, ib_write_lat 1 s), install the stand-in stack and the host QoS (so PFC is on
and the pause counters exist), then time, with the runner's own code:

* cabling: every node's ``lldpctl -f json`` (the real lldpd) and the rack-wide judgement;
* the port snapshot before the pair rounds (ibstat, ``ethtool -S`` and hw_counters per HCA;
  slowest tool: ibstat, 0.5 s);
* the snapshot after them (plus ``mlxlink -c -e`` and ``ethtool -m`` per HCA; slowest tool:
  mlxlink, 1.5 s);
* one latency round (every node paired, all 8 rails at once; ib_write_lat 1 s).

Each is reported as seconds and as a ratio of its slowest tool's own time: 1.0 would be
"the stage costs nothing beyond the tool itself".
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from rackops import lab
from rackops.inventory import load_inventory
from rackops.profiles import load_profile
from rackops.suites import Checks, PerftestBwParams, PerftestLatParams, PhyParams, Suite
from rackops.validate.physical import Physical
from rackops.validate.plan import NodeCheck, make_plan
from rackops.validate.rundir import RunDir
from rackops.validate.runner import Runner, targets_from_inventory
from rackops.validate.ssh import SshExecutor

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
SCENARIO = """hardware:
  tool_seconds: {mlxlink: 1.5, ethtool: 0.2, ibstat: 0.5, ib_write_lat: 1, ib_write_bw: 1}
"""
PHY = PhyParams(hold_down_s=3, timeout_s=60)
SUITE = Suite(
    name="bench",
    description="physical layer",
    budget_minutes=10,
    checks=Checks(
        gpu_inventory=False,
        perftest_bw=PerftestBwParams(message_size_bytes=65536, duration_s=1, qps=1, timeout_s=60),
        perftest_lat=PerftestLatParams(message_size_bytes=2, iterations=2000, timeout_s=60),
        physical=PHY,
    ),
)


def playbook(inv: Path, n: int, *args: str) -> None:
    subprocess.run(
        [str(BIN / "ansible-playbook"), "-i", str(inv), "-f", str(n), *args],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )


def one(n: int, tmp: Path) -> None:
    (tmp / "s.yaml").write_text(SCENARIO)
    inv = tmp / f"inv{n}"
    lab.up(nodes=n, scenario=str(tmp / "s.yaml"), inventory=str(inv))
    try:
        playbook(inv, n, "playbooks/lab-hardware.yml")
        playbook(inv, n, "playbooks/provision.yml", "--tags", "roce_host_qos")
        result = load_inventory(inv)
        cluster = result.raise_for_errors()
        plan = make_plan(cluster, SUITE)
        profiles = {"h100-sxm-roce400": load_profile("h100-sxm-roce400").profile}
        executor = SshExecutor(accept_new_host_keys=True)
        rundir = RunDir(tmp / f"run{n}")
        targets = targets_from_inventory(result, cluster)
        runner = Runner(
            cluster,
            SUITE,
            profiles,
            targets,
            executor,
            rundir,
            concurrency=64,
            lab=True,
            progress=lambda _m: None,
        )
        lldp = NodeCheck("lldpctl", "lldpctl", ("lldpctl", "-f", "json"), 30, 1)
        plan_lldp = type(plan)(plan.nodes, (lldp,), plan.pairing, (), plan.rails, (), 0)
        phys = Physical(cluster, profiles, targets, executor, rundir, PHY, 64)
        t0 = time.monotonic()
        runner.node_stage(plan_lldp, set())
        phys.cabling(plan.nodes, set(), set())
        cabling_s = time.monotonic() - t0
        t1 = time.monotonic()
        phys.snapshot(plan.nodes, set(), set(), "before")
        before_s = time.monotonic() - t1
        # the latency half of one round: every node paired, all rails at once
        jobs = [(p.server, p.client, r) for p in plan.rounds[0].pairs for r in plan.rails]

        def lat(job: tuple[str, str, int]) -> None:
            s, c, r = job
            runner._pair_once(s, c, r, f"lat/{s}-{c}/rail{r}/0", skip=set(), kind="lat")

        t2 = time.monotonic()
        with ThreadPoolExecutor(max_workers=64) as pool:
            list(pool.map(lat, jobs))
        lat_s = time.monotonic() - t2
        t3 = time.monotonic()
        phys.snapshot(plan.nodes, set(), set(), "after")
        after_s = time.monotonic() - t3
        executor.close()
        bad = [
            f
            for r in rundir.records()
            for f in r["findings"]
            if f["status"] not in ("OK",) and r["kind"] in ("node", "snapshot", "cabling")
        ]
    finally:
        lab.down()
    print(
        f"{n:>5} {cabling_s:>9.1f} {before_s:>9.1f} {before_s / 0.5:>7.1f} "
        f"{after_s:>8.1f} {after_s / 1.5:>7.1f} {lat_s:>8.1f} {lat_s / 1.0:>7.1f} {len(bad):>7}",
        flush=True,
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, nargs="+", default=[8, 16, 32])
    args = ap.parse_args()
    print(
        f"{'nodes':>5} {'cabling s':>9} {'before s':>9} {'÷ 0.5':>7} {'after s':>8} "
        f"{'÷ 1.5':>7} {'lat rd s':>8} {'÷ 1.0':>7} {'not OK':>7}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.nodes:
            one(n, Path(tmp))


if __name__ == "__main__":
    main()
