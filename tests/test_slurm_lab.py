"""The 6-node fault rack (test_validate_lab.FAULTS) on nspawn targets with a real Slurm
(`lab up --engine nspawn --slurm`), one lab for both launchers: over SSH every injected
fault is named exactly, an unreachable node is ERROR for that node only, and a killed run
resumed gives the same report; through Slurm the launcher names the same culprits,
--apply-actions drains exactly the rejected nodes with the finding as reason, and after the
faults are cleared a re-run and resume-nodes give them back. The same lab, its faults
cleared, is the clean rack (four of its nodes, `--limit`): accepted, and with a hung tool
the run times it out and finishes. Last, Slurm's health checks turned on live: node-check
as HealthCheckProgram drains a faulty node by itself."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml
from labkit import on_target, provision_hosts, set_faults, validate, validate_argv
from test_lab import VENV_BIN, pytestmark  # noqa: F401  (same skip/require rules)
from test_validate_lab import EXPECTED as SSH_EXPECTED
from test_validate_lab import FAULTS as SSH_FAULTS
from test_validate_lab import culprits

from rackops import lab
from rackops.lab.lab import LabState
from rackops.lab.model import lab_workdir

ROOT = Path(__file__).resolve().parent.parent

# the Slurm launcher's faults: the SSH fault rack's without its switch-MTU fault (set back
# to the switch MTU live), so what Slurm drains is the nodes' own faults
FAULTS = "\n".join(line for line in SSH_FAULTS.splitlines() if "switch_mtu" not in line) + "\n"
EXPECTED = {c for c in SSH_EXPECTED if c[2] != "mlx5_5"}
# the clean rack: four of the lab's nodes, their faults cleared (node06 stays unreachable)
CLEAN = "node0[1-4]"
# each program the physical stages read, printing a cut, corrupted output on one node
GARBLED = {
    "node01": [{"kind": "garbled", "tool": "ibstat", "keep": 0.4}],
    "node02": [{"kind": "garbled", "tool": "ethtool", "keep": 0.5}],
    "node03": [{"kind": "garbled", "tool": "mlxlink", "keep": 0.3}],
}
# the fleet: one of each fleet fault on nodes 02-05, node01 golden
FLEET = "node0[1-5]"
FLEET_FAULTS: dict[str, list[dict[str, Any]]] = {
    "node02": [
        {"kind": "hca_firmware", "hca": "mlx5_3", "version": "28.39.1002"},
        {"kind": "vbios", "gpu": 2, "version": "96.00.74.00.0D"},
    ],
    "node03": [
        {"kind": "pcie_downtrained", "hca": "mlx5_1", "pcie_width": 8},
        {"kind": "power_limit", "gpu": 0, "watts": 500},
    ],
    "node04": [{"kind": "acs_enabled", "gpu": 5}],
    "node05": [
        {"kind": "mlxconfig", "hca": "mlx5_6", "key": "ATS_ENABLED", "value": "True(1)"},
        {"kind": "pcie_downtrained", "gpu": 4, "pcie_gts": 16},
    ],
}
FLEET_EXPECTED = {
    ("hca", "node02", "mlx5_3", None),
    ("gpu", "node02", None, 2),
    ("hca", "node03", "mlx5_1", None),
    ("gpu", "node03", None, 0),
    ("gpu", "node04", None, 5),
    ("hca", "node05", "mlx5_6", None),
}
FLEET_NAMED = {  # (node, device, finding code) of the fleet stage: nothing else
    ("node02", "mlx5_3", "FLEET-FIRMWARE", "FAIL"),
    ("node02", "gpu2", "FLEET-VBIOS", "FAIL"),
    ("node03", "mlx5_1", "FLEET-PCIE", "FAIL"),
    ("node03", "gpu0", "FLEET-POWER-LIMIT-W", "FAIL"),
    ("node04", "gpu5", "FLEET-ACS", "FAIL"),
    ("node05", "mlx5_6", "FLEET-MLXCONFIG", "FAIL"),
    ("node05", "gpu4", "FLEET-PCIE", "WARN"),  # a GPU's link speed drops at idle: WARN
}


def golden_path(inv: Path) -> Path:
    """Where a golden profile holds every lab node to it: the inventory's profiles/, under
    the name of the lab's profile (it wins over the built-in one)."""
    hosts = yaml.safe_load((inv / "hosts.yml").read_text())
    profile = hosts["all"]["children"]["gpu_nodes"]["vars"]["rackops_profile"]
    return inv / "profiles" / f"{profile}.yaml"


