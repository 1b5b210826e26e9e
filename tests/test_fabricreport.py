"""The switches' records in localisation and the report, on synthetic results: both ends of
one ISL are one culprit with no node; a host port's switch-side finding is that HCA's culprit,
merged with its host-side one; the leaf–spine table lists each link once."""

from __future__ import annotations

from typing import Any

from rackops.findings import Finding, Status, Subject
from rackops.validate.fabricreport import isls, switch_ports
from rackops.validate.localise import localise


def _f(code: str, status: str, **subject: Any) -> dict[str, Any]:
    return Finding(code, Status(status), Subject(**subject), f"{code} msg").as_dict()


def _switch(name: str, ports: dict[str, tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """A judged switch record: port -> (status, its cable as subject fields)."""
    return {
        "id": f"switch/{name}",
        "kind": "switch",
        "node": None,
        "tool": "sonic-counters",
        "findings": [
            _f("PHY-004" if st == "FAIL" else "SWP-000", st, switch=name, switch_port=p, **cable)
            for p, (st, cable) in ports.items()
        ],
        "meta": {
            "switch": name,
            "role": "spine" if name.startswith("spine") else "leaf",
            "interval_s": 30.0,
            "ports": {
                p: {"delta": {"rx_pkts": 60, "crc_errors": 9 if st == "FAIL" else 0}}
                for p, (st, _) in ports.items()
            },
        },
    }


RECORDS = [
    _switch(
        "leaf2-r3",
        {
            "swp1": ("OK", {"node": "node03", "hca": "mlx5_3"}),
            "swp2": ("FAIL", {"node": "node04", "hca": "mlx5_3"}),
            "swp64": ("FAIL", {"peer": "spine-r3 port Ethernet8"}),
        },
    ),
    _switch(
        "spine-r3",
        {
            "Ethernet0": ("OK", {"peer": "leaf1-r3 port swp64"}),
            "Ethernet8": ("FAIL", {"peer": "leaf2-r3 port swp64"}),
        },
    ),
    _switch("leaf1-r3", {"swp64": ("OK", {"peer": "spine-r3 port Ethernet0"})}),
    {  # node04's own host-port finding on the same HCA
        "id": "phy/node04/after",
        "kind": "node",
        "node": "node04",
        "tool": "phy",
        "findings": [_f("PHY-004", "FAIL", node="node04", hca="mlx5_3")],
        "meta": {},
    },
]


def test_one_isl_one_culprit_and_a_host_port_merges_with_its_hca() -> None:
    v = localise(RECORDS)
    kinds = sorted((c.kind, c.node, c.hca) for c in v.culprits)
    assert kinds == [("hca", "node04", "mlx5_3"), ("isl", None, None)]
    isl = next(c for c in v.culprits if c.kind == "isl")
    assert {e["step"] for e in isl.evidence} == {"switch/leaf2-r3", "switch/spine-r3"}
    hca = next(c for c in v.culprits if c.kind == "hca")
    assert {e["step"] for e in hca.evidence} == {"phy/node04/after", "switch/leaf2-r3"}
    assert v.exit_code == 2


def test_the_leaf_spine_table_lists_each_link_once_with_both_ends() -> None:
    ports = switch_ports(RECORDS)
    assert len(ports) == 6
    table = {(row["leaf"], row["spine"]): row for row in isls(ports)}
    assert set(table) == {
        ("leaf1-r3 port swp64", "spine-r3 port Ethernet0"),
        ("leaf2-r3 port swp64", "spine-r3 port Ethernet8"),
    }
    bad = table[("leaf2-r3 port swp64", "spine-r3 port Ethernet8")]
    assert bad["status"] == "FAIL" and bad["errors"] == 18 and bad["read_both_ends"]
    good = table[("leaf1-r3 port swp64", "spine-r3 port Ethernet0")]
    assert good["status"] == "OK" and good["errors"] == 0 and good["packets"] == 60


def test_an_isl_judged_down_without_counters_is_not_shown_ok() -> None:
    """The sweep found leaf1-r3's uplink down and read no counters of the leaf: its row is
    there, FAIL, though the spine end's counters (which grew nothing) are OK."""
    down = {
        "id": "switch/leaf1-r3",
        "kind": "switch",
        "node": None,
        "tool": "ibdiagnet",
        "findings": [
            _f(
                "ISL-DOWN",
                "FAIL",
                switch="leaf1-r3",
                switch_port="swp64",
                peer="spine-r3 port Ethernet0",
            )
        ],
        "meta": {"switch": "leaf1-r3", "role": "leaf", "ports": {}},
    }
    records = [r for r in RECORDS if r["id"] != "switch/leaf1-r3"] + [down]
    table = {(row["leaf"], row["spine"]): row for row in isls(switch_ports(records))}
    row = table[("leaf1-r3 port swp64", "spine-r3 port Ethernet0")]
    assert row["status"] == "FAIL" and row["read_both_ends"]
