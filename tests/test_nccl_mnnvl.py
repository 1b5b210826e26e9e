"""Multi-node NCCL across an NVLink domain, proven from NCCL's own log (issue 42): every rank
on MNNVL, one fabric clique, every channel between trays via P2P/MNNVL — or the tray that
left NVLink is named."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from rackops.checks.mnnvl import judge_mnnvl
from rackops.findings import Status
from rackops.parsers import ParseError
from rackops.parsers.nccl_debug import parse_nccl_debug

FIX = Path(__file__).parent / "fixtures" / "nccl-debug"
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "rackops" / "lab"))


def _sim(faults: dict[str, list[dict[str, Any]]] | None = None, trays: int = 4) -> str:
    """hwsim's NCCL INIT lines of a run over ``trays`` GB200 trays of one domain, 4 ranks each."""
    from hwsim.nccl import _nccl_info
    from hwsim.node import Node

    names = [f"tray{i:02d}" for i in range(1, trays + 1)]
    scenario = {
        "hardware": {"gpus": 4, "nvlink_domain": "nvl-a"},
        "nodes": {n: {"faults": (faults or {}).get(n, [])} for n in names},
    }
    nodes = {n: Node(scenario, n) for n in names}
    return _nccl_info([(n, d) for n in names for d in range(4)], nodes)


def _codes(found: list[Any]) -> list[tuple[str, Status, str | None]]:
    return [(f.code, f.status, f.subject.node) for f in found]


TRAYS = [f"tray{i:02d}" for i in range(1, 5)]


def test_a_whole_domain_is_proven_on_nvlink() -> None:
    log = parse_nccl_debug(_sim())
    found = judge_mnnvl(log, TRAYS)
    assert _codes(found) == [("NCCL-MNNVL-OK", Status.OK, ",".join(TRAYS))]
    assert "MNNVL on all 16 ranks of 4 trays; all 8 channels between trays via P2P/MNNVL" in (
        found[0].message
    ), found[0].message


def test_a_tray_in_another_clique_is_named_from_the_log() -> None:
    log = parse_nccl_debug(_sim({"tray03": [{"kind": "fabric_clique", "clique": 7}]}))
    found = judge_mnnvl(log, TRAYS)
    assert [(c, s) for c, s, _n in _codes(found)] == [
        ("NCCL-MNNVL-001", Status.FAIL),
        ("NCCL-MNNVL-003", Status.FAIL),
        ("NCCL-MNNVL-002", Status.FAIL),
    ]
    assert {f.subject.node for f in found} == {"tray03"}, _codes(found)
    assert "every one of them to or from tray03" in found[2].message


def test_the_sim_prints_the_real_gb200_fabric_line_form() -> None:
    """hwsim's per-GPU line against the real GB200 one (NVIDIA/nccl#1769): same fields."""
    real = parse_nccl_debug((FIX / "nccl1769-gb200-mnnvl-fabric.txt").read_text()).fabric[0]
    sim = parse_nccl_debug(_sim()).fabric[0]
    assert (real.state, sim.state) == (3, 3)
    assert sim.uuid.count(".") == 1 and sim.clique == 2 and sim.bus_id == 0x18000


def test_no_communicator_line_is_undecided() -> None:
    log = parse_nccl_debug((FIX / "nccl1769-gb200-mnnvl-fabric.txt").read_text())
    assert _codes(judge_mnnvl(log, ["gb200a-04", "gb200a-05"]))[0][:2] == (
        "NCCL-MNNVL-000",
        Status.ERROR,
    )


def test_a_real_comm_without_mnnvl_fails() -> None:
    log = parse_nccl_debug((FIX / "nccl1519-comm-mnnvl0-two-nodes.txt").read_text())
    found = judge_mnnvl(log, ["nathan-h100-1", "nathan-h100-2"])
    # the thread's excerpt holds one rank's lines of 16: not the whole run, and that rank failed
    assert _codes(found) == [
        ("NCCL-MNNVL-000", Status.ERROR, "nathan-h100-1,nathan-h100-2"),
        ("NCCL-MNNVL-001", Status.FAIL, "nathan-h100-1"),
    ]
    assert "rank(s) 0-6, 8-15 of 16" in found[0].message and "nathan-h100-2" in found[0].message


