"""rackops validate end to end in the lab: physical-layer and GPUs-under-load faults are named
exactly.
The fault rack (FAULTS, EXPECTED) is validated in test_slurm_lab.py, on one lab for the SSH
and Slurm launchers: injected faults named exactly, an unreachable node ERROR for that node
only, a killed run resumed giving the same report as an uninterrupted one; with its faults
cleared, the same lab is the clean rack (accepted) and the rack with a hung tool."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml
from labkit import provision_hosts, validate
from test_lab import pytestmark  # noqa: F401  (same skip/require rules)

from rackops import lab
from rackops.lab.lab import LabState
from rackops.lab.model import lab_workdir

ROOT = Path(__file__).resolve().parent.parent


@contextmanager
def lab_with(tmp: Path, nodes: int, scenario: str) -> Iterator[Path]:
    assert LabState.load(lab_workdir(None)) is None, "a lab is already up: rackops lab down"
    (tmp / "scenario.yaml").write_text(scenario)
    inv = tmp / "inv"
    lab.up(nodes=nodes, scenario=str(tmp / "scenario.yaml"), inventory=str(inv))
    try:
        provision_hosts(inv, scenario)  # host tuning as designed
        yield inv
    finally:
        lab.down()


def culprits(report: dict[str, Any]) -> set[tuple[Any, ...]]:
    return {(c["kind"], c["node"], c["hca"], c["gpu"]) for c in report["culprits"]}


FAULTS = """
nodes:
  node02:
    faults:
      - {kind: hca_port, hca: mlx5_3, state: Polling}
      - {kind: switch_mtu, hca: mlx5_5, mtu: 1500}     # its leaf port drops jumbo frames
  node03:
    faults: [{kind: cable_slow, hca: mlx5_1, peers: [node04, node05], bw_gbps: 170}]
  node04:
    faults: [{kind: gpu_missing, gpu: 6}]
  node05:
    faults: [{kind: dcgm_fail, plugin: memory, gpu: 5, min_level: 2}]
  node06: {unreachable: true}
"""
EXPECTED = {
    ("hca", "node02", "mlx5_3", None),
    ("hca", "node02", "mlx5_5", None),
    ("hca", "node03", "mlx5_1", None),
    ("gpu", "node04", None, 6),
    ("gpu", "node05", None, 5),
}


PHYSICAL = (ROOT / "validators/scenarios/physical.yaml").read_text()
PHYSICAL_EXPECTED = {
    ("cabling", "node01", "mlx5_5", None),  # on rail 6's leaf
    ("cabling", "node03", "mlx5_2", None),  # swapped with node04 mlx5_2: one culprit
    ("hca", "node02", "mlx5_7", None),  # latency
    ("hca", "node05", "mlx5_4", None),  # symbol errors under load
    ("hca", "node06", "mlx5_1", None),  # raw BER
    ("hca", "node07", "mlx5_6", None),  # optic power
    ("hca", "node08", "mlx5_3", None),  # flap
}
GPU_LOAD = (ROOT / "validators/scenarios/gpu-load.yaml").read_text()
GPU_LOAD_EXPECTED = {
    ("gpu", "node02", None, 3),  # thermal slowdown under load
    ("gpu", "node03", None, 1),  # power brake
    ("gpu", "node04", None, 5),  # Xid 79 during the run
    ("gpu", "node06", None, 4),  # GEMM below the floor
    ("gpu", "node07", None, 6),  # HBM below the floor
}


def merged(*scenarios: str) -> str:
    """One scenario holding every node's faults of all of them (node by node)."""
    nodes: dict[str, dict[str, Any]] = {}
    for text in scenarios:
        for node, spec in yaml.safe_load(text)["nodes"].items():
            nodes.setdefault(node, {"faults": []})["faults"] += spec.get("faults") or []
    return yaml.safe_dump({"nodes": nodes})


def test_physical_and_gpu_load_faults_are_named_exactly(tmp_path: Path) -> None:
    """8 nodes, one fault of each physical kind and one of each GPUs-under-load kind, on one
    lab (two labs would cost CI five more minutes): the real lldpd of the leaf ports says
    where each cable is, counters grow with the traffic the pair rounds move, every GPU is
    sampled while the run loads it and the kernel log is read before and after (the Xid
    from before the run is history). The two kinds of fault share nodes and must not hide
    or blame each other: exactly the union is named."""
    with lab_with(tmp_path, 8, merged(PHYSICAL, GPU_LOAD)) as inv:
        # three random perfect matchings (every node in each) instead of all 7 rounds: every
        # port still carries traffic with 3 partners, and CI time stays in budget
        rc, report = validate(inv, tmp_path / "run", "--pairing", "sample")
    assert rc == 2 and report["verdict"] == "REJECTED"
    assert culprits(report) == PHYSICAL_EXPECTED | GPU_LOAD_EXPECTED, report["culprits"]
    assert report["errors"] == []
    # the one node left for multi-node NCCL cannot run it; the Xid from before is history
    assert {w["code"] for w in report["warnings"]} <= {"XID-48", "NCCL-SKIP"}, report["warnings"]
    html = (tmp_path / "run" / "report.html").read_text()
    prom = (tmp_path / "run" / "metrics.prom").read_text()
    _physical_named(report, html, prom)
    _gpu_load_named(report, html, prom)


