"""The lab's spine tier (``rackops lab up --racks N``): the nodes in N racks, each rack its
own leaf per rail, the leaves of one rail joined through that rail's spine.

A rail's leaves are Linux bridges on this machine: rack 1's is the rail's podman network
bridge, every other rack's a bridge made here, and its nodes' rail veths (their host ends)
are moved into it. The spine of rail r is one more bridge, and each leaf reaches it over one
veth pair — an inter-switch link whose two ends are a leaf port and a spine port, so traffic
between racks on a rail really crosses two ISLs and their counters count it. One spine per
rail and one uplink per leaf keep every rail a tree: bridges have no spanning tree to break
a loop. Everything made here is named ``rxl...`` and removed by :func:`down`.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from rackops.lab.engine import LabError
from rackops.lab.wiring import Wiring

PREFIX = "rxl"


def leaf_bridge(rail: int, rack: int) -> str:
    return f"{PREFIX}{rail}l{rack}"


def spine_bridge(rail: int) -> str:
    return f"{PREFIX}{rail}s"


def isl_ends(rail: int, rack: int) -> tuple[str, str]:
    """The ISL of rack ``rack``'s leaf on rail ``rail``: (its leaf end, its spine end)."""
    return f"{PREFIX}{rail}u{rack}", f"{PREFIX}{rail}d{rack}"


def _ip(*argv: str) -> None:
    proc = subprocess.run(["ip", *argv], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise LabError(f"ip {' '.join(argv)} failed: {proc.stderr.strip()}")


def _master(dev: str) -> str | None:
    master = Path("/sys/class/net") / dev / "master"
    return master.resolve().name if master.exists() else None


def leaf_bridges(ends: dict[tuple[str, int], str], wires: Wiring) -> dict[tuple[int, int], str]:
    """(rack, rail) -> the bridge playing that leaf, as the engine made them (one rack)."""
    out: dict[tuple[int, int], str] = {}
    for (node, r), end in ends.items():
        plug = wires[node][r]
        if plug.rail == r and (m := _master(end)):
            out.setdefault((plug.rack, r), m)
    return out


def up(
    ends: dict[tuple[str, int], str], wires: Wiring, racks: int, rails: int, mtu: int
) -> dict[tuple[int, int], str]:
    """Split every rail into its racks' leaves and join them through the rail's spine;
    (rack, rail) -> the bridge of that leaf."""
    bridges = {k: v for k, v in leaf_bridges(ends, wires).items() if k[0] == 1}
    for r in range(rails):
        if (1, r) not in bridges:
            raise LabError(f"rail {r}: no node of rack 1 is on its leaf; cannot build the spine")
        for k in range(2, racks + 1):
            name = leaf_bridge(r, k)
            _ip("link", "add", name, "type", "bridge")
            _ip("link", "set", name, "mtu", str(mtu), "up")
            bridges[(k, r)] = name
    for (node, r), end in sorted(ends.items()):
        plug = wires[node][r]
        if plug.rail == r and plug.rack >= 2:
            _ip("link", "set", "dev", end, "master", bridges[(plug.rack, r)])
    for r in range(rails):
        spine = spine_bridge(r)
        _ip("link", "add", spine, "type", "bridge")
        _ip("link", "set", spine, "mtu", str(mtu), "up")
        for k in range(1, racks + 1):
            up_end, down_end = isl_ends(r, k)
            _ip("link", "add", up_end, "mtu", str(mtu), "type", "veth", "peer", "name", down_end)
            _ip("link", "set", up_end, "mtu", str(mtu))
            _ip("link", "set", down_end, "mtu", str(mtu))
            _ip("link", "set", "dev", up_end, "master", bridges[(k, r)])
            _ip("link", "set", "dev", down_end, "master", spine)
            _ip("link", "set", up_end, "up")
            _ip("link", "set", down_end, "up")
    return bridges


def down() -> list[str]:
    """Remove every link this module made (veths go with either end)."""
    removed = []
    for dev in sorted(Path("/sys/class/net").glob(f"{PREFIX}*")):
        if not dev.exists():
            continue  # the peer of a veth already deleted
        proc = subprocess.run(
            ["ip", "link", "del", dev.name], capture_output=True, text=True, check=False
        )
        if proc.returncode == 0:
            removed.append(f"link {dev.name}")
    return removed
