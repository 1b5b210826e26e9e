"""GB200 / GB300 NVL72 (issue 42): a compute tray's GPUs judged on the NVLink fabric they
join — state and status, the partition (clique and cluster UUID) of a multi-node domain, and
the fabric's health — from real `nvidia-smi -q -x` captures and outputs derived from them
with the values public reports show (tests/fixtures/nvidia-smi-xml/SOURCES.md)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from conftest import Rack

from rackops.checks import check_gpu_xml
from rackops.diagnostics import Level
from rackops.errors import ProfileError
from rackops.findings import Finding, Status
from rackops.inventory import load_inventory
from rackops.parsers import ParseError
from rackops.profiles import load_profile, load_profile_file
from rackops.tools import parse

XML = Path(__file__).parent / "fixtures" / "nvidia-smi-xml"
FABRIC = {"GPU-009", "GPU-011", "GPU-012"}


def _judge(fixture: str, profile: str, edit: tuple[str, str] | None = None) -> list[Finding]:
    text = (XML / f"{fixture}.txt").read_text()
    if edit is not None:
        assert edit[0] in text
        text = text.replace(*edit, 1)  # GPU 0's block
    found = check_gpu_xml(parse("nvidia-smi-xml", text), load_profile(profile).profile, node="t1")
    return [f for f in found if f.code in FABRIC]


@pytest.mark.parametrize(
    ("fixture", "profile"),
    [
        ("gb200x4-580-real", "gb200-nvl72"),
        ("gb300x4-580-real", "gb300-nvl72"),
        ("h100x8-580-real", "h100-sxm-ndr"),  # clique 0 and a zero UUID: a node-local NVSwitch
        ("b200x8-580-real", "h100-sxm-ndr"),
    ],
)
def test_a_real_healthy_fabric_is_ok(fixture: str, profile: str) -> None:
    assert _judge(fixture, profile) == []


@pytest.mark.parametrize(
    ("fixture", "gpu", "code", "words"),
    [
        ("gb200x4-gpu2-insufficient-resources", 2, "GPU-009", "Completed/Insufficient Resources"),
        ("gb200x4-gpu0-in-progress", 0, "GPU-009", "In Progress"),
        ("gb200x4-gpu1-health-unhealthy", 1, "GPU-012", "summary Unhealthy"),
    ],
)
def test_a_gpu_off_the_fabric_is_named_alone(fixture: str, gpu: int, code: str, words: str) -> None:
    found = _judge(fixture, "gb200-nvl72")
    assert [(f.code, f.status, f.subject.gpu) for f in found] == [(code, Status.FAIL, gpu)]
    assert words in found[0].message and "switch trays" in (found[0].remediation or "")


def test_completed_success_without_a_partition_is_no_domain() -> None:
    """A GPU that says Completed/Success with clique 0 and a zero UUID joined no partition:
    healthy on an HGX node, a tray outside its domain on an NVL72 one."""
    first = "<cliqueId>2</cliqueId>\n\t\t\t<clusterUuid>00000001-0000-0000-0000-000000000001"
    edit = (
        first,
        "<cliqueId>0</cliqueId>\n\t\t\t<clusterUuid>00000000-0000-0000-0000-000000000000",
    )
    found = _judge("gb200x4-580-real", "gb200-nvl72", edit)
    assert [(f.code, f.subject.gpu) for f in found] == [("GPU-011", 0)]
    assert "in no NVLink partition" in found[0].message


@pytest.mark.parametrize(
    ("edit", "status", "words"),
    [
        (
            ("<bandwidth>Full</bandwidth>", "<bandwidth>Degraded</bandwidth>"),
            Status.FAIL,
            "bandwidth",
        ),
        (
            ("<route_unhealthy>False</route_unhealthy>", "<route_unhealthy>True</route_unhealthy>"),
            Status.FAIL,
            "route unhealthy",
        ),
        (
            (
                "<route_recovery_in_progress>False</route_recovery_in_progress>",
                "<route_recovery_in_progress>True</route_recovery_in_progress>",
            ),
            Status.WARN,
            "route recovery in progress",
        ),
        (
            (
                "<incorrect_configuration>None</incorrect_configuration>",
                "<incorrect_configuration>Incompatible GPU Firmware</incorrect_configuration>",
            ),
            Status.FAIL,
            "Incompatible GPU Firmware",
        ),
    ],
    ids=["bandwidth-degraded", "route-unhealthy", "route-recovery", "incorrect-configuration"],
)
def test_each_health_field_is_judged(edit: tuple[str, str], status: Status, words: str) -> None:
    found = _judge("gb300x4-580-real", "gb300-nvl72", edit)
    assert [(f.code, f.status, f.subject.gpu) for f in found] == [("GPU-012", status, 0)]
    assert words in found[0].message


def test_a_garbled_health_flag_is_an_unreadable_output() -> None:
    text = (XML / "gb200x4-580-real.txt").read_text()
    text = text.replace("<route_unhealthy>False<", "<route_unhealthy>Fa1se<", 1)
    with pytest.raises(ParseError, match="not True or False"):
        parse("nvidia-smi-xml", text)


def test_a_domain_that_is_not_whole_trays_is_refused(tmp_path: Path) -> None:
    text = (
        (Path(load_profile("gb200-nvl72").path))
        .read_text()
        .replace("nvlink_domain: 72", "nvlink_domain: 70")
    )
    (tmp_path / "p.yaml").write_text(text)
    with pytest.raises(ProfileError, match="not a whole number of 4-GPU"):
        load_profile_file(tmp_path / "p.yaml")


# --- the domain in the design: lint says whether it is whole -------------------------------


def _nvl(r: Rack, host: str, value: object) -> None:
    """Set tray ``host``'s rackops_nvlink in hosts.yml (where the example sets it)."""
    text = (r.path / "hosts.yml").read_text()
    start = text.index(f"        {host}: ")
    end = text.index("\n", start)
    addr = text[start:end].split("ansible_host: ")[1].split(",")[0]
    line = f"        {host}: {{ansible_host: {addr}"
    line += "}" if value is None else f", rackops_nvlink: {value}}}"
    (r.path / "hosts.yml").write_text(text[:start] + line + text[end:])


