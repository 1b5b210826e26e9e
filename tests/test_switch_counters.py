"""`rackops switch-counters`: the switches' own counters, read before and after a run in each
NOS's format (printed by the lab's NOS simulator, whose layouts the parsers read in the real
fixtures), judged per cabled port and named by the cable — a host's HCA, or the far end of an
inter-switch link. The rack is example-roce: SONiC, Cumulus and EOS leaves, SONiC spines."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rackops.cli import main
from rackops.inventory import load_inventory
from rackops.lab.hwsim import nos

ROOT = Path(__file__).resolve().parent.parent
INV = ROOT / "inventories" / "example-roce"
CLUSTER = load_inventory(INV).raise_for_errors()
PRIO = 3


def _base(grown: int) -> dict[str, int]:
    pkts = 10**6 + grown * 10**9  # every cabled port carries the run's traffic
    return {
        "rx_pkts": pkts,
        "tx_pkts": pkts,
        "rx_bytes": 4096 * pkts,
        "tx_bytes": 4096 * pkts,
        "crc_errors": 0,
        "symbol_errors": 0,
        "fec_corrected": 10 + grown * 1000,
        "rx_discards": 0,
        "xmit_discards": 0,
        "pause_rx": 5 + grown * 100,
        "pause_tx": 5 + grown * 100,
        "ecn_marked": 7 + grown * 50,
    }


def _write(root: Path, grown: int, faults: dict[tuple[str, str], dict[str, int]]) -> None:
    """One read of every switch: each NOS's commands, its design ports' counters."""
    for sw in CLUSTER.switches:
        ports = {p: _base(grown) for p in sw.ports}
        for (name, port), extra in faults.items():
            if name == sw.name:
                for k, v in extra.items():
                    ports[port][k] += v
        d = root / sw.name
        d.mkdir(parents=True)
        if sw.os == "sonic":
            (d / "interfaces.txt").write_text(nos.sonic_interfaces(ports))
            (d / "fec.txt").write_text(nos.sonic_fec(ports))
            (d / "pfc.txt").write_text(nos.sonic_pfc(ports, PRIO))
            (d / "wred.txt").write_text(nos.sonic_wred(ports, PRIO))
        elif sw.os == "cumulus":
            for port, c in ports.items():
                (d / f"{port}.counters.txt").write_text(nos.nvue_counters(c))
                (d / f"{port}.roce.txt").write_text(nos.nvue_roce(c))
        else:
            for what in ("errors", "discards", "pfc", "ecn"):
                (d / f"{what}.json").write_text(nos.eos_json(ports, what, PRIO))


def _cli(tmp: Path, *extra: str) -> int:
    """`rackops switch-counters` on the reads in tmp/before and tmp/after."""
    argv = ["switch-counters", "-i", str(INV), "--before", str(tmp / "before")]
    return main([*argv, "--after", str(tmp / "after"), *extra])


def _run(tmp: Path, faults: dict[tuple[str, str], dict[str, int]]) -> int:
    """A read before, one after with these faults grown, judged over 600 s (JSON out)."""
    _write(tmp / "before", 0, {})
    _write(tmp / "after", 1, faults)
    return _cli(tmp, "--interval-s", "600", "--format", "json")


def _report(capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(capsys.readouterr().out)
    return out


def _bad(report: dict[str, Any]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    out: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for f in report["findings"]:
        if f["status"] != "OK":
            s = f["subject"]
            out.setdefault((s["switch"], s["switch_port"]), []).append(f)
    return out


def test_a_clean_run_is_ok_on_every_cabled_port(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc = _run(tmp_path, {})
    report = _report(capsys)
    assert rc == 0 and report["verdict"] == "OK", _bad(report)
    cabled = 4 * 8 + 2 * 4 * 8  # host ports, then both ends of every uplink
    assert len(report["ports"]) == cabled
    leaf0 = {(p["switch"], p["port"]): p for p in report["ports"]}[("leaf-r0", "Ethernet0")]
    assert leaf0["delta"]["pause_rx_p3"] == 100 and leaf0["delta"]["ecn_marked"] == 50


def test_each_fault_is_named_at_its_port_and_by_its_cable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    faults = {
        ("leaf-r1", "Ethernet40"): {"crc_errors": 500},  # an uplink (to spine-2)
        ("spine-1", "Ethernet96"): {"symbol_errors": 4000},  # leaf-r6's first uplink, far end
        ("leaf-r4", "swp2"): {"crc_errors": 3},  # a host port: node02's HCA
        ("leaf-r7", "Ethernet6/1"): {"xmit_discards": 10**6},  # an EOS uplink dropping
    }
    rc = _run(tmp_path, faults)
    report = _report(capsys)
    bad = _bad(report)
    assert rc == 2 and set(bad) == set(faults), bad
    isl = bad[("leaf-r1", "Ethernet40")][0]
    assert isl["code"] == "PHY-004" and "RX_ERR +500" in isl["message"]
    assert "leaf-r1 port Ethernet40 ↔ spine-2 port Ethernet16" in isl["message"]
    far = bad[("spine-1", "Ethernet96")][0]
    assert (
        far["code"] == "PHY-001"
        and "spine-1 port Ethernet96 ↔ leaf-r6 port Ethernet5/1" in far["message"]
    )
    host = bad[("leaf-r4", "swp2")][0]
    assert host["subject"]["node"] == "node02" and host["subject"]["hca"] == "mlx5_4"
    assert "Error Counters.FCS Errors.Receive +3" in host["message"]
    drops = bad[("leaf-r7", "Ethernet6/1")][0]
    assert drops["code"] == "PHY-005" and "outDiscards" in drops["message"]


def test_a_cut_read_is_an_error_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write(tmp_path / "before", 0, {})
    _write(tmp_path / "after", 1, {})
    cut = tmp_path / "after" / "leaf-r0" / "interfaces.txt"
    cut.write_text(cut.read_text()[:700])
    rc = _cli(tmp_path, "--format", "json")
    report = _report(capsys)
    assert rc == 3
    errors = [f for f in report["findings"] if f["status"] == "ERROR"]
    assert any(str(cut) in f["message"] and "cut" in f["message"] for f in errors), errors


def test_a_counter_cleared_during_the_run_is_not_judged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc = _run(tmp_path, {("leaf-r2", "Ethernet8"): {"rx_pkts": -(10**9) - 10**6 + 1}})
    report = _report(capsys)
    (f,) = _bad(report)[("leaf-r2", "Ethernet8")]
    assert rc == 1 and f["code"] == "PHY-009" and "went backwards" in f["message"]


def _link_switch_dir(d: Path) -> None:
    """The switch's read is a link to a directory elsewhere (planted, or shared by two)."""
    elsewhere = d.parent / "elsewhere"
    (d / "leaf-r0").rename(elsewhere)
    (d / "leaf-r0").symlink_to(elsewhere, target_is_directory=True)


