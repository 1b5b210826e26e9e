"""What a lab fault rack costs, stage by stage: the time CI spends per lab test.

    sudo .venv/bin/python bench/fault_rack.py --nodes 8   # the physical fault rack
    sudo .venv/bin/python bench/fault_rack.py --nodes 8 --launcher slurm \
        --scenario validators/scenarios/faults.yaml --pairing full

Brings up a podman lab of that size and scenario, then times, each as the tests run it:
``playbooks/lab-hardware.yml`` (the stand-in stack), the host tuning
(``playbooks/provision.yml --tags net_mtu,hugepages,irq_affinity,roce_host_qos,nvidia_imex``), a
second tuning run (nothing to change: the cost of Ansible's per-task round trips alone) and
``rackops validate --suite lab --pairing sample`` (``--launcher slurm``: on an nspawn
lab with a real Slurm, validated through it); then takes the lab down. Prints one
Markdown row, and the slowest tasks of the first tuning run (Ansible's profile_tasks).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rackops import lab

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
TUNING = "net_mtu,hugepages,irq_affinity,roce_host_qos,nvidia_imex"  # as tests/labkit.py


def timed(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, str]:
    started = time.monotonic()
    proc = subprocess.run(
        argv, cwd=ROOT, capture_output=True, text=True, env=env, timeout=3600, check=False
    )
    if proc.returncode not in (0, 2, 4):  # validate rejects a fault rack (2)
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}:\n{proc.stdout[-2000:]}")
    return time.monotonic() - started, proc.stdout


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", type=int, default=8)
    ap.add_argument("--scenario", default="validators/scenarios/physical.yaml")
    ap.add_argument("--launcher", choices=("ssh", "slurm"), default="ssh")
    ap.add_argument("--pairing", choices=("full", "sample"), default="sample")
    args = ap.parse_args()
    slurm = args.launcher == "slurm"
    with tempfile.TemporaryDirectory() as tmp:
        inv = Path(tmp) / "inv"
        started = time.monotonic()
        lab.up(
            nodes=args.nodes,
            scenario=str(ROOT / args.scenario),
            inventory=str(inv),
            engine_name="nspawn" if slurm else "podman",
            slurm=slurm,
        )
        up_s = time.monotonic() - started
        try:
            playbook = [str(BIN / "ansible-playbook"), "-i", str(inv)]
            hw_s, _ = timed([*playbook, "playbooks/lab-hardware.yml"])
            env = {**os.environ, "ANSIBLE_CALLBACKS_ENABLED": "ansible.posix.profile_tasks"}
            tune_s, out = timed([*playbook, "playbooks/provision.yml", "--tags", TUNING], env)
            again_s, _ = timed([*playbook, "playbooks/provision.yml", "--tags", TUNING])
            val_s, _ = timed(
                [
                    str(BIN / "rackops"),
                    "validate",
                    "-i",
                    str(inv),
                    "--suite",
                    "lab",
                    "--accept-new-host-keys",
                    "--pairing",
                    args.pairing,
                    "--launcher",
                    args.launcher,
                    "--run-dir",
                    str(Path(tmp) / "run"),
                ]
            )
            report = json.loads((Path(tmp) / "run" / "report.json").read_text())
        finally:
            lab.down()
    print(f"verdict {report['verdict']}: " + "; ".join(c["where"] for c in report["culprits"]))
    print(
        "| nodes | launcher | lab up (s) | stand-in stack (s) | tuning (s) | tuning again (s) "
        "| validate (s) |"
    )
    print("| ---: | --- | ---: | ---: | ---: | ---: | ---: |")
    print(
        f"| {args.nodes} | {args.launcher} | {up_s:.0f} | {hw_s:.0f} | {tune_s:.0f} "
        f"| {again_s:.0f} | {val_s:.0f} |"
    )
    recap = out[out.find("TASKS RECAP") :]
    print("\nslowest tasks of the first tuning run:")
    for line in re.findall(r"^(\S.*-{3,} \d+\.\d+s)$", recap, re.M)[:8]:
        print("  " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