def _codes(r: Rack) -> list[tuple[str, str | None, str]]:
    return [(d.code, d.subject, d.message) for d in r.lint().diagnostics if d.code == "NVL001"]


def test_the_example_domain_is_whole(nvl72: Rack) -> None:
    report = nvl72.lint()
    assert [d for d in report.diagnostics if d.level is Level.ERROR] == []
    cluster = load_inventory(nvl72.path).raise_for_errors()
    assert {n.nvlink.domain for n in cluster.nodes if n.nvlink} == {"nvl72-a"}
    assert sum(n.gpus for n in cluster.nodes) == 72


@pytest.mark.parametrize(
    ("host", "value", "words"),
    [
        ("tray07", None, "tray07: profile gb200-nvl72 is a tray of a 72-GPU NVLink domain"),
        ("tray07", "{domain: nvl72-a, slot: 3}", "slot 3 is tray03's and tray07's"),
        ("tray07", "{domain: nvl72-a, slot: 19}", "tray07: slot 19 is past the 18 trays"),
        ("tray07", "{domain: nvl72-b, slot: 7}", "domain nvl72-a: 17 trays, 68 GPUs"),
        ("tray07", "{domain: 'nvl72-a;reboot', slot: 7}", "rackops_nvlink"),
        # one tray says the domain is smaller than the others (and the profile) do
        ("tray07", "{domain: nvl72-a, slot: 7, gpus: 36}", "give its size differently"),
    ],
    ids=["no-domain", "slot-twice", "slot-past", "split-domain", "bad-name", "size-disagrees"],
)
def test_a_domain_that_is_not_whole_is_an_error_naming_the_tray(
    nvl72: Rack, host: str, value: object, words: str
) -> None:
    _nvl(nvl72, host, value)
    errors = [
        d
        for d in nvl72.lint().diagnostics
        if d.level is Level.ERROR and d.code in ("NVL001", "INV001")
    ]
    assert any(words in d.message for d in errors), [d.message for d in errors]


def test_a_domain_on_an_hgx_node_is_an_error(ib: Rack) -> None:
    text = (
        (ib.path / "hosts.yml")
        .read_text()
        .replace(
            "node01: {ansible_host: 192.0.2.11}",
            "node01: {ansible_host: 192.0.2.11, rackops_nvlink: {domain: d1, slot: 1}}",
        )
    )
    (ib.path / "hosts.yml").write_text(text)
    msgs = [d.message for d in ib.lint().diagnostics if d.code == "NVL001"]
    assert any("no multi-node NVLink domain" in m for m in msgs), msgs


