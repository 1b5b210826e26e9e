"""A RoCE leaf's own view of its uplinks (LLDP neighbour, speed, state), printed by the lab's
NOS simulator in each NOS's layout, read by the real parsers and judged against example-roce's
design (leaf-r0: four 400G uplinks to spine-1 and spine-2): each fault kind is named at its
link, a neighbour that names no port is a warning, not a pass."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rackops.checks.switchports import judge_uplinks, port_views
from rackops.findings import Status
from rackops.inventory import load_inventory
from rackops.lab.hwsim import nos
from rackops.parsers.switch_ports import SwitchPorts
from rackops.tools import parse

ROOT = Path(__file__).resolve().parent.parent
CLUSTER = load_inventory(ROOT / "inventories" / "example-roce").raise_for_errors()
LEAF = CLUSTER.switch("leaf-r0")
assert LEAF is not None
UPLINKS = {u.port: [u.spine, u.spine_port] for u in LEAF.uplinks}


def _views(**change: dict[str, Any]) -> dict[str, dict[str, Any]]:
    views = {p: {"oper": "up", "speed": 400, "peer": list(peer)} for p, peer in UPLINKS.items()}
    views["Ethernet0"] = {"oper": "up", "speed": 400, "peer": ["node01", "enp24s0np0"]}
    for port, c in change.items():
        views[port] = {**views[port], **c}
    return views


def _read(os_name: str, views: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """What the run gets from a leaf of that NOS: its outputs printed and parsed."""
    if os_name == "sonic":
        outs = [
            ("sonic-ports", nos.sonic_lldp(views)),
            ("sonic-ports", nos.sonic_status(views, 9216)),
        ]
    elif os_name == "cumulus":
        outs = [("nvue-ports", nos.nvue_interfaces(views, 9216))]
    else:
        outs = [
            ("eos-ports", nos.eos_ports(views, "lldp")),
            ("eos-ports", nos.eos_ports(views, "status")),
        ]
    parsed = [parse(tool, text) for tool, text in outs]
    assert all(isinstance(p, SwitchPorts) and p.complete for p in parsed)
    return port_views(parsed)  # type: ignore[arg-type]


def _verdicts(os_name: str, views: dict[str, dict[str, Any]]) -> dict[str, tuple[str, Status]]:
    got = judge_uplinks(CLUSTER, LEAF, _read(os_name, views))  # type: ignore[arg-type]
    return {f.subject.switch_port or "": (f.code, f.status) for f in got}


@pytest.mark.parametrize("os_name", ["sonic", "cumulus", "eos"])
def test_every_uplink_as_designed_is_ok(os_name: str) -> None:
    got = _verdicts(os_name, _views())
    assert got == {p: ("ISL-OK", Status.OK) for p in UPLINKS}


@pytest.mark.parametrize("os_name", ["sonic", "cumulus", "eos"])
@pytest.mark.parametrize(
    ("change", "want"),
    [
        ({"speed": 200}, ("ISL-RATE", Status.FAIL)),
        ({"peer": ["spine-1", "Ethernet16"]}, ("ISL-MISCABLED", Status.FAIL)),
        ({"peer": ["spine-2", "Ethernet0"]}, ("ISL-MISCABLED", Status.FAIL)),  # other spine
        ({"oper": "down"}, ("ISL-DOWN", Status.FAIL)),
        ({"peer": None}, ("ISL-UNVERIFIED", Status.WARN)),  # no LLDP neighbour heard
        ({"peer": ["spine-1", "0c:42:a1:00:00:01"]}, ("ISL-UNVERIFIED", Status.WARN)),
    ],
)
def test_each_fault_of_one_uplink_is_named_there_only(
    os_name: str, change: dict[str, Any], want: tuple[str, Status]
) -> None:
    got = _verdicts(os_name, _views(Ethernet48=change))
    assert got.pop("Ethernet48") == want
    assert set(got.values()) == {("ISL-OK", Status.OK)}


def test_the_lab_switch_prints_its_faults_at_the_leaf_and_the_spine() -> None:
    conf = {
        "ports": {"Ethernet0": "lo", "Ethernet8": "lo"},
        "peers": {"Ethernet0": ["leaf1-r3", "swp64"], "Ethernet8": ["leaf2-r3", "swp64"]},
        "isl_faulted": {"leaf1-r3": ["Ethernet0"], "leaf2-r3": ["Ethernet8"]},
    }
    faults = [
        {"kind": "isl_rate", "switch": "leaf1-r3"},
        {"kind": "isl_miscabled", "switch": "leaf2-r3", "spine_port": "Ethernet16"},
    ]
    views = nos.port_views(conf, "spine-r3", faults)
    assert views["Ethernet0"]["speed"] == 200
    assert views["Ethernet8"]["oper"] == "down" and views["Ethernet8"]["peer"] is None
    assert views["Ethernet16"]["peer"] == ["leaf2-r3", "swp64"]
