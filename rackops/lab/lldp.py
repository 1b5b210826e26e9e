"""The leaf side of LLDP in the lab: one real ``lldpd`` per leaf switch.

The rail bridges play the leaf switches; their ports are the host ends of the targets'
rail veths. For each leaf, one lldpd runs on this machine on exactly those host ends, with
the leaf's name as its system name and, on every port, the port name the wiring says
(``portidsubtype local <name>``), sending every second. The targets run their own lldpd
(installed in the image), so ``lldpctl -f json`` on a target shows the leaf and port its
cable is really in. Linux bridges do not forward LLDP's link-local group address, so a
target hears only its own leaf port, as on a real switch.

Every daemon has its own control socket and pid file under ``<workdir>/lldp/``; ``stop``
terminates them all.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from rackops.lab.engine import LabError
from rackops.lab.wiring import Wiring

TX_INTERVAL_S = 1


def start(workdir: Path, ends: dict[tuple[str, int], str], wires: Wiring) -> list[str]:
    """``ends``: (node, rail of its HCA) -> host end of that veth; returns the leaves."""
    lldpd = shutil.which("lldpd")
    if lldpd is None:
        raise LabError(
            "the lab's leaf switches speak LLDP with the real lldpd: apt-get install lldpd "
            "(scripts/lab-deps does)"
        )
    d = workdir / "lldp"
    d.mkdir(parents=True, exist_ok=True)
    per_leaf: dict[str, list[tuple[str, str]]] = {}
    for (node, rail), host_end in sorted(ends.items()):
        plug = wires[node][rail]
        per_leaf.setdefault(plug.leaf, []).append((host_end, plug.port))
    for leaf, ports in sorted(per_leaf.items()):
        conf = [
            f"configure system hostname {leaf}",
            f'configure system description "rackops lab leaf switch {leaf}"',
            "configure system ip management pattern 198.19.1.*",
            f"configure lldp tx-interval {TX_INTERVAL_S}",
        ]
        conf += [
            f'configure ports {ifname} lldp portidsubtype local {port} description "{port}"'
            for ifname, port in ports
        ]
        (d / f"{leaf}.conf").write_text("\n".join(conf) + "\n")
        proc = subprocess.run(
            [
                lldpd,
                "-u",
                str(d / f"{leaf}.sock"),
                "-p",
                str(d / f"{leaf}.pid"),
                "-I",
                ",".join(i for i, _ in ports),
                "-O",
                str(d / f"{leaf}.conf"),
            ],
            capture_output=True,
            text=True,
            check=False,
            timeout=30,
        )
        if proc.returncode != 0:
            stop(workdir)
            raise LabError(f"lldpd for {leaf} did not start: {proc.stderr.strip()}")
    return sorted(per_leaf)


def stop(workdir: Path) -> list[str]:
    """Terminate every leaf lldpd of this lab; returns what was stopped."""
    d = workdir / "lldp"
    stopped = []
    pids = []
    for pidfile in sorted(d.glob("*.pid")) if d.is_dir() else []:
        try:
            pid = int(pidfile.read_text().strip())
            os.kill(pid, signal.SIGTERM)
            pids.append(pid)
            stopped.append(f"lldpd {pidfile.stem}")
        except (ValueError, ProcessLookupError, PermissionError):
            pass
        pidfile.unlink(missing_ok=True)
    deadline = time.monotonic() + 10
    while pids and time.monotonic() < deadline:
        pids = [p for p in pids if Path(f"/proc/{p}").exists() and not _zombie(p)]
        time.sleep(0.05)
    if d.is_dir():
        shutil.rmtree(d, ignore_errors=True)
    return stopped


def _zombie(pid: int) -> bool:
    try:
        return ") Z " in Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
