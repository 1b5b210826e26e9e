"""hwsim, run as the targets run it: every fault shows exactly where the scenario puts it,
and only there, and every output parses with rackops' own parsers."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from rackops.checks import check_dcgm, check_hca_ports, check_nccl, check_perftest
from rackops.checks.gpu import check_gpu_query, check_gpu_xml, check_nvlink
from rackops.findings import Status, worst
from rackops.lab.scenario import Fault, NodeSpec, Scenario, load_scenario
from rackops.parsers import ParseError, as_jsonable
from rackops.profiles import load_profile
from rackops.tools import parse

# run as the targets run it: `python3 -m hwsim` with the package directory on PYTHONPATH
HWSIM_PATH = str(Path(__file__).resolve().parent.parent / "rackops" / "lab")
PROFILE = load_profile("h100-sxm-roce400").profile
ROOT = Path(__file__).resolve().parent.parent
NODES = ["node01", "node02", "node03"]
RAILS = {n: {r: f"198.18.{r}.{10 + i}" for r in range(8)} for i, n in enumerate(NODES, 1)}


class Sim:
    def __init__(
        self,
        tmp: Path,
        faults: dict[str, list[dict[str, Any]]],
        formats: dict[str, str] | None = None,
        hardware: dict[str, Any] | None = None,
    ) -> None:
        spec = Scenario(
            formats=formats or {},
            hardware=hardware or {},
            nodes={n: NodeSpec(faults=tuple(Fault(**f) for f in fl)) for n, fl in faults.items()},
        )
        self.path = tmp / "scenario.json"
        data = spec.for_hwsim(NODES, RAILS)
        # the wiring as the lab writes it: the design with the scenario's miscabling applied
        from rackops.lab.wiring import as_json, wiring

        data["wiring"] = as_json(wiring(spec, NODES, 8))
        self.path.write_text(json.dumps(data))
        self.state = tmp / "state"

    def env(self, node: str) -> dict[str, str]:
        return {
            **os.environ,
            "RACKOPS_HWSIM_SCENARIO": str(self.path),
            "RACKOPS_HWSIM_STATE": str(self.state),
            "RACKOPS_HWSIM_NODE": node,
            "PYTHONPATH": HWSIM_PATH,
        }

    def run(self, node: str, *args: str, timeout: float = 20) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "hwsim", *args],
            env=self.env(node),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def out(self, node: str, *args: str) -> str:
        proc = self.run(node, *args)
        return proc.stdout


QUERY = [
    "nvidia-smi",
    "--query-gpu=index,name,uuid,pci.bus_id,driver_version,persistence_mode,"
    "pcie.link.gen.max,pcie.link.width.current,ecc.errors.uncorrected.volatile.total,"
    "remapped_rows.pending,remapped_rows.failure",
    "--format=csv",
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def pair(
    sim: Sim, server: str, client: str, dev: str, *extra: str, tool: str = "ib_write_bw"
) -> tuple[str, str, int]:
    port = str(_free_port())
    srv = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "hwsim",
            tool,
            "-d",
            dev,
            "-p",
            port,
            "--report_gbits",
            *extra,
        ],
        env=sim.env(server),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(0.3)
    cli = sim.run(client, tool, "-d", dev, "-p", port, "--report_gbits", *extra, "127.0.0.1")
    s_out, _ = srv.communicate(timeout=20)
    return cli.stdout + cli.stderr, s_out, cli.returncode


# --- healthy: every tool's output parses and passes -----------------------------------------

TOOLS = [
    ("ibstat", ["ibstat"]),
    ("ibstatus", ["ibstatus"]),
    ("ibv_devinfo", ["ibv_devinfo"]),
    ("show_gids", ["show_gids"]),
    ("ofed_info", ["ofed_info", "-s"]),
    ("mlnx_qos", ["mlnx_qos", "-i", "enp24s0np0"]),
    ("dcgmi-diag", ["dcgmi", "diag", "-r", "3"]),
    ("dcgmi-diag", ["dcgmi", "diag", "-r", "2", "-j"]),
    ("nvidia-smi-query", QUERY),
    ("nvidia-smi-xml", ["nvidia-smi", "-q", "-x"]),
    ("nvidia-smi-topo", ["nvidia-smi", "topo", "-m"]),
    ("nvidia-smi-nvlink", ["nvidia-smi", "nvlink", "-s"]),
    ("nccl-tests", ["all_reduce_perf", "-b", "1G", "-e", "16G", "-f", "2", "-g", "8"]),
]


@pytest.mark.parametrize(("tool", "argv"), TOOLS, ids=[" ".join(a[:3]) for _, a in TOOLS])
def test_healthy_output_parses(tool: str, argv: list[str], tmp_path: Path) -> None:
    """A healthy node's output parses complete, with what a healthy HGX node shows."""
    sim = Sim(tmp_path, {})
    result = parse(tool, sim.out("node01", *argv))
    assert getattr(result, "complete", True) is True
    j = as_jsonable(result)
    assert HEALTHY[tool](j), (tool, json.dumps(j)[:400])


