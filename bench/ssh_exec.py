"""One command on every lab target: rackops' paramiko executor against pyinfra's exec.

    .venv/bin/pip install 'pyinfra>=3,<4'   # not a rackops dependency: for this comparison
    sudo .venv/bin/python bench/ssh_exec.py --nodes 16

Brings up a lab of N targets and times `hostname` on all of them, cold (new connections)
and warm (reused), with the executor `rackops validate` uses and with `pyinfra … exec`
(fresh process, as pyinfra runs). This is the measurement behind the choice in
docs/design.md, next to the features pyinfra's API lacks (streaming a running command's
output, killing the remote process on timeout).
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
from rackops.validate.runner import targets_from_inventory
from rackops.validate.ssh import SshExecutor

BIN = Path(sys.executable).parent


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=16)
    n = ap.parse_args().nodes
    with tempfile.TemporaryDirectory() as tmp:
        inv = Path(tmp) / "inv"
        state = lab.up(nodes=n, inventory=str(inv))
        try:
            result = load_inventory(inv)
            cluster = result.raise_for_errors()
            targets = list(targets_from_inventory(result, cluster).values())
            ex = SshExecutor(accept_new_host_keys=True)
            times = []
            for _ in range(2):
                t0 = time.monotonic()
                with ThreadPoolExecutor(max_workers=n) as pool:
                    outs = list(pool.map(lambda t: ex.run(t, ["hostname"], 30), targets))
                times.append(time.monotonic() - t0)
                assert all(o.rc == 0 for o in outs)
            ex.close()
            pyinv = Path(tmp) / "pyinfra_inv.py"
            hosts = ", ".join(
                f'("{t.name}", {{"ssh_hostname": "127.0.0.1", "ssh_port": {t.port}, '
                f'"ssh_user": "{t.user}", "ssh_key": "{state.key}", '
                f'"ssh_known_hosts_file": "/dev/null", "ssh_strict_host_key_checking": "no"}})'
                for t in targets
            )
            pyinv.write_text(f"nodes = [{hosts}]\n")
            t0 = time.monotonic()
            proc = subprocess.run(
                [
                    str(BIN / "pyinfra"),
                    str(pyinv),
                    "-y",
                    "--parallel",
                    str(n),
                    "exec",
                    "--",
                    "hostname",
                ],
                capture_output=True,
                text=True,
                check=False,
            )
            py_s = time.monotonic() - t0
        finally:
            lab.down()
    print(
        f"{n} targets: rackops executor cold {times[0]:.2f} s, warm {times[1]:.2f} s; "
        f"pyinfra exec {py_s:.2f} s (rc {proc.returncode})"
    )


if __name__ == "__main__":
    main()
