"""A designed two-tier InfiniBand fabric of any size, synthetic: its inventory, and its
sweep's files and switch counters as the lab's simulator prints them, with faults planted;
for what no lab runs (a test at a few hundred nodes, ``bench/scale_run.py`` at 4,096). The
run directory and the controller's steps over it are ``rackops.validate.synthscale``.

The design is rail-optimised in two tiers of 64-port NDR switches: 32 nodes a leaf group,
one leaf a rail in each group (32 host ports, 32 uplinks), and on each rail as many spines
as fill their 64 ports with those uplinks. 4,096 nodes × 8 rails: 1,024 leaves, 512
spines, 98,304 switch ports, 32,768 ISLs.

What the controller reads is printed by the lab's own simulator in the real formats
(``rackops.lab.hwsim``: the console, the SM file, the net_dump, ``perfquery -x -l`` of
every switch). Faults are planted by kind; ``faults`` says what each must be named as.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rackops.lab.hwsim import ibdiag as _ibdiag
from rackops.lab.hwsim import phy as _phy
from rackops.scale import Size

# hwsim is untyped (it runs on the targets' own python3): its printers, called as they are
ibdiag: Any = _ibdiag
phy: Any = _phy

RADIX = 64  # an NDR leaf or spine (Quantum-2 QM9700: 64 ports of 400G)
LEAF_HOSTS = 32  # a leaf's host ports; the other 32 are its uplinks
RAILS = 8


def port_name(port: int) -> str:
    """An IB switch port by its number, as MLNX-OS names it (cage/split: 64 ports in 32
    dual-port OSFP cages; ibdiagnet's port 2c-2+s)."""
    return f"{(port + 1) // 2}/{(port - 1) % 2 + 1}"


LEAF_PORTS = [port_name(p) for p in range(1, RADIX + 1)]
PROFILE = "h100-sxm-ndr"


def node_name(i: int) -> str:
    """The ``i``-th node (0-based): node0001 ..."""
    return f"node{i + 1:04d}"


def leaf_port(node: str, rail: int) -> tuple[str, str]:
    """Where a node's HCA of a rail is cabled: 32 nodes a leaf, one leaf a rail each
    (node0001..node0032 on leaf group 0); the leaf's port by its number."""
    n = int(node[4:]) - 1
    return leaf_name(n // LEAF_HOSTS, rail), str(n % LEAF_HOSTS + 1)


def leaf_name(group: int, rail: int) -> str:
    return f"leaf{rail}-{group}"


def spine_name(rail: int, index: int) -> str:
    return f"spine{rail}-{index}"


@dataclass
class Design:
    """Who is cabled where: host plugs and ISLs, with faults planted in what is cabled."""

    nodes: int
    rails: int = RAILS
    groups: int = 0
    spines_per_rail: int = 0
    # (leaf, leaf port, spine, spine port), as designed
    isls: list[tuple[str, int, str, int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.groups = -(-self.nodes // LEAF_HOSTS)
        uplinks = self.groups * LEAF_HOSTS  # a rail's uplinks: 32 a leaf
        self.spines_per_rail = max(1, uplinks // RADIX)
        for rail in range(self.rails):
            for g in range(self.groups):
                for u in range(LEAF_HOSTS):
                    k = g * LEAF_HOSTS + u
                    spine = spine_name(rail, k % self.spines_per_rail)
                    self.isls.append(
                        (
                            leaf_name(g, rail),
                            LEAF_HOSTS + 1 + u,
                            spine,
                            k // self.spines_per_rail + 1,
                        )
                    )

    def plug(self, node: int, rail: int) -> tuple[str, int]:
        """Where node ``node`` (0-based) has its rail's HCA: leaf and port (the records of
        rackops.validate.synthrun name the same)."""
        leaf, port = leaf_port(node_name(node), rail)
        return leaf, int(port)

    @property
    def leaves(self) -> list[str]:
        return [leaf_name(g, r) for r in range(self.rails) for g in range(self.groups)]

    def size(self) -> Size:
        """Its size, as the inventory written of it gives it (rackops.scale)."""
        return Size(
            nodes=self.nodes,
            switches=len(self.leaves) + len(self.spines),
            host_ports=self.nodes * self.rails,
        )

    @property
    def spines(self) -> list[str]:
        return [spine_name(r, s) for r in range(self.rails) for s in range(self.spines_per_rail)]

    def spine_ports(self) -> int:
        return -(-self.groups * LEAF_HOSTS // self.spines_per_rail)


def switch_specs(design: Design) -> list[dict[str, Any]]:
    """Every switch of the design as the inventory model has it (name, address, os, role,
    rail, ports, uplinks): what write_inventory writes, and a test builds from directly."""
    ups: dict[str, list[dict[str, str]]] = {}
    for leaf, lp, spine, sp in design.isls:
        ups.setdefault(leaf, []).append(
            {"port": port_name(lp), "spine": spine, "spine_port": port_name(sp)}
        )
    spine_ports = [port_name(p) for p in range(1, design.spine_ports() + 1)]
    out: list[dict[str, Any]] = []
    for n, name in enumerate(design.leaves + design.spines, 1):
        is_leaf = name in ups
        out.append(
            {
                "name": name,
                "address": f"172.16.{n >> 8}.{n & 255}",
                "os": "mlnx-os",
                "role": "leaf" if is_leaf else "spine",
                "rail": int(name[4:].split("-")[0]) if is_leaf else None,
                "ports": LEAF_PORTS if is_leaf else spine_ports,
                "uplinks": ups.get(name, []),
            }
        )
    return out


def write_inventory(design: Design, path: Path) -> Path:
    """The design as an inventory directory, in the form `rackops lab up` writes (hosts.yml,
    group_vars, host_vars: one file a node with its cabling map)."""
    if path.exists():
        shutil.rmtree(path)
    (path / "host_vars").mkdir(parents=True)
    (path / "group_vars" / "all").mkdir(parents=True)
    lines = ["---", "all:", "  children:", "    gpu_nodes:", "      hosts:"]
    for i in range(design.nodes):
        lines += [
            f"        {node_name(i)}:",
            f"          ansible_host: 10.{i >> 16 & 255}.{i >> 8 & 255}.{i & 255}",
        ]
    lines += ["      vars:", f"        rackops_profile: {PROFILE}"]
    lines += ["    switches:", "      hosts:"]
    for sw in switch_specs(design):
        lines += [
            f"        {sw['name']}:",
            f"          ansible_host: {sw['address']}",
            f"          rackops_switch_role: {sw['role']}",
            f"          rackops_switch_ports: [{', '.join(repr(p) for p in sw['ports'])}]",
        ]
        if sw["rail"] is not None:
            lines.append(f"          rackops_switch_rail: {sw['rail']}")
        if sw["uplinks"]:
            lines.append("          rackops_switch_uplinks:")
            lines += [
                f"          - {{port: '{u['port']}', spine: {u['spine']}, "
                f"spine_port: '{u['spine_port']}'}}"
                for u in sw["uplinks"]
            ]
    lines += [
        "      vars:",
        "        ansible_connection: local",
        "        rackops_switch_os: mlnx-os",
    ]
    (path / "hosts.yml").write_text("\n".join(lines) + "\n")
    (path / "group_vars" / "all" / "fabric.yml").write_text(
        "---\nrackops_fabric:\n  type: infiniband\n  mtu:\n    host: 4092\n    switch: 4096\n"
        "    ib: 4096\n  oversubscription: 1\n"
    )
    (path / "group_vars" / "all" / "versions.yml").write_text(
        "---\nrackops_versions:\n  ofed: 25.07-0.9.7\n  driver: 580.95.05\n"
        "  fabric_manager: 580.95.05\n  dcgm: 4.4.1\n"
    )
    for i in range(design.nodes):
        hcas = []
        for r in range(design.rails):
            leaf, port = design.plug(i, r)
            hcas.append(
                f"- {{device: mlx5_{r}, netdev: ibp{24 + 17 * r}s0, rail: {r}, gpu: {r}, "
                f"switch: {leaf}, port: '{port_name(port)}'}}"
            )
        (path / "host_vars" / f"{node_name(i)}.yml").write_text(
            "---\nrackops_hcas:\n" + "\n".join(hcas) + "\n"
        )
    return path


# --- the faults planted, and what each must be named as ----------------------------------


@dataclass(frozen=True)
class Planted:
    """One fault, and the finding that names it: its code's family and its subject's
    fields."""

    kind: str
    code: str
    subject: dict[str, str]

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "code": self.code, "subject": dict(self.subject)}


def faults(design: Design) -> list[Planted]:
    """A fault of each fabric kind, and a fleet drift, at places spread over the cluster."""
    g = design.groups - 1  # the last leaf group
    leaf = leaf_name(g, 3)
    up = [x for x in design.isls if x[0] == leaf]
    rate_leaf = leaf_name(g // 2, 5)
    err_leaf, err_port = design.plug(design.nodes // 3, 6)
    drift = node_name(design.nodes * 2 // 3)
    return [
        Planted("isl_miscabled", "ISL", {"switch": leaf, "switch_port": port_name(up[0][1])}),
        Planted("isl_rate", "ISL", {"switch": rate_leaf, "switch_port": port_name(LEAF_HOSTS + 1)}),
        Planted("port_errors", "PHY", {"switch": err_leaf, "switch_port": port_name(err_port)}),
        Planted("fleet_drift", "FLEET", {"node": drift, "hca": "mlx5_2"}),
    ]


def scenario(design: Design) -> dict[str, Any]:
    """hwsim's scenario of the fabric as cabled (with the fabric faults planted)."""
    planted = {p.kind: p for p in faults(design)}
    mis, rate = planted["isl_miscabled"], planted["isl_rate"]
    first = next(x for x in design.isls if x[0] == mis.subject["switch"])
    swap_to = first[3] - 1 if first[3] > 1 else first[3] + 1  # another port of its spine
    return {
        "hardware": {"link_layer": "InfiniBand", "rate_gbps": 400},
        "nodes": {
            node_name(i): {"index": i + 1, "rails": {}, "hardware": {}, "faults": []}
            for i in range(design.nodes)
        },
        "wiring": {
            node_name(i): {str(r): list(design.plug(i, r)) for r in range(design.rails)}
            for i in range(design.nodes)
        },
        "fabric": {
            "isls": [
                {"leaf": a, "port": str(ap), "spine": b, "spine_port": str(bp)}
                for a, ap, b, bp in design.isls
            ],
            "faults": [
                {
                    "kind": "isl_miscabled",
                    "switch": mis.subject["switch"],
                    "spine_port": str(swap_to),
                },
                {"kind": "isl_rate", "switch": rate.subject["switch"]},
            ],
        },
    }


def write_sweep(design: Design, path: Path) -> dict[str, Any]:
    """The sweep's files as ibdiagnet writes them (console, ibdiagnet2.sm, .net_dump) and
    ``perfquery -x -l`` of every switch before and after the pair rounds, under ``path``:
    traffic on every cabled port between the two reads, symbol errors grown on one."""
    path.mkdir(parents=True, exist_ok=True)
    sc = scenario(design)
    (path / "console.txt").write_text(ibdiag.console(sc, "/tmp/rackops-ibdiag.scale"))
    (path / "sm.txt").write_text(ibdiag.sm_file(sc))
    (path / "net_dump.txt").write_text(
        ibdiag.net_dump(sc, "ibdiagnet -o /tmp/rackops-ibdiag.scale")
    )
    planted = {p.kind: p for p in faults(design)}["port_errors"].subject
    cabled = ibdiag._rows(sc)
    lids = {}
    for phase in ("before", "after"):
        (path / phase).mkdir(exist_ok=True)
        for sw in ibdiag.switches(sc):
            lid = ibdiag.switch_lid(sc, sw)
            lids[sw] = lid
            blocks = []
            for port, c in sorted(ibdiag.switch_counters(sc, sw).items()):
                c = dict(c)
                if phase == "after" and port in cabled.get(sw, {}):
                    moved = 10**9 + port
                    c.update(
                        tx_pkts=moved, rx_pkts=moved, tx_bytes=moved * 4096, rx_bytes=moved * 4096
                    )
                    if sw == planted["switch"] and port_name(port) == planted["switch_port"]:
                        c.update(symbol_errors=5000, rcv_errors=4000)
                blocks.append(phy._block(lid, port, c, True))
            (path / phase / f"{sw}.txt").write_text("".join(blocks))
    meta = {"switches": len(lids), "net_dump_rows": sum(len(v) for v in cabled.values())}
    (path / "sweep.json").write_text(json.dumps({"lids": lids, **meta}))
    return meta
