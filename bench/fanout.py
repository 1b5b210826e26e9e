"""Fan-out of `rackops validate` against real SSH targets (the lab), compared with running
the same commands through `ansible -m command`.

    sudo .venv/bin/python bench/fanout.py --nodes 8 16 32

Per size: bring up a lab whose tools take realistic times (scenario `hardware.tool_seconds`:
dcgmi 20 s, nvidia-smi 1 s, ibstat/ofed_info/show_gids 0.5 s, ib_write_bw 3 s), install the
stand-in stack, then time
  * the per-node stage (7 checks per node, all nodes at once) against the slowest tool's
    own run time (20 s);
  * the same 7 commands as 7 `ansible gpu_nodes -m command -f N` calls (one per check, as a
    playbook of 7 command tasks would run them);
  * one pair round (every node paired, all 8 rails at once) against ib_write_bw's 3 s.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rackops import lab
from rackops.inventory import load_inventory
from rackops.profiles import load_profile
from rackops.suites import Checks, DcgmParams, PerftestBwParams, Suite
from rackops.validate.plan import make_plan
from rackops.validate.rundir import RunDir
from rackops.validate.runner import Runner, targets_from_inventory
from rackops.validate.ssh import SshExecutor

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
SCENARIO = """hardware:
  tool_seconds: {dcgmi: 20, nvidia-smi: 1, ibstat: 0.5, ofed_info: 0.5, show_gids: 0.5,
                 ib_write_bw: 3}
"""
SUITE = Suite(
    name="bench",
    description="fan-out",
    budget_minutes=10,
    checks=Checks(
        dcgm=DcgmParams(level=1, timeout_s=60),
        perftest_bw=PerftestBwParams(message_size_bytes=65536, duration_s=3, qps=1, timeout_s=60),
    ),
)


def one(n: int, tmp: Path) -> None:
    (tmp / "s.yaml").write_text(SCENARIO)
    inv = tmp / f"inv{n}"
    t0 = time.monotonic()
    lab.up(nodes=n, scenario=str(tmp / "s.yaml"), inventory=str(inv))
    up_s = time.monotonic() - t0
    try:
        subprocess.run(
            [
                str(BIN / "ansible-playbook"),
                "-i",
                str(inv),
                "-f",
                str(n),
                "playbooks/lab-hardware.yml",
            ],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        result = load_inventory(inv)
        cluster = result.raise_for_errors()
        plan = make_plan(cluster, SUITE)
        profiles = {"h100-sxm-roce400": load_profile("h100-sxm-roce400").profile}
        executor = SshExecutor(accept_new_host_keys=True)
        runner = Runner(
            cluster,
            SUITE,
            profiles,
            targets_from_inventory(result, cluster),
            executor,
            RunDir(tmp / f"run{n}"),
            concurrency=64,
            lab=True,
            progress=lambda _m: None,
        )
        t1 = time.monotonic()
        runner.node_stage(plan, set())
        stage_s = time.monotonic() - t1
        first = plan.rounds[0]
        t2 = time.monotonic()
        runner.pair_stage(
            type(plan)(plan.nodes, (), plan.pairing, [first], plan.rails, (), 0), set(), set()
        )
        round_s = time.monotonic() - t2
        executor.close()
        t3 = time.monotonic()
        for check in plan.node_checks:
            subprocess.run(
                [
                    str(BIN / "ansible"),
                    "gpu_nodes",
                    "-i",
                    str(inv),
                    "-f",
                    str(n),
                    "-m",
                    "ansible.builtin.command",
                    "-a",
                    " ".join(check.argv),
                ],
                cwd=ROOT,
                capture_output=True,
                check=False,
            )
        ansible_s = time.monotonic() - t3
    finally:
        lab.down()
    print(
        f"{n:>5} {up_s:>7.1f} {stage_s:>9.1f} {stage_s / 20:>9.2f} {ansible_s:>10.1f} "
        f"{ansible_s / stage_s:>8.1f} {round_s:>9.1f} {round_s - 3:>10.1f}",
        flush=True,
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, nargs="+", default=[8, 16, 32])
    args = ap.parse_args()
    print(
        f"{'nodes':>5} {'up s':>7} {'stage s':>9} {'÷ 20 s':>9} {'ansible s':>10} "
        f"{'speedup':>8} {'round s':>9} {'overhead':>10}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.nodes:
            one(n, Path(tmp))


if __name__ == "__main__":
    main()
