"""The VM lab against a container engine: lab up, the host-tuning roles (converge, second
run, check mode), and validate, wall time of each, on 2 nodes.

    sudo .venv/bin/python bench/vm_lab.py --engine vm
    sudo .venv/bin/python bench/vm_lab.py --engine nspawn
    sudo .venv/bin/python bench/vm_lab.py --engine vagrant   # the Vagrantfile, rackops box

On vagrant, "lab up" is `vagrant up` of both VMs (the box built and added before, untimed:
`rackops lab box`), and the inventory is inventories/vagrant.

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
from rackops.lab.vagrantbox import add_box, box_name, build_box  # noqa: E402
from rackops.lab.vm import accel  # noqa: E402

TAGS = "net_mtu,hugepages,irq_affinity"


def timed(argv: list[str]) -> tuple[float, int]:
    began = time.monotonic()
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False)
    return time.monotonic() - began, proc.returncode


def vagrant(*args: str, tmp: Path, check: bool = True) -> None:
    env = {
        "PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
        "HOME": str(Path.home()),
        "VAGRANT_CHECKPOINT_DISABLE": "1",
        "VAGRANT_DEFAULT_PROVIDER": "libvirt",
        "VAGRANT_DOTFILE_PATH": str(tmp / ".vagrant"),
    }
    proc = subprocess.run(["vagrant", *args], cwd=ROOT, env=env, capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise SystemExit(f"vagrant {args[0]} failed: {(proc.stdout + proc.stderr)[-2000:]}")


def up(engine: str, tmp: Path) -> tuple[Path, float]:
    """Bring the engine's two nodes up: their inventory, and how long that took."""
    if engine == "vagrant":
        subprocess.run(["bash", "scripts/libvirt-host", "up"], cwd=ROOT, check=True)
        log: list[str] = []
        add_box(
            build_box(lab.lab._cache_dir(tmp), "bookworm", log, accel()), box_name("bookworm"), log
        )
        began = time.monotonic()
        vagrant("up", "--provider=libvirt", tmp=tmp)
        return ROOT / "inventories" / "vagrant", time.monotonic() - began
    inv = tmp / "inv"
    began = time.monotonic()
    lab.up(nodes=2, engine_name=engine, workdir=str(tmp / "lab"), inventory=str(inv))
    up_s = time.monotonic() - began
    if engine == "nspawn":  # the stand-in hardware first, as the lab tests do
        subprocess.run(
            [str(BIN / "ansible-playbook"), "-i", str(inv), "playbooks/lab-hardware.yml"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        )
    return inv, up_s


def down(engine: str, tmp: Path) -> None:
    if engine == "vagrant":
        try:
            vagrant("destroy", "-f", tmp=tmp, check=False)
        finally:
            subprocess.run(["bash", "scripts/libvirt-host", "down"], cwd=ROOT, check=False)
    else:
        lab.down(workdir=str(tmp / "lab"))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--engine", choices=("vm", "nspawn", "vagrant"), required=True)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        try:
            inv, up_s = up(args.engine, tmp)
            prov = [str(BIN / "rackops"), "provision", "-i", str(inv), "--", "--tags", TAGS]
            first, rc1 = timed(prov)
            second, rc2 = timed(prov)
            check, rc3 = timed([*prov[:4], "--check", *prov[4:]])
            suite = "quick" if args.engine == "nspawn" else "vm"
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
                    str(tmp / "run"),
                ]
            )
        finally:
            down(args.engine, tmp)
    print("| engine | lab up (s) | converge (s) | second run (s) | check mode (s) | validate (s) |")
    print(
        f"| {args.engine} | {up_s:.0f} | {first:.0f} (rc {rc1}) | {second:.0f} (rc {rc2}) "
        f"| {check:.0f} (rc {rc3}) | {val:.0f} (exit {rc4}) |"
    )


if __name__ == "__main__":
    main()