HEALTHY: dict[str, Any] = {
    "ibstat": lambda j: (
        len(j["cas"]) == 8
        and all(
            p["state"] == "Active" and p["physical_state"] == "LinkUp"
            for c in j["cas"]
            for p in c["ports"]
        )
    ),
    "ibstatus": lambda j: len(j["ports"]) == 8 and {p["state"] for p in j["ports"]} == {"ACTIVE"},
    "ibv_devinfo": lambda j: (
        len(j["hcas"]) == 8
        and all(p["state"].startswith("PORT_ACTIVE") for h in j["hcas"] for p in h["ports"])
    ),
    "show_gids": lambda j: (
        {g["version"] for g in j["gids"]} >= {"v2"} and len({g["device"] for g in j["gids"]}) == 8
    ),
    "ofed_info": lambda j: j["version"].count(".") >= 2 and j["flavour"],
    "mlnx_qos": lambda j: len(j["pfc_enabled"]) == 8 and j["trust"] in ("pcp", "dscp"),
    "dcgmi-diag": lambda j: j["tests"] and {t["result"] for t in j["tests"]} <= {"Pass", "Skip"},
    "nvidia-smi-query": lambda j: len(j["gpus"]) == 8,
    "nvidia-smi-xml": lambda j: j["attached_gpus"] == 8 and len(j["gpus"]) == 8,
    "nvidia-smi-topo": lambda j: (
        sum(d.startswith("GPU") for d in j["devices"]) == 8
        and sum(d.startswith("NIC") for d in j["devices"]) == 8
    ),
    "nvidia-smi-nvlink": lambda j: (
        len(j["gpus"]) == 8 and all(lk["active"] for g in j["gpus"] for lk in g["links"])
    ),
    "nccl-tests": lambda j: j["nranks"] == 8 and len(j["rows"]) > 0,
}


@pytest.mark.parametrize("gen", ["2025", "2022"])
def test_nccl_generations_selectable(gen: str, tmp_path: Path) -> None:
    sim = Sim(tmp_path, {}, formats={"nccl-tests": gen})
    parsed = parse(
        "nccl-tests", sim.out("node01", "all_reduce_perf", "-b", "8G", "-e", "8G", "-g", "8")
    )
    assert parsed.generation == gen and parsed.complete


# --- each fault shows where the scenario puts it, and only there ----------------------------


def test_hca_port_down_only_on_that_hca(tmp_path: Path) -> None:
    sim = Sim(tmp_path, {"node02": [{"kind": "hca_port", "hca": "mlx5_3", "state": "Polling"}]})
    bad = check_hca_ports(parse("ibstat", sim.out("node02", "ibstat")), PROFILE)
    assert {f.subject.hca for f in bad if f.status is Status.FAIL} == {"mlx5_3"}
    good = check_hca_ports(parse("ibstat", sim.out("node01", "ibstat")), PROFILE)
    assert worst(good) is Status.OK


