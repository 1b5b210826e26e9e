"""rackops validate without the lab: plan, localisation, reports (HTML in headless Chromium),
command quoting. The lab end-to-end runs are in test_validate_lab.py."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import pytest

from rackops.cli import main
from rackops.findings import Finding, Status, Subject
from rackops.inventory import load_inventory
from rackops.suites import load_suite
from rackops.validate.executor import remote_command
from rackops.validate.localise import localise
from rackops.validate.plan import RoundRobin, make_plan, random_matchings, suspect_rounds
from rackops.validate.records import SCHEMA
from rackops.validate.report import write_reports
from rackops.validate.rundir import RunDir

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("n", range(2, 14))
def test_round_robin_is_a_minimal_one_factorisation(n: int) -> None:
    names = [f"n{i:02d}" for i in range(n)]
    rounds = list(RoundRobin(names))
    assert len(rounds) == (n - 1 if n % 2 == 0 else n)
    seen = [frozenset((p.server, p.client)) for r in rounds for p in r.pairs]
    assert sorted(map(sorted, seen)) == sorted(
        map(sorted, map(frozenset, itertools.combinations(names, 2)))
    )
    for r in rounds:
        used = [x for p in r.pairs for x in (p.server, p.client)]
        assert len(used) == len(set(used)) >= n - 1  # everyone busy but at most one resting


def test_sample_and_suspect_modes() -> None:
    names = [f"n{i}" for i in range(10)]
    for r in random_matchings(names, 3, seed=7):
        used = [x for p in r for x in p]
        assert len(used) == len(set(used)) == 10
    rounds = suspect_rounds(["n3"], ["n0", "n1", "n2"])
    assert [p for r in rounds for p in r] == [("n0", "n3"), ("n1", "n3")]


def test_plan_for_a_big_rack_is_lazy() -> None:
    names = [f"n{i:04d}" for i in range(4096)]
    rr = RoundRobin(names)
    assert len(rr) == 4095 and rr.pair_count() == 4096 * 4095 // 2
    assert len(rr[4094].pairs) == 2048


def test_dry_run_prints_plan_without_connecting(capsys: pytest.CaptureFixture[str]) -> None:
    # example-roce's addresses are documentation ranges: any connection attempt would hang
    rc = main(
        [
            "validate",
            "-i",
            str(ROOT / "inventories/example-roce"),
            "--suite",
            "acceptance",
            "--dry-run",
        ]
    )
    out = capsys.readouterr().out
    assert rc == 0 and "3 pair rounds, 6 node pairs × 8 rails = 48 links" in out
    assert "estimated wall time" in out


def test_plan_steps_follow_the_suite() -> None:
    cluster = load_inventory(ROOT / "inventories/example-ib").raise_for_errors()
    plan = make_plan(cluster, load_suite("quick"))
    assert plan.pairing == "sample" and [c.name for c in plan.node_checks][:2] == [
        "ibstat",
        "ofed_info",
    ]
    assert "show_gids" not in [c.name for c in plan.node_checks]  # InfiniBand
    assert ("dcgmi", "diag", "-r", "1") in [c.argv for c in plan.node_checks]


def test_remote_command_quotes_every_argument() -> None:
    cmd = remote_command(["ibstat", "mlx5_0; rm -rf /", "$(reboot)"], 30, become=True)
    assert cmd == "sudo -n timeout -k 5 30 ibstat 'mlx5_0; rm -rf /' '$(reboot)'"


# --- localisation on synthetic results -----------------------------------------------------


def _finding(code: str, status: str, **subject: Any) -> dict[str, Any]:
    """A finding as results.jsonl holds it."""
    return Finding(code, Status(status), Subject(**subject), code, remediation="fix").as_dict()


def _pairs(nodes: list[str], rails: list[int], bad: Any) -> list[dict[str, Any]]:
    recs = []
    for a, b in itertools.combinations(nodes, 2):
        for r in rails:
            st = "FAIL" if bad(a, b, r) else "OK"
            recs.append(
                {
                    "id": f"pair/{a}-{b}/rail{r}",
                    "kind": "pair",
                    "node": b,
                    "tool": "perftest",
                    "findings": [_finding("PERF", st, node=b)],
                    "meta": {
                        "server": a,
                        "client": b,
                        "rail": r,
                        "server_hca": f"mlx5_{r}",
                        "client_hca": f"mlx5_{r}",
                        "server_switch_port": f"leaf-r{r} p-{a}",
                        "client_switch_port": f"leaf-r{r} p-{b}",
                        "bw_gbps": 150.0 if st == "FAIL" else 392.0,
                    },
                }
            )
    return recs


NODES = [f"n{i}" for i in range(6)]
RAILS = [0, 1, 2, 3]


def _where(records: list[dict[str, Any]]) -> set[tuple[Any, ...]]:
    return {(c.kind, c.node, c.hca, c.gpu, c.switch) for c in localise(records).culprits}


def test_node_slow_with_everyone_is_the_node() -> None:
    recs = _pairs(NODES, RAILS, lambda a, b, r: "n2" in (a, b))
    assert _where(recs) == {("node", "n2", None, None, None)}


def test_hca_slow_with_most_partners_is_that_cable() -> None:
    recs = _pairs(NODES, RAILS, lambda a, b, r: r == 1 and "n4" in (a, b))
    assert _where(recs) == {("hca", "n4", "mlx5_1", None, "leaf-r1")}


def test_cable_slow_with_two_partners_is_the_shared_end() -> None:
    recs = _pairs(NODES, RAILS, lambda a, b, r: r == 2 and {a, b} in ({"n1", "n3"}, {"n1", "n5"}))
    assert _where(recs) == {("hca", "n1", "mlx5_2", None, "leaf-r2")}


def test_single_failing_link_names_both_ends() -> None:
    recs = _pairs(NODES, RAILS, lambda a, b, r: r == 3 and {a, b} == {"n0", "n5"})
    (c,) = localise(recs).culprits
    assert c.kind == "link" and {c.node, c.peer.split("/")[0]} == {"n0", "n5"}


def test_whole_rail_failing_is_the_leaf() -> None:
    recs = _pairs(NODES, RAILS, lambda a, b, r: r == 0)
    assert _where(recs) == {("leaf", None, None, None, "leaf-r0")}


def test_pairs_explained_by_a_down_port_are_not_blamed_on_partners() -> None:
    recs = _pairs(NODES, RAILS, lambda a, b, r: r == 3 and "n2" in (a, b))
    recs.append(
        {
            "id": "node/n2/ibstat",
            "kind": "node",
            "node": "n2",
            "tool": "ibstat",
            "findings": [
                _finding(
                    "HCA-002", "FAIL", node="n2", hca="mlx5_3", switch="leaf-r3", switch_port="p-n2"
                )
            ],
            "meta": {},
        }
    )
    v = localise(recs)
    assert _where(recs) == {("hca", "n2", "mlx5_3", None, "leaf-r3")}
    assert v.exit_code == 2 and v.errors == []


def test_unreachable_is_error_not_culprit() -> None:
    recs = _pairs(NODES, RAILS, lambda a, b, r: False)
    recs.append(
        {
            "id": "unreachable/n5",
            "kind": "unreachable",
            "node": "n5",
            "tool": "ssh",
            "findings": [_finding("NODE-000", "ERROR", node="n5")],
            "meta": {},
        }
    )
    v = localise(recs)
    assert v.culprits == [] and v.exit_code == 3 and len(v.errors) == 1


def _errored(recs: list[dict[str, Any]], a: str, b: str, rail: int) -> None:
    """The pair test a–b on this rail could not run (its server exited before listening)."""
    for rec in recs:
        if rec["id"] == f"pair/{a}-{b}/rail{rail}":
            rec["findings"] = [_finding("PAIR-000", "ERROR", node=b)]


def test_a_link_whose_end_lost_a_test_is_suspected_not_blamed() -> None:
    """A shared end with two failing partners, one of whose tests errored: what is left is
    one failing link. Its ends are suspected and re-tested, never a new culprit."""
    nodes = ["n0", "n1", "n2", "n3"]
    bad = lambda a, b, r: r == 1 and {a, b} in ({"n1", "n2"}, {"n1", "n3"})  # noqa: E731
    recs = _pairs(nodes, [0, 1], bad)
    _errored(recs, "n1", "n3", 1)
    v = localise(recs)
    assert v.culprits == [] and v.exit_code == 3
    suspect = next(e for e in v.errors if e["code"] == "PAIR-SUSPECT")
    assert "n1's test with n3 could not run" in suspect["message"], suspect
    assert "--pairing suspects --suspects n1,n2" in suspect["remediation"]
    # with every test in, the same rack names the shared end
    full = _pairs(nodes, [0, 1], bad)
    assert _where(full) == {("hca", "n1", "mlx5_1", None, "leaf-r1")}


def test_a_link_whose_own_other_test_errored_is_still_the_link() -> None:
    """n1–n2 fails bandwidth and its own latency test could not run: both ends pass with
    every other partner, so the link is named; the lost test is with that same partner."""
    nodes = ["n0", "n1", "n2", "n3"]
    bad = lambda a, b, r: r == 1 and {a, b} == {"n1", "n2"}  # noqa: E731
    bw = _pairs(nodes, [0, 1], bad)
    lat = _pairs(nodes, [0, 1], lambda a, b, r: False)
    for rec in lat:
        rec["id"] = "lat/" + rec["id"].split("/", 1)[1]
        rec["meta"]["metric"] = "lat"
        if rec["id"] == "lat/n1-n2/rail1":
            rec["findings"] = [_finding("PAIR-000", "ERROR", node="n2")]
    v = localise(bw + lat)
    assert [(c.kind, {c.node, c.peer.split("/")[0] if c.peer else None}) for c in v.culprits] == [
        ("link", {"n1", "n2"})
    ]
    assert not any(e["code"] == "PAIR-SUSPECT" for e in v.errors), v.errors


def test_a_link_failing_where_the_other_metric_blamed_its_end_is_that_ends_evidence() -> None:
    """Latency names n1/mlx5_1 (slow with every partner); one bandwidth failure with n2 is
    more evidence for it, not a link culprit naming n2."""
    nodes = ["n0", "n1", "n2", "n3"]
    recs = _pairs(nodes, [0, 1], lambda a, b, r: r == 1 and {a, b} == {"n1", "n2"})
    lat = _pairs(nodes, [0, 1], lambda a, b, r: r == 1 and "n1" in (a, b))
    for rec in lat:
        rec["id"] += "/lat"
        rec["meta"]["metric"] = "lat"
    v = localise(recs + lat)
    assert _where(recs + lat) == {("hca", "n1", "mlx5_1", None, "leaf-r1")}
    (c,) = v.culprits
    assert any(e["step"] == "pair/n1-n2/rail1" for e in c.evidence)


# --- reports -----------------------------------------------------------------------------------


@pytest.fixture
def run_dir(tmp_path: Path) -> RunDir:
    run = RunDir(tmp_path / "run")
    for rec in _pairs(NODES, RAILS, lambda a, b, r: r == 1 and "n4" in (a, b)):
        run.append(rec)
    run.append(
        {
            "id": "node/n0/ibstat",
            "kind": "node",
            "node": "n0",
            "tool": "ibstat",
            "findings": [_finding("HCA-OK", "OK", node="n0")],
            "meta": {},
        }
    )
    run.write_json("run.json", {"inventory": "inv", "suite": "lab", "started": "now"})
    return run


def test_reports_from_the_run_directory_alone(run_dir: RunDir) -> None:
    report, verdict, _ = write_reports(run_dir)
    assert verdict.exit_code == 2 and report["verdict"] == "REJECTED"
    again = json.loads((run_dir.path / "report.json").read_text())
    assert again["culprits"][0]["where"].startswith("n4 mlx5_1")
    suites = ET.parse(run_dir.path / "junit.xml").getroot()
    pair = next(s for s in suites if s.get("name") == "pair")
    assert pair.get("failures") == "5" and len(list(pair)) == 60
    text = (run_dir.path / "metrics.prom").read_text()
    prom = text.splitlines()
    assert "rackops_validate_verdict 2" in prom and "rackops_culprits 1" in prom
    # the exposition format, as Prometheus reads it: a broken label or value raises here
    from prometheus_client.parser import text_string_to_metric_families

    families = {f.name: f for f in text_string_to_metric_families(text)}
    assert families["rackops_validate_verdict"].samples[0].value == 2
    assert sum(len(f.samples) for f in families.values()) == len(
        [x for x in prom if x and not x.startswith("#")]
    )


def test_report_cli_regenerates(run_dir: RunDir, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(run_dir.path)]) == 2
    assert "FIX  n4 mlx5_1" in capsys.readouterr().out


def test_html_report_renders_in_chromium(run_dir: RunDir, tmp_path: Path) -> None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        if os.environ.get("RACKOPS_REQUIRE_LAB") == "1":
            pytest.fail("chromium is required in CI (scripts/lab-deps installs it)")
        pytest.skip("no chromium")
    write_reports(run_dir)
    proc = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--dump-dom",
            (run_dir.path / "report.html").as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    dom = proc.stdout
    assert 'id="verdict">REJECTED<' in dom
    assert dom.count('class="culprit"') == 1 and "n4 mlx5_1" in dom
    assert dom.count('class="heatmap"') == len(RAILS)
    assert dom.count('<td class="FAIL">150</td>') == 2 * 5  # n4's row and column on rail 1


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("", "no result recorded"),
        ('{"id": "n1/ibstat", "kind": "node"\n', "line 1 is not a result"),
        ("garbage\n\x00\xff\n", "line 1, 2 is not a result"),
        ('["a list"]\n', "line 1 is not a result"),
    ],
    ids=["empty", "cut-line", "garbage", "not-a-record"],
)
def test_a_run_directory_without_readable_results_is_never_accepted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, needle: str
) -> None:
    (tmp_path / "results.jsonl").write_text(content, errors="surrogateescape")
    assert main(["report", str(tmp_path)]) == 3
    out = capsys.readouterr().out
    assert "UNDECIDED" in out and "RUN-001" in out and needle in out, out


def test_a_cut_line_is_reported_beside_the_good_records_and_resume_drops_it(
    run_dir: RunDir, capsys: pytest.CaptureFixture[str]
) -> None:
    with run_dir.results.open("a") as fh:
        fh.write('{"id": "pair/n1-n2/rail0", "kind": "pa')  # the crash cut this line
    # read as the run directory it is now (a run holds its records in memory: what a crash
    # left is what the next reader finds)
    report, verdict, _ = write_reports(RunDir(run_dir.path))
    assert verdict.exit_code == 2  # the culprits stand; the cut step is an error beside them
    assert any(e["code"] == "RUN-001" for e in report["errors"])
    again = RunDir(run_dir.path)
    assert again.compact() == 1 and again.records() and again.unreadable == []


def test_records_carry_their_schema_and_an_older_run_is_read_a_newer_refused(
    run_dir: RunDir, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = [json.loads(x) for x in run_dir.results.read_text().splitlines()]
    assert {x["schema"] for x in lines} == {SCHEMA}
    # schema 1: the same records without the key (runs from before it) read as they are
    old = RunDir(run_dir.path.parent / "old")
    old.results.write_text(
        "".join(json.dumps({k: v for k, v in x.items() if k != "schema"}) + "\n" for x in lines)
    )
    assert [r["id"] for r in old.records()] == [x["id"] for x in lines]
    assert write_reports(old)[1].exit_code == write_reports(run_dir)[1].exit_code
    # a record of a kind no rackops writes is not a record
    with old.results.open("a") as fh:
        fh.write(json.dumps({**lines[0], "id": "x", "kind": "mystery"}) + "\n")
    old = RunDir(old.path)
    assert "x" not in {r["id"] for r in old.records()} and old.unreadable
    # a newer schema is refused, naming the line and what to do
    with run_dir.results.open("a") as fh:
        fh.write(json.dumps({**lines[0], "schema": SCHEMA + 1}) + "\n")
    assert main(["report", str(run_dir.path)]) == 3  # unreadable input, as everywhere
    err = capsys.readouterr().err
    assert f"results.jsonl:{len(lines) + 1}: a record of schema {SCHEMA + 1}" in err, err
    assert "newer rackops" in err
