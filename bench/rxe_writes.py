"""How often ib_write_bw over Soft-RoCE in the VM lab ends in a transport error, by message
size: multi-packet writes (64 KiB: 16 packets of rxe's 4096-byte MTU) against one-packet
writes (4 KiB), on the same two VMs, rail by rail.

    sudo .venv/bin/python bench/rxe_writes.py --runs 40

Brings up the VM lab (2 nodes, TCG), sets the fabric MTU with the net_mtu role (9000, so rxe's
active MTU is 4096), then runs ``ib_write_bw -s SIZE -n 2000`` the vm suite's way (server on
node02, client on node01) RUNS times per size, alternating the sizes, and counts the runs
whose client says ``Completion with error`` / ``Failed status N``; takes the lab down. Prints
one Markdown row per size.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
sys.path.insert(0, str(ROOT))

from rackops import lab  # noqa: E402

SIZES = (65536, 4096)


def ssh(cfg: Path, node: str, cmd: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["ssh", "-F", str(cfg), node, cmd],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def one(cfg: Path, server_ip: str, dev: str, size: int, port: int) -> str:
    """One bandwidth test; "ok", or the client's failure line."""
    opts = f"-d {dev} -s {size} -n 2000 -q 1 -F --report_gbits -p {port}"
    server = subprocess.Popen(
        ["ssh", "-F", str(cfg), "node02", f"timeout 90 ib_write_bw {opts}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    time.sleep(2.0)  # the server listening before its client connects
    client = ssh(cfg, "node01", f"timeout 80 ib_write_bw {opts} {server_ip}", 100)
    try:
        server.wait(100)
    except subprocess.TimeoutExpired:
        server.kill()
    said = client.stdout + client.stderr
    failed = re.search(r"Failed status (\d+)", said)
    if failed:
        return f"status {failed.group(1)}"
    if client.returncode != 0:
        return f"exit {client.returncode}"
    return "ok"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=40)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        inv = tmp / "inv"
        state = lab.up(nodes=2, engine_name="vm", workdir=str(tmp / "lab"), inventory=str(inv))
        try:
            prov = [str(BIN / "rackops"), "provision", "-i", str(inv), "--", "--tags", "net_mtu"]
            subprocess.run(prov, cwd=ROOT, capture_output=True, check=True)
            cfg = tmp / "lab" / "ssh_config"
            server = next(n for n in state.nodes if n.name == "node02")
            results: dict[tuple[int, int], Counter[str]] = {}
            seconds: dict[int, float] = dict.fromkeys(SIZES, 0.0)
            port = 18515
            for i in range(args.runs):
                for size in SIZES:
                    for rail in (0, 1):
                        port += 1
                        began = time.monotonic()
                        said = one(cfg, server.rails[rail], f"rxe{rail}", size, port)
                        seconds[size] += time.monotonic() - began
                        results.setdefault((size, rail), Counter())[said] += 1
                print(f"round {i + 1}: {dict(results)}", file=sys.stderr, flush=True)
        finally:
            lab.down(workdir=str(tmp / "lab"))
    print("| message | rail | runs | transport errors | other | mean s per run |")
    print("| ---: | ---: | ---: | --- | --- | ---: |")
    for (size, rail), said in sorted(results.items(), reverse=True):
        errors = {k: v for k, v in said.items() if k.startswith("status")}
        other = {k: v for k, v in said.items() if k != "ok" and not k.startswith("status")}
        print(
            f"| {size} B | {rail} | {sum(said.values())} | {errors or 0} | {other or 0} "
            f"| {seconds[size] / (2 * args.runs):.1f} |"
        )


if __name__ == "__main__":
    main()