# --- the domain judged as one: trays compared with each other ------------------------------

REAL = parse("nvidia-smi-xml", (XML / "gb200x4-580-real.txt").read_text())


def _tray(node: str, slot: int, clique: int = 2, cluster: str | None = None, **gpu: int) -> Any:
    """A tray read as the real GB200 capture, its GPUs moved to ``clique`` (and ``gpuN=c``:
    GPU N alone in clique c)."""
    from rackops.checks.nvldomain import TrayRead

    uuid = cluster or "00000001-0000-0000-0000-000000000001"
    gpus = tuple(
        dataclasses.replace(
            g, fabric_clique_id=gpu.get(f"gpu{g.index}", clique), fabric_cluster_uuid=uuid
        )
        for g in REAL.gpus
    )
    return TrayRead(node, slot, gpus)


def _domain(*odd: Any, pinned: int | None = None) -> tuple[list[Finding], dict[str, Any]]:
    from rackops.checks.nvldomain import judge_domain

    by_slot = {t.slot: t for t in odd}
    trays = [by_slot.get(s) or _tray(f"tray{s:02d}", s) for s in range(1, 19)]
    return judge_domain("nvl72-a", trays, 72, pinned)


def test_a_whole_domain_is_one_partition_of_72_gpus() -> None:
    found, view = _domain()
    assert [(f.code, f.status) for f in found] == [("NVL-000", Status.OK)]
    assert "72 of 72 GPUs in one partition (clique 2" in found[0].message
    assert view["in_partition"] == 72 and view["partition"]["clique"] == 2
    assert len(view["trays"]) == 18


def test_a_tray_in_another_clique_is_that_tray_not_its_gpus() -> None:
    found, view = _domain(_tray("tray07", 7, clique=3))
    assert [(f.code, f.subject.node, f.subject.gpu) for f in found] == [("NVL-001", "tray07", None)]
    assert "slot 7" in found[0].message and "68 of its 72 GPUs" in found[0].message
    assert view["in_partition"] == 68 and view["trays"]["tray07"]["in_partition"] == 0


def test_a_tray_of_another_cluster_is_named_too() -> None:
    other = "00000002-0000-0000-0000-000000000002"
    found, _ = _domain(_tray("tray11", 11, cluster=other))
    assert [(f.code, f.subject.node) for f in found] == [("NVL-001", "tray11")]
    assert other in found[0].message


def test_one_gpu_apart_from_its_tray_is_that_gpu() -> None:
    found, _ = _domain(_tray("tray05", 5, gpu3=9))
    assert [(f.code, f.subject.node, f.subject.gpu) for f in found] == [("NVL-001", "tray05", 3)]


def test_a_split_domain_with_no_majority_names_each_part() -> None:
    half = [_tray(f"tray{s:02d}", s, clique=3) for s in range(10, 19)]
    found, _ = _domain(*half)
    assert [(f.code, f.status, f.subject.node) for f in found] == [("NVL-002", Status.FAIL, None)]
    assert "tray01" in found[0].message and "tray18" in found[0].message


def test_a_pinned_clique_is_held_and_an_unread_tray_is_an_error() -> None:
    from rackops.checks.nvldomain import TrayRead

    found, _ = _domain(TrayRead("tray04", 4, None), pinned=5)
    codes = [(f.code, f.status, f.subject.node) for f in found]
    assert ("NVL-005", Status.WARN, "tray04") in codes
    assert ("NVL-003", Status.FAIL, None) in codes


def test_a_gpu_off_the_fabric_is_that_gpu_never_its_tray() -> None:
    """A GPU that did not join is short of the domain's 72: named as that GPU (GPU-009 on
    its node says why), never its tray or the domain."""
    t = _tray("tray02", 2)
    off = dataclasses.replace(t.gpus[1], fabric_status="Insufficient Resources")
    t = dataclasses.replace(t, gpus=(t.gpus[0], off, *t.gpus[2:]))
    found, view = _domain(t)
    assert [(f.code, f.subject.node, f.subject.gpu) for f in found] == [("NVL-004", "tray02", 1)]
    assert view["in_partition"] == 71 and "71 of the domain's 72" in found[0].message


