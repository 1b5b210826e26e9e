"""The VM lab against a container engine: lab up, the host-tuning roles (converge, second
run, check mode), and validate, wall time of each, on 2 nodes.

    sudo .venv/bin/python bench/vm_lab.py --engine vm
    sudo .venv/bin/python bench/vm_lab.py --engine nspawn

The same roles run on both (net_mtu, hugepages, irq_affinity): on the VMs against their own
kernels (with the hugepage role's reboot), on nspawn against the simulated files. validate
runs the suite each engine has: `vm` (real ibstat and perftest over Soft-RoCE) on the VMs,
`quick` on nspawn (the simulated tools), so the last column compares what
each engine answers, not the same work. Prints one row per engine.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
sys.path.insert(0, str(ROOT))

from rackops import lab  # noqa: E402

TAGS = "net_mtu,hugepages,irq_affinity"


def timed(argv: list[str]) -> tuple[float, int]:
    began = time.monotonic()
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False)
    return time.monotonic() - began, proc.returncode


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--engine", choices=("vm", "nspawn"), required=True)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        wd, inv = Path(tmp) / "lab", Path(tmp) / "inv"
        began = time.monotonic()
        lab.up(nodes=2, engine_name=args.engine, workdir=str(wd), inventory=str(inv))
        up_s = time.monotonic() - began
        try:
            prov = [str(BIN / "rackops"), "provision", "-i", str(inv)]
            if args.engine == "nspawn":  # the stand-in hardware first, as the lab tests do
                subprocess.run(
                    [str(BIN / "ansible-playbook"), "-i", str(inv), "playbooks/lab-hardware.yml"],
                    cwd=ROOT,
                    capture_output=True,
                    check=True,
                )
            prov += ["--", "--tags", TAGS]
            first, rc1 = timed(prov)
            second, rc2 = timed(prov)
            check, rc3 = timed([*prov[:4], "--check", *prov[4:]])
            suite = "vm" if args.engine == "vm" else "quick"
            val, rc4 = timed(
                [
                    str(BIN / "rackops"),
                    "validate",
                    "-i",
                    str(inv),
                    "--suite",
                    suite,
                    "--concurrency",
                    "1",
                    "--accept-new-host-keys",
                    "--run-dir",
                    str(Path(tmp) / "run"),
                ]
            )
        finally:
            lab.down(workdir=str(wd))
    print("| engine | lab up (s) | converge (s) | second run (s) | check mode (s) | validate (s) |")
    print(
        f"| {args.engine} | {up_s:.0f} | {first:.0f} (rc {rc1}) | {second:.0f} (rc {rc2}) "
        f"| {check:.0f} (rc {rc3}) | {val:.0f} (exit {rc4}) |"
    )


if __name__ == "__main__":
    main()
