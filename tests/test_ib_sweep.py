"""The InfiniBand sweep judged without a lab: the two-rack IB lab's inventory (as `rackops lab
up --racks 2` writes it) and hwsim's ``ibdiagnet`` / ``perfquery -x -l`` for that fabric, read
by the real parsers and judged by :mod:`rackops.checks.ibfabric`: each fault kind is named at
its link, a swap names both cables, a cut or missing file is never a pass."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rackops.checks.ibfabric import (
    Sweep,
    judge_isls,
    judge_sm,
    judge_stages,
    switch_lids,
    switch_samples,
)
from rackops.findings import Status
from rackops.inventory import load_inventory
from rackops.inventory.model import Cluster
from rackops.lab import switches as lab_switches
from rackops.lab.inventory import write_inventory
from rackops.lab.model import LabNode, LabState
from rackops.lab.scenario import Scenario
from rackops.lab.wiring import as_json, wiring
from rackops.parsers.ibdiagnet import Ibdiagnet
from rackops.tools import parse

HWSIM = str(Path(__file__).resolve().parent.parent / "rackops" / "lab")
NAMES = ["node01", "node02", "node03", "node04"]
RAILS = {n: {r: f"198.18.{r}.{10 + i}" for r in range(8)} for i, n in enumerate(NAMES, 1)}


def _cluster(tmp: Path) -> Cluster:
    nodes = [
        LabNode(n, i, f"c{i}", 2300 + i, f"198.19.0.{10 + i}", RAILS[n])
        for i, n in enumerate(NAMES, 1)
    ]
    versions = {"ofed": "25.07-0.9.7", "driver": "580.95.05", "dcgm": "4.4.1"}
    state = LabState("l", "podman", tmp, "img", False, tmp / "inv", tmp / "key", [], versions)
    state.nodes, state.racks, state.ib = nodes, 2, True
    write_inventory(state, tmp / "inv")
    return load_inventory(tmp / "inv").raise_for_errors()


class Fabric:
    """hwsim's sweep of the two-rack IB fabric with these fabric faults."""

    def __init__(self, tmp: Path, faults: list[dict[str, Any]]) -> None:
        spec = Scenario.model_validate(
            {"hardware": {"link_layer": "InfiniBand"}, "fabric": {"faults": faults}}
        )
        data = spec.for_hwsim(NAMES, RAILS)
        data["fabric"]["isls"] = lab_switches.isls(2, True)
        data["wiring"] = as_json(wiring(spec, NAMES, 8, 2))
        self.path = tmp / "scenario.json"
        self.path.write_text(json.dumps(data))
        self.tmp = tmp

    def run(self, *argv: str) -> str:
        proc = self.proc(*argv)
        # ibdiagnet exits 1 when it found fabric errors, as the real one does
        assert proc.returncode in ((0, 1) if argv[0] == "ibdiagnet" else (0,)), proc.stderr
        return proc.stdout

    def proc(self, *argv: str) -> subprocess.CompletedProcess[str]:
        env = {
            **os.environ,
            "RACKOPS_HWSIM_SCENARIO": str(self.path),
            "RACKOPS_HWSIM_STATE": str(self.tmp / "state"),
            "RACKOPS_HWSIM_NODE": "node02",
            "PYTHONPATH": HWSIM,
        }
        return subprocess.run(
            [sys.executable, "-m", "hwsim", *argv], env=env, capture_output=True, text=True
        )

    def sweep(self) -> Sweep:
        out = self.tmp / "sweep"
        console = parse("ibdiagnet", self.run("ibdiagnet", "-o", str(out)))
        sm = parse("ibdiagnet", (out / "ibdiagnet2.sm").read_text())
        dump = parse("ibdiagnet", (out / "ibdiagnet2.net_dump").read_text())
        assert all(isinstance(p, Ibdiagnet) and p.complete for p in (console, sm, dump))
        return Sweep(console, sm, dump)


def _fails(by_switch: dict[str, list[Any]]) -> dict[tuple[str, str], str]:
    return {
        (f.subject.switch, f.code): f.message
        for fs in by_switch.values()
        for f in fs
        if f.status is Status.FAIL
    }