@pytest.mark.parametrize("state", ["Down", "Polling", "Disabled"])
def test_hca_port_states(state: str, tmp_path: Path) -> None:
    sim = Sim(tmp_path, {"node01": [{"kind": "hca_port", "hca": "mlx5_0", "state": state}]})
    port = parse("ibstat", sim.out("node01", "ibstat")).ca("mlx5_0").ports[0]
    assert port.state == "Down"
    assert port.physical_state == ("Polling" if state == "Down" else state)


def test_reduced_rate_and_width(tmp_path: Path) -> None:
    sim = Sim(
        tmp_path,
        {"node01": [{"kind": "link_rate", "hca": "mlx5_2", "rate_gbps": 200, "width": "2X"}]},
    )
    ports = parse("ibstatus", sim.out("node01", "ibstatus")).ports
    assert [(p.device, p.rate_gbps, p.width) for p in ports if p.rate_gbps != 400] == [
        ("mlx5_2", 200.0, "2X")
    ]
    findings = check_hca_ports(parse("ibstatus", sim.out("node01", "ibstatus")), PROFILE)
    assert {f.code for f in findings if f.status is Status.FAIL} == {"HCA-004", "HCA-005"}


def test_cable_slow_only_with_named_partner(tmp_path: Path) -> None:
    sim = Sim(
        tmp_path,
        {"node01": [{"kind": "cable_slow", "hca": "mlx5_1", "peers": ["node03"], "bw_gbps": 180}]},
    )
    slow, _, _ = pair(sim, "node03", "node01", "mlx5_1")
    fine, _, _ = pair(sim, "node02", "node01", "mlx5_1")
    other, _, _ = pair(sim, "node03", "node01", "mlx5_2")
    assert check_perftest(parse("perftest", slow), PROFILE)[0].code == "PERF-001"
    assert worst(check_perftest(parse("perftest", fine), PROFILE)) is Status.OK
    assert worst(check_perftest(parse("perftest", other), PROFILE)) is Status.OK


def test_node_slow_on_every_link(tmp_path: Path) -> None:
    sim = Sim(tmp_path, {"node02": [{"kind": "node_slow", "factor": 0.6}]})
    for dev in ("mlx5_0", "mlx5_7"):
        out, _, _ = pair(sim, "node02", "node01", dev)
        assert parse("perftest", out).rows[0].bw_avg_gbps < PROFILE.thresholds.ib_write_bw_gbps_min
    out, _, _ = pair(sim, "node03", "node01", "mlx5_0")
    assert parse("perftest", out).rows[0].bw_avg_gbps > PROFILE.thresholds.ib_write_bw_gbps_min


def test_perftest_real_connection_errors(tmp_path: Path) -> None:
    sim = Sim(tmp_path, {})
    port = str(_free_port())
    refused = sim.run("node01", "ib_write_bw", "-d", "mlx5_0", "-p", port, "127.0.0.1")
    assert refused.returncode == 1 and "Couldn't connect to 127.0.0.1" in refused.stderr
    assert worst(check_perftest(parse("perftest", refused.stderr), PROFILE)) is Status.ERROR
    held = socket.socket()
    held.bind(("0.0.0.0", 0))
    busy = sim.run("node01", "ib_write_bw", "-p", str(held.getsockname()[1]))
    held.close()
    assert busy.returncode == 1 and "Address already in use" in busy.stderr