def _physical_named(report: dict[str, Any], html: str, prom: str) -> None:
    by = {(c["node"], c["hca"]): c for c in report["culprits"] if c["hca"]}
    swap = by[("node03", "mlx5_2")]
    assert "swapped" in swap["message"] and swap["peer"].startswith("node04/mlx5_2")
    assert "rail 6" in by[("node01", "mlx5_5")]["message"]
    assert any(e.get("untrustworthy") for e in by[("node01", "mlx5_5")]["evidence"])
    assert "latency" in by[("node02", "mlx5_7")]["message"]
    assert "flapped" in by[("node08", "mlx5_3")]["message"]
    ports = {(p["node"], p["hca"]): p for p in report["ports"]}
    assert ports[("node05", "mlx5_4")]["delta"]["symbol_errors"] > 0
    assert ports[("node01", "mlx5_0")]["delta"]["symbol_errors"] == 0
    assert ports[("node06", "mlx5_1")]["raw_ber"] > 2.4e-4
    assert all(p.get("lat_us") for p in report["pairs"] if p["status"] == "OK")
    assert 'id="ports"' in html and "µs" in html
    assert 'rackops_port_counter_delta{node="node05",hca="mlx5_4",counter="symbol_errors"}' in prom
    assert "rackops_link_latency_us{" in prom


def _gpu_load_named(report: dict[str, Any], html: str, prom: str) -> None:
    by = {(c["node"], c["gpu"]): c for c in report["culprits"] if c["gpu"] is not None}
    assert "HW Thermal Slowdown" in by[("node02", 3)]["message"]
    assert "HW Power Brake" in by[("node03", 1)]["message"]
    assert "fell off the bus during the run" in by[("node04", 5)]["message"]
    assert "FP16 GEMM" in by[("node06", 4)]["message"]
    assert "memory bandwidth" in by[("node07", 6)]["message"]
    history = [w for w in report["warnings"] if w["code"] == "XID-48"]
    assert [(w["subject"]["node"], w["subject"]["gpu"]) for w in history] == [("node05", 2)]
    assert "before the run (history)" in history[0]["message"]
    # the named GPUs have traces; every GPU its figures
    traced = {(t["node"], t["gpu"]) for t in report["gpu_traces"]}
    assert {("node02", 3), ("node03", 1)} <= traced
    assert len([g for g in report["gpus"] if "gemm_tflops" in g]) == 8 * 8
    assert "node02 GPU 3:" in html and 'id="gpus"' in html
    assert 'rackops_gpu_hbm_gbs{node="node07",gpu="6"}' in prom


FOUR_GPU = """
hardware: {gpus: 4}   # HGX H100 4-GPU boards: 4 GPUs, 4 HCAs, 4 rails (lab-4gpu-roce400)
nodes: {}
"""


def test_a_rack_of_4_gpu_nodes_provisions_and_is_accepted(tmp_path: Path) -> None:
    """The GPU count is the profile's everywhere: 4 rails and leaves, the roles provision 4
    HCAs, nccl-tests runs -g 4 on one node and a rank per GPU across them, every per-GPU
    table holds 4 GPUs a node, and a healthy rack of them is ACCEPTED."""
    with lab_with(tmp_path, 4, FOUR_GPU) as inv:
        rc, report = validate(inv, tmp_path / "run")
    assert rc == 0 and report["verdict"] == "ACCEPTED", (
        report["culprits"],
        report["errors"],
        report["warnings"],
    )
    assert report["errors"] == [] and report["warnings"] == []
    assert len(report["ports"]) == 4 * 4 and len(report["pairs"]) == 6 * 4
    assert sorted((g["node"], g["gpu"]) for g in report["gpus"] if "gemm_tflops" in g) == [
        (f"node0{n}", g) for n in range(1, 5) for g in range(4)
    ]

    records = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").open()]
    single = [r for r in records if r["id"].endswith("/nccl-single-node")]
    assert len(single) == 4 and all(r["argv"][r["argv"].index("-g") + 1] == "4" for r in single)
    assert all(f["status"] == "OK" for r in single for f in r["findings"])