def fleet_named(run: Path) -> set[tuple[str, str, str, str]]:
    (rec,) = [
        json.loads(line)
        for line in (run / "results.jsonl").read_text().splitlines()
        if '"kind": "fleet"' in line
    ]
    out = set()
    for f in rec["findings"]:
        s = f["subject"]
        if f["status"] != "OK":
            dev = f"gpu{s['gpu']}" if s["gpu"] is not None else (s["hca"] or "node")
            out.add((s["node"], dev, f["code"], f["status"]))
    return out


@contextmanager
def slurm_lab(tmp: Path, nodes: int, scenario: str) -> Iterator[Path]:
    assert LabState.load(lab_workdir(None)) is None, "a lab is already up: rackops lab down"
    (tmp / "scenario.yaml").write_text(scenario)
    inv = tmp / "inv"
    lab.up(
        nodes=nodes,
        scenario=str(tmp / "scenario.yaml"),
        inventory=str(inv),
        engine_name="nspawn",
        slurm=True,
    )
    try:
        provision_hosts(inv, scenario)
        yield inv
    finally:
        lab.down()


def faults_of(scenario: str) -> dict[str, list[dict[str, Any]]]:
    """node -> its faults, from a scenario's YAML (for set_faults)."""
    nodes = yaml.safe_load(scenario)["nodes"]
    return {n: list(spec.get("faults") or []) for n, spec in nodes.items()}