def test_real_network_channels_between_nodes_fail() -> None:
    comms = "".join(
        f"{h}:1:2 [0] NCCL INFO comm 0x1 rank {r} nRanks 48 nNodes 2 localRanks 8 localRank 0 "
        "MNNVL 1\n"
        for r, h in ((47, "hostname-test"), (39, "other"), (6, "hostname-test"), (38, "other"))
    )
    text = comms + (FIX / "nccl1814-ibext-channels-between-nodes.txt").read_text()
    found = judge_mnnvl(parse_nccl_debug(text), ["hostname-test", "other"])
    assert _codes(found) == [
        ("NCCL-MNNVL-000", Status.ERROR, "hostname-test,other"),  # 4 of 48 ranks shown
        ("NCCL-MNNVL-002", Status.FAIL, "hostname-test,other"),
    ]
    assert "12 of 12 NCCL channels between trays went via NET/IBext_v8" in found[1].message


def test_a_log_of_one_trays_ranks_is_not_the_runs() -> None:
    """Only tray01's lines of a 2-tray run: its channel to tray02's rank is no proof either
    way, and the run is not shown whole (never a pass)."""
    whole = _sim(trays=2)
    mine = "".join(line + "\n" for line in whole.splitlines() if line.startswith("tray01:"))
    found = judge_mnnvl(parse_nccl_debug(mine), ["tray01", "tray02"])
    assert [(c, s) for c, s, _n in _codes(found)] == [("NCCL-MNNVL-000", Status.ERROR)]
    assert "rank(s) 4-7 of 8" in found[0].message and "no line from tray02" in found[0].message


def test_nccls_own_warning_fails_the_domain() -> None:
    text = (
        "t1:1:2 [0] NCCL INFO comm 0x1 rank 0 nRanks 8 nNodes 2 localRanks 4 localRank 0 MNNVL 0\n"
        "t1:1:2 [0] NCCL WARN MNNVL (cliqueSize 8) is available but not working on this system. "
        "Check the IMEX configuration (nvidia-imex-ctl -N). Set NCCL_MNNVL_ENABLE=0 to ignore "
        "this issue.\n"
    )
    found = judge_mnnvl(parse_nccl_debug(text), ["t1", "t2"])
    # one rank's lines of 8: not the whole run (an ERROR), and what it says fails the domain
    assert [f.code for f in found] == ["NCCL-MNNVL-000", "NCCL-MNNVL-001", "NCCL-MNNVL-001"]
    assert "available but not working" in found[1].message and found[1].action == "switch"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "# nccl-tests version 2.19.6\n#  Rank  0 Group  0 Pid 1 on n1 device 0 [0000:18:00]\n",
    ],
)
def test_a_log_without_nccls_lines_is_an_error(text: str) -> None:
    with pytest.raises(ParseError, match="NCCL_DEBUG=INFO"):
        parse_nccl_debug(text)


def test_a_log_cut_mid_line_is_not_complete() -> None:
    log = parse_nccl_debug((FIX / "cut-nccl1769-mid-line.txt").read_text())
    assert log.complete is False and len(log.fabric) == 4


def test_the_nccl_stage_asks_for_the_log_only_across_one_domain() -> None:
    from rackops.inventory import load_inventory
    from rackops.validate.stages.nccl import NcclStage

    root = Path(__file__).resolve().parent.parent / "inventories"
    nvl = load_inventory(root / "example-gb200-nvl72").raise_for_errors()
    stage: Any = NcclStage.__new__(NcclStage)
    stage.cluster = nvl
    assert stage._one_domain(["tray01", "tray18"]) == "nvl72-a"
    hgx = load_inventory(root / "example-roce").raise_for_errors()
    stage.cluster = hgx
    assert stage._one_domain([n.name for n in hgx.nodes][:2]) is None
