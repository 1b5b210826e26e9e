"""The fabric past the host ports, in the lab: two racks joined by a spine per rail
(`rackops lab up --racks 2`), every leaf and spine an SSH target answering its NOS's
counter commands over the real bridge-port counters. Traffic between the racks crosses the
leaf–spine links, and the run reads both ends of every one of them before and after the pair
rounds, and each leaf's own view of its uplinks (LLDP, speed) after them: a clean fabric is
ACCEPTED; a dirty ISL optic (both ends, one culprit), an ISL at half rate and one in the wrong
spine port are each named as that link, with no host blamed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from browserkit import assert_readable, look
from labkit import provision_hosts, set_fabric_faults, validate
from test_lab import pytestmark  # noqa: F401  (same skip/require rules)

from rackops import lab
from rackops.lab.lab import LabState
from rackops.lab.model import lab_workdir


@pytest.fixture(scope="module")
def two_racks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    assert LabState.load(lab_workdir(None)) is None, "a lab is already up: rackops lab down"
    inv = tmp_path_factory.mktemp("fabric") / "inv"
    lab.up(nodes=4, racks=2, inventory=str(inv))
    try:
        provision_hosts(inv, "")
        yield inv
    finally:
        lab.down()


def test_a_clean_two_rack_fabric_is_accepted_with_every_isl_read_at_both_ends(
    two_racks: Path, tmp_path: Path
) -> None:
    set_fabric_faults([])
    rc, report = validate(two_racks, tmp_path / "run")
    assert rc == 0 and report["verdict"] == "ACCEPTED", (report["culprits"], report["errors"])
    # 4 nodes x 8 rails of host ports, and both ends of the 16 uplinks
    assert len(report["switch_ports"]) == 4 * 8 + 2 * 16
    assert len(report["isls"]) == 16
    assert all(link["read_both_ends"] and link["status"] == "OK" for link in report["isls"])
    # the pair rounds' traffic between the racks really crossed every leaf–spine link
    assert all(link["packets"] > 0 for link in report["isls"]), report["isls"]
    html = (tmp_path / "run" / "report.html").read_text()
    assert 'id="isls"' in html and "leaf2-r3 port swp64" in html


def test_each_isl_fault_is_named_as_its_link_and_no_host_is_blamed(
    two_racks: Path, tmp_path: Path
) -> None:
    """A dirty ISL (its counters at both ends), one at half rate (its cumulus leaf's
    `nv show interface`) and one in the wrong spine port (its EOS leaf's LLDP): three `isl`
    culprits, no host."""
    set_fabric_faults(
        [
            {"kind": "isl_errors", "switch": "leaf2-r3", "per_packets": 5},
            {"kind": "isl_rate", "switch": "leaf1-r5"},
            {"kind": "isl_miscabled", "switch": "leaf2-r6", "spine_port": "Ethernet16"},
        ]
    )
    try:
        rc, report = validate(two_racks, tmp_path / "run")
    finally:
        set_fabric_faults([])
    assert rc == 2 and report["verdict"] == "REJECTED"
    assert report["errors"] == []
    got = {c["where"]: c for c in report["culprits"]}
    assert set(got) == {
        "[leaf2-r3 swp64] ↔ spine-r3 port Ethernet8",
        "[leaf1-r5 swp64] ↔ spine-r5 port Ethernet0",
        "[leaf2-r6 Ethernet64/1] ↔ spine-r6 port Ethernet8",
    }, list(got)
    assert all(c["kind"] == "isl" and c["node"] is None for c in got.values())
    dirty = got["[leaf2-r3 swp64] ↔ spine-r3 port Ethernet8"]
    assert {e["step"] for e in dirty["evidence"]} == {"switch/leaf2-r3", "switch/spine-r3"}
    assert "200 Gb/s" in got["[leaf1-r5 swp64] ↔ spine-r5 port Ethernet0"]["message"]
    assert "port Ethernet16" in got["[leaf2-r6 Ethernet64/1] ↔ spine-r6 port Ethernet8"]["message"]
    bad = {(b["leaf"], b["spine"]) for b in report["isls"] if b["status"] != "OK"}
    assert ("leaf2-r3 port swp64", "spine-r3 port Ethernet8") in bad
    errors = [b for b in report["isls"] if b["leaf"] == "leaf2-r3 port swp64"]
    assert errors[0]["errors"] > 0
    prom = (tmp_path / "run" / "metrics.prom").read_text()
    assert (
        'rackops_switch_port_counter_delta{switch="leaf2-r3",port="swp64",counter="crc_errors"}'
        in prom
    )
    # the 4-node lab report as people read it, in Chromium: the three links under one fix
    # (the cables), on the first screen; the fabric section open, every other one opens
    seen = look(tmp_path / "run" / "report.html")
    assert_readable(seen)
    assert seen["fix_groups"] == ["Replace, reseat or move a cable (3)"], seen["fix_groups"]
    assert "fabric" not in {name for name, _, _ in seen["opened"]}