def test_a_tray_none_of_whose_gpus_joined_is_that_tray() -> None:
    """The switch trays did not configure one tray (its GPUs In Progress): the tray, once."""
    t = _tray("tray05", 5)
    waiting = dataclasses.replace(
        t, gpus=tuple(dataclasses.replace(g, fabric_state="In Progress") for g in t.gpus)
    )
    found, view = _domain(waiting)
    assert [(f.code, f.subject.node, f.subject.gpu, f.action) for f in found] == [
        ("NVL-008", "tray05", None, "switch")
    ]
    assert "none of its 4 GPUs" in found[0].message and "4 In Progress/Success" in found[0].message
    assert view["in_partition"] == 68


# --- the domain stage of a run, its record and its report ----------------------------------


def _run_domain(tmp_path: Path, edit: Any = None) -> dict[str, Any]:
    """A run of the example rack whose 18 trays printed the real GB200 capture (tray07's
    edited by ``edit``), its domain stage, and the report's culprits."""
    from rackops.checks import check_gpu_xml
    from rackops.suites import load_suite
    from rackops.validate.executor import CommandResult
    from rackops.validate.plan import make_plan
    from rackops.validate.report import write_reports
    from rackops.validate.rundir import RunDir
    from rackops.validate.runner import Runner

    inv = Path(__file__).resolve().parent.parent / "inventories" / "example-gb200-nvl72"
    cluster = load_inventory(inv).raise_for_errors()
    suite = load_suite("acceptance")
    profiles = {"gb200-nvl72": load_profile("gb200-nvl72").profile}
    no_executor: Any = None  # the domain stage runs no command
    r = Runner(cluster, suite, profiles, {}, no_executor, RunDir(tmp_path), progress=print)
    text = (XML / "gb200x4-580-real.txt").read_text()
    for node in cluster.nodes:
        out = edit(text) if edit is not None and node.name == "tray07" else text
        found = check_gpu_xml(parse("nvidia-smi-xml", out), profiles["gb200-nvl72"], node=node.name)
        argv = ("nvidia-smi", "-q", "-x")
        result = CommandResult(node.name, argv, 0, out, "", 0.5)
        r._record(
            f"node/{node.name}/nvidia-smi-xml", "node", node.name, "nvidia-smi-xml", result, found
        )
    r.nvl_domain_stage(make_plan(cluster, suite), set(), set())
    report, _, _ = write_reports(RunDir(tmp_path))
    return report


def _records(path: Path) -> list[dict[str, Any]]:
    from rackops.validate.rundir import RunDir

    return list(RunDir(path).records())


def test_a_run_judges_the_domain_and_its_report_names_the_tray(tmp_path: Path) -> None:
    clean = _run_domain(tmp_path / "clean")
    recs = [r for r in _records(tmp_path / "clean") if r["kind"] == "nvldomain"]
    assert [(r["id"], [f["code"] for f in r["findings"]]) for r in recs] == [
        ("nvldomain/nvl72-a", ["NVL-000"])
    ]
    assert recs[0]["meta"]["domain"]["in_partition"] == 72
    assert clean["culprits"] == []
    moved = _run_domain(tmp_path / "moved", lambda t: t.replace("<cliqueId>2<", "<cliqueId>3<"))
    where = [c["where"] for c in moved["culprits"]]
    assert where == ["tray07"], where


# --- IMEX: the domain as each tray's daemon sees it ----------------------------------------

IMEX = Path(__file__).parent / "fixtures" / "nvidia-imex"


def _imex_rack(r: Rack) -> Any:
    """The example domain with its trays at the AWS table's addresses, on its IMEX version."""
    table = (IMEX / "aws-pcs-570-18node-up.txt").read_text()
    addrs = [
        line.split(" - ")[1].strip() for line in table.splitlines() if line.startswith("Node #")
    ]
    text = (r.path / "hosts.yml").read_text()
    for i, addr in enumerate(addrs, start=1):
        text = text.replace(f"ansible_host: 192.0.2.{20 + i},", f"ansible_host: {addr},")
    (r.path / "hosts.yml").write_text(text)
    r.set("group_vars/all/versions.yml", "rackops_versions.driver", "570.172")
    return load_inventory(r.path).raise_for_errors()


def _imex(cluster: Any, text: str, tray: str = "tray01") -> list[Finding]:
    from rackops.checks.imex import check_imex

    node = cluster.node(tray)
    return check_imex(parse("nvidia-imex", text), node=node, cluster=cluster, driver="570.172")


def test_a_whole_imex_domain_is_ok(nvl72: Rack) -> None:
    cluster = _imex_rack(nvl72)
    found = _imex(cluster, (IMEX / "aws-pcs-570-18node-up.txt").read_text())
    assert [(f.code, f.status) for f in found] == [("IMEX-OK", Status.OK)]