@pytest.mark.parametrize(
    ("attack", "words"),
    [
        (lambda d: (d / "not-a-switch").mkdir(), "'not-a-switch' is not a switch of the inventory"),
        (
            lambda d: (d / "leaf-r0" / "bad name;rm").write_text("x"),
            "not a file name rackops reads",
        ),
        (
            lambda d: (d / "leaf-r0" / "link.txt").symlink_to("/etc/passwd"),
            "is a symlink",
        ),
        (_link_switch_dir, "leaf-r0: is a symlink"),
    ],
    ids=["unknown-switch", "file-name", "symlink", "symlinked-switch"],
)
def test_a_hostile_read_is_refused_with_its_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], attack: Any, words: str
) -> None:
    _write(tmp_path / "before", 0, {})
    _write(tmp_path / "after", 1, {})
    attack(tmp_path / "after")
    rc = _cli(tmp_path)
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    assert rc in (3, 64) and words in out + err, out + err


def _write_views(root: Path, moved: tuple[str, str, str] | None = None) -> None:
    """Every leaf's port views in the after read (its uplinks as designed; ``moved``: one
    (leaf, uplink port, spine port it is really in))."""
    for sw in CLUSTER.switches:
        if not sw.uplinks:
            continue
        views = {
            u.port: {"oper": "up", "speed": 400, "peer": [u.spine, u.spine_port]}
            for u in sw.uplinks
        }
        if moved is not None and moved[0] == sw.name:
            views[moved[1]]["peer"][1] = moved[2]
        d = root / sw.name
        if sw.os == "sonic":
            (d / "lldp.txt").write_text(nos.sonic_lldp(views))
            (d / "status.txt").write_text(nos.sonic_status(views, 9216))
        elif sw.os == "cumulus":
            (d / "interface.txt").write_text(nos.nvue_interfaces(views, 9216))
        else:
            (d / "lldp.json").write_text(nos.eos_ports(views, "lldp"))
            (d / "status.json").write_text(nos.eos_ports(views, "status"))


