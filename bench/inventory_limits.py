"""What each inventory limit costs when it is hit: wall time and peak memory of `rackops lint`
on the example rack with one hostile addition, each in a fresh process.

    .venv/bin/python bench/inventory_limits.py

Prints a Markdown table (bench/README.md keeps the last one)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "inventories" / "example-roce"

BOMB = "".join(
    f"{c}: &{c} [{','.join([f'*{p}'] * 9) if p else ','.join(['x'] * 9)}]\n"
    for p, c in zip(["", *"abcdefgh"], "abcdefghi", strict=False)
)


def _write(rel: str, text: str) -> Callable[[Path], None]:
    def plant(inv: Path) -> None:
        (inv / rel).write_text(text)

    return plant


def _tuning(template: str) -> Callable[[Path], None]:
    def plant(inv: Path) -> None:
        with (inv / "group_vars/gpu_nodes/tuning.yml").open("a") as fh:
            fh.write('rackops_host_qos: {mtu: "{{ site_mtu }}"}\n')
            fh.write(f"site_mtu: {template!r}\n")

    return plant


def _pad(mib: float) -> str:
    return "p: '" + "x" * int(mib * 2**20) + "'\n"


LOOPS = "{% for i in range(99999) %}{% for j in range(99999) %}{% endfor %}{% endfor %}"
CASES: list[tuple[str, Callable[[Path], None]]] = [
    ("the example, untouched", lambda inv: None),
    (f"YAML alias bomb ({len(BOMB)} bytes, 9^9 values)", _write("group_vars/all/b.yml", BOMB)),
    (
        "file of 8 MiB − 1 KiB (read)",
        _write("group_vars/all/big.yml", "p: '" + "x" * (8 * 2**20 - 1024) + "'\n"),
    ),
    (
        "file of 9 MiB (refused)",
        _write("group_vars/all/big.yml", "p: '" + "x" * (9 * 2**20) + "'\n"),
    ),
    ("template: 'x' * 10**10", _tuning("{{ 'x' * 10000000000 }}")),
    (
        "template: nested loops 10^5 × 10^5",
        _tuning("{% for i in range(99999) %}{% for j in range(99999) %}{% endfor %}{% endfor %}"),
    ),
]


def run(plant: Callable[[Path], None]) -> tuple[float, float, int]:
    with tempfile.TemporaryDirectory() as tmp:
        inv = Path(tmp) / "inv"
        shutil.copytree(EXAMPLE, inv)
        plant(inv)
        started = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "rackops", "lint", "-i", str(inv)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=ROOT,
        )
        _, status, usage = os.wait4(proc.pid, 0)  # this child's own peak, not the session's
        wall = time.perf_counter() - started
        return wall, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


def main() -> None:
    print("| input | exit | wall (s) | peak RSS (MiB) |")
    print("| --- | ---: | ---: | ---: |")
    for name, plant in CASES:
        wall, peak, rc = run(plant)
        print(f"| {name} | {rc} | {wall:.2f} | {peak:.0f} |")


if __name__ == "__main__":
    main()