def test_the_clean_fabric_has_every_isl_up_at_rate_and_one_master(tmp_path: Path) -> None:
    cluster = _cluster(tmp_path)
    sweep = Fabric(tmp_path, []).sweep()
    isls = judge_isls(cluster, sweep.dump)  # type: ignore[arg-type]
    assert sum(len(v) for v in isls.values()) == 16 and _fails(isls) == {}
    (sm,) = judge_sm(sweep)
    assert sm.status is Status.OK and "node01 mlx5_0" in sm.message and "1 standby" in sm.message
    assert judge_stages(sweep.console) == []  # type: ignore[arg-type]
    assert len(switch_lids(sweep.dump)) == 24  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("fault", "want"),
    [
        (
            {"kind": "isl_rate", "switch": "leaf1-r5"},
            {("leaf1-r5", "ISL-RATE"): "trained at 200 Gb/s"},
        ),
        (  # into a free port of its spine
            {"kind": "isl_miscabled", "switch": "leaf2-r6", "spine_port": "4/1"},
            {("leaf2-r6", "ISL-MISCABLED"): "spine-r6 IB port 7, not spine-r6 port 2/1"},
        ),
        (  # into the port of the other rack's uplink: a swap, two cables wrong
            {"kind": "isl_miscabled", "switch": "leaf2-r6", "spine_port": "1/1"},
            {
                ("leaf2-r6", "ISL-MISCABLED"): "IB port 1, not spine-r6 port 2/1",
                ("leaf1-r6", "ISL-MISCABLED"): "IB port 3, not spine-r6 port 1/1",
            },
        ),
    ],
)
def test_each_isl_fault_is_named_at_its_leaf_and_nowhere_else(
    tmp_path: Path, fault: dict[str, Any], want: dict[tuple[str, str], str]
) -> None:
    cluster = _cluster(tmp_path)
    sweep = Fabric(tmp_path, [fault]).sweep()
    got = _fails(judge_isls(cluster, sweep.dump))  # type: ignore[arg-type]
    assert set(got) == set(want)
    assert all(want[k] in got[k] for k in want), got


@pytest.mark.parametrize(("masters", "text"), [(0, "no master"), (2, "2 master subnet managers")])
def test_none_or_two_master_sms_fail_naming_where_they_run(
    tmp_path: Path, masters: int, text: str
) -> None:
    sweep = Fabric(tmp_path, [{"kind": "sm", "masters": masters}]).sweep()
    (f,) = judge_sm(sweep)
    assert f.status is Status.FAIL and text in f.message
    if masters == 2:
        assert "node01 mlx5_0" in f.message and "node04 mlx5_0" in f.message
    # the console says the same when the .sm file is gone
    (again,) = judge_sm(Sweep(sweep.console, None, sweep.dump))
    assert again.status is Status.FAIL and text in again.message


def test_no_sm_section_anywhere_is_an_error_not_a_pass() -> None:
    (f,) = judge_sm(Sweep(None, None, None))
    assert f.status is Status.ERROR


def test_an_isl_missing_from_the_sweep_is_down(tmp_path: Path) -> None:
    cluster = _cluster(tmp_path)
    sweep = Fabric(tmp_path, []).sweep()
    out = tmp_path / "sweep" / "ibdiagnet2.net_dump"
    blocks = out.read_text().split("\n\n")
    # leaf2-r3's block without its uplink row (the port went down)
    cut = [
        "\n".join(x for x in b.splitlines() if not x.lstrip().startswith("64 "))
        if '"MF0;leaf2-r3:' in b
        else b
        for b in blocks
    ]
    dump = parse("ibdiagnet", "\n\n".join(cut))
    got = _fails(judge_isls(cluster, dump))  # type: ignore[arg-type]
    assert got == {("leaf2-r3", "ISL-DOWN"): got.get(("leaf2-r3", "ISL-DOWN"), "")}
    assert "not seen" in got[("leaf2-r3", "ISL-DOWN")]
    assert sweep.dump is not None


def test_a_failed_stage_the_files_do_not_show_is_a_fabric_fail_quoting_it(tmp_path: Path) -> None:
    text = Fabric(tmp_path, []).run("ibdiagnet", "-o", str(tmp_path / "s"))
    text = text.replace(
        "-I- Duplicated GUIDs detection finished successfully",
        "-E- Duplicated GUIDs detection finished with errors\n"
        "-E- Duplicated Node GUID 0xb83fd2030000a003 found at 2 nodes",
    ).replace("-I- Discovery                           0          0", "-I- Discovery  0  1")
    console = parse("ibdiagnet", text)
    (f,) = judge_stages(console)  # type: ignore[arg-type]
    assert (
        f.status is Status.FAIL and "Discovery" in f.message and "0xb83fd2030000a003" in f.message
    )


