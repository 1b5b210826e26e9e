"""What the controller pays per node: SSH launcher against the Slurm launcher, in the lab.

    sudo .venv/bin/python bench/controller_cost.py --nodes 8 16 32 64

Per size: bring up an nspawn lab with Slurm (`lab up --engine nspawn --slurm`), then run the
same per-node stage twice, once per launcher (fs.inotify.max_user_instances is raised for
the run, as 64 systemd targets need, and restored after): 6 checks per node, each a command
that takes 1 s and prints 20 KB (a tool's typical output), all nodes at once (concurrency
32). Measured
in this process (the controller): CPU seconds (its own, plus its srun children's), peak
RSS growth, and the most TCP connections it held at once (sockets in /proc/self/fd,
sampled every 50 ms). The table in bench/README.md is this script's output.
"""

from __future__ import annotations

import argparse
import contextlib
import resource
import tempfile
import threading
import time
from pathlib import Path

from rackops import lab
from rackops.inventory import load_inventory
from rackops.lab.model import lab_workdir
from rackops.scheduler.slurm import SlurmSettings, allocate, node_states, slurm_env
from rackops.validate.executor import Executor, Target
from rackops.validate.slurm import SlurmExecutor
from rackops.validate.ssh import SshExecutor

CHECKS = 6
CMD = ["sh", "-c", "sleep 1; head -c 20000 /dev/zero | tr '\\0' x"]


def sockets() -> int:
    n = 0
    for fd in Path("/proc/self/fd").iterdir():
        with contextlib.suppress(OSError):
            n += str(fd.readlink()).startswith("socket:")
    return n


def rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def measure(ex: Executor, targets: list[Target]) -> dict[str, float]:
    from concurrent.futures import ThreadPoolExecutor

    peak = [sockets()]
    base_sockets = peak[0]
    rss = [rss_kb()]
    rss0 = rss[0]
    threads = [threading.active_count()]
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], sockets())
            rss[0] = max(rss[0], rss_kb())
            threads[0] = max(threads[0], threading.active_count())
            time.sleep(0.05)

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    self0 = resource.getrusage(resource.RUSAGE_SELF)
    kids0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    batch = max(1, ex.batch)
    items = [targets[i : i + batch] for _ in range(CHECKS) for i in range(0, len(targets), batch)]
    bad = 0
    with ThreadPoolExecutor(max_workers=32) as pool:
        for results in pool.map(lambda ts: ex.run_many([(x, CMD) for x in ts], 30), items):
            bad += sum(r.rc != 0 or len(r.stdout) < 20000 for r in results)
    wall = time.monotonic() - started
    stop.set()
    t.join()
    self1 = resource.getrusage(resource.RUSAGE_SELF)
    kids1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (self1.ru_utime + self1.ru_stime) - (self0.ru_utime + self0.ru_stime)
    cpu_kids = (kids1.ru_utime + kids1.ru_stime) - (kids0.ru_utime + kids0.ru_stime)
    return {
        "wall_s": wall,
        "cpu_s": cpu + cpu_kids,
        "rss_mb": (rss[0] - rss0) / 1024,  # the controller process (srun children apart)
        "sockets": peak[0] - base_sockets,
        "threads": threads[0],
        "failed": bad,
    }


INOTIFY = Path("/proc/sys/fs/inotify/max_user_instances")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, nargs="+", default=[8, 16, 32, 64])
    args = ap.parse_args()
    # each nspawn target's systemd takes inotify instances; the default 128 holds about 27
    # targets. Raised for this benchmark only, and put back at the end.
    before = INOTIFY.read_text().strip()
    INOTIFY.write_text(str(max(int(before), 32 * max(args.nodes))))
    try:
        run(args.nodes)
    finally:
        INOTIFY.write_text(before)


def run(sizes: list[int]) -> None:
    rows = []
    for n in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            inv = Path(tmp) / "inv"
            lab.up(nodes=n, engine_name="nspawn", slurm=True, inventory=str(inv))
            try:
                result = load_inventory(str(inv))
                cluster = result.raise_for_errors()
                from rackops.validate.runner import targets_from_inventory

                targets = list(targets_from_inventory(result, cluster).values())
                ssh = SshExecutor(accept_new_host_keys=True)
                s = measure(ssh, targets)
                ssh.close()
                env = slurm_env(str(lab_workdir(None) / "slurm" / "etc" / "slurm.conf"))
                names = [t.name for t in targets]
                settings = SlurmSettings(
                    export="PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
                )
                alloc = allocate(names, settings, env)
                sl = SlurmExecutor(alloc, settings, env, node_states(names, env))
                m = measure(sl, targets)
                sl.close()
            finally:
                lab.down()
        rows.append((n, s, m))
        print(
            f"{n:>3} nodes | ssh: {s['wall_s']:.1f} s wall, {s['cpu_s']:.2f} CPU s "
            f"({s['cpu_s'] / n * 1000:.0f} ms/node), +{s['rss_mb']:.0f} MB RSS, "
            f"{s['sockets']:.0f} sockets, {s['threads']:.0f} threads, {s['failed']:.0f} failed | "
            f"slurm: {m['wall_s']:.1f} s wall, {m['cpu_s']:.2f} CPU s "
            f"({m['cpu_s'] / n * 1000:.0f} ms/node), +{m['rss_mb']:.0f} MB RSS, "
            f"{m['sockets']:.0f} sockets, {m['threads']:.0f} threads, {m['failed']:.0f} failed",
            flush=True,
        )


if __name__ == "__main__":
    main()
