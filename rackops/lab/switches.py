"""The lab's switches as SSH targets (a lab with ``--racks``): every leaf and spine answers
its NOS's counter commands over SSH, on its own loopback port, as the validation reads a
real switch.

One container on the host's network runs one sshd listening on a port per switch; each port
forces ``hwsim/nos.py <switch>``, which prints the command's output in that NOS's layout from
the real counters of the Linux interfaces that play the switch's ports (host ends of the
nodes' rail veths, the ISL veths) — on the host's network, the container sees them.
``switches.json`` maps every design port to its interface, after the lab's real wiring.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from rackops.lab import spines
from rackops.lab.engine import Engine, LabError, wait_ssh
from rackops.lab.inventory import (
    LEAF_OS,
    RAILS,
    leaf_name,
    netdev,
    spine_name,
    spine_port,
    uplink_port,
)
from rackops.lab.model import LabState
from rackops.lab.wiring import Wiring

CONTAINER_SUFFIX = "switches"
SWITCHES_PER_SSHD = 15
HWSIM = Path(__file__).resolve().parent / "hwsim"


def switch_ports(
    ends: dict[tuple[str, int], str], wires: Wiring, racks: int, ib: bool = False
) -> dict[str, dict[str, Any]]:
    """switch -> its NOS and design port -> the interface playing it, as really wired."""
    out: dict[str, dict[str, Any]] = {}
    for (node, r), end in ends.items():
        plug = wires[node][r]
        os_name = "mlnx-os" if ib else LEAF_OS[plug.rail]
        sw = out.setdefault(plug.leaf, {"os": os_name, "ports": {}})
        sw["ports"][plug.port] = end
        sw.setdefault("peers", {})[plug.port] = [node, netdev(r)]  # its LLDP neighbour
    for r in range(RAILS if racks > 1 else 0):
        spine = out.setdefault(spine_name(r), {"os": "mlnx-os" if ib else "sonic", "ports": {}})
        for k in range(1, racks + 1):
            up_end, down_end = spines.isl_ends(r, k)
            leaf = out.setdefault(
                leaf_name(r, k), {"os": "mlnx-os" if ib else LEAF_OS[r], "ports": {}}
            )
            leaf["ports"][uplink_port(r, ib)] = up_end
            spine["ports"][spine_port(k, ib)] = down_end
            leaf.setdefault("peers", {})[uplink_port(r, ib)] = [spine_name(r), spine_port(k, ib)]
            spine.setdefault("peers", {})[spine_port(k, ib)] = [leaf_name(r, k), uplink_port(r, ib)]
            # an isl_errors fault on this leaf shows at both ends of its uplink
            for sw, port in ((leaf, uplink_port(r, ib)), (spine, spine_port(k, ib))):
                sw.setdefault("isl_faulted", {}).setdefault(leaf_name(r, k), []).append(port)
    return out


def isls(racks: int, ib: bool) -> list[dict[str, str]]:
    """The leaf–spine links as designed (scenario.json's ``fabric.isls``, for hwsim)."""
    return [
        {
            "leaf": leaf_name(r, k),
            "port": uplink_port(r, ib),
            "spine": spine_name(r),
            "spine_port": spine_port(k, ib),
        }
        for r in range(RAILS if racks > 1 else 0)
        for k in range(1, racks + 1)
    ]


def write_ports(
    state: LabState, ends: dict[tuple[str, int], str], wires: Wiring, prio: int
) -> dict[str, dict[str, Any]]:
    """``fabric/switches.json``: every switch's design ports and the interfaces playing them
    (read by the NOS simulator, and by the InfiniBand sweep in the nodes)."""
    conf = switch_ports(ends, wires, state.racks, state.ib)
    for sw in conf.values():
        sw["prio"] = prio
    fabric = state.workdir / "fabric"
    fabric.mkdir(exist_ok=True)
    (fabric / "switches.json").write_text(json.dumps(conf, indent=1, sort_keys=True))
    return conf


def ssh_port(state: LabState, index: int) -> int:
    return 2500 + index


def start(
    engine: Engine,
    state: LabState,
    ends: dict[tuple[str, int], str],
    wires: Wiring,
    prio: int,
) -> dict[str, int]:
    """Write switches.json and the sshd config, start the container; switch -> SSH port."""
    wd = state.workdir
    conf = write_ports(state, ends, wires, prio)
    ports = {name: ssh_port(state, i) for i, name in enumerate(sorted(conf), 1)}
    # OpenSSH listens on at most 16 sockets (MAX_LISTEN_SOCKS): one sshd per 15 switches
    names = sorted(ports)
    confd = wd / "switches-sshd"
    confd.mkdir(exist_ok=True)
    for old in confd.glob("*.conf"):
        old.unlink()
    for i in range(0, len(names), SWITCHES_PER_SSHD):
        group = names[i : i + SWITCHES_PER_SSHD]
        lines = [f"Port {ports[n]}" for n in group]
        lines += [
            "ListenAddress 127.0.0.1",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "PubkeyAuthentication yes",
            "UsePAM yes",  # the ci account has no password: locked, unless PAM decides
            "AuthorizedKeysFile .ssh/authorized_keys",
            f"PidFile /run/sshd-switches-{i}.pid",
            "MaxStartups 100",  # every switch is read at once: 15 connections per sshd
            "LogLevel ERROR",
        ]
        for n in group:
            lines += [
                f"Match LocalPort {ports[n]}",
                f"  ForceCommand python3 /opt/rackops-nos/nos.py {n}",
            ]
        (confd / f"{i:03d}.conf").write_text("\n".join(lines) + "\n")
    container = f"{state.lab}-{CONTAINER_SUFFIX}"
    engine.run(
        [
            "run",
            "-d",
            "--name",
            container,
            "--label",
            f"io.rackops.lab={state.lab}",
            "--network",
            "host",
            "-v",
            f"{wd / 'ssh'}:/lab/ssh:ro",
            "-v",
            f"{HWSIM}:/opt/rackops-nos:ro",
            "-v",
            f"{wd / 'fabric'}:/etc/rackops-nos:ro",
            "-v",
            f"{wd / 'scenario.json'}:/etc/rackops-hwsim/scenario.json:ro",
            "-v",
            f"{confd}:/etc/ssh/rackops-switches:ro",
            "--entrypoint",
            "/bin/sh",
            state.image,
            "-c",
            "/usr/local/sbin/lab-init --keys-only && mkdir -p /run/sshd && "
            "for c in /etc/ssh/rackops-switches/*.conf; do /usr/sbin/sshd -e -f $c || exit 1; "
            "done && exec sleep infinity",
        ]
    )
    deadline = time.monotonic() + 60
    for name, p in ports.items():
        if not wait_ssh(p, deadline):
            raise LabError(
                f"{name}: no SSH banner on 127.0.0.1:{p} within 60 s; see `podman logs {container}`"
            )
    return ports