def test_bidirectional_mismatch_is_refused(tmp_path: Path) -> None:
    sim = Sim(tmp_path, {})
    port = str(_free_port())
    srv = subprocess.Popen(
        [sys.executable, "-m", "hwsim", "ib_write_bw", "-p", port],
        env=sim.env("node02"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(0.3)
    cli = sim.run("node01", "ib_write_bw", "-b", "-p", port, "127.0.0.1")
    srv.communicate(timeout=20)
    assert cli.returncode == 1 and "Mismatch" in cli.stderr


def test_gpu_missing(tmp_path: Path) -> None:
    sim = Sim(tmp_path, {"node02": [{"kind": "gpu_missing", "gpu": 6}]})
    q = parse("nvidia-smi-query", sim.out("node02", *QUERY))
    assert [g["index"] for g in q.gpus] == [0, 1, 2, 3, 4, 5, 7]
    assert "GPU-001" in {f.code for f in check_gpu_query(q, PROFILE)}
    assert (
        worst(check_gpu_query(parse("nvidia-smi-query", sim.out("node01", *QUERY)), PROFILE))
        is Status.OK
    )


def test_remap_pending_and_ecc(tmp_path: Path) -> None:
    sim = Sim(
        tmp_path,
        {
            "node01": [
                {"kind": "remap_pending", "gpu": 3},
                {"kind": "ecc_uncorrectable", "gpu": 5, "count": 4},
            ]
        },
    )
    findings = check_gpu_xml(
        parse("nvidia-smi-xml", sim.out("node01", "nvidia-smi", "-q", "-x")), PROFILE
    )
    bad = {(f.code, f.subject.gpu) for f in findings if f.status is Status.FAIL}
    assert bad == {("GPU-006", 3), ("GPU-005", 5)}


def test_dcgm_plugin_fail_from_level_2_only(tmp_path: Path) -> None:
    sim = Sim(
        tmp_path, {"node01": [{"kind": "dcgm_fail", "plugin": "memory", "gpu": 5, "min_level": 2}]}
    )
    r1 = check_dcgm(parse("dcgmi-diag", sim.out("node01", "dcgmi", "diag", "-r", "1")))
    r2 = check_dcgm(parse("dcgmi-diag", sim.out("node01", "dcgmi", "diag", "-r", "2")))
    assert worst(r1) is Status.OK
    assert [(f.code, f.subject.gpu) for f in r2 if f.status is Status.FAIL] == [("DCGM-001", 5)]
    other = check_dcgm(parse("dcgmi-diag", sim.out("node02", "dcgmi", "diag", "-r", "2")))
    assert worst(other) is Status.OK


def test_dcgm_everything_skipped(tmp_path: Path) -> None:
    sim = Sim(tmp_path, {"node01": [{"kind": "dcgm_all_skip"}]})
    parsed = parse("dcgmi-diag", sim.out("node01", "dcgmi", "diag", "-r", "3"))
    assert parsed.overall == "Skip"
    assert worst(check_dcgm(parsed)) is Status.ERROR


def test_nccl_degraded_on_one_node(tmp_path: Path) -> None:
    sim = Sim(tmp_path, {"node02": [{"kind": "nccl_degraded", "factor": 0.7}]})
    args = ("all_reduce_perf", "-b", "8G", "-e", "16G", "-f", "2", "-g", "8")
    assert worst(check_nccl(parse("nccl-tests", sim.out("node02", *args)), PROFILE)) is Status.FAIL
    assert worst(check_nccl(parse("nccl-tests", sim.out("node01", *args)), PROFILE)) is Status.OK


def test_nccl_wrong_results(tmp_path: Path) -> None:
    sim = Sim(tmp_path, {"node01": [{"kind": "nccl_wrong", "count": 512}]})
    parsed = parse(
        "nccl-tests", sim.out("node01", "all_reduce_perf", "-b", "1G", "-e", "2G", "-g", "8")
    )
    assert parsed.out_of_bounds and parsed.rows[-1].out_of_place.wrong == 512
    assert check_nccl(parsed, PROFILE)[0].code == "NCCL-001"


def test_tool_hangs(tmp_path: Path) -> None:
    sim = Sim(tmp_path, {"node01": [{"kind": "hang", "tool": "dcgmi"}]})
    with pytest.raises(subprocess.TimeoutExpired):
        sim.run("node01", "dcgmi", "diag", "-r", "1", timeout=1.5)
    assert sim.run("node02", "dcgmi", "diag", "-r", "1", timeout=10).returncode == 0


def test_tool_missing(tmp_path: Path) -> None:
    sim = Sim(tmp_path, {"node01": [{"kind": "missing", "tool": "ibstat"}]})
    proc = sim.run("node01", "ibstat")
    assert proc.returncode == 127 and "command not found" in proc.stderr
    assert sim.run("node01", "ibstatus").returncode == 0


def test_garbled_output_is_never_a_pass(tmp_path: Path) -> None:
    sim = Sim(tmp_path, {"node01": [{"kind": "garbled", "tool": "nvidia-smi", "keep": 0.4}]})
    from rackops.tools.offline import Context, evaluate

    ctx = Context(PROFILE, None, None, None)
    findings = evaluate(
        "nvidia-smi-xml", sim.out("node01", "nvidia-smi", "-q", "-x"), ctx, "node01"
    )
    assert worst(findings) is Status.ERROR
    elsewhere = evaluate(
        "nvidia-smi-xml", sim.out("node02", "nvidia-smi", "-q", "-x"), ctx, "node02"
    )
    assert worst(elsewhere) is Status.OK
    assert (
        worst(
            check_nvlink(
                parse("nvidia-smi-nvlink", sim.out("node02", "nvidia-smi", "nvlink", "-s")), PROFILE
            )
        )
        is Status.OK
    )


def test_nvlink_down(tmp_path: Path) -> None:
    sim = Sim(tmp_path, {"node01": [{"kind": "nvlink_down", "gpu": 2, "link": 7}]})
    findings = check_nvlink(
        parse("nvidia-smi-nvlink", sim.out("node01", "nvidia-smi", "nvlink", "-s")), PROFILE
    )
    assert [(f.code, f.subject.gpu) for f in findings if f.status is Status.FAIL] == [
        ("GPU-010", 2)
    ]


def test_mlnx_qos_settings_persist(tmp_path: Path) -> None:
    """Roles set trust and PFC with mlnx_qos; reading back shows what they set."""
    sim = Sim(tmp_path, {})
    sim.run("node01", "mlnx_qos", "-i", "enp41s0np0", "--trust", "dscp", "--pfc", "0,0,0,1,0,0,0,0")
    qos = parse("mlnx_qos", sim.out("node01", "mlnx_qos", "-i", "enp41s0np0"))
    assert qos.trust == "dscp" and qos.pfc_priorities == (3,)
    assert parse("mlnx_qos", sim.out("node01", "mlnx_qos", "-i", "enp58s0np0")).trust == "pcp"


def test_scenario_errors_name_file_and_line(tmp_path: Path) -> None:
    from rackops.errors import InventoryError

    bad = tmp_path / "s.yaml"
    bad.write_text("nodes:\n  node01:\n    faults:\n      - {kind: hca_port}\n")
    with pytest.raises(InventoryError, match=r"s.yaml:4: .*needs hca"):
        load_scenario(bad)
    bad.write_text("nodes:\n  node01:\n    faults:\n      - {kind: melted}\n")
    with pytest.raises(InventoryError, match=r"s.yaml:4: nodes.node01.faults.0.kind"):
        load_scenario(bad)


# --- the physical layer: counters grow with traffic where the faults are -------------------


def _stats(sim: Sim, node: str, netdev: str = "enp24s0np0") -> dict[str, int]:
    return parse("ethtool-stats", sim.out(node, "ethtool", "-S", netdev)).counters  # type: ignore[no-any-return]


def test_counters_grow_with_traffic_and_errors_only_where_injected(tmp_path: Path) -> None:
    sim = Sim(tmp_path, {"node02": [{"kind": "symbol_errors", "hca": "mlx5_0", "ber": 1e-9}]})
    before = {n: _stats(sim, n) for n in NODES}
    pair(sim, "node01", "node02", "mlx5_0", "-D", "1")
    sent = _stats(sim, "node02")
    assert sent["rx_pcs_symbol_err_phy"] == 0  # it only sent: its receiver saw nothing yet
    pair(sim, "node02", "node03", "mlx5_0", "-D", "1")
    after = {n: _stats(sim, n) for n in NODES}
    rx = {n: after[n]["rx_bytes_phy"] - before[n]["rx_bytes_phy"] for n in NODES}
    tx = {n: after[n]["tx_bytes_phy"] - before[n]["tx_bytes_phy"] for n in NODES}
    assert rx["node01"] > 10**10 and tx["node02"] > 10**10  # server received, client sent
    assert rx["node02"] > 10**10 and rx["node03"] == 0 and tx["node03"] > 0
    errs = {
        n: after[n]["rx_pcs_symbol_err_phy"] - before[n]["rx_pcs_symbol_err_phy"] for n in NODES
    }
    assert errs["node02"] > 0 and errs["node01"] == errs["node03"] == 0
    assert before["node01"]["link_down_events_phy"] == 1  # bring-up: context, not a delta


def test_flap_ber_optics_and_latency_show_where_they_are_put(tmp_path: Path) -> None:
    sim = Sim(
        tmp_path,
        {
            "node01": [
                {"kind": "flap", "hca": "mlx5_0"},
                {"kind": "ber", "hca": "mlx5_0", "ber": 1e-3},
                {"kind": "optic_power", "hca": "mlx5_1", "lane": 3, "rx_power_dbm": -13.0},
                {"kind": "latency", "hca": "mlx5_0", "lat_us": 4.5},
            ]
        },
    )
    pair(sim, "node02", "node01", "mlx5_0", "-D", "1")
    lat_client, _, rc = pair(sim, "node02", "node01", "mlx5_0", tool="ib_write_lat")
    assert rc == 0 and parse("perftest", lat_client).rows[0].t_avg_us > 4.4
    assert _stats(sim, "node01")["link_down_events_phy"] == 1 + 2  # one per test it carried
    ml = parse("mlxlink", sim.out("node01", "mlxlink", "-d", "mlx5_0", "-c", "-e"))
    assert ml.complete and ml.raw_ber == pytest.approx(1e-3) and ml.link_down_counter == 3
    assert parse("mlxlink", sim.out("node02", "mlxlink", "-d", "mlx5_0", "-c")).raw_ber < 1e-8
    mod = parse("ethtool-module", sim.out("node01", "ethtool", "-m", "enp41s0np0"))
    assert mod.complete and mod.optics.rx_power_dbm[2] == -13.0
    assert mod.optics.rx_power_dbm[2] < mod.optics.rx_power_window_dbm.low_alarm
    assert parse("ethtool-module", sim.out("node02", "ethtool", "-m", "enp41s0np0")).flags == ()


def test_infiniband_fabric_tools_print_the_wiring_with_a_swap(tmp_path: Path) -> None:
    from rackops.checks.cabling import check_cabling, seen_from_iblinkinfo
    from rackops.inventory import load_inventory

    cluster = load_inventory(ROOT / "inventories/example-ib").raise_for_errors()
    sim = Sim(tmp_path, {}, hardware={"link_layer": "InfiniBand"})
    data = json.loads(sim.path.read_text())
    data["wiring"] = {  # example-ib's cabling map, with node01's and node03's rail-2 cables swapped
        n.name: {str(h.rail): [h.switch, h.port] for h in n.hcas}
        for n in cluster.nodes
        if n.name in NODES
    }
    w = data["wiring"]
    w["node01"]["2"], w["node03"]["2"] = w["node03"]["2"], w["node01"]["2"]
    sim.path.write_text(json.dumps(data))
    pq = parse("perfquery", sim.out("node02", "perfquery", "-x", "-C", "mlx5_0", "-P", "1"))
    assert pq.complete and pq.ports[0].counters["LinkDownedCounter"] == 1
    assert parse("ibnetdiscover", sim.out("node02", "ibnetdiscover")).complete
    links = parse("iblinkinfo", sim.out("node02", "iblinkinfo"))
    assert links.complete
    out = check_cabling(cluster, seen_from_iblinkinfo(links, cluster), how="iblinkinfo")
    (swap,) = [f for f in out if f.status is Status.FAIL]
    assert swap.code == "CAB-SWAP" and swap.subject.node == "node01" and "node03" in swap.message
    assert {f.subject.node for f in out if f.code == "CAB-NONE"} == {"node04"}  # not in the sim


def test_roce_ports_have_no_subnet_manager_for_ib_tools(tmp_path: Path) -> None:
    sim = Sim(tmp_path, {})
    proc = sim.run("node01", "perfquery", "-x", "-C", "mlx5_0", "-P", "1")
    assert proc.returncode == 255 and "iberror" in proc.stdout
    with pytest.raises(ParseError):
        parse("perfquery", proc.stdout + proc.stderr)