def test_a_switch_perfquery_loop_maps_ib_ports_to_design_ports(tmp_path: Path) -> None:
    cluster = _cluster(tmp_path)
    fab = Fabric(tmp_path, [{"kind": "isl_errors", "switch": "leaf2-r3", "per_packets": 1}])
    lids = switch_lids(fab.sweep().dump)  # type: ignore[arg-type]
    spine = cluster.switch("spine-r3")
    assert spine is not None
    parsed = parse("perfquery", fab.run("perfquery", "-x", "-l", str(lids["spine-r3"])))
    samples = switch_samples(spine, parsed)  # type: ignore[arg-type]
    assert set(samples) == {"1/1", "2/1"}  # the spine's design ports, by IB number 1 and 3
    assert all(s.family == "ib" for s in samples.values())


def test_ib_only_faults_are_refused_on_a_roce_lab_and_incomplete_ones_everywhere() -> None:
    for bad, why in (
        ({"fabric": {"faults": [{"kind": "sm", "masters": 2}]}}, "InfiniBand"),
        (
            {
                "hardware": {"link_layer": "InfiniBand"},
                "fabric": {"faults": [{"kind": "isl_miscabled", "switch": "leaf1-r0"}]},
            },
            "spine_port",
        ),
        (
            {"hardware": {"link_layer": "InfiniBand"}, "fabric": {"faults": [{"kind": "sm"}]}},
            "masters",
        ),
        ({"fabric": {"faults": [{"kind": "isl_errors"}]}}, "switch"),
    ):
        with pytest.raises(ValueError, match=why):
            Scenario.model_validate(bad)


# --- the stage: a run's two sweeps through an executor that runs hwsim on this machine ----