@pytest.fixture(scope="class")
def fault_rack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One lab for the fault rack's tests; each sets the faults it needs (set_faults), and
    node06 stays unreachable as `lab up` left it."""
    with slurm_lab(tmp_path_factory.mktemp("faults"), 6, SSH_FAULTS) as inv:
        yield inv


def slurm(*argv: str) -> str:
    env = {**os.environ, "SLURM_CONF": str(lab_workdir(None) / "slurm" / "etc" / "slurm.conf")}
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def states() -> dict[str, tuple[str, str]]:
    out = slurm("sinfo", "-h", "-N", "-o", "%N|%T|%E")
    return {n: (s, r) for n, s, r in (line.split("|", 2) for line in out.splitlines())}


RUNS: dict[str, Path] = {}  # run directories one test of the fault rack leaves to a later one


class TestFaultRack:
    """The tests on the shared fault rack (its fixture lives as long as the class, so the
    labs after it get the machine to themselves)."""

    def test_injected_faults_are_named_exactly_and_resume_matches(
        self, fault_rack: Path, tmp_path: Path
    ) -> None:
        """Over SSH: every culprit named, the unreachable node an ERROR of its own; a run
        killed part-way through the pair rounds and resumed gives the same report."""
        inv = fault_rack
        set_faults(faults_of(SSH_FAULTS))
        rc, report = validate(inv, tmp_path / "full")
        assert rc == 2 and report["verdict"] == "REJECTED"
        assert culprits(report) == SSH_EXPECTED
        RUNS["faults"] = tmp_path / "full"  # compared with the clean rack's run below
        assert [(e["code"], e["subject"]["node"]) for e in report["errors"]] == [
            ("NODE-000", "node06")
        ]
        judged = set(report["nodes"]) - {"node06"}
        assert judged == {"node01", "node02", "node03", "node04", "node05"}
        (jumbo,) = [c for c in report["culprits"] if c["hca"] == "mlx5_5"]
        assert "drops jumbo frames (C-25)" in jumbo["message"], jumbo["message"]
        assert (jumbo["switch"], "C-22" in jumbo["remediation"]) == ("leaf-r5", True)
        records = (tmp_path / "full" / "results.jsonl").read_text().splitlines()
        node_stage = sum('"kind": "node"' in r or '"kind": "unreachable"' in r for r in records)

        # kill a second run part-way through the pair rounds, then resume it
        run = tmp_path / "killed"
        proc = subprocess.Popen(
            validate_argv(inv, "--run-dir", str(run)),
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            lines = (
                (run / "results.jsonl").read_text().count("\n")
                if (run / "results.jsonl").exists()
                else 0
            )
            if lines >= node_stage + 5:  # node stage done, some pairs recorded
                break
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        partial = (run / "results.jsonl").read_text().count("\n")
        assert 0 < partial < len(records), partial
        proc2 = subprocess.run(
            validate_argv(inv, "--resume", str(run)),
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
        resumed = json.loads((run / "report.json").read_text())
        assert proc2.returncode == 2, proc2.stderr
        for key in ("verdict", "culprits", "errors", "nodes"):
            strip = (
                (lambda v: [{k: x for k, x in c.items() if k != "evidence"} for c in v])
                if key == "culprits"
                else (lambda v: v)
            )
            assert strip(resumed[key]) == strip(report[key]), key
        key = lambda p: (p["server"], p["client"], p["rail"])  # noqa: E731
        assert sorted((key(p), p["status"], p.get("bw_gbps")) for p in resumed["pairs"]) == sorted(
            (key(p), p["status"], p.get("bw_gbps")) for p in report["pairs"]
        )

    def test_slurm_launcher_drains_the_rejected_and_resume_gives_them_back(
        self, fault_rack: Path, tmp_path: Path
    ) -> None:
        inv = fault_rack
        set_faults(faults_of(FAULTS))  # the leaf port back at the switch MTU
        assert set(states()) == {f"node{i:02d}" for i in range(1, 7)}
        rc, report = validate(inv, tmp_path / "run", "--launcher", "slurm", "--apply-actions")
        assert rc == 2 and report["verdict"] == "REJECTED"
        assert culprits(report) == EXPECTED  # as over SSH above, less the cleared jumbo fault
        assert [(e["code"], e["subject"]["node"]) for e in report["errors"]] == [
            ("NODE-000", "node06")
        ]
        assert "Slurm reports it" in report["errors"][0]["message"]
        run = json.loads((tmp_path / "run" / "run.json").read_text())
        assert (run["launcher"], run["scheduler"]) == ("slurm", "slurm")
        st = states()
        drained = {n for n, (s, _) in st.items() if "drain" in s}
        assert drained == {"node02", "node03", "node04", "node05"}, st
        assert st["node04"][1].startswith("rackops: node04 GPU 6"), st["node04"]
        assert "drain" not in st["node01"][0]
        assert not slurm("squeue", "-h").strip()  # the allocation was released

        # fixed: the repaired nodes are re-tested as an engineer would (suspects: each paired
        # with known-good partners); a drained node runs no job step, so it goes over SSH
        set_faults({})
        repaired = "node02,node03,node04,node05"
        rc, again = validate(
            inv, tmp_path / "again", "--pairing", "suspects", "--suspects", repaired
        )
        assert again["culprits"] == [], again["culprits"]
        proc = subprocess.run(
            [
                str(VENV_BIN / "rackops"),
                "resume-nodes",
                str(tmp_path / "again"),
                "--slurm-conf",
                str(lab_workdir(None) / "slurm" / "etc" / "slurm.conf"),
            ],
            env={**os.environ, "SLURM_CONF": ""},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        st = states()
        assert not {n for n, (s, _) in st.items() if "drain" in s}, st
        back = {"node01", "node02", "node03", "node04", "node05"}
        deadline = time.monotonic() + 30  # `idle*` until slurmctld next hears from slurmd
        while time.monotonic() < deadline and not back <= {
            n for n, (s, _) in st.items() if s in ("idle", "mixed")
        }:
            time.sleep(1)
            st = states()
        assert back <= {n for n, (s, _) in st.items() if s in ("idle", "mixed")}, st

    def test_clean_rack_is_accepted(self, fault_rack: Path, tmp_path: Path) -> None:
        """A golden profile captured from node01 (running the suite on it now), then the
        clean rack validated against it."""
        set_faults({})
        golden = golden_path(fault_rack)
        proc = subprocess.run(
            [
                str(VENV_BIN / "rackops"),
                "profile",
                "capture",
                "-i",
                str(fault_rack),
                "--from",
                "node01",
                "-o",
                str(golden),
                "--suite",
                "lab",
                "--run-dir",
                str(tmp_path / "capture"),
                "--accept-new-host-keys",
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        facts = yaml.safe_load(golden.read_text())["golden"]["facts"]
        assert facts["mlx5_3"]["firmware"]["value"] == "28.41.1000"
        assert facts["gpu5"]["acs.mlx5_5.0"]["value"] == "off"
        assert facts["node"]["pkg.fabric_manager"]["value"].startswith("580.95.05")
        rc, report = validate(fault_rack, tmp_path / "run", "--limit", CLEAN)
        assert rc == 0 and report["verdict"] == "ACCEPTED"
        assert report["culprits"] == [] and report["errors"] == [] and report["warnings"] == []
        assert len(report["pairs"]) == 6 * 8 and all(p["status"] == "OK" for p in report["pairs"])
        # the physical layer ran and found every cable where the map says, every port clean
        assert len(report["ports"]) == 4 * 8 and all(p["status"] == "OK" for p in report["ports"])
        assert all(p["lat_us"] is not None for p in report["pairs"])
        assert report["cabling"]["source"] == "lldpctl" and len(report["cabling"]["seen"]) == 32
        assert all(st == "OK" for checks in report["nodes"].values() for st in checks.values())
        html = (tmp_path / "run" / "report.html").read_text()
        assert "ACCEPTED" in html
        assert report["fleet"]["how"] == "golden node01" and report["fleet"]["rows"] == []
        if "faults" not in RUNS:
            pytest.fail("the fault rack's run is missing: its test failed first")
        # the faults cleared: compared with the fault rack's run, exactly its culprits on the
        # nodes tested again are fixed; node05's is not tested again (--limit), none is new
        proc = subprocess.run(
            [str(VENV_BIN / "rackops"), "report", "--compare", str(RUNS["faults"]),
             str(tmp_path / "run"), "--format", "json"],
            cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
        cmp = json.loads(proc.stdout)
        key = {(c["kind"], c["node"], c["hca"], c["gpu"]) for c in cmp["fixed"]}
        assert key == {c for c in SSH_EXPECTED if c[1] != "node05"}, cmp["fixed"]
        assert [c["node"] for c in cmp["untested"]] == ["node05"]
        assert cmp["new"] == cmp["still"] == cmp["regressed"] == []

    def test_fleet_faults_are_named_by_golden_and_by_majority(
        self, fault_rack: Path, tmp_path: Path
    ) -> None:
        """One of each fleet fault on nodes 02-05: against node01's golden profile, and
        again without it (the majority of five), exactly those devices and facts."""
        set_faults(FLEET_FAULTS)
        try:
            rc, report = validate(
                fault_rack, tmp_path / "golden", "--limit", FLEET, "--suite", "fleet"
            )
            assert rc == 2 and culprits(report) == FLEET_EXPECTED, report["culprits"]
            assert fleet_named(tmp_path / "golden") == FLEET_NAMED
            fw = next(c for c in report["culprits"] if c["hca"] == "mlx5_3")
            assert "firmware 28.39.1002, golden 28.41.1000 (node01)" in fw["message"]
            rows = {r["fact"] for r in report["fleet"]["rows"]}
            assert {"mlx5_3/firmware", "gpu2/vbios", "gpu5/acs.mlx5_5.0"} <= rows
            html = (tmp_path / "golden" / "report.html").read_text()
            assert 'id="fleet"' in html and "28.39.1002" in html
            golden_path(fault_rack).unlink()
            rc, report = validate(
                fault_rack, tmp_path / "majority", "--limit", FLEET, "--suite", "fleet"
            )
            assert rc == 2 and culprits(report) == FLEET_EXPECTED, report["culprits"]
            assert fleet_named(tmp_path / "majority") == FLEET_NAMED
            fw = next(c for c in report["culprits"] if c["hca"] == "mlx5_3")
            assert "4 of 5 nodes have 28.41.1000" in json.dumps(fw["evidence"])
        finally:
            set_faults({})
            golden_path(fault_rack).unlink(missing_ok=True)

    def test_hung_tool_times_out_and_the_run_finishes(
        self, fault_rack: Path, tmp_path: Path
    ) -> None:
        set_faults({"node01": [{"kind": "hang", "tool": "dcgmi"}]})
        try:
            started = time.monotonic()
            rc, report = validate(fault_rack, tmp_path / "run", "--limit", CLEAN)
            elapsed = time.monotonic() - started
        finally:
            set_faults({})
        assert rc == 3 and report["verdict"] == "UNDECIDED"
        assert [(e["code"], e["subject"]["node"]) for e in report["errors"]] == [
            ("RUN-TIMEOUT", "node01")
        ]
        assert report["culprits"] == []
        assert elapsed < 120

    def test_a_garbled_tool_output_costs_its_node_a_verdict_never_the_run(
        self, fault_rack: Path, tmp_path: Path
    ) -> None:
        """A cut, corrupted output (a hung driver, a killed command) of each program the
        physical stages read, one per node: the run finishes with its reports, those nodes
        are ERROR (never FAIL, never OK), and the clean node is judged whole."""
        set_faults(GARBLED)
        try:
            rc, report = validate(fault_rack, tmp_path / "run", "--limit", CLEAN)
        finally:
            set_faults({})
        assert rc == 3 and report["verdict"] == "UNDECIDED", report["verdict"]
        assert (tmp_path / "run" / "report.html").exists()
        assert report["culprits"] == [], report["culprits"]
        erred = {e["subject"]["node"] for e in report["errors"]}
        assert erred == set(GARBLED), report["errors"]
        for node, tool in ((n, f[0]["tool"]) for n, f in GARBLED.items()):
            said = " ".join(e["message"] for e in report["errors"] if e["subject"]["node"] == node)
            assert said, (node, tool)
        assert all(st == "OK" for st in report["nodes"]["node04"].values()), report["nodes"]
        ports = [p for p in report["ports"] if p["node"] == "node04"]
        assert len(ports) == 8 and all(p["status"] == "OK" for p in ports)

    def test_node_check_as_health_check_program_drains_a_faulty_node(self) -> None:
        """Last on this lab: Slurm's health checks, turned on live, stay on until it ends."""
        set_faults({"node02": [{"kind": "gpu_missing", "gpu": 3}]})
        lab.set_health_interval(15)
        deadline = time.monotonic() + 120
        st = states()
        while time.monotonic() < deadline and (
            "drain" not in st["node02"][0] or "drain" in st["node01"][0]
        ):
            time.sleep(2)
            st = states()
        assert "drain" in st["node02"][0], st
        assert st["node02"][1].startswith("rackops: "), st["node02"]
        assert "GPU" in st["node02"][1] or "gpu" in st["node02"][1].lower()
        if "drain" in st["node01"][0]:  # say why: the node's own check now, and slurmd's log
            cfg = lab_workdir(None) / "ssh_config"
            now = on_target(
                cfg, "node01", "sudo /usr/local/sbin/rackops-node-check 2>&1; echo rc=$?"
            )
            log = on_target(cfg, "node01", "sudo journalctl -u slurmd --no-pager | tail -30")
            raise AssertionError(f"{st}\nnode-check now: {now}\nslurmd: {log}")
