"""The report read in a minute: the fixes grouped by what a technician does, each stage's
margin over its floor, pictures drawn by rackops, two runs compared, and the whole of it
in a real browser at 4 and 1,024 nodes (synthetic runs: rackops.validate.synthrun)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from browserkit import assert_readable, look

from rackops.cli import main
from rackops.findings import Finding, Status, Subject
from rackops.names import natural_key
from rackops.validate.compare import compare
from rackops.validate.firstscreen import fix_groups, margin, stage_margins
from rackops.validate.localise import KIND_ACTION, _symptom, localise
from rackops.validate.report import build_report, write_reports
from rackops.validate.rundir import RunDir
from rackops.validate.svgplots import fabric, rail_distribution
from rackops.validate.synthrun import make_run, node_name

PLANTED = {  # what synthrun plants in a 64-node run, and the fix group of each
    ("hca", "node0006", "mlx5_2", None): "cable",  # slow with every partner on rail 2
    ("hca", "node0010", "mlx5_6", None): "cable",  # port Polling
    ("gpu", "node0019", None, 3): "gpu",  # GEMM below its floor
    ("hca", "node0028", "mlx5_4", None): "cable",  # symbol errors under load
}


def culprits(report: dict[str, Any]) -> dict[tuple[Any, ...], str]:
    return {(c["kind"], c["node"], c["hca"], c["gpu"]): c["action"] for c in report["culprits"]}


def _node_record(code: str, subject: dict[str, Any], fix: str, action: str | None) -> Any:
    f = Finding(code, Status.FAIL, Subject(**subject), code, remediation=fix, action=action)
    return {
        "id": f"node/n1/{code}",
        "kind": "node",
        "node": "n1",
        "tool": "t",
        "findings": [f.as_dict()],
        "meta": {},
    }


@pytest.mark.parametrize(
    ("subject", "fix", "action", "group"),
    [
        # the subject's own fix where the check says nothing else
        ({"node": "n1", "gpu": 3}, "reseat the GPU/baseboard; RMA if it recurs", None, "gpu"),
        ({"node": "n1", "hca": "mlx5_0"}, "reseat the card, check the riser and slot", None, "hca"),
        ({"node": "n1"}, "install the pinned driver (rackops provision)", None, "node"),
        # what the check says, whatever its words: a cable named in an HCA's fix is not
        # guessed from the text any more, and text that names a cable decides nothing
        ({"node": "n1", "hca": "mlx5_0"}, "Polling: no link partner", "cable", "cable"),
        ({"node": "n1", "hca": "mlx5_0"}, "mlxconfig -d DEV set ATS_ENABLED=1", "node", "node"),
        ({"node": "n1", "hca": "mlx5_0"}, "check the cable", None, "hca"),
        ({"node": "n1", "gpu": 0}, "run it again", "rerun", "rerun"),
    ],
)  # fmt: skip
def test_a_culprit_takes_the_fix_group_its_check_declared(
    subject: dict[str, Any], fix: str, action: str | None, group: str
) -> None:
    (culprit,) = localise([_node_record("X-001", subject, fix, action)]).culprits
    assert culprit.as_dict()["action"] == group


def test_the_pair_rules_declare_their_own_fix_groups() -> None:
    """Culprits the localiser itself names from pair results: a slow end is its cable, a
    latency or jumbo-frame end its switch port, a lone link is re-tested to tell which end."""
    assert [KIND_ACTION[k] for k in ("link", "leaf", "isl", "cabling")] == [
        "rerun", "switch", "cable", "cable",
    ]  # fmt: skip
    assert {_symptom_action(c) for c in ("C-25", "PERF-002", "PERF-001")} == {"switch", "cable"}
    assert _symptom_action("PERF-001") == "cable" and _symptom_action("C-25") == "switch"


def _symptom_action(code: str) -> str:
    rec = {"findings": [{"code": code, "status": "FAIL"}], "meta": {"lat_us": 9.0}}
    return _symptom([rec])[2]


def test_a_finding_names_only_a_known_fix_group() -> None:
    with pytest.raises(ValueError, match="action 'cables' is none of"):
        Finding("X-001", Status.FAIL, Subject(node="n1"), "x", action="cables")


def test_fix_groups_keep_the_walk_order_and_sort_by_node() -> None:
    cs = [
        {"kind": "gpu", "node": "n10", "where": "n10 GPU 1", "action": "gpu"},
        {"kind": "cabling", "node": "n9", "where": "n9 mlx5_0", "action": "cable"},
        {"kind": "gpu", "node": "n9", "where": "n9 GPU 2", "action": "gpu"},
    ]
    groups = fix_groups(cs)
    assert [g["action"] for g in groups] == ["cable", "gpu"]
    assert [c["node"] for c in groups[1]["culprits"]] == ["n9", "n10"]


def test_margins_turn_around_for_a_ceiling() -> None:
    assert margin(392.0, 360.0, "Gb/s") == pytest.approx(32 / 360)
    assert margin(1.9, 2.5, "us") == pytest.approx(0.24)
    assert margin(3.0, 2.5, "us") < 0 and margin(300.0, 360.0, "Gb/s") < 0


def test_natural_order_of_names() -> None:
    assert sorted(["node10", "node9", "mlx5_10", "mlx5_2"], key=natural_key) == [
        "mlx5_2",
        "mlx5_10",
        "node9",
        "node10",
    ]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("synthetic")
    return {
        "faulty": make_run(tmp / "faulty", nodes=64, seed=1),
        "repaired": make_run(tmp / "repaired", nodes=64, seed=2, faults=False),
        "small": make_run(tmp / "small", nodes=4, seed=3, faults=False),
    }


def test_stage_lines_name_the_figure_closest_to_each_line(runs: dict[str, Path]) -> None:
    report, _, _ = write_reports(RunDir(runs["faulty"]))
    stages = {s["stage"]: s for s in report["stages"]}
    gemm = stages["GPU GEMM"]
    assert gemm["below_floor"] == 1 and gemm["worst_where"] == "node0019 GPU 3"
    assert gemm["worst_margin_pct"] < 0 < gemm["median_margin_pct"]
    lat = stages["link latency (ib_write_lat)"]
    assert lat["lower_is_better"] and lat["below_floor"] == 0 and lat["worst_margin_pct"] > 10
    # the stages are listed worst first: the one to look at leads
    assert [s["worst_margin_pct"] for s in report["stages"]] == sorted(
        s["worst_margin_pct"] for s in report["stages"]
    )
    assert culprits(report) == PLANTED


def test_the_link_picture_labels_the_slow_cable_and_draws_both_lines(
    runs: dict[str, Path],
) -> None:
    report, _, _ = write_reports(RunDir(runs["faulty"]))
    lines = report["link_lines"]["bw_gbps"]
    assert lines["floor"] == 360.0 and 360.0 < lines["gate"] < 392.0
    svg = rail_distribution(report["pairs"], "bw_gbps", "Gb/s", 360.0, lines["gate"], False)
    labels = [s.split(">")[-1] for s in svg.split("</text>") if 'class="outlier"' in s]
    assert labels and all("mlx5_2" in x or "mlx5_6" in x for x in labels), labels
    assert "floor 360" in svg and "peer gate" in svg


def test_the_fabric_picture_puts_each_named_cable_under_its_leaf_in_red(
    runs: dict[str, Path],
) -> None:
    report, _, _ = write_reports(RunDir(runs["faulty"]))
    svg = fabric(report)
    assert svg.count("<svg") == 1 and svg.count("rail ") == 8  # 64 nodes: 2 leaves a rail
    red = re.findall(r'fill="#fecaca" stroke="#dc2626"><title>([^<]*)</title>', svg)
    named = re.findall(r'class="named"[^>]*>([^<]*)<', svg)
    # the three cables named (the GPU is on no leaf), each under the leaf it is cabled to
    assert sorted(red) == ["leaf2-0", "leaf4-0", "leaf6-0"], red
    assert sorted(named) == ["node0006 mlx5_2 → 6", "node0010 mlx5_6 → 10", "node0028 mlx5_4 → 28"]
    clean, _, _ = write_reports(RunDir(runs["repaired"]))
    assert "#fecaca" not in fabric(clean) and 'class="named"' not in fabric(clean)


def test_names_in_a_picture_are_escaped() -> None:
    pair = {
        "server": "a", "client": "<script>x</script>", "client_hca": "m&0", "rail": 0,
        "bw_gbps": 10.0, "status": "FAIL",
    }  # fmt: skip
    svg = rail_distribution([pair], "bw_gbps", "Gb/s", 360.0, None, False)
    assert "<script>" not in svg and "&lt;script&gt;" in svg and "m&amp;0" in svg


def test_compare_names_exactly_what_the_repair_fixed(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    faulty, repaired = runs["faulty"], runs["repaired"]
    assert main(["report", "--compare", str(faulty), str(repaired), "--format", "json"]) == 0
    cmp = json.loads(capsys.readouterr().out)
    fixed = {(c["kind"], c["node"], c["hca"], c["gpu"]) for c in cmp["fixed"]}
    assert fixed == set(PLANTED) and cmp["new"] == [] and cmp["still"] == []
    assert cmp["regressed"] == []  # a new seed is run-to-run noise, never a regression
    assert json.loads((repaired / "compare.json").read_text())["fixed"] == cmp["fixed"]
    html = (repaired / "report.html").read_text()
    assert 'id="compare"' in html and "node0019 GPU 3" in html


def test_a_culprit_the_later_run_did_not_test_is_not_called_fixed(runs: dict[str, Path]) -> None:
    old = build_report(RunDir(runs["faulty"]))
    new = build_report(RunDir(runs["repaired"]))  # as if run with --limit, node0019 left out
    new["nodes"] = {n: v for n, v in new["nodes"].items() if n != "node0019"}
    new["pairs"] = [p for p in new["pairs"] if "node0019" not in (p["server"], p["client"])]
    new["limit"] = "all but node0019"
    cmp = compare(old, new, "old", "new")
    assert [(c["node"], c["gpu"]) for c in cmp["untested"]] == [("node0019", 3)]
    assert {c["node"] for c in cmp["fixed"]} == {"node0006", "node0010", "node0028"}


def test_compare_the_other_way_names_the_new_faults_and_what_regressed(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["report", "--compare", str(runs["repaired"]), str(runs["faulty"])])
    out = capsys.readouterr().out
    assert code == 2  # the newer run is rejected
    assert "4 fixed" not in out and "0 fixed, 4 new" in out
    worse = [line for line in out.splitlines() if line.startswith("WORSE")]
    assert any("node0019 GPU 3: GEMM" in w for w in worse), worse
    assert any("mlx5_2" in w and "link bandwidth" in w for w in worse), worse
    assert any("node0028 mlx5_4 [leaf4-0 28]: port errors" in w for w in worse), worse
    assert all("node0006" in w or "node0010" in w or "node0019" in w or "node0028" in w
               for w in worse), worse  # fmt: skip


def test_compare_refuses_a_directory_that_is_not_a_run(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", "--compare", str(tmp_path), str(runs["small"])]) != 0
    assert "not a run directory" in capsys.readouterr().err


def test_a_1024_node_report_is_small_and_reads_in_a_browser(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run", nodes=1024)
    write_reports(RunDir(run))
    html = run / "report.html"
    assert html.stat().st_size < 2_000_000, html.stat().st_size
    seen = look(html)
    assert_readable(seen)
    assert seen["fix_groups"] == [
        "Replace, reseat or move a cable (3)",
        "Cool, reseat or RMA a GPU (1)",
    ]
    # open: what holds a culprit (its rows only, all rows a click away); closed: the rest
    assert seen["closed"] >= 4 and "nodes-all" in {n for n, _, _ in seen["opened"]}
    assert any(node_name(5) in o and "mlx5_2" in o for o in seen["outliers"]), seen["outliers"]


def test_a_clean_4_node_report_collapses_everything_but_the_verdict(runs: dict[str, Path]) -> None:
    write_reports(RunDir(runs["small"]))
    seen = look(runs["small"] / "report.html")
    assert_readable(seen)
    assert seen["fix_groups"] == [] and seen["outliers"] == []
    assert {name for name, _, _ in seen["opened"]} >= {"nodes-section", "links", "ports-section"}


# --- what a review found: unusual and hostile run directories -----------------------------


def _pair_rec(findings: list[dict[str, Any]]) -> dict[str, Any]:
    return {"id": "pair/a-b/rail0", "kind": "pair", "tool": "perftest", "node": "b",
            "findings": findings, "meta": {}}  # fmt: skip


def test_the_link_floor_is_the_bandwidths_not_a_path_mtus() -> None:
    from rackops.validate.report import _link_lines

    mtu = {"code": "PERF-003", "status": "WARN", "expected": 4096, "unit": "bytes"}
    bw = {"code": "PERF-OK", "status": "OK", "expected": 360.0, "unit": "Gb/s"}
    recs = [_pair_rec([mtu, bw]), _pair_rec([mtu, bw]), _pair_rec([mtu])]
    assert _link_lines(recs)["bw_gbps"]["floor"] == 360.0


def test_a_stage_is_only_a_figure_whose_direction_is_known() -> None:
    ber = {"code": "PHY-002", "status": "FAIL", "observed": 1e-6, "expected": 1e-8, "unit": "BER",
           "subject": {"node": "a"}}  # fmt: skip
    peer = {"code": "PEER-001", "status": "WARN", "observed": 300.0, "expected": 372.0,
            "unit": "Gb/s", "subject": {"node": "a"}}  # fmt: skip
    huge = {"code": "PERF-OK", "status": "OK", "observed": 1e308, "expected": 1e-300,
            "unit": "Gb/s", "subject": {"node": "a"}}  # fmt: skip
    recs = [
        {"kind": "node", "tool": "phy", "findings": [ber]},
        {"kind": "peers", "tool": "peer-gate", "findings": [peer]},
        {"kind": "pair", "tool": "perftest", "findings": [huge]},
    ]
    assert stage_margins(recs) == []  # no inverted BER, no gate as a floor, no infinity


def test_pictures_of_extreme_or_odd_figures_are_left_out_not_a_traceback() -> None:
    from rackops.validate.report import PORT_COLUMNS
    from rackops.validate.svgplots import port_growth

    far = [
        {"server": "a", "client": "b", "rail": 0, "bw_gbps": 1e308, "status": "OK"},
        {"server": "c", "client": "d", "rail": 0, "bw_gbps": -1e308, "status": "OK"},
    ]
    assert rail_distribution(far, "bw_gbps", "Gb/s", 360.0, None, False) == ""
    odd = [{"node": "a", "hca": "m", "delta": {"symbol_errors": 1.5, "link_downed": -1,
                                               "rcv_errors": "x"}}]  # fmt: skip
    assert port_growth(odd, PORT_COLUMNS) != "" and "+1<" in port_growth(odd, PORT_COLUMNS)
    assert (
        port_growth([{"node": "a", "hca": "m", "delta": {"link_downed": -3}}], PORT_COLUMNS) == ""
    )


def _culprit(kind: str, node: str | None, **more: Any) -> dict[str, Any]:
    return {"kind": kind, "node": node, "gpu": None, "hca": None, "switch": None,
            "switch_port": None, "peer": None, "evidence": [], "where": kind, "message": kind,
            **more}  # fmt: skip


def _report(culprits: list[dict[str, Any]], nodes: dict[str, dict[str, str]]) -> dict[str, Any]:
    return {"culprits": culprits, "nodes": nodes, "pairs": [], "verdict": "X", "limit": None}


def test_an_unreachable_node_is_not_tested_again_and_its_culprit_not_fixed() -> None:
    old = _report([_culprit("gpu", "n3", gpu=2)], {"n3": {"nvidia-smi": "FAIL"}})
    new = _report([], {"n3": {"ssh": "ERROR"}})
    cmp = compare(old, new, "a", "b")
    assert cmp["fixed"] == [] and [c["node"] for c in cmp["untested"]] == ["n3"]


def test_a_link_is_one_culprit_in_either_direction_and_two_fabric_problems_are_two() -> None:
    ab = _culprit("link", "a", hca="m0", peer="b/m0 [leaf 2]")
    ba = _culprit("link", "b", hca="m0", peer="a/m0 [leaf 1]")
    nodes = {"a": {"x": "OK"}, "b": {"x": "OK"}}
    cmp = compare(_report([ab], nodes), _report([ba], nodes), "a", "b")
    assert (len(cmp["still"]), cmp["fixed"], cmp["new"]) == (1, [], [])
    sm = _culprit("sm", None, evidence=[{"code": "IBF-SM"}])
    stage = _culprit("fabric", None, evidence=[{"code": "IBF-STAGE"}])
    sm2 = _culprit("fabric", None, evidence=[{"code": "IBF-OTHER"}])
    cmp = compare(_report([sm, stage], {}), _report([sm, sm2], {}), "a", "b")
    assert [c["evidence"][0]["code"] for c in cmp["fixed"]] == ["IBF-STAGE"]
    assert [c["evidence"][0]["code"] for c in cmp["new"]] == ["IBF-OTHER"]


def test_the_reports_read_the_run_once_and_localise_it_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """write_reports reads results.jsonl once and localises it once, and the verdict it
    returns is the one report.json carries."""
    from rackops.validate import report as report_mod
    from rackops.validate.rundir import RunDir

    run = RunDir(make_run(tmp_path / "run", nodes=8, seed=3))
    calls = {"localise": 0, "records": 0}
    real_localise, real_records = report_mod.localise, RunDir.records

    def counting_localise(records: list[dict[str, object]]) -> object:
        calls["localise"] += 1
        return real_localise(records)

    def counting_records(self: RunDir) -> list[dict[str, object]]:
        calls["records"] += 1
        return real_records(self)

    monkeypatch.setattr(report_mod, "localise", counting_localise)
    monkeypatch.setattr(RunDir, "records", counting_records)
    report, verdict, _ = report_mod.write_reports(run)
    assert calls == {"localise": 1, "records": 1}, calls
    assert report["verdict"] == verdict.label and len(report["culprits"]) == len(verdict.culprits)
