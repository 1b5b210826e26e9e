"""The host intent, computed once: what every layer holds a node to.

A node's MTU per fabric interface, its RoCE QoS (trust, the lossless priorities, the
DSCP→priority entries it sets, CNP marking, the traffic class NCCL uses) and its tuning
(hugepages, IRQ affinity) are derived here from the rack's design and the node's own
overrides (``rackops_host_qos``, ``rackops_host_tuning``), and nowhere else:

* lint, render and validate call :func:`host_design` (``checks/tuning``, ``render/view``,
  ``consistency``, the jumbo ping and the mlnx_qos check);
* the Ansible roles read the same result through the collection's filter
  ``rackops.rackops.host_design`` (``plugins/filter/host_design.py``), which calls
  :func:`host_design_from_vars` on the host's variables.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from pydantic import TypeAdapter, ValidationError

from rackops.inventory.model import (
    Cluster,
    Fabric,
    Hca,
    HostQos,
    HostTuning,
    Hugepages,
    Node,
    RoceQos,
)


def pfc_vector(priorities: Sequence[int]) -> str:
    """mlnx_qos --pfc form: eight 0/1 flags, priority 0 first (every layer prints this one)."""
    return ",".join("1" if p in priorities else "0" for p in range(8))


def overridden(override: tuple[int, ...] | None, designed: Sequence[int]) -> tuple[int, ...]:
    """A per-host or per-switch PFC override over the rack's: ``None`` is "as designed",
    an empty tuple is "no PFC here" (never the rack's by a falsy ``or``)."""
    return tuple(designed) if override is None else tuple(override)


@dataclass(frozen=True)
class HostRoce:
    """The host side of the lossless-RoCE design on one node."""

    trust: str
    dscp: int  # RoCE data
    priority: int  # the priority RoCE data travels on (after this host's dscp2prio)
    cnp_dscp: int
    cnp_priority: int
    pfc: tuple[int, ...]  # the priorities PFC is enabled on
    dscp2prio: dict[int, int]  # the explicit entries this host sets (RoCE, CNP, overrides)
    tos: int | None  # NCCL_IB_TC / RDMA CM ToS

    @property
    def pfc_vector(self) -> str:
        return pfc_vector(self.pfc)


@dataclass(frozen=True)
class HostDesign:
    node: str
    mtu: int  # the netdev MTU of every fabric interface
    interfaces: dict[str, int]  # netdev -> MTU
    roce: HostRoce | None
    tuning: HostTuning

    def as_vars(self) -> dict[str, Any]:
        """Plain data for Ansible (dict keys as strings, tuples as lists)."""
        out = asdict(self)
        if self.roce is not None:
            out["roce"]["pfc"] = list(self.roce.pfc)
            out["roce"]["pfc_vector"] = self.roce.pfc_vector
            out["roce"]["dscp2prio"] = [[d, p] for d, p in sorted(self.roce.dscp2prio.items())]
        out["tuning"] = self.tuning.model_dump(mode="json")
        out["hugepages"] = _hugepages_vars(self.tuning)
        out["irq"] = {"enabled": self.tuning.irq_affinity, "irqbalance": self.tuning.irqbalance}
        return out


def _hugepages_vars(tuning: HostTuning) -> dict[str, Any]:
    """The pool the hugepages role reserves: the design's, or none at all (no pages)."""
    if tuning.hugepages is not None:
        return tuning.hugepages.model_dump(mode="json")
    fields = Hugepages.model_fields
    return {
        "size_kb": fields["size_kb"].default,
        "per_node": {},
        "total": 0,
        "boot": fields["boot"].default,
        "max_ram_pct": fields["max_ram_pct"].default,
    }


def host_design(fabric: Fabric, node: Node) -> HostDesign:
    return _design(node.name, fabric, node.hcas, node.qos, node.tuning)


def node_design(cluster: Cluster, node: Node | str) -> HostDesign:
    n = cluster.node(node) if isinstance(node, str) else node
    return host_design(cluster.fabric, n)


def largest_host_mtu(cluster: Cluster) -> int:
    """The largest MTU any host sends: what every switch port must carry (C-22)."""
    return max(
        [cluster.fabric.mtu.host, *(host_design(cluster.fabric, n).mtu for n in cluster.nodes)]
    )


def _design(
    name: str, fabric: Fabric, hcas: Sequence[Hca], qos: HostQos, tuning: HostTuning
) -> HostDesign:
    mtu = qos.mtu or fabric.mtu.host
    roce = host_roce(fabric.roce, qos) if fabric.type == "roce" and fabric.roce else None
    return HostDesign(name, mtu, {h.netdev: mtu for h in hcas}, roce, tuning)


def host_roce(r: RoceQos, qos: HostQos) -> HostRoce:
    """The rack's RoCE design with one host's overrides applied."""
    cnp_dscp = qos.cnp_dscp if qos.cnp_dscp is not None else r.cnp_dscp
    dscp2prio = {r.dscp: r.priority, cnp_dscp: r.cnp_priority} | dict(qos.dscp2prio)
    return HostRoce(
        trust=r.trust,
        dscp=r.dscp,
        priority=dscp2prio[r.dscp],
        cnp_dscp=cnp_dscp,
        cnp_priority=dscp2prio[cnp_dscp],
        pfc=overridden(qos.pfc_priorities, r.pfc_priorities),
        dscp2prio=dscp2prio,
        tos=qos.nccl_ib_tc if qos.nccl_ib_tc is not None else r.nccl_ib_tc,
    )


class DesignInputError(ValueError):
    """A host variable the design cannot be computed from (names the variable)."""


def host_design_from_vars(name: str, hostvars: Mapping[str, Any]) -> dict[str, Any]:
    """The design of one host from its Ansible variables (the roles' filter)."""

    def read(var: str, adapter: TypeAdapter[Any], default: Any) -> Any:
        value = hostvars.get(var, default)
        try:
            return adapter.validate_python(value if value is not None else default)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise DesignInputError(
                f"{name}: {var}{'.' + where if where else ''}: {first['msg']}; run "
                "`rackops lint` on the inventory for the whole list"
            ) from None

    if "rackops_fabric" not in hostvars:
        raise DesignInputError(f"{name}: rackops_fabric is not set (the rack's design)")
    fabric = read("rackops_fabric", TypeAdapter(Fabric), None)
    hcas = read("rackops_hcas", TypeAdapter(tuple[Hca, ...]), ())
    qos = read("rackops_host_qos", TypeAdapter(HostQos), {})
    tuning = read("rackops_host_tuning", TypeAdapter(HostTuning), {})
    return _design(name, fabric, hcas, qos, tuning).as_vars()
