"""The Grafana dashboard shipped with the collection: every panel's query asks for metrics
and labels that rackops' metrics.prom really has (checked against a run's own file, read
with Prometheus' parser), and every figure rackops writes has a panel."""

from __future__ import annotations

import json
import re
import subprocess
import tarfile
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from rackops.validate.report import build_report, prometheus
from rackops.validate.rundir import RunDir
from rackops.validate.synthrun import make_run

ROOT = Path(__file__).resolve().parent.parent
DASHBOARD = ROOT / "dashboards" / "grafana" / "rackops-acceptance.json"
SCRAPE_LABELS = {"job", "instance"}  # what the scrape adds to a textfile's samples


@pytest.fixture(scope="module")
def metrics(tmp_path_factory: pytest.TempPathFactory) -> dict[str, set[str]]:
    """Each metric family rackops writes, with the labels of its samples."""
    run = make_run(tmp_path_factory.mktemp("dash") / "run", nodes=8)
    report = build_report(RunDir(run))
    report["switch_ports"] = [  # a switch port read during the run (no switch in synthrun)
        {"switch": "leaf1", "port": "Ethernet0", "status": "OK", "delta": {"rx_errors": 1}}
    ]
    families = {}
    for fam in text_string_to_metric_families(prometheus(report)):
        families[fam.name] = {k for s in fam.samples for k in s.labels}
        assert fam.samples, f"{fam.name}: no sample in a full run's metrics"
    return families


def queries() -> list[tuple[str, str]]:
    dash = json.loads(DASHBOARD.read_text())
    out = [(p["title"], t["expr"]) for p in dash["panels"] for t in p["targets"]]
    out += [(v["name"], v["query"]) for v in dash["templating"]["list"] if v["type"] == "query"]
    return out


def test_every_query_names_metrics_and_labels_rackops_writes(metrics: dict[str, set[str]]) -> None:
    assert queries()
    for title, expr in queries():
        names = set(re.findall(r"\brackops_[a-z_]+\b", expr))
        assert names and names <= set(metrics), (title, names - set(metrics))
        labels = set(metrics[next(iter(names))]) | SCRAPE_LABELS
        for name in names:
            labels &= metrics[name] | SCRAPE_LABELS
        used = {m for grp in re.findall(r"\bby \(([^)]*)\)", expr) for m in re.split(r",\s*", grp)}
        used |= set(re.findall(r"[{,]\s*([a-z_]+)\s*(?:=~|!=|=)", expr))
        used |= set(re.findall(r"label_values\([a-z_]+, ([a-z_]+)\)", expr))
        assert used <= labels, (title, used - labels)


def test_every_metric_has_a_panel(metrics: dict[str, set[str]]) -> None:
    shown = {n for _, expr in queries() for n in re.findall(r"\brackops_[a-z_]+\b", expr)}
    assert set(metrics) - shown == set()


def test_a_query_with_a_misspelt_metric_is_caught(metrics: dict[str, set[str]]) -> None:
    """The check above can fail: a query for a metric rackops does not write."""
    names = set(re.findall(r"\brackops_[a-z_]+\b", "min by (rail) (rackops_link_bandwith_gbps)"))
    assert not names <= set(metrics)


def test_the_collection_ships_the_dashboard(tmp_path: Path) -> None:
    built = subprocess.run(
        [str(ROOT / ".venv" / "bin" / "ansible-galaxy"), "collection", "build", "--output-path",
         str(tmp_path), str(ROOT)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    (tarball,) = tmp_path.glob("rackops-rackops-*.tar.gz")
    with tarfile.open(tarball) as tar:
        member = tar.extractfile("dashboards/grafana/rackops-acceptance.json")
        assert member is not None
        assert json.loads(member.read())["uid"] == "rackops-acceptance"
