"""The physical layer: cabling against the map (one swap is one finding), counters judged
on what grew under load, BER and optics against limits, the peer gate, and how
localisation treats a miswired port's pair results."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rackops.checks.cabling import Seen, check_cabling, seen_from_lldp
from rackops.checks.peers import peer_gate
from rackops.checks.phy import PortReport, PortSample, judge_counters, judge_optics, judge_state
from rackops.findings import Finding, Status, Subject, worst
from rackops.inventory import load_inventory
from rackops.profiles import load_profile
from rackops.tools import parse
from rackops.validate.localise import localise
from rackops.validate.peergate import peer_findings

ROOT = Path(__file__).resolve().parent.parent
FIX = Path(__file__).parent / "fixtures"
ROCE = load_inventory(ROOT / "inventories/example-roce").raise_for_errors()
PROFILE = load_profile("h100-sxm-roce400").profile
SUBJ = Subject(node="node02", hca="mlx5_2", port=1, switch="leaf-r2", switch_port="Ethernet8")


def designed() -> dict[tuple[str, str], Seen | None]:
    return {(n.name, h.device): Seen(h.switch, h.port) for n in ROCE.nodes for h in n.hcas}


def fails(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.status is Status.FAIL]


# --- cabling ---------------------------------------------------------------------------------


def test_cabled_as_designed_is_all_ok() -> None:
    out = check_cabling(ROCE, designed(), how="LLDP")
    assert {f.status for f in out} == {Status.OK} and len(out) == 32


def test_two_swapped_cables_are_one_swap_naming_both() -> None:
    seen = designed()
    seen[("node03", "mlx5_2")] = Seen("leaf-r2", "Ethernet24")  # node04's port
    seen[("node04", "mlx5_2")] = Seen("leaf-r2", "Ethernet16")  # node03's port
    (swap,) = fails(check_cabling(ROCE, seen, how="LLDP"))
    assert swap.code == "CAB-SWAP"
    assert swap.message.startswith(
        "node03 mlx5_2 is in leaf-r2 Ethernet24, designed Ethernet16; node04 mlx5_2 the reverse"
    )
    assert swap.observed["hcas"] == [["node03", "mlx5_2"], ["node04", "mlx5_2"]]


def test_a_cable_on_another_rails_leaf_is_a_miscabling_to_that_rail() -> None:
    seen = designed()
    seen[("node01", "mlx5_3")] = Seen("leaf-r4", "swp9")
    (f,) = fails(check_cabling(ROCE, seen, how="LLDP"))
    assert f.code == "CAB-RAIL" and "a leaf of rail 4; designed leaf-r3 swp1" in f.message
    assert (f.subject.switch, f.subject.switch_port) == ("leaf-r3", "swp1")


def test_wrong_port_names_whose_port_it_took_and_a_silent_port_is_a_warning() -> None:
    seen = designed()
    seen[("node01", "mlx5_0")] = Seen("leaf-r0", "Ethernet8")  # node02's, not a swap
    seen[("node04", "mlx5_7")] = None
    out = check_cabling(ROCE, seen, how="LLDP")
    (f,) = fails(out)
    assert f.code == "CAB-PORT" and "(designed for node02 mlx5_0)" in f.message
    (w,) = [x for x in out if x.status is Status.WARN]
    assert w.code == "CAB-NONE" and w.subject.hca == "mlx5_7"


def test_switch_names_compare_short_and_ports_by_description() -> None:
    seen = designed()
    seen[("node01", "mlx5_0")] = Seen("LEAF-R0.example.net", "etp1", "Ethernet0")
    assert not fails(check_cabling(ROCE, seen, how="LLDP"))


def test_lldp_from_the_lab_leaf_reads_switch_and_port() -> None:
    parsed = parse("lldpctl", (FIX / "lldpctl/lab-lldpd-1.0.16-one-port.txt").read_text())
    seen = seen_from_lldp(parsed, "node01", {"enp24s0np0": "mlx5_0", "enp41s0np0": "mlx5_1"})
    assert seen[("node01", "mlx5_0")] == Seen("leaf-r0", "Ethernet16", "Ethernet16")
    assert seen[("node01", "mlx5_1")] is None


# --- counters on the delta -------------------------------------------------------------------


def roce(**c: int) -> PortSample:
    base = {
        "symbol_errors": 0,
        "corrected_bits": 100,
        "crc_errors": 0,
        "rx_discards": 0,
        "link_downed": 1,
        "out_of_buffer": 0,
        "rx_bytes": 10**9,
        "tx_bytes": 10**9,
        "rx_pkts": 10**6,
        "tx_pkts": 10**6,
        "pause_rx_p3": 0,
        "pause_tx_p3": 0,
        "pause_rx_us_p3": 0,
        "pause_tx_us_p3": 0,
    }
    return PortSample("roce", {**base, **c})


MOVED = {"rx_bytes": 10**9 + 250 * 10**9, "rx_pkts": 10**6 + 6 * 10**7}


def judge(after: PortSample, interval: float = 60.0) -> list[Finding]:
    return judge_counters(roce(), after, SUBJ, PROFILE.phy, interval, PortReport())


def test_clean_port_under_load_has_no_findings() -> None:
    assert judge(roce(**MOVED, corrected_bits=100 + 400)) == []


def test_symbol_errors_that_grow_under_load_fail_and_name_both_ends() -> None:
    (f,) = judge(roce(**MOVED, symbol_errors=2000))
    assert f.code == "PHY-001" and f.status is Status.FAIL
    assert "node02 mlx5_2 ↔ leaf-r2 Ethernet8" in f.message and f.observed["delta"] == 2000


def test_absolute_errors_from_before_the_run_are_context_not_a_finding() -> None:
    before = roce(symbol_errors=5000, link_downed=3)
    after = roce(**MOVED, symbol_errors=5000, link_downed=3)
    report = PortReport()
    assert judge_counters(before, after, SUBJ, PROFILE.phy, 60, report) == []
    assert report.absolute["symbol_errors"] == 5000 and report.delta["symbol_errors"] == 0


def test_fec_corrected_bits_above_the_raw_ber_limit_fail() -> None:
    (f,) = judge(roce(**MOVED, corrected_bits=100 + 8 * 250 * 10**9 // 1000))  # raw BER 1e-3
    assert f.code == "PHY-002" and f.status is Status.FAIL


def test_a_flap_during_the_run_fails_and_a_port_down_at_the_end_fails() -> None:
    (f,) = judge(roce(**MOVED, link_downed=2))
    assert f.code == "PHY-007" and "+1" in f.message
    (g,) = judge_state("Down", SUBJ)
    assert g.code == "PHY-008" and judge_state("Active", SUBJ) == []


def test_a_pause_storm_fails() -> None:
    (f,) = judge(roce(**MOVED, pause_rx_us_p3=30 * 10**6), interval=60)  # paused half the run
    assert f.code == "PHY-006" and "priority 3 paused 50.0 %" in f.message


def test_counters_the_host_does_not_expose_are_warn_never_a_pass() -> None:
    after = PortSample("roce", dict(roce(**MOVED).counters), missing=("rx_prio3_pause",))
    (f,) = judge_counters(roce(), after, SUBJ, PROFILE.phy, 60, PortReport())
    assert f.status is Status.WARN and "rx_prio3_pause" in f.message


def test_counters_cleared_during_the_run_are_not_judged() -> None:
    (f,) = judge(roce(rx_bytes=0))
    assert f.status is Status.WARN and "went backwards" in f.message


# --- optics and BER against real outputs -----------------------------------------------------


def test_dark_lanes_of_a_real_sr4_module_fail() -> None:
    parsed = parse(
        "ethtool-module",
        (FIX / "ethtool-module/sff8636-qsfp-plus-40g-sr4-full-thresholds.txt").read_text(),
    )
    out = judge_optics(parsed.optics, SUBJ, PortReport())
    assert sorted(f.message.split(" of module")[0] for f in fails(out)) == [
        "no light on rx lane 2",
        "no light on rx lane 3",
        "no light on rx lane 4",
    ]


def test_a_passive_dac_has_nothing_to_judge() -> None:
    parsed = parse("mlxlink", (FIX / "mlxlink/cx7-ndr-ib-osfp-dac-show-module.txt").read_text())
    assert parsed.optics is not None and not parsed.optics.dom
    assert judge_optics(parsed.optics, SUBJ, PortReport()) == []


# --- the peer gate ---------------------------------------------------------------------------


def test_peer_gate_latency_straggler_is_a_warn_and_lower_is_better() -> None:
    values = {Subject(node=f"n{i}"): 1.9 + 0.01 * (i % 3) for i in range(10)}
    values[Subject(node="slow")] = 2.4  # under the 2.5 us ceiling, 26 % above its peers
    out = peer_gate(values, metric="latency", unit="us", k=4, drop_pct=5, lower_is_better=True)
    assert [(f.subject.node, f.status) for f in out] == [("slow", Status.WARN)]
    fast = {**values, Subject(node="slow"): 1.2}
    assert peer_gate(fast, metric="latency", unit="us", k=4, drop_pct=5, lower_is_better=True) == []


def _pair(a: str, b: str, rail: int, *findings: dict[str, Any], **meta: Any) -> dict[str, Any]:
    return {
        "id": f"{meta.pop('kind', 'pair')}/{a}-{b}/rail{rail}",
        "kind": "pair",
        "node": b,
        "tool": meta.pop("tool", "perftest"),
        "findings": list(findings),
        "meta": {
            "server": a,
            "client": b,
            "rail": rail,
            "server_hca": f"mlx5_{rail}",
            "client_hca": f"mlx5_{rail}",
            "server_switch_port": f"leaf-r{rail} p-{a}",
            "client_switch_port": f"leaf-r{rail} p-{b}",
            **meta,
        },
    }


def _ok(code: str, node: str, value: float, unit: str, peer: str) -> dict[str, Any]:
    return Finding(
        code, Status.OK, Subject(node=node, hca="mlx5_0", peer=peer), "m", value, 1, unit
    ).as_dict()


def test_peer_gate_runs_over_a_run_for_every_measured_quantity() -> None:
    nodes = [f"node0{i}" for i in range(1, 5)]
    records = []
    for a in nodes:
        for b in nodes:
            if a < b:
                records.append(
                    _pair(
                        a,
                        b,
                        0,
                        _ok("PERF-OK", b, 385.0 if "node03" in (a, b) else 392.0, "Gb/s", a),
                    )
                )
                records.append(
                    _pair(a, b, 0, _ok("PERF-OK", b, 1.9, "us", a), kind="lat", tool="perftest-lat")
                )
    out = peer_findings(records, ROCE, {"h100-sxm-roce400": PROFILE})
    assert out == []  # 385 vs 392 is 2 %: noise, not a straggler
    records.append(_pair("node01", "node04", 1, _ok("PERF-OK", "node04", 340.0, "Gb/s", "node01")))
    records += [_pair("node02", "node04", 1, _ok("PERF-OK", "node04", 392.0, "Gb/s", "x"))] * 4
    (w,) = peer_findings(records, ROCE, {"h100-sxm-roce400": PROFILE})
    assert w.status is Status.WARN and w.observed == 340.0 and "link bandwidth" in w.message


def test_one_slow_hca_and_one_slow_port_are_one_warn_each_and_never_their_partners() -> None:
    """Full pairing of 4 nodes: node02's rail-1 HCA at 365 Gb/s among links at 392, node04's
    rail-2 port at 2.4 us among 1.94. Each is named once; no partner is."""
    nodes = [f"node0{i}" for i in range(1, 5)]
    records = []
    for a in nodes:
        for b in nodes:
            if a >= b:
                continue
            for rail in (0, 1, 2):
                bw = 365.0 if rail == 1 and "node02" in (a, b) else 392.0
                lat = 2.4 if rail == 2 and "node04" in (a, b) else 1.94
                peer = f"{a}/mlx5_{rail}"
                f_bw = Finding(
                    "PERF-OK",
                    Status.OK,
                    Subject(node=b, hca=f"mlx5_{rail}", peer=peer),
                    "m",
                    bw,
                    1,
                    "Gb/s",
                )
                f_lat = Finding(
                    "PERF-OK",
                    Status.OK,
                    Subject(node=b, hca=f"mlx5_{rail}", peer=peer),
                    "m",
                    lat,
                    1,
                    "us",
                )
                records.append(_pair(a, b, rail, f_bw.as_dict()))
                records.append(_pair(a, b, rail, f_lat.as_dict(), kind="lat", tool="perftest-lat"))
    out = peer_findings(records, ROCE, {"h100-sxm-roce400": PROFILE})
    named = sorted((f.subject.node, f.subject.hca, f.subject.peer, f.unit) for f in out)
    assert named == [("node02", "mlx5_1", None, "Gb/s"), ("node04", "mlx5_2", None, "us")], named
    assert all(f.status is Status.WARN and "3 partners" in f.message for f in out)
    assert {f.subject.switch for f in out} == {"leaf-r1", "leaf-r2"}


# --- localisation ----------------------------------------------------------------------------


def test_a_swap_is_one_culprit_and_its_pair_results_are_untrustworthy() -> None:
    seen = designed()
    seen[("node03", "mlx5_2")] = Seen("leaf-r2", "Ethernet24")
    seen[("node04", "mlx5_2")] = Seen("leaf-r2", "Ethernet16")
    cab = check_cabling(ROCE, seen, how="LLDP")
    records = [
        {
            "id": "cabling",
            "kind": "cabling",
            "node": None,
            "tool": "lldpctl",
            "findings": [f.as_dict() for f in cab],
            "meta": {},
        }
    ]
    slow = Finding("PERF-001", Status.FAIL, Subject(node="node04"), "slow").as_dict()
    ok = Finding("PERF-OK", Status.OK, Subject(node="node02"), "ok").as_dict()
    records += [
        _pair("node01", "node04", 2, slow),
        _pair("node02", "node04", 2, slow),
        _pair("node03", "node04", 2, slow),
        _pair("node01", "node02", 2, ok),
    ]
    v = localise(records)
    (c,) = v.culprits
    assert c.kind == "cabling" and c.node == "node03" and c.peer.startswith("node04/mlx5_2")
    untrusted = [e for e in c.evidence if e.get("untrustworthy")]
    assert len(untrusted) == 3 and v.exit_code == 2


def test_latency_only_failures_say_high_latency() -> None:
    nodes = [f"node0{i}" for i in range(1, 6)]
    records = []
    for a, b, rail in ((a, b, r) for a in nodes for b in nodes for r in (4, 5, 6, 7)):
        if a >= b:
            continue
        bad = "node02" in (a, b) and rail == 7
        f = Finding(
            "PERF-002" if bad else "PERF-OK",
            Status.FAIL if bad else Status.OK,
            Subject(node=b),
            "lat",
        ).as_dict()
        lat_us = 4.5 if bad else 1.9
        records.append(
            _pair(a, b, rail, f, kind="lat", tool="perftest-lat", metric="lat", lat_us=lat_us)
        )
    (c,) = localise(records).culprits
    assert (c.kind, c.node, c.hca) == ("hca", "node02", "mlx5_7")
    assert "has high latency (up to 4.50 us) in 4 of 4 tests with 4 partners" in c.message


@pytest.mark.parametrize("status", [Status.FAIL, Status.WARN])
def test_phy_finding_status_reaches_the_verdict(status: Status) -> None:
    f = Finding("PHY-001", status, SUBJ, "symbol errors").as_dict()
    rec = {
        "id": "phy/node02/after",
        "kind": "node",
        "node": "node02",
        "tool": "phy",
        "findings": [f],
        "meta": {},
    }
    v = localise([rec])
    assert v.exit_code == (2 if status is Status.FAIL else 1)
    assert worst([Finding("PHY-001", status, SUBJ, "x")]) is status


# --- one SSH channel for a node's reads --------------------------------------------------------


def test_batch_runs_reads_at_once_and_keeps_each_output_and_status() -> None:
    import subprocess
    import time

    from rackops.validate.batch import script, split

    argv = script(
        [
            ("ethtool-S/mlx5_0", ["sh", "-c", "sleep 1; echo A; echo warn >&2"]),
            ("perfquery/mlx5_1", ["sh", "-c", "sleep 1; printf 'cut'; exit 3"]),
            ("hangs", ["sleep", "30"]),
        ],
        2,
    )
    started = time.monotonic()
    out = subprocess.run(list(argv), capture_output=True, text=True, check=False).stdout
    took = time.monotonic() - started
    parts = split(out)
    assert took < 4  # the reads ran side by side: the slowest one's time, not the sum
    assert (parts["ethtool-S/mlx5_0"].rc, parts["ethtool-S/mlx5_0"].text) == (0, "A\nwarn\n")
    assert (parts["perfquery/mlx5_1"].rc, parts["perfquery/mlx5_1"].text) == (3, "cut")
    assert parts["hangs"].rc == 124  # its own timeout: the others are kept
    cut = split(out[: out.index("perfquery/mlx5_1") + 20])
    assert cut["perfquery/mlx5_1"].rc is None  # no end marker: cut off, never whole
    with pytest.raises(ValueError):
        script([("a; reboot", ["true"])], 1)


# --- the hold-down, with the simulated tools run here (no SSH) ---------------------------------


class LocalExecutor:
    """Runs hwsim's tools on this machine as the target they are sent to would."""

    batch = 1

    def run_many(self, jobs: Any, timeout: float) -> Any:
        return [self.run(t, argv, timeout) for t, argv in jobs]

    def __init__(self, scenario: Path, state: Path) -> None:
        self.scenario, self.state = scenario, state

    def env(self, node: str) -> dict[str, str]:
        import os

        return {
            **os.environ,
            "PYTHONPATH": str(ROOT / "rackops" / "lab"),
            "RACKOPS_HWSIM_SCENARIO": str(self.scenario),
            "RACKOPS_HWSIM_STATE": str(self.state),
            "RACKOPS_HWSIM_NODE": node,
        }

    def command(self, argv: Any) -> list[str]:
        import sys

        return [sys.executable, "-m", "hwsim", *argv]

    def run(self, t: Any, argv: Any, timeout: float, become: bool | None = None) -> Any:
        import subprocess
        import time

        from rackops.validate.executor import CommandResult

        started = time.monotonic()
        proc = subprocess.run(
            self.command(argv),
            env=self.env(t.name),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        return CommandResult(
            t.name,
            tuple(argv),
            proc.returncode,
            proc.stdout,
            proc.stderr,
            time.monotonic() - started,
        )


def test_a_link_that_trains_late_settles_in_the_hold_down_and_a_down_one_fails(
    tmp_path: Path,
) -> None:
    import json

    from test_checks import LAB_INV

    from rackops.lab.scenario import Fault, NodeSpec, Scenario
    from rackops.suites import load_suite
    from rackops.validate.executor import Target
    from rackops.validate.plan import make_plan
    from rackops.validate.rundir import RunDir
    from rackops.validate.runner import Runner

    nodes = ["node01", "node02"]
    spec = Scenario(
        nodes={
            "node01": NodeSpec(faults=(Fault(kind="hca_port", hca="mlx5_3", settle_s=1.5),)),
            "node02": NodeSpec(faults=(Fault(kind="hca_port", hca="mlx5_2"),)),
        }
    )
    rails = {n: {r: f"198.18.{r}.{10 + i}" for r in range(8)} for i, n in enumerate(nodes, 1)}
    (tmp_path / "s.json").write_text(json.dumps(spec.for_hwsim(nodes, rails)))
    cluster = load_inventory(LAB_INV).raise_for_errors()
    suite = load_suite("lab")
    assert suite.checks.physical is not None and suite.checks.physical.hold_down_s >= 3
    plan = make_plan(cluster, suite)
    ibstat = tuple(c for c in plan.node_checks if c.name == "ibstat")
    plan = type(plan)(plan.nodes, ibstat, plan.pairing, (), plan.rails, (), 0)
    runner = Runner(
        cluster,
        suite,
        {"h100-sxm-roce400": PROFILE},
        {n: Target(n, "127.0.0.1") for n in nodes},
        LocalExecutor(tmp_path / "s.json", tmp_path / "state"),  # type: ignore[arg-type]
        RunDir(tmp_path / "run"),
        progress=lambda _m: None,
    )
    runner.node_stage(plan, set())
    recs = {r["node"]: r for r in runner.rundir.records()}
    late, down = recs["node01"], recs["node02"]
    assert {f["status"] for f in late["findings"]} == {"OK"} and late["meta"]["hold_down_tries"] > 1
    assert any(f["status"] == "FAIL" and f["subject"]["hca"] == "mlx5_2" for f in down["findings"])


# --- review findings, each pinned ---------------------------------------------------------------


def test_an_nvidia_ib_switch_description_names_the_switch() -> None:
    from rackops.checks.cabling import short

    assert short("MF0;leaf-r0:MQM9700/U1") == "leaf-r0" == short("leaf-r0.example.net")
    seen = designed()
    seen[("node01", "mlx5_0")] = Seen("MF0;leaf-r0:MQM9700/U1", "Ethernet0")
    assert not fails(check_cabling(ROCE, seen, how="iblinkinfo"))


def test_ber_is_per_line_bit_so_an_idle_healthy_port_passes() -> None:
    idle = roce(corrected_bits=100 + 2400)  # 1e-8 raw BER over 600 s at 400G ... no traffic
    out = judge_counters(roce(), idle, SUBJ, PROFILE.phy, 600, PortReport(), line_gbps=400)
    assert out == []
    dirty = roce(corrected_bits=100 + int(400e9 * 60 * 1e-3))  # raw BER 1e-3 on the wire
    (f,) = judge_counters(roce(), dirty, SUBJ, PROFILE.phy, 60, PortReport(), line_gbps=400)
    assert f.code == "PHY-002"
    one = roce(**MOVED, symbol_errors=1)  # one error in a minute at 400G: 4e-14, within spec
    assert judge_counters(roce(), one, SUBJ, PROFILE.phy, 60, PortReport(), line_gbps=400) == []


def test_a_counter_missing_before_the_run_is_not_a_pass() -> None:
    before = PortSample("roce", {k: v for k, v in roce().counters.items() if k != "crc_errors"})
    (f,) = judge_counters(
        before, roce(**MOVED, crc_errors=5000), SUBJ, PROFILE.phy, 60, PortReport()
    )
    assert f.status is Status.WARN and "rx_crc_errors_phy" in f.message


def test_remote_physical_errors_point_upstream_not_at_this_cable() -> None:
    ib = {"rx_words": 0, "tx_words": 0, "rx_pkts": 0, "tx_pkts": 0, "remote_phys_errors": 0}
    after = {**ib, "rx_words": 10**10, "remote_phys_errors": 40}
    (f,) = judge_counters(
        PortSample("ib", ib), PortSample("ib", after), SUBJ, PROFILE.phy, 60, PortReport()
    )
    assert (f.code, f.status) == ("PHY-016", Status.WARN)


def test_a_site_profile_written_before_the_phy_section_still_loads(tmp_path: Path) -> None:
    from rackops.profiles import load_profile_file

    text = (ROOT / "validators/profiles/h100-sxm-roce400.yaml").read_text()
    old = tmp_path / "h100-sxm-roce400.yaml"
    old.write_text(text.split("\nphy:")[0] + "\n")
    assert load_profile_file(old).profile.phy == PROFILE.phy


def test_an_lldp_neighbour_without_a_system_name_is_not_verifiable() -> None:
    parsed = parse("lldpctl", (FIX / "lldpctl/json-one-interface.txt").read_text())
    assert seen_from_lldp(parsed, "node01", {"enp3s0": "mlx5_0"}) == {("node01", "mlx5_0"): None}


def _bw_and_lat(bad: Any) -> list[dict[str, Any]]:
    nodes = [f"n{i}" for i in range(6)]
    recs = []
    for a, b, rail in ((a, b, r) for a in nodes for b in nodes for r in (0, 1)):
        if a >= b:
            continue
        for kind in ("bw", "lat"):
            failing = bad(a, b, rail, kind)
            f = Finding(
                ("PERF-001" if kind == "bw" else "PERF-002") if failing else "PERF-OK",
                Status.FAIL if failing else Status.OK,
                Subject(node=b),
                kind,
            ).as_dict()
            extra = (
                {"kind": "lat", "tool": "perftest-lat", "metric": "lat"} if kind == "lat" else {}
            )
            recs.append(_pair(a, b, rail, f, **extra))
    return recs


def test_one_link_failing_bandwidth_and_latency_is_one_link() -> None:
    recs = _bw_and_lat(lambda a, b, r, k: (a, b, r) == ("n1", "n4", 0))
    (c,) = localise(recs).culprits
    assert c.kind == "link" and len(c.evidence) == 2


def test_a_slow_leaf_is_named_though_its_latency_passes() -> None:
    recs = _bw_and_lat(lambda a, b, r, k: r == 1 and k == "bw")
    assert [(c.kind, c.switch) for c in localise(recs).culprits] == [("leaf", "leaf-r1")]


# --- a garbled tool output: that node's ports ERROR, the run's records stay readable ----------


class ToolsOnPath(LocalExecutor):
    """hwsim's tools as commands on PATH, so a batch script (``sh`` running several reads
    side by side) runs them as a target's shell would."""

    def __init__(self, tmp: Path, scenario: Path) -> None:
        import sys

        from rackops.lab.hwsim.__main__ import TOOLS

        super().__init__(scenario, tmp / "state")
        self.bin = tmp / "bin"
        self.bin.mkdir()
        for tool in TOOLS:
            exe = self.bin / tool
            exe.write_text(f'#!/bin/sh\nexec {sys.executable} -m hwsim {tool} "$@"\n')
            exe.chmod(0o755)

    def env(self, node: str) -> dict[str, str]:
        env = super().env(node)
        return {**env, "PATH": f"{self.bin}:{env['PATH']}"}

    def command(self, argv: Any) -> list[str]:
        return list(argv)  # a batch script or a tool: the target's shell runs it


@pytest.mark.parametrize("tool", ["ibstat", "ethtool", "mlxlink"])
@pytest.mark.parametrize("keep", [0.05, 0.4, 0.9])
def test_a_garbled_tool_output_is_that_nodes_error_and_the_run_reads_its_records(
    tmp_path: Path, tool: str, keep: float
) -> None:
    """A cut, corrupted output (a hung driver, a killed command) of each tool the physical
    stages read: the records written are ones the run-directory reader accepts, node01's
    ports are ERROR and node02's are judged."""
    import json

    from test_checks import LAB_INV

    from rackops.lab.scenario import Fault, NodeSpec, Scenario
    from rackops.suites import load_suite
    from rackops.validate.executor import Target
    from rackops.validate.physical import Physical
    from rackops.validate.rundir import RunDir

    nodes = ["node01", "node02"]
    garbled = Fault(kind="garbled", tool=tool, keep=keep)
    spec = Scenario(nodes={"node01": NodeSpec(faults=(garbled,))})
    rails = {n: {r: f"198.18.{r}.{10 + i}" for r in range(8)} for i, n in enumerate(nodes, 1)}
    (tmp_path / "s.json").write_text(json.dumps(spec.for_hwsim(nodes, rails)))
    cluster = load_inventory(LAB_INV).raise_for_errors()
    params = load_suite("lab").checks.physical
    assert params is not None
    params = params.model_copy(update={"hold_down_s": 0})
    rundir = RunDir(tmp_path / "run")
    phy = Physical(
        cluster,
        {"h100-sxm-roce400": PROFILE},
        {n: Target(n, "127.0.0.1") for n in nodes},
        ToolsOnPath(tmp_path, tmp_path / "s.json"),  # type: ignore[arg-type]
        rundir,
        params,
    )
    phy.snapshot(tuple(nodes), set(), set(), "before")
    phy.snapshot(tuple(nodes), set(), set(), "after")
    recs = {(r["node"], r["id"].rsplit("/", 1)[-1]): r for r in rundir.records()}  # all read
    assert rundir.unreadable == []
    bad = [f for f in recs[("node01", "after")]["findings"] if f["status"] == "ERROR"]
    assert bad, recs[("node01", "after")]["findings"]
    assert all(f["subject"]["node"] == "node01" for f in bad)
    good = recs[("node02", "after")]["findings"]  # judged: only what this host lacks warns
    assert good and {f["status"] for f in good} <= {"OK", "WARN"}, good
    assert all(f["code"] == "PHY-009" for f in good if f["status"] == "WARN"), good


def test_a_state_cut_mid_word_is_unknown_never_a_port_gone_down() -> None:
    """ibstat cut inside "Active" reads "State: Act": not a state (the port did not go down
    under load: the output was cut), so it is unknown, and only real states are states."""
    from types import SimpleNamespace

    from rackops.validate.batch import Part
    from rackops.validate.physical import Physical

    whole = (FIX / "ibstat" / "h100x8-ndr-healthy.txt").read_text()
    at = whole.index("State: Active", whole.index("CA 'mlx5_7'"))
    node = SimpleNamespace(hcas=[SimpleNamespace(device=f"mlx5_{i}") for i in range(8)])
    states = Physical._states(None, {"ibstat": Part("ibstat", 0, whole)}, node)  # type: ignore[arg-type]
    assert set(states.values()) == {"Active"}
    cut = whole[: at + len("State: Act")] + "\n"
    states = Physical._states(None, {"ibstat": Part("ibstat", 0, cut)}, node)  # type: ignore[arg-type]
    assert states["mlx5_7"] is None and states["mlx5_0"] == "Active"
    odd = whole.replace("State: Active", "State: Act\x07ive", 1)
    states = Physical._states(None, {"ibstat": Part("ibstat", 0, odd)}, node)  # type: ignore[arg-type]
    assert states["mlx5_0"] is None