NVL = """
hardware: {gpus: 4, nvlink_domain: nvl-a}   # GB200 trays in one NVLink domain (reduced to 4)
nodes: {}
"""


def test_a_gb200_domain_is_accepted_and_each_fault_names_its_gpu_or_tray(tmp_path: Path) -> None:
    """Four GB200 trays in one 16-GPU NVLink domain (profile lab-gb200-roce400): clean, the
    domain is one partition of its 16 GPUs, IMEX UP on every tray, NCCL across the trays
    over MNNVL; then one fault of each kind is named exactly — a tray in another partition
    as the tray, a GPU the fabric refused, an unhealthy one and one with an inactive NVLink as
    those GPUs, a tray whose IMEX is down as that tray (from every other tray's view) — and
    nothing else; a fatal NVLink link event the whole domain followed is that one GPU's link,
    not 16 GPUs; a tray the switch trays did not configure (In Progress) is that tray."""
    from labkit import set_faults

    with lab_with(tmp_path, 4, NVL) as inv:
        rc, report = validate(inv, tmp_path / "clean")
        assert rc == 0 and report["verdict"] == "ACCEPTED", (report["culprits"], report["errors"])
        (dom,) = report["nvlink_domains"]
        assert (dom["in_partition"], dom["size"], dom["short"]) == (16, 16, [])
        # NCCL's own log says the run across the trays stayed on NVLink
        rows = (tmp_path / "clean" / "results.jsonl").read_text().splitlines()
        nccl = [f for r in map(json.loads, rows) if r["kind"] == "nccl" for f in r["findings"]]
        proof = [f for f in nccl if f["code"] == "NCCL-MNNVL-OK"]
        assert proof and "all 16 ranks of 4 trays" in proof[0]["message"], nccl
        set_faults(
            {
                "node01": [
                    {"kind": "fabric_unhealthy", "gpu": 1},
                    {"kind": "nvlink_down", "gpu": 3, "link": 5},  # <inactive> in nvlink -s
                ],
                "node02": [{"kind": "imex_down"}],
                "node03": [{"kind": "fabric_clique", "clique": 7}],
                "node04": [
                    {"kind": "fabric_insufficient", "gpu": 2},
                    # link 4 of GPU 0 needs recoveries under the load (nvidia-smi nvlink -e)
                    {
                        "kind": "nvlink_errors",
                        "gpu": 0,
                        "link": 4,
                        "counter": "recovery",
                        "count": 2,
                    },
                ],
            }
        )
        rc, report = validate(inv, tmp_path / "faults")
        # one NVLink link fails under the load and the domain follows it (Xid 145, 45, 149
        # Link -1, 154 on the other 15 GPUs): the link is the one culprit
        set_faults({"node03": [{"kind": "xid", "gpu": 2, "code": 149, "link": 7}]})
        rc_x, cascade = validate(inv, tmp_path / "cascade")
        # the switch trays did not configure one tray: its four GPUs In Progress are the tray
        set_faults({"node04": [{"kind": "fabric_manager_down"}]})
        rc_w, waiting = validate(inv, tmp_path / "in-progress")
    assert rc_w == 2 and [(c["where"], c["action"]) for c in waiting["culprits"]] == [
        ("node04", "switch")
    ], waiting["culprits"]
    assert rc_x == 2, cascade["errors"]
    assert [(c["where"], c["action"]) for c in cascade["culprits"]] == [("node03 GPU 2", "cable")]
    assert "NVLink link 7 of node03 GPU 2 failed first" in cascade["culprits"][0]["message"]
    assert "15 other GPUs on 4 trays followed it" in cascade["culprits"][0]["message"]
    assert [
        (f["node"], f["gpu"], f["link"]) for f in cascade["nvlink_domains"][0]["first_links"]
    ] == [("node03", 2, 7)]
    assert rc == 2 and report["verdict"].startswith("REJECTED")
    assert culprits(report) == {
        ("gpu", "node01", None, 1),
        ("gpu", "node01", None, 3),
        ("node", "node02", None, None),
        ("node", "node03", None, None),
        ("gpu", "node04", None, 0),
        ("gpu", "node04", None, 2),
    }, report["culprits"]
    (dom,) = report["nvlink_domains"]
    assert dom["in_partition"] == 11  # 16 - node03's 4 - node04's GPU 2
    assert [t["node"] for t in dom["short"]] == ["node03", "node04"]
    nvl = [(p["node"], p["gpu"]) for p in dom["nvlink"]["problems"] if p["status"] == "FAIL"]
    # the row's NVLink problems: node01 GPU 3's inactive link, node04 GPU 0's grown counters
    assert nvl == [("node01", 3), ("node04", 0)] and dom["imex"]["clean"] < 4, dom
