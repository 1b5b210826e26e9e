"""The InfiniBand fabric in the lab: two racks of NDR nodes joined by a Quantum spine per rail
(`rackops lab up --racks 2` with `hardware: {link_layer: InfiniBand}`). Every run sweeps the
fabric from one node — `ibdiagnet` and a `perfquery -x -l` of every switch it finds — before
and after the pair rounds. The clean fabric is ACCEPTED with every leaf–spine link carrying
traffic; one of each fabric fault (a dirty ISL, an ISL at half rate, an uplink in the wrong
spine port, two master SMs) is exactly those three links and the SM, with no host blamed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from labkit import provision_hosts, set_fabric_faults, validate
from test_lab import pytestmark  # noqa: F401  (same skip/require rules)

from rackops import lab
from rackops.lab.lab import LabState
from rackops.lab.model import lab_workdir

FAULTS = [
    {"kind": "isl_errors", "switch": "leaf2-r3", "per_packets": 2},
    {"kind": "isl_rate", "switch": "leaf1-r5"},
    {"kind": "isl_miscabled", "switch": "leaf2-r6", "spine_port": "3/1"},
    {"kind": "sm", "masters": 2},
]


@pytest.fixture(scope="module")
def ib_racks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    assert LabState.load(lab_workdir(None)) is None, "a lab is already up: rackops lab down"
    tmp = tmp_path_factory.mktemp("ibfabric")
    scenario = tmp / "scenario.yml"
    scenario.write_text("hardware: {link_layer: InfiniBand}\n")
    lab.up(nodes=4, racks=2, inventory=str(tmp / "inv"), scenario=str(scenario))
    try:
        provision_hosts(tmp / "inv", "")
        yield tmp / "inv"
    finally:
        lab.down()


def test_a_clean_infiniband_fabric_is_swept_twice_and_accepted(
    ib_racks: Path, tmp_path: Path
) -> None:
    set_fabric_faults([])
    rc, report = validate(ib_racks, tmp_path / "run")
    assert rc == 0 and report["verdict"] == "ACCEPTED", (report["culprits"], report["errors"])
    # every switch port the sweep counted: 4 nodes x 8 rails, both ends of 16 uplinks
    assert len(report["switch_ports"]) == 4 * 8 + 2 * 16
    assert len(report["isls"]) == 16
    assert all(link["read_both_ends"] and link["status"] == "OK" for link in report["isls"])
    assert all(link["packets"] > 0 for link in report["isls"]), report["isls"]
    raw = tmp_path / "run" / "raw"
    for phase in ("before", "after"):
        assert "Master SM:" in (raw / f"fabric_sweep_{phase}_console.out").read_text()
        assert (
            "# Port extended counters"
            in (raw / f"fabric_sweep_{phase}_perfquery_spine-r3.out").read_text()
        )


def test_one_of_each_fabric_fault_is_those_links_and_the_sm_and_no_host(
    ib_racks: Path, tmp_path: Path
) -> None:
    set_fabric_faults(FAULTS)
    try:
        rc, report = validate(ib_racks, tmp_path / "run")
    finally:
        set_fabric_faults([])
    assert rc == 2 and report["verdict"] == "REJECTED"
    assert report["errors"] == []
    got = {(c["kind"], c["where"]): c for c in report["culprits"]}
    assert set(got) == {
        ("isl", "[leaf2-r3 32/2] ↔ spine-r3 port 2/1"),
        ("isl", "[leaf1-r5 32/2] ↔ spine-r5 port 1/1"),
        ("isl", "[leaf2-r6 32/2] ↔ spine-r6 port 2/1"),
        ("sm", "subnet manager"),
    }, list(got)
    assert all(c["node"] is None for c in report["culprits"])
    dirty = got[("isl", "[leaf2-r3 32/2] ↔ spine-r3 port 2/1")]
    assert {e["step"] for e in dirty["evidence"]} == {"switch/leaf2-r3", "switch/spine-r3"}
    assert "200 Gb/s" in got[("isl", "[leaf1-r5 32/2] ↔ spine-r5 port 1/1")]["message"]
    assert "IB port 5" in got[("isl", "[leaf2-r6 32/2] ↔ spine-r6 port 2/1")]["message"]
    sm = got[("sm", "subnet manager")]["message"]
    assert "2 master subnet managers" in sm and "node01 mlx5_0" in sm and "node04 mlx5_0" in sm
    bad = {(b["leaf"], b["status"]) for b in report["isls"] if b["status"] != "OK"}
    assert {leaf for leaf, _ in bad} == {
        "leaf2-r3 port 32/2",
        "leaf1-r5 port 32/2",
        "leaf2-r6 port 32/2",
    }, report["isls"]