def test_a_tray_whose_imex_is_down_is_that_tray_from_every_view(nvl72: Rack) -> None:
    cluster = _imex_rack(nvl72)
    text = (IMEX / "derived-18node-node7-unavailable.txt").read_text()
    for looker in ("tray01", "tray12"):
        found = [f for f in _imex(cluster, text, looker) if f.status is not Status.OK]
        assert [(f.code, f.subject.node) for f in found] == [("IMEX-002", "tray08")], found


def test_one_lost_imex_connection_and_a_short_node_table_are_named(nvl72: Rack) -> None:
    cluster = _imex_rack(nvl72)
    text = (IMEX / "aws-pcs-570-18node-up.txt").read_text()
    rows = text.splitlines()
    at = next(i for i, x in enumerate(rows) if x.strip().startswith("3 ") and "C   C" in x)
    cells = rows[at].split()
    cells[5] = "D"  # node 3 lost node 4
    rows[at] = "       " + "   ".join(cells)
    for looker in ("tray01", "tray09"):  # the pair's first tray, whichever tray looked
        seen = [f for f in _imex(cluster, "\n".join(rows), looker) if f.status is not Status.OK]
        assert [(f.code, f.subject.node) for f in seen] == [("IMEX-005", "tray04")]
    found = [f for f in _imex(cluster, "\n".join(rows)) if f.status is not Status.OK]
    assert [f.code for f in found] == ["IMEX-005"]
    assert "#3 (tray04) -> IMEX node #4 (tray05): D (disconnected)" in found[0].message
    one = (IMEX / "gh200-570-2node-up.txt").read_text()
    short = [f.code for f in _imex(cluster, one) if f.status is not Status.OK]
    assert short == ["IMEX-003"]


def test_imex_runs_only_on_trays_of_a_domain(nvl72: Rack, ib: Rack) -> None:
    from rackops.suites import load_suite
    from rackops.validate.plan import make_plan

    suite = load_suite("acceptance")
    plan = make_plan(load_inventory(nvl72.path).raise_for_errors(), suite)
    assert any(c.tool == "nvidia-imex" for c in plan.node_checks)
    plan = make_plan(load_inventory(ib.path).raise_for_errors(), suite)
    assert not any(c.tool == "nvidia-imex" for c in plan.node_checks)


def test_a_run_names_a_tray_whose_fabric_is_not_configured_once(tmp_path: Path) -> None:
    """tray07's four GPUs In Progress: their GPU-009 and the domain's NVL-008 are one
    culprit, the tray, fixed on the switch trays."""
    report = _run_domain(
        tmp_path, lambda t: t.replace("<state>Completed</state>", "<state>In Progress</state>")
    )
    assert [(c["where"], c["action"]) for c in report["culprits"]] == [("tray07", "switch")]
    codes = sorted({e["code"] for e in report["culprits"][0]["evidence"]})
    assert codes == ["GPU-009", "NVL-008"], codes


def test_the_report_shows_the_domain_on_its_first_screen(tmp_path: Path) -> None:
    import html

    report = _run_domain(tmp_path, lambda t: t.replace("<cliqueId>2<", "<cliqueId>3<"))
    (dom,) = report["nvlink_domains"]
    assert dom["domain"] == "nvl72-a" and dom["in_partition"] == 68 and dom["size"] == 72
    assert [(t["node"], t["slot"], t["in_partition"]) for t in dom["short"]] == [("tray07", 7, 0)]
    page = html.unescape((tmp_path / "report.html").read_text())
    first = page[: page.index("Could not decide") if "Could not decide" in page else None]
    assert "68 of 72" in first and "tray07 (slot 7: 0 of 4)" in first
    groups = [c["action"] for c in report["culprits"]]
    assert groups == ["switch"]  # the tray's partition is set on the NVLink switch trays


# --- the lab's reduced domain: its inventory is a whole domain of the lab profile ----------


