"""One host design (rackops.design), read by lint, render, validate and — through the
collection's filter rackops.rackops.host_design — by the roles."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest
from ansible.errors import AnsibleFilterError

from rackops.checks.host import check_mlnx_qos
from rackops.checks.tuning import designed_mtu
from rackops.consistency import Intent, design_host
from rackops.design import host_design, host_design_from_vars, node_design
from rackops.findings import Subject
from rackops.inventory import load_inventory
from rackops.inventory.model import Cluster, HostQos
from rackops.render.view import host_view
from rackops.tools import parse

ROOT = Path(__file__).resolve().parent.parent
FIX = Path(__file__).parent / "fixtures"


def _filter() -> Any:
    spec = importlib.util.spec_from_file_location(
        "host_design_filter", ROOT / "plugins" / "filter" / "host_design.py"
    )
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.FilterModule().filters()["host_design"]


def _rack(**qos: Any) -> Cluster:
    cluster = load_inventory(str(ROOT / "inventories/example-roce")).raise_for_errors()
    n1 = cluster.node("node01")
    nodes = tuple(
        n.model_copy(update={"qos": HostQos(**qos)}) if n is n1 else n for n in cluster.nodes
    )
    return cluster.model_copy(update={"nodes": nodes})


def test_a_host_override_takes_effect_in_every_reader() -> None:
    rack = _rack(mtu=4200, dscp2prio={46: 5}, nccl_ib_tc=106)
    d = node_design(rack, "node01")
    assert d.mtu == 4200 and set(d.interfaces.values()) == {4200}
    assert d.roce is not None and d.roce.dscp2prio == {26: 3, 48: 6, 46: 5}
    assert d.roce.pfc_vector == "0,0,0,1,0,0,0,0"
    # the same numbers where validate, render and the §10 rules read them
    assert designed_mtu(rack.node("node01"), rack) == 4200
    assert host_view(rack, "node01").mtu == 4200
    assert Intent.of(rack).host_mtu == 9000  # the largest host MTU: node02's, from the fabric
    assert rack.fabric.roce is not None
    assert design_host(rack.node("node01"), rack.fabric.roce).dscp2prio == d.roce.dscp2prio
    assert node_design(rack, "node02").mtu == 9000


def test_the_roles_filter_gives_the_same_design_as_the_engine() -> None:
    rack = _rack(dscp2prio={46: 5}, pfc_priorities=[3])
    n = rack.node("node01")
    via_vars = _filter()(
        rack.fabric.model_dump(mode="json"),
        [h.model_dump(mode="json") for h in n.hcas],
        {"dscp2prio": {46: 5}, "pfc_priorities": [3]},
        n.tuning.model_dump(mode="json"),
        "node01",
    )
    assert via_vars == host_design(rack.fabric, n).as_vars()
    assert via_vars["roce"]["dscp2prio"] == [[26, 3], [46, 5], [48, 6]]


@pytest.mark.parametrize(
    ("var", "value", "said"),
    [
        ("rackops_host_qos", {"dscp2prio": {99: 3}}, "rackops_host_qos.dscp2prio"),
        ("rackops_host_qos", {"mtu": "jumbo"}, "rackops_host_qos.mtu"),
        ("rackops_hcas", [{"device": "mlx5_0"}], "rackops_hcas.0."),
        ("rackops_fabric", {"type": "ethernet"}, "rackops_fabric"),
    ],
)
def test_a_variable_the_design_cannot_read_is_named(var: str, value: Any, said: str) -> None:
    rack = _rack()
    hostvars = {"rackops_fabric": rack.fabric.model_dump(mode="json"), var: value}
    with pytest.raises(ValueError, match=f"node01: {said}"):
        host_design_from_vars("node01", hostvars)
    args = [
        hostvars["rackops_fabric"],
        hostvars.get("rackops_hcas"),
        hostvars.get("rackops_host_qos"),
    ]
    with pytest.raises(AnsibleFilterError, match=said):
        _filter()(*args, None, "node01")


def test_validate_holds_a_host_to_its_own_dscp_entries() -> None:
    live = parse("mlnx_qos", (FIX / "mlnx_qos/dscp-lossless-prio3.txt").read_text())
    rack = _rack(dscp2prio={46: 4})  # the NIC's default puts 46 on priority 5
    assert rack.fabric.roce is not None
    host = node_design(rack, "node01").roce
    (f,) = check_mlnx_qos(live, rack.fabric.roce, subject=Subject(node="node01"), host=host)
    assert (f.code, f.status.value, f.observed, f.expected) == ("QOS-002", "FAIL", 5, 4)
    as_applied = node_design(_rack(dscp2prio={46: 5}), "node01").roce
    (ok,) = check_mlnx_qos(live, rack.fabric.roce, subject=Subject(node="node01"), host=as_applied)
    assert ok.code == "QOS-OK"