def test_saved_port_views_judge_every_uplink_and_name_a_moved_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write(tmp_path / "before", 0, {})
    _write(tmp_path / "after", 1, {})
    leaf = next(s for s in CLUSTER.switches if s.os == "cumulus" and s.uplinks)
    up = leaf.uplinks[0]
    _write_views(tmp_path / "after", (leaf.name, up.port, "swp99"))
    rc = _cli(tmp_path, "--interval-s", "600", "--format", "json")
    report = _report(capsys)
    codes = [f["code"] for f in report["findings"] if f["code"].startswith("ISL-")]
    assert len(codes) == sum(len(s.uplinks) for s in CLUSTER.switches)
    (bad,) = [f for f in report["findings"] if f["status"] != "OK"]
    assert rc == 2 and bad["code"] == "ISL-MISCABLED"
    assert bad["subject"]["switch"] == leaf.name and bad["subject"]["switch_port"] == up.port
    assert "port swp99" in bad["message"]


def test_a_cut_port_view_is_an_error_not_a_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write(tmp_path / "before", 0, {})
    _write(tmp_path / "after", 1, {})
    _write_views(tmp_path / "after")
    leaf = next(s for s in CLUSTER.switches if s.os == "sonic" and s.uplinks)
    lldp = tmp_path / "after" / leaf.name / "lldp.txt"
    lldp.write_text(lldp.read_text().rsplit("-" * 50, 1)[0])  # the footer is gone
    rc = _cli(tmp_path, "--interval-s", "600", "--format", "json")
    errors = [f for f in _report(capsys)["findings"] if f["status"] == "ERROR"]
    assert rc == 3 and any("lldp.txt" in f["message"] and "cut" in f["message"] for f in errors)


@pytest.mark.parametrize(
    ("switch", "port", "file", "edits"),
    [
        # an NVUE FCS counter printed as a decimal: not a count
        ("leaf-r4", "swp2", "swp2.counters.txt",
         [("FCS Errors     5000     n/a", "FCS Errors     5000.0   n/a")]),
        # EOS fcsErrors and inErrors gone from the after read
        ("leaf-r7", "Ethernet6/1", "errors.json",
         [('"fcsErrors"', '"fcsErrorsX"'), ('"inErrors"', '"inErrorsX"')]),
    ],
)  # fmt: skip
def test_a_garbled_or_vanished_counter_is_an_error_never_ok(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    switch: str,
    port: str,
    file: str,
    edits: list[tuple[str, str]],
) -> None:
    """The after read holds 5,000 FCS errors the parser cannot take as a count, or has
    lost the counters: that port's judgement is an ERROR, never OK (issue 41)."""
    _write(tmp_path / "before", 0, {})
    _write(tmp_path / "after", 1, {(switch, port): {"crc_errors": 5000}})
    f = tmp_path / "after" / switch / file
    text = f.read_text()
    for real, garbled in edits:
        assert real in text, text[:800]
        text = text.replace(real, garbled)
    f.write_text(text)
    rc = _cli(tmp_path, "--interval-s", "600", "--format", "json")
    report = _report(capsys)
    bad = _bad(report)
    assert (switch, port) in bad, bad
    assert {x["status"] for x in bad[(switch, port)]} == {"ERROR"}, bad[(switch, port)]
    assert rc in (2, 3)
