"""The lab's physical wiring: which leaf and port each node's rail cable really sits in.

The design (the lab inventory's cabling map) puts HCA ``mlx5_r`` of node ``i`` in leaf
``leaf-r<r>``, port ``leaf_port(r, i)``. A ``miscabled`` fault changes the wiring, not the
design: ``swap_with: NODE`` swaps the two nodes' cables on that leaf (each is in the
other's designed port), ``rail: R`` moves the cable to a spare port of rail R's leaf. The
lab then wires exactly that (the host end of the target's veth joins that leaf's bridge,
and that leaf's LLDP daemon names that port), and hwsim's fabric tools print it.
"""

from __future__ import annotations

from dataclasses import dataclass

from rackops.lab.inventory import leaf_name, leaf_port, rack_of
from rackops.lab.scenario import Scenario


@dataclass(frozen=True)
class Plug:
    """Where one cable really is: the leaf's rail and rack (its bridge, its name) and port."""

    rail: int
    port: str
    rack: int = 0  # 0: a one-rack lab (leaf-r<r>); else leaf<rack>-r<r>

    @property
    def leaf(self) -> str:
        return leaf_name(self.rail, self.rack)


Wiring = dict[str, dict[int, Plug]]  # node -> rail of its HCA -> where that cable is


def wiring(spec: Scenario, names: list[str], rails: int, racks: int = 1) -> Wiring:
    where = {n: rack_of(i, len(names), racks) for i, n in enumerate(names, 1)}
    index = {n: where[n][1] for n in names}
    rack = {n: where[n][0] for n in names}
    out: Wiring = {
        n: {r: Plug(r, leaf_port(r, index[n], spec.ib), rack[n]) for r in range(rails)}
        for n in names
    }
    for node, ns in spec.nodes.items():
        for f in ns.faults:
            if f.kind != "miscabled" or f.hca is None:
                continue
            r = int(f.hca.split("_")[1])
            if f.swap_with is not None:
                other = f.swap_with
                if other not in index or other == node:
                    raise ValueError(
                        f"{node}: miscabled swap_with {other!r} is not another node of the lab"
                    )
                if rack[other] != rack[node]:
                    raise ValueError(
                        f"{node}: miscabled swap_with {other}: a swap is on one leaf, and "
                        f"{other} is in another rack"
                    )
                out[node][r] = Plug(r, leaf_port(r, index[other], spec.ib), rack[node])
                out[other][r] = Plug(r, leaf_port(r, index[node], spec.ib), rack[node])
            elif f.rail is not None:
                if not 0 <= f.rail < rails or f.rail == r:
                    raise ValueError(
                        f"{node}: miscabled rail {f.rail} must be another rail (0..{rails - 1})"
                    )
                # a spare port of that leaf: past the ones the design uses
                spare = leaf_port(f.rail, len(names) + index[node], spec.ib)
                out[node][r] = Plug(f.rail, spare, rack[node])
    return out


def as_json(w: Wiring) -> dict[str, dict[str, list[object]]]:
    """For scenario.json: hwsim's fabric tools print the wiring."""
    return {n: {str(r): [p.leaf, p.port] for r, p in rails.items()} for n, rails in w.items()}