@pytest.mark.parametrize("trays", [4, 18])
def test_the_lab_writes_a_whole_nvlink_domain_of_its_trays(tmp_path: Path, trays: int) -> None:
    """CI's 4 trays are a domain of 16 GPUs that says so (rackops_nvlink.gpus); 18 trays are
    a whole NVL72 of the same profile. Both lint clean."""
    from rackops.lab.inventory import write_inventory
    from rackops.lab.model import LabNode, LabState
    from rackops.lab.scenario import Scenario
    from rackops.lint import lint_inventory

    names = [f"node{i:02d}" for i in range(1, trays + 1)]
    rails = {n: {r: f"198.18.{r}.{10 + i}" for r in range(4)} for i, n in enumerate(names, 1)}
    spec = Scenario.model_validate({"hardware": {"gpus": 4, "nvlink_domain": "nvl-a"}})
    versions = {"ofed": "25.07-0.9.7", "driver": "580.95.05", "dcgm": "4.4.1"}
    state = LabState(
        "l", "podman", tmp_path, "img", False, tmp_path / "inv", tmp_path / "k", [], versions
    )
    state.nodes = [
        LabNode(n, i, f"c{i}", 2300 + i, f"198.19.0.{10 + i}", rails[n])
        for i, n in enumerate(names, 1)
    ]
    state.rails, state.nvlink_domain = 4, spec.nvlink_domain
    write_inventory(state, tmp_path / "inv")
    cluster = load_inventory(tmp_path / "inv").raise_for_errors()
    assert {(n.name, n.profile, n.nvlink.slot if n.nvlink else None) for n in cluster.nodes} == {
        (n, "lab-gb200-roce400", i) for i, n in enumerate(names, 1)
    }
    sizes = {n.nvlink.size(72) for n in cluster.nodes if n.nvlink}
    assert sizes == {4 * trays}
    assert [d for d in lint_inventory(tmp_path / "inv").diagnostics if d.code == "NVL001"] == []
    with pytest.raises(Exception, match="4-GPU trays on RoCE"):
        _ = Scenario.model_validate({"hardware": {"nvlink_domain": "nvl-a"}}).nvlink_domain


