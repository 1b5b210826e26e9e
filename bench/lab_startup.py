"""How long the lab takes to come up and go down, once the image is cached.

    sudo .venv/bin/python bench/lab_startup.py [--nodes 1 4 8] [--repeat 3] [--engine nspawn]

Prints one row per size: median seconds until every target answers SSH (the figure
`rackops lab up` logs), whole `up` wall time, and `down` wall time. Needs a cached image
(run `rackops lab up` once). Machines here are noisy: compare ratios within one run.
"""

from __future__ import annotations

import argparse
import re
import statistics
import time

from rackops import lab


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, nargs="+", default=[1, 4, 8])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--engine", choices=("podman", "nspawn"), default="podman")
    args = ap.parse_args()
    print(
        f"{args.engine}: {'nodes':>5} {'ssh ready s':>12} {'up s':>8} {'down s':>8}"
        f"   (median of {args.repeat})"
    )
    for n in args.nodes:
        ready, ups, downs = [], [], []
        for _ in range(args.repeat):
            log: list[str] = []
            t0 = time.monotonic()
            lab.up(nodes=n, engine_name=args.engine, inventory="/tmp/rackops-bench-inv", log=log)
            ups.append(time.monotonic() - t0)
            m = next(re.search(r"in ([\d.]+) s", line) for line in log if "answering" in line)
            assert m is not None
            ready.append(float(m.group(1)))
            t1 = time.monotonic()
            lab.down()
            downs.append(time.monotonic() - t1)
        print(
            f"{n:>5} {statistics.median(ready):>12.1f} {statistics.median(ups):>8.1f} "
            f"{statistics.median(downs):>8.1f}"
        )


if __name__ == "__main__":
    main()
