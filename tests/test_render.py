"""Switch and host configs rendered from the design: golden files, read-back checks, random
legal designs always consistent, illegal designs refused with the reason."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import yaml
from conftest import Rack
from hypothesis import given, settings
from hypothesis import strategies as st

from rackops.cli import main
from rackops.design import node_design
from rackops.inventory import load_inventory
from rackops.inventory.model import Cluster
from rackops.lint import lint_inventory
from rackops.render import render_all, render_host, render_switch, verify_switch
from rackops.render.view import RenderError

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).parent / "golden" / "render"
ROCE = load_inventory(ROOT / "inventories/example-roce").raise_for_errors()

SONIC_TABLES = {
    "DEVICE_METADATA",
    "PORT",
    "DSCP_TO_TC_MAP",
    "TC_TO_PRIORITY_GROUP_MAP",
    "TC_TO_QUEUE_MAP",
    "MAP_PFC_PRIORITY_TO_QUEUE",
    "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP",
    "SCHEDULER",
    "WRED_PROFILE",
    "PORT_QOS_MAP",
    "QUEUE",
    "BUFFER_PG",
    "PFC_WD",
    "BUFFER_POOL",
    "BUFFER_PROFILE",
    "BUFFER_QUEUE",
    "BUFFER_PORT_INGRESS_PROFILE_LIST",
    "BUFFER_PORT_EGRESS_PROFILE_LIST",
    "CABLE_LENGTH",
    "DEFAULT_LOSSLESS_BUFFER_PARAMETER",
    "LOSSLESS_TRAFFIC_PATTERN",
}
QOS_MAP_FIELDS = {
    "dscp_to_tc_map",
    "tc_to_pg_map",
    "tc_to_queue_map",
    "pfc_to_queue_map",
    "pfc_to_pg_map",
    "pfc_enable",
    "pfcwd_sw_enable",
}
EOS_LINES = [
    re.compile(p)
    for p in (
        r"^!.*$",
        r"^qos map dscp \d+ to traffic-class \d$",
        r"^priority-flow-control pause watchdog default (timeout|recovery-time) \d+\.\d\d$",
        r"^priority-flow-control pause watchdog action (drop|no-drop)$",
        r"^qos profile ROCE_LOSSLESS$",
        r"^   qos trust dscp$",
        r"^   priority-flow-control on$",
        r"^   priority-flow-control priority \d no-drop$",
        r"^   !$",
        r"^   uc-tx-queue \d$",
        r"^      bandwidth percent \d+$",
        r"^      random-detect ecn minimum-threshold \d+ bytes maximum-threshold \d+ bytes "
        r"max-mark-probability \d+ weight 0$",
        r"^      priority strict$",
        r"^      no priority$",
        r"^interface Ethernet\d+(/\d+)*$",
        r"^   description \S+$",
        r"^   mtu \d+$",
        r"^   service-profile ROCE_LOSSLESS$",
    )
]


@pytest.mark.parametrize("rack", ["example-roce", "example-ib"])
def test_golden_files(rack: str, tmp_path: Path) -> None:
    cluster = load_inventory(ROOT / "inventories" / rack).raise_for_errors()
    written, problems = render_all(cluster, f"inventories/{rack}", tmp_path)
    assert problems == []
    expected = sorted(
        p.relative_to(GOLDEN / rack) for p in (GOLDEN / rack).rglob("*") if p.is_file()
    )
    assert sorted(p.relative_to(tmp_path) for p in written) == expected
    for rel in expected:
        assert (tmp_path / rel).read_bytes() == (GOLDEN / rack / rel).read_bytes(), rel


def test_every_os_is_rendered_for_example_roce(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert main(["render", "-i", str(ROOT / "inventories/example-roce"), "-o", str(tmp_path)]) == 0
    assert (tmp_path / "switches/leaf-r0/config_db.json").exists()
    assert (tmp_path / "switches/leaf-r3/startup.yaml").exists()
    assert (tmp_path / "switches/leaf-r6/running-config").exists()
    host = yaml.safe_load((tmp_path / "hosts/node01.yaml").read_text())
    assert host["nccl_env"]["NCCL_IB_TC"] == "106"
    assert host["mlnx_qos"][0][-1] == "0,0,0,1,0,0,0,0"


def _shapes_ok(files: dict[str, str], os_name: str) -> None:
    if os_name == "sonic":
        db = json.loads(files["config_db.json"])
        assert set(db) <= SONIC_TABLES
        for port, fields in db["PORT_QOS_MAP"].items():
            assert set(fields) <= QOS_MAP_FIELDS
            if port != "global":
                assert re.fullmatch(r"([0-7](,[0-7])*)?", fields["pfc_enable"])
        assert all(v in ("ecn_all",) for v in (p["ecn"] for p in db["WRED_PROFILE"].values()))
    elif os_name == "cumulus":
        docs = yaml.safe_load(files["startup.yaml"])
        assert isinstance(docs, list) and all(set(d) == {"set"} for d in docs)
    elif os_name == "eos":
        for line in files["running-config"].splitlines():
            assert any(p.match(line) for p in EOS_LINES), line


def _design(
    dscp: int,
    cnp_dscp: int,
    prio: int,
    cnp_prio: int,
    host_mtu: int,
    slack: int,
    ecn_min: int,
    ecn_span: int,
) -> Cluster:
    f = ROCE.fabric
    assert f.roce is not None
    roce = f.roce.model_copy(
        update={
            "dscp": dscp,
            "cnp_dscp": cnp_dscp,
            "priority": prio,
            "cnp_priority": cnp_prio,
            "pfc_priorities": (prio,),
            "nccl_ib_tc": dscp << 2 | 2,
            "ecn": f.roce.ecn.model_copy(
                update={"min_threshold_bytes": ecn_min, "max_threshold_bytes": ecn_min + ecn_span}
            ),
        }
    )
    mtu = f.mtu.model_copy(update={"host": host_mtu, "switch": min(9216, host_mtu + 18 + slack)})
    switches = tuple(s.model_copy(update={"mtu": None}) for s in ROCE.switches)
    return ROCE.model_copy(
        update={"fabric": f.model_copy(update={"roce": roce, "mtu": mtu}), "switches": switches}
    )


# the design space property tests draw from (RoCE/CNP classes, host MTU, ECN thresholds)
DESIGNS = {
    "dscp": st.integers(0, 63),
    "cnp_dscp": st.integers(0, 63),
    "prio": st.integers(0, 7),
    "cnp_prio": st.integers(0, 7),
    "host_mtu": st.integers(4200, 9198),
    "ecn_min": st.integers(1, 2_000_000),
    "ecn_span": st.integers(0, 2_000_000),
}


@settings(max_examples=40, deadline=None)
@given(**DESIGNS, slack=st.integers(0, 100))
def test_random_legal_designs_render_consistently(
    dscp: int,
    cnp_dscp: int,
    prio: int,
    cnp_prio: int,
    host_mtu: int,
    slack: int,
    ecn_min: int,
    ecn_span: int,
) -> None:
    if dscp == cnp_dscp or prio == cnp_prio:
        return  # illegal: covered below
    cluster = _design(dscp, cnp_dscp, prio, cnp_prio, host_mtu, slack, ecn_min, ecn_span)
    for sw in cluster.switches:
        files = render_switch(cluster, sw.name, "random")
        assert render_switch(cluster, sw.name, "random") == files  # deterministic
        _shapes_ok(files, sw.os)
        assert verify_switch(cluster, sw.name, files) == []


@pytest.mark.parametrize(
    ("kwargs", "reason"),
    [
        ({"dscp": 26, "cnp_dscp": 26}, "share DSCP 26"),
        ({"prio": 3, "cnp_prio": 3}, "share priority 3"),
    ],
)
def test_illegal_designs_are_refused(kwargs: dict[str, int], reason: str) -> None:
    args = {
        "dscp": 26,
        "cnp_dscp": 48,
        "prio": 3,
        "cnp_prio": 6,
        "host_mtu": 9000,
        "slack": 198,
        "ecn_min": 150000,
        "ecn_span": 1350000,
    } | kwargs
    cluster = _design(**args)
    with pytest.raises(RenderError, match=reason):
        render_switch(cluster, "leaf-r0", "x")


def test_pfc_on_cnp_and_small_mtu_are_refused(roce: Rack) -> None:
    roce.set("group_vars/all/fabric.yml", "rackops_fabric.roce.pfc_priorities", [3, 6])
    result = load_inventory(roce.path)
    assert result.cluster is not None
    with pytest.raises(RenderError, match="C-14 PFC is enabled on the CNP priority 6"):
        render_switch(result.cluster, "leaf-r0", "x")
    roce.set("group_vars/all/fabric.yml", "rackops_fabric.roce.pfc_priorities", [3])
    roce.hostvar("leaf-r3", "rackops_switch_mtu", 9000)
    result = load_inventory(roce.path)
    assert result.cluster is not None
    with pytest.raises(RenderError, match=r"C-22 switch MTU 9000 < host MTU \+ L2 headers = 9018"):
        render_switch(result.cluster, "leaf-r3", "x")


def test_switch_override_breaking_intent_is_named_by_switch_and_port(
    roce: Rack, tmp_path: Path
) -> None:
    roce.hostvar("leaf-r0", "rackops_switch_qos", {"dscp_to_tc": {26: 1}})
    result = load_inventory(roce.path)
    assert result.cluster is not None
    _, problems = render_all(result.cluster, "x", tmp_path, "leaf-r0")
    assert {(d.code, d.subject, d.key) for d in problems} == {
        ("C-07", "leaf-r0", f"Ethernet{8 * i}") for i in range(8)
    }
    report = lint_inventory(roce.path)
    assert "RND001" in {d.code for d in report.diagnostics}
    assert (
        main(["render", "-i", str(roce.path), "-o", str(tmp_path / "o"), "--switch", "leaf-r0"])
        == 2
    )


def test_render_cli_refuses_an_unrenderable_design(
    roce: Rack, capsys: pytest.CaptureFixture[str]
) -> None:
    roce.set("group_vars/all/fabric.yml", "rackops_fabric.roce.cnp_dscp", 26)
    assert main(["render", "-i", str(roce.path)]) == 64
    assert "share DSCP 26" in capsys.readouterr().err
    shutil.rmtree(ROOT / "build" / roce.path.name, ignore_errors=True)


def test_diff_against_running_config_names_what_a_push_changes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    golden = GOLDEN / "example-roce" / "switches"
    db = json.loads((golden / "leaf-r0" / "config_db.json").read_text())
    db["PORT_QOS_MAP"]["Ethernet8"]["pfc_enable"] = "3,4"
    db["PORT"]["Ethernet16"]["mtu"] = "9100"
    (tmp_path / "running.json").write_text(json.dumps(db))
    inv = str(ROOT / "inventories/example-roce")
    out = tmp_path / "out"
    args = ["render", "-i", inv, "-o", str(out), "--switch", "leaf-r0", "--diff"]
    assert main([*args, str(tmp_path / "running.json")]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert "leaf-r0 replace /PORT_QOS_MAP/Ethernet8/pfc_enable: '3,4' -> '3'" in lines
    assert "leaf-r0 replace /PORT/Ethernet16/mtu: '9100' -> '9216'" in lines
    assert "leaf-r0 effect Ethernet8: pfc (3, 4) -> (3,)" in lines
    assert len([x for x in lines if " effect " not in x]) == 2  # nothing else changes
    patch = json.loads((out / "switches/leaf-r0/config-patch.json").read_text())
    assert [op["op"] for op in patch] == ["replace", "replace"]
    eos = (
        (golden / "leaf-r6" / "running-config")
        .read_text()
        .replace("qos map dscp 26 to traffic-class 3", "qos map dscp 26 to traffic-class 1")
    )
    (tmp_path / "eos.txt").write_text(eos)
    args[6] = "leaf-r6"
    assert main([*args, str(tmp_path / "eos.txt")]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert "leaf-r6 + qos map dscp 26 to traffic-class 3" in lines
    assert "leaf-r6 - qos map dscp 26 to traffic-class 1" in lines
    assert "leaf-r6 effect Ethernet1/1: DSCP 26 -> TC 1 becomes 3" in lines
    args[6] = "leaf-r3"
    assert main([*args, str(golden / "leaf-r3" / "startup.yaml")]) == 0


@pytest.mark.parametrize(
    ("edit", "code", "needle"),
    [
        # EOS serves a tx-queue strict unless it says `no priority`: dropping it makes the
        # RoCE queue strict, which would starve the lower queues
        (("uc-tx-queue 3\n      no priority\n", "uc-tx-queue 3\n"), "SCH001", "queue 3 is strict"),
        (("      priority strict\n", "      no priority\n"), "C-08", "scheduled dwrr"),
        (("   priority-flow-control priority 3 no-drop\n", ""), "C-13", "priorities []"),
        (("      random-detect ecn", "      !random-detect ecn"), "C-18", "ECN on queue None"),
    ],
    ids=["roce-strict", "cnp-dwrr", "pfc-off", "ecn-off"],
)
def test_eos_scheduling_and_lossless_lines_are_checked(
    edit: tuple[str, str], code: str, needle: str
) -> None:
    from rackops.consistency import Intent
    from rackops.render.verify import check_ports, read_eos

    text = (GOLDEN / "example-roce/switches/leaf-r6/running-config").read_text()
    assert check_ports("leaf-r6", read_eos(text), Intent.of(ROCE)) == []
    broken = text.replace(*edit)
    assert broken != text
    found = check_ports("leaf-r6", read_eos(broken), Intent.of(ROCE))
    hits = [d for d in found if d.code == code]
    # every port of the leaf, its four uplinks to the spines too
    assert len(hits) == 8 and needle in hits[0].message, [d.message for d in found]


def test_a_hosts_qos_overrides_are_what_its_rendered_host_file_applies(roce: Rack) -> None:
    """render_host takes node01's QoS from its computed design (the one the roles and
    validate read), never the rack-wide view: its own DSCP→priority entry and NCCL traffic
    class (overrides lint accepts) are in its file; node02 keeps the rack's."""
    roce.hostvar("node01", "rackops_host_qos", {"nccl_ib_tc": 104, "dscp2prio": {46: 4}})
    cluster = load_inventory(roce.path).raise_for_errors()
    d = node_design(cluster, "node01").roce
    assert d is not None and d.tos == 104 and d.dscp2prio[46] == 4
    host = yaml.safe_load(render_host(cluster, "node01"))
    pfc = [argv for argv in host["mlnx_qos"] if "--pfc" in argv]
    assert len(pfc) == 8 and {argv[-1] for argv in pfc} == {d.pfc_vector}
    nd = pfc[0][2]
    for dscp, prio in ((26, 3), (48, 6), (46, 4)):  # RoCE, CNP and the host's own entry
        assert ["mlnx_qos", "-i", nd, "--dscp2prio", f"set,{dscp},{prio}"] in host["mlnx_qos"]
    assert host["nccl_env"]["NCCL_IB_TC"] == "104" and set(host["roce_tos"].values()) == {104}
    ecn = host["ecn"][nd]
    assert ecn["roce_np/enable/3"] == ecn["roce_rp/enable/3"] == 1
    assert (ecn["roce_np/cnp_dscp"], ecn["roce_np/cnp_802p_prio"]) == (48, 6)
    assert host["intent"]["tos"] == 104 and [46, 4] in host["intent"]["dscp2prio"]
    other = yaml.safe_load(render_host(cluster, "node02"))
    assert other["nccl_env"]["NCCL_IB_TC"] == "106"
    assert not any("set,46,4" in argv for argv in other["mlnx_qos"])