def test_a_simulated_tray_is_a_gb200_with_the_public_all_reduce_figures() -> None:
    """A tray (hardware nvlink_domain) is what the real GB200 capture shows, and reduces at
    the public figures: one tray 679.61 GB/s, the domain over MNNVL 834.57 GB/s (hwsim/
    nccl.py takes the latter when every rank's tray is in one domain, not the NICs' sum)."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "rackops" / "lab"))
    from hwsim.node import Node

    scenario = {"hardware": {"gpus": 4, "nvlink_domain": "nvl-a"}, "nodes": {"t1": {}, "t2": {}}}
    tray = Node(scenario, "t1")
    assert (tray.hw["gpu_model"], tray.hw["hcas"], tray.hw["memory_mib"]) == (
        "NVIDIA GB200",
        4,
        189471,
    )
    assert tray.hw["nccl_single_busbw_gbs"] == 679.61 and tray.hw["nccl_mnnvl_busbw_gbs"] == 834.57


def test_a_domain_with_no_partition_at_all_is_one_domain_fault() -> None:
    """NMX assigned no partition: every GPU Completed/Success with clique 0 and a zero UUID
    (or every GPU still In Progress). The domain is not OK, and it is one fault: the
    domain's, not 16 trays' GPUs."""
    zero = "00000000-0000-0000-0000-000000000000"
    trays = [_tray(f"tray{s:02d}", s, clique=0, cluster=zero) for s in range(1, 19)]
    found, view = _domain(*trays)
    assert [(f.code, f.status, f.subject.node) for f in found] == [("NVL-007", Status.FAIL, None)]
    assert found[0].action == "switch" and view["in_partition"] == 0 and len(view["trays"]) == 18


def test_an_unread_tray_is_a_warning_of_the_domain_not_a_second_error() -> None:
    from rackops.checks.nvldomain import TrayRead

    found, view = _domain(TrayRead("tray04", 4, None))
    assert [(f.code, f.status, f.subject.node) for f in found] == [
        ("NVL-005", Status.WARN, "tray04")
    ]
    assert view["trays"]["tray04"]["read"] is False


def test_a_domain_short_of_gpus_no_finding_explains_is_said() -> None:
    """A tray listing 3 GPUs (one fell off the bus: its node's GPU count names it): the
    domain is 71 of 72 and says so, as a warning."""
    t = _tray("tray06", 6)
    t = dataclasses.replace(t, gpus=t.gpus[:3])
    found, _ = _domain(t)
    assert [(f.code, f.status) for f in found] == [("NVL-006", Status.WARN)]
    assert "71 of 72" in found[0].message


def test_localisation_folds_every_gpu_of_a_domain_without_a_partition_into_it() -> None:
    from rackops.validate.localise import localise

    def rec(node: str, gpu: int) -> dict[str, Any]:
        f = {"code": "GPU-011", "status": "FAIL", "subject": {"node": node, "gpu": gpu}}
        return {
            "id": f"node/{node}/nvidia-smi-xml",
            "kind": "node",
            "node": node,
            "tool": "nvidia-smi-xml",
            "findings": [{**f, "message": "in no partition"}],
            "meta": {},
        }

    nodes = [f"tray{s:02d}" for s in range(1, 5)]
    records = [rec(n, g) for n in nodes for g in range(4)]
    domain = {
        "code": "NVL-007",
        "status": "FAIL",
        "subject": {},
        "message": "no partition",
        "action": "switch",
    }
    view = {"domain": "d", "trays": {n: {"slot": i} for i, n in enumerate(nodes, 1)}}
    records.append(
        {
            "id": "nvldomain/d",
            "kind": "nvldomain",
            "node": None,
            "tool": "nvldomain",
            "findings": [domain],
            "meta": {"domain": view},
        }
    )
    verdict = localise(records)
    assert [(c.kind, c.node) for c in verdict.culprits] == [("nvldomain", None)]
    assert len(verdict.culprits[0].evidence) == 17


def test_the_domain_row_says_imex_and_nvlink_per_tray() -> None:
    """The report's domain row: trays whose IMEX view is clean, trays with every NVLink up,
    and each problem with its tray (and GPU)."""
    from rackops.validate.report import _domains

    def rec(kind: str, tool: str, node: str | None, findings: list[dict[str, Any]]) -> Any:
        return {"id": f"{tool}/{node}", "kind": kind, "tool": tool, "node": node,
                "findings": findings, "meta": {}}  # fmt: skip

    ok = [{"code": "X-000", "status": "OK", "subject": {}, "message": "fine"}]
    down = {"code": "NVL-LINK", "status": "FAIL", "subject": {"node": "t2", "gpu": 3},
            "message": "link 5 <inactive>"}  # fmt: skip
    view = {"domain": "d", "size": 8, "partition": None, "in_partition": 8,
            "trays": {"t1": {"slot": 1, "read": True, "gpus": 4, "in_partition": 4},
                      "t2": {"slot": 2, "read": True, "gpus": 4, "in_partition": 4}}}  # fmt: skip
    records = [
        rec("node", "nvidia-imex", "t1", ok),
        rec("node", "nvidia-imex", "t2", ok),
        rec("node", "nvidia-smi-nvlink", "t1", ok),
        rec("node", "nvidia-smi-nvlink", "t2", [down]),
        rec("node", "nvidia-smi-nvlink", "elsewhere", [down]),  # not a tray of the domain
        {**rec("nvldomain", "nvldomain", None, ok), "meta": {"domain": view}},
    ]
    (dom,) = _domains(records)
    assert (dom["imex"]["read"], dom["imex"]["clean"], dom["imex"]["problems"]) == (2, 2, [])
    assert (dom["nvlink"]["clean"], dom["nvlink"]["problems"]) == (
        1,
        [{"node": "t2", "gpu": 3, "code": "NVL-LINK", "status": "FAIL",
          "message": "link 5 <inactive>"}],
    )  # fmt: skip


def test_a_smaller_domain_says_its_size_and_is_held_to_it(nvl72: Rack) -> None:
    """An NVL36 rack (9 trays of the same tray profile) says gpus: 36 on every tray: whole at
    9 trays; a size past the profile's or not whole trays is refused."""
    text = (nvl72.path / "hosts.yml").read_text()
    for t in range(1, 19):
        host = f"tray{t:02d}"
        value = f"{{domain: nvl36-a, slot: {t}, gpus: 36}}" if t <= 9 else None
        _nvl(nvl72, host, value)
    found = [m for c, _s, m in _codes(nvl72)]
    # trays 10..18 now say no domain; the 9 of nvl36-a are whole
    assert not [m for m in found if "nvl36-a" in m], found
    (nvl72.path / "hosts.yml").write_text(text)
    for t in range(1, 19):
        _nvl(nvl72, f"tray{t:02d}", f"{{domain: nvl72-a, slot: {t}, gpus: 74}}")
    assert any(
        "not a whole number of 4-GPU trays up to the profile's 72" in m
        for _c, _s, m in _codes(nvl72)
    )


def test_the_whole_nvl72_scenario_loads_and_a_lab_past_18_trays_is_refused(
    tmp_path: Path,
) -> None:
    from rackops import lab
    from rackops.errors import RackopsError
    from rackops.lab.scenario import load_scenario

    root = Path(__file__).resolve().parent.parent
    scenario = root / "validators" / "scenarios" / "nvl72.yaml"
    assert load_scenario(str(scenario)).nvlink_domain == "nvl72-lab"
    with pytest.raises(RackopsError, match="one rack of 2 to 18 trays"):
        lab.up(nodes=19, engine_name="podman", workdir=str(tmp_path), scenario=str(scenario))


# --- a tray's own IMEX: its daemon, its channel 0, its nodes_config.cfg ---------------------

IMEX_NODE = Path(__file__).parent / "fixtures" / "imex-node"


def _imex_node(cluster: Any, name: str, tray: str = "tray01", edit: Any = None) -> list[Finding]:
    from rackops.checks.imex import check_imex_node

    text = (IMEX_NODE / name).read_text()
    parsed = parse("imex-node", edit(text) if edit else text)
    return check_imex_node(parsed, node=cluster.node(tray), cluster=cluster)


def test_a_trays_own_imex_is_held_to_its_channel_and_its_domain(nvl72: Rack) -> None:
    cluster = load_inventory(nvl72.path).raise_for_errors()
    four = "".join(f"172.27.58.{i}\n" for i in range(70, 74))
    rows = "".join(f"172.27.58.{i}\n" for i in range(70, 88))  # the domain's 18 trays
    whole = _imex_node(
        cluster, "guide-234-ready-4node.txt", edit=lambda t: t.replace(four, rows, 1)
    )
    assert [(f.code, f.status) for f in whole] == [("IMEX-010", Status.OK)], whole
    # the real GB200 node's channel0, made with nvidia-caps' major and minor
    (bad,) = _imex_node(cluster, "gb200-channel0-at-nvidia-caps-major.txt")[:1]
    assert (bad.code, bad.observed, bad.expected) == ("IMEX-014", "497,4323", "498,0"), bad
    found = _imex_node(cluster, "composed-no-channel-no-config-not-ready.txt")
    assert [f.code for f in found] == ["IMEX-011", "IMEX-013", "IMEX-015"]
    assert "No such file" in found[2].message and found[0].subject.node == "tray01"
    cut = _imex_node(cluster, "cut-guide-234-mid-channels.txt")
    assert [(f.code, f.status) for f in cut] == [("IMEX-010", Status.ERROR)]


def test_one_trays_nodes_config_apart_is_that_tray() -> None:
    from rackops.checks.imex import judge_nodes_configs

    same = tuple(f"10.0.0.{i}" for i in range(1, 19))
    configs = {f"tray{i:02d}": same for i in range(1, 19)}
    assert judge_nodes_configs("nvl72-a", configs) == []
    configs["tray09"] = same[:17]
    (f,) = judge_nodes_configs("nvl72-a", configs)
    assert (f.code, f.subject.node, f.observed, f.expected) == ("IMEX-016", "tray09", 17, 18)
    configs["tray10"] = (same[1], same[0], *same[2:])  # the same entries, another order
    found = judge_nodes_configs("nvl72-a", configs)
    assert [g.subject.node for g in found] == ["tray09", "tray10"]
    assert "another order" in found[1].message
    split = {"a": same, "b": same[:3], "c": same[:5], "d": same[:7]}
    (whole,) = judge_nodes_configs("nvl72-a", split)
    assert whole.subject.node is None and "none held by most trays" in whole.message


def test_the_simulated_tray_lays_out_imex_as_the_driver_does(tmp_path: Path) -> None:
    import os
    import stat
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "rackops" / "lab"))
    from hwsim.node import Node
    from hwsim.tree import IMEX_MAJOR, imex_tree

    imex_tree(Node({"hardware": {"gpus": 4, "nvlink_domain": "d"}}, "t1"), [str(tmp_path)])
    assert f"{IMEX_MAJOR} nvidia-caps-imex-channels" in (tmp_path / "proc/devices").read_text()
    chan = tmp_path / "dev/nvidia-caps-imex-channels/channel0"
    st = chan.lstat()
    assert stat.S_ISCHR(st.st_mode) and os.major(st.st_rdev) == IMEX_MAJOR, st