class LocalSweep:
    """The sweep node as a process here: hwsim's ibdiagnet and perfquery, a real ``cat``;
    ``broken`` names a program that is missing (exit 127) or prints half its output."""

    def __init__(self, fabric: Fabric, broken: dict[str, str] | None = None) -> None:
        self.fabric = fabric
        self.broken = broken or {}
        self.calls: list[tuple[str, ...]] = []

    def run(self, t: Any, argv: Any, timeout: float, become: bool | None = None) -> Any:
        from rackops.validate.executor import CommandResult

        self.calls.append((t.name, *argv))
        how = self.broken.get(argv[0])
        if how == "missing":
            return CommandResult(t.name, tuple(argv), 127, "", f"{argv[0]}: not found", 0.01)
        if argv[0] in ("cat", "rm", "mktemp"):
            proc = subprocess.run(list(argv), capture_output=True, text=True)
        else:
            proc = self.fabric.proc(*argv)
        out = proc.stdout[: len(proc.stdout) // 2] if how == "cut" else proc.stdout
        return CommandResult(t.name, tuple(argv), proc.returncode, out, proc.stderr, 0.01)


def _stage(
    tmp: Path, broken: dict[str, str] | None = None, limit: bool = False
) -> tuple[list[dict[str, Any]], LocalSweep]:
    from rackops.profiles import load_profile
    from rackops.suites import load_suite
    from rackops.validate.executor import Target
    from rackops.validate.plan import make_plan
    from rackops.validate.rundir import RunDir
    from rackops.validate.runner import Runner

    cluster = _cluster(tmp)
    ex = LocalSweep(
        Fabric(tmp, [{"kind": "isl_errors", "switch": "leaf2-r3", "per_packets": 1}]),
        broken,
    )
    suite = load_suite("lab", tmp / "inv")
    profiles = {n.profile: load_profile(n.profile).profile for n in cluster.nodes}
    targets = {n.name: Target(n.name, "127.0.0.1") for n in cluster.nodes}
    r = Runner(cluster, suite, profiles, targets, ex, RunDir(tmp / "run"),  # type: ignore[arg-type]
               progress=lambda _m: None, limited=limit)  # fmt: skip
    plan = make_plan(cluster, suite)
    for phase in ("before", "after"):
        r.fabric_sweep(plan, phase, set(), set())
    return RunDir(tmp / "run").records(), ex


def test_a_run_sweeps_from_the_first_node_twice_and_judges_each_switch(tmp_path: Path) -> None:
    records, ex = _stage(tmp_path)
    assert {c[0] for c in ex.calls} == {"node01"}
    assert sum(c[1] == "ibdiagnet" for c in ex.calls) == 2
    # each sweep writes into a private directory of its own, removed after
    made = [c for c in ex.calls if c[1] == "mktemp"]
    dirs = [c[3] for c in ex.calls if c[1] == "ibdiagnet"]
    assert len(made) == 2 and len(set(dirs)) == 2
    assert [c[4] for c in ex.calls if c[1] == "rm"] == dirs
    assert not any(Path(d).exists() for d in dirs)
    assert sum(c[1] == "perfquery" for c in ex.calls) == 2 * 24  # every switch, twice
    by_id = {r["id"]: r for r in records}
    assert [f["status"] for f in by_id["fabric/sm"]["findings"]] == ["OK"]
    judged = {i for i in by_id if i.startswith("switch/")}
    assert len(judged) == 24
    assert set(by_id["switch/spine-r3"]["meta"]["ports"]) == {"1/1", "2/1"}
    assert all(
        f["status"] == "OK" for i in judged for f in by_id[i]["findings"]
    )  # no traffic between the sweeps here: nothing grew


@pytest.mark.parametrize(
    ("broken", "code"),
    [({"ibdiagnet": "missing"}, "IBF-RUN"), ({"ibdiagnet": "cut"}, "IBF-PARSE")],
)
def test_a_sweep_that_could_not_run_or_was_cut_is_an_error_never_a_pass(
    tmp_path: Path, broken: dict[str, str], code: str
) -> None:
    records, _ = _stage(tmp_path, broken)
    errors = {f["code"] for r in records for f in r["findings"] if f["status"] == "ERROR"}
    assert code in errors
    sm = next(r for r in records if r["id"] == "fabric/sm")
    assert [f["status"] for f in sm["findings"]] in (["ERROR"], ["OK"])
    if broken["ibdiagnet"] == "missing":  # no file was written: nothing is judged a pass
        assert sm["findings"][0]["status"] == "ERROR"
        assert not [r for r in records if r["id"].startswith("switch/")]


def test_a_limited_run_does_not_sweep_the_fabric(tmp_path: Path) -> None:
    records, ex = _stage(tmp_path, limit=True)
    assert ex.calls == [] and records == []


def test_without_a_master_sm_the_isls_are_not_blamed_on_their_cables(tmp_path: Path) -> None:
    cluster = _cluster(tmp_path)
    sweep = Fabric(tmp_path, [{"kind": "sm", "masters": 0}]).sweep()
    found = [f for fs in judge_isls(cluster, sweep.dump).values() for f in fs]  # type: ignore[arg-type]
    assert {f.code for f in found} == {"IBF-ISL-INIT"}
    assert all(f.status is Status.ERROR for f in found)


def _dump_text(tmp: Path, faults: list[dict[str, Any]] | None = None) -> str:
    Fabric(tmp, faults or []).sweep()
    return (tmp / "sweep" / "ibdiagnet2.net_dump").read_text()


def test_switch_names_match_whatever_their_case_or_domain(tmp_path: Path) -> None:
    cluster = _cluster(tmp_path)
    text = _dump_text(tmp_path).replace("MF0;leaf1-r2:", "MF0;LEAF1-R2.example.net:")
    got = judge_isls(cluster, parse("ibdiagnet", text))  # type: ignore[arg-type]
    assert [f.code for f in got["leaf1-r2"]] == ["ISL-OK"]


def test_two_switches_describing_themselves_alike_are_not_judged_by_either(
    tmp_path: Path,
) -> None:
    cluster = _cluster(tmp_path)
    text = _dump_text(tmp_path).replace('"MF0;leaf2-r4:', '"MF0;leaf1-r4:')
    dump = parse("ibdiagnet", text)
    got = judge_isls(cluster, dump)  # type: ignore[arg-type]
    for leaf in ("leaf1-r4", "leaf2-r4"):
        assert [(f.code, f.status) for f in got[leaf]] == [("IBF-SWITCH", Status.ERROR)]
    assert "leaf1-r4" not in switch_lids(dump)  # type: ignore[arg-type]


def test_a_link_at_a_lane_speed_nobody_knows_is_not_judged_up(tmp_path: Path) -> None:
    cluster = _cluster(tmp_path)
    lines = _dump_text(tmp_path).splitlines()
    at = next(i for i, x in enumerate(lines) if '"MF0;leaf1-r1:' in x)
    row = next(i for i in range(at, len(lines)) if lines[i].lstrip().startswith("64 "))
    lines[row] = lines[row].replace(": 100     :", ": FDR10   :", 1)
    got = judge_isls(cluster, parse("ibdiagnet", "\n".join(lines) + "\n"))  # type: ignore[arg-type]
    assert [(f.code, f.status) for f in got["leaf1-r1"]] == [("ISL-RATE", Status.ERROR)]


def test_an_impossible_port_number_makes_the_dump_incomplete_not_a_record(
    tmp_path: Path,
) -> None:
    text = _dump_text(tmp_path)
    forged = text.replace(": 1          : 18   :", ": 99999999999999999999999 : 18   :", 1)
    assert forged != text
    dump = parse("ibdiagnet", forged)
    assert isinstance(dump, Ibdiagnet) and not dump.complete
    assert all(p.neighbor_port is None or p.neighbor_port <= 255 for p in dump.ports)