def test_a_host_whose_overrides_break_the_design_gets_no_host_file(roce: Rack) -> None:
    """Overrides lint rejects (PFC on two priorities, a CNP DSCP the switches do not
    classify, a traffic class off the RoCE DSCP) are refused by render, naming the host and
    each rule, where it used to write the rack's values (and now would write a file the
    roce_host_qos role refuses to apply)."""
    roce.hostvar(
        "node01",
        "rackops_host_qos",
        {"pfc_priorities": [3, 4], "nccl_ib_tc": 98, "cnp_dscp": 40, "dscp2prio": {26: 4}},
    )
    cluster = load_inventory(roce.path).raise_for_errors()
    with pytest.raises(RenderError) as refused:
        render_host(cluster, "node01")
    message = str(refused.value)
    assert "node01" in message and "rackops_host_qos" in message
    assert {"C-01", "C-09", "C-12"} <= set(re.findall(r"C-\d\d", message)), message
    assert yaml.safe_load(render_host(cluster, "node02"))["nccl_env"]["NCCL_IB_TC"] == "106"


def test_an_empty_pfc_override_means_no_pfc_never_the_racks(roce: Rack) -> None:
    """``pfc_priorities: []`` on a switch is "no PFC here": lint names that leaf's lossy
    ports and the lossy ISLs, where a falsy ``or`` used to render and check the rack's."""
    roce.hostvar("leaf-r0", "rackops_switch_qos", {"pfc_priorities": []})
    errors = {(d.code, d.subject) for d in roce.lint().diagnostics if d.level.value == "ERROR"}
    assert {("C-13", "leaf-r0"), ("C-45", "leaf-r0")} <= errors, errors


def test_render_never_writes_through_a_link_planted_in_its_output(tmp_path: Path) -> None:
    """`render -o` into a directory holding `hosts -> outside/` and a switch file linked to
    a victim (a planted link is one `git clone` away in a checkout): nothing is written
    outside `-o`, the victim is untouched, and the run says which link it refused."""
    out, outside = tmp_path / "out", tmp_path / "outside"
    out.mkdir()
    outside.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("keep me\n")
    (out / "hosts").symlink_to(outside, target_is_directory=True)
    inv = str(ROOT / "inventories/example-roce")
    assert main(["render", "-i", inv, "-o", str(out)]) == 64
    assert list(outside.iterdir()) == []
    (out / "hosts").unlink()
    leaf = out / "switches" / "leaf-r1"
    leaf.mkdir(parents=True, exist_ok=True)
    (leaf / "config_db.json").unlink(missing_ok=True)  # what the refused run wrote
    (leaf / "config_db.json").symlink_to(victim)
    assert main(["render", "-i", inv, "-o", str(out)]) == 0
    assert victim.read_text() == "keep me\n"
    assert not (leaf / "config_db.json").is_symlink()  # replaced by the rendered file
    assert json.loads((leaf / "config_db.json").read_text())
