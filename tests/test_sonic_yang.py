"""Rendered SONiC configs against SONiC's own YANG models (libyang), as `config load` and
`config apply-patch` check them on a switch."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest
from conftest import Rack
from hypothesis import given, settings
from hypothesis import strategies as st
from test_render import DESIGNS, ROCE, _design

from rackops.inventory.model import SwitchBuffers
from rackops.render import render_switch
from rackops.render import sonic_yang as sy

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def yang() -> sy.SonicYang:
    why = sy.available()
    models = sy.default_models()
    if why is None and models is None:
        why = "the SONiC YANG models (../shared/vendor/sonic-yang) are not beside the checkout"
    if why is not None:
        if os.environ.get("RACKOPS_REQUIRE_YANG") == "1":
            pytest.fail(why)
        pytest.skip(why)
    assert models is not None
    return sy.loaded(str(models))


def _sonic(cluster: Any) -> list[str]:
    return [s.name for s in cluster.switches if s.os == "sonic"]


def _db(cluster: Any, name: str) -> dict[str, Any]:
    files = render_switch(cluster, name, "test")
    assert "config_db.json" in files, files.keys()
    return dict(json.loads(files["config_db.json"]))


def test_example_roce_sonic_configs_are_yang_valid(yang: sy.SonicYang) -> None:
    names = _sonic(ROCE)
    assert names == ["leaf-r0", "leaf-r1", "leaf-r2", "spine-1", "spine-2"]
    for name in names:
        db = _db(ROCE, name)
        # complete for lossless in the dynamic model, not only valid
        for table in (
            "BUFFER_POOL",
            "BUFFER_PROFILE",
            "BUFFER_PG",
            "BUFFER_QUEUE",
            "CABLE_LENGTH",
            "DEFAULT_LOSSLESS_BUFFER_PARAMETER",
            "LOSSLESS_TRAFFIC_PATTERN",
            "PFC_WD",
            "WRED_PROFILE",
        ):
            assert db.get(table), (name, table)
        assert all(p.get("lanes") and p.get("speed") for p in db["PORT"].values())
        assert yang.problems(name, db) == []


@pytest.mark.parametrize(
    ("mutate", "where"),
    [
        (lambda db: db["PORT"]["Ethernet8"].pop("lanes"), ("PORT", "Ethernet8", "lanes")),
        (
            lambda db: db["BUFFER_PG"]["Ethernet0|0"].update(profile="ingress_lossy_profil"),
            ("BUFFER_PG", "Ethernet0|0", "profile"),
        ),
        (
            lambda db: db["PORT_QOS_MAP"]["Ethernet16"].update(pfc_enable="3,9"),
            ("PORT_QOS_MAP", "Ethernet16", "pfc_enable"),
        ),
        (
            lambda db: db["WRED_PROFILE"]["ROCE_LOSSLESS"].update(ecn="ecn_ecn"),
            ("WRED_PROFILE", "ROCE_LOSSLESS", "ecn"),
        ),
        (
            lambda db: db["PFC_WD"]["Ethernet24"].update(detection_time="50"),
            ("PFC_WD", "Ethernet24", "detection_time"),
        ),
        (
            lambda db: db["PORT"]["Ethernet0"].update(mtu="9300"),
            ("PORT", "Ethernet0", "mtu"),
        ),
        (
            lambda db: db["QUEUE"]["Ethernet0|3"].update(scheduler="nope"),
            ("QUEUE", "Ethernet0|3", "scheduler"),
        ),
        (
            lambda db: db["BUFFER_PROFILE"].pop("q_lossy_profile"),
            ("BUFFER_QUEUE", "Ethernet0|0-2", "profile"),
        ),
        (lambda db: db.update(BUFER_PG={}), ("BUFER_PG", "", "")),
        (
            lambda db: db["PORT"]["Ethernet0"].update(speeed="400000"),
            ("PORT", "Ethernet0", "speeed"),
        ),
    ],
    ids=[
        "lanes-missing",
        "profile-undefined",
        "pfc-priority-9",
        "ecn-enum",
        "watchdog-below-poll",
        "mtu-range",
        "scheduler-undefined",
        "profile-removed",
        "table-misspelt",
        "field-misspelt",
    ],
)
def test_a_broken_config_is_named_by_switch_table_key_and_field(
    yang: sy.SonicYang, mutate: Any, where: tuple[str, str, str]
) -> None:
    db = copy.deepcopy(_db(ROCE, "leaf-r0"))
    mutate(db)
    found = yang.problems("leaf-r0", db)
    assert found, "libyang accepted a broken config"
    assert (found[0].switch, found[0].table, found[0].key, found[0].field) == ("leaf-r0", *where)
    assert str(found[0]).startswith(f"leaf-r0: {where[0]}")


@settings(max_examples=15, deadline=None)
@given(
    **DESIGNS,
    watchdog=st.booleans(),
    detect=st.integers(100, 5000),
    speed=st.sampled_from([100, 200, 400, 800]),
    cable=st.integers(1, 300),
    traditional=st.booleans(),
)
def test_random_legal_designs_are_yang_valid(
    yang: sy.SonicYang,
    dscp: int,
    cnp_dscp: int,
    prio: int,
    cnp_prio: int,
    host_mtu: int,
    ecn_min: int,
    ecn_span: int,
    watchdog: bool,
    detect: int,
    speed: int,
    cable: int,
    traditional: bool,
) -> None:
    if dscp == cnp_dscp or prio == cnp_prio:
        return
    cluster = _design(dscp, cnp_dscp, prio, cnp_prio, host_mtu, 0, ecn_min, ecn_span)
    f = cluster.fabric
    assert f.roce is not None
    wd = f.roce.pfc_watchdog.model_copy(
        update={"enabled": watchdog, "detection_time_ms": detect, "restoration_time_ms": detect * 2}
    )
    buffers = (
        SwitchBuffers.model_validate(
            {
                "model": "traditional",
                "pools": {
                    "ingress_lossless_pool": 60_000_000,
                    "egress_lossless_pool": 60_000_000,
                    "egress_lossy_pool": 40_000_000,
                },
                "headroom": {"size": 19_456, "xon": 19_456, "xoff": 180_224},
            }
        )
        if traditional
        else SwitchBuffers()
    )
    switches = tuple(
        s.model_copy(
            update={
                "port_speed_gbps": speed,
                "cable_m": {p: cable for p in s.ports},
                "buffers": buffers,
            }
        )
        for s in cluster.switches
    )
    cluster = cluster.model_copy(
        update={
            "fabric": f.model_copy(update={"roce": f.roce.model_copy(update={"pfc_watchdog": wd})}),
            "switches": switches,
        }
    )
    for name in _sonic(cluster):
        assert yang.problems(name, _db(cluster, name)) == []


def _running_base() -> dict[str, Any]:
    """A SONiC switch as it boots before rackops: PORT entries shaped as sonic-config-engine
    renders them from a platform's port_config.ini (sample_output/t1-smartswitch.json:
    admin_status, alias, lanes, mtu 9100, speed): the design's eight, a ninth outside it, and the
    stock lossless QoS of qos_config.j2 / buffers_config.j2 (AZURE maps, PFC on 3-4, BUFFER_PG
    |3-4 NULL in the dynamic model)."""
    ports = [f"Ethernet{8 * i}" for i in range(9)]
    port = {
        p: {
            "admin_status": "up",
            "alias": f"etp{i + 1}",
            "index": str(i + 1),
            "lanes": ",".join(str(8 * i + k) for k in range(8)),
            "mtu": "9100",
            "speed": "400000",
        }
        for i, p in enumerate(ports)
    }
    azure_dscp = {str(d): "1" for d in range(64)} | {"3": "3", "4": "4", "8": "0", "46": "5"}
    return {
        "DEVICE_METADATA": {
            "localhost": {"hostname": "sonic", "buffer_model": "dynamic", "hwsku": "ACS-MSN4700"}
        },
        "PORT": port,
        "DSCP_TO_TC_MAP": {"AZURE": azure_dscp},
        "TC_TO_QUEUE_MAP": {"AZURE": {str(t): str(t) for t in range(8)}},
        "BUFFER_POOL": {
            "ingress_lossless_pool": {"type": "ingress", "mode": "dynamic"},
            "egress_lossless_pool": {"type": "egress", "mode": "dynamic", "size": "60817392"},
            "egress_lossy_pool": {"type": "egress", "mode": "dynamic"},
        },
        "BUFFER_PROFILE": {
            "ingress_lossy_profile": {
                "pool": "ingress_lossless_pool",
                "size": "0",
                "dynamic_th": "3",
            },
            "egress_lossless_profile": {
                "pool": "egress_lossless_pool",
                "size": "0",
                "dynamic_th": "7",
            },
            "q_lossy_profile": {"pool": "egress_lossy_pool", "size": "0", "dynamic_th": "3"},
        },
        "BUFFER_PG": {f"{p}|3-4": {"profile": "NULL"} for p in ports}
        | {f"{p}|0": {"profile": "ingress_lossy_profile"} for p in ports},
        "PORT_QOS_MAP": {
            p: {"dscp_to_tc_map": "AZURE", "tc_to_queue_map": "AZURE", "pfc_enable": "3,4"}
            for p in ports
        },
    }


def _patched(cluster: Any, name: str, base: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    from rackops.render import switch_changes

    files = render_switch(cluster, name, "test")
    _, push = switch_changes(cluster, name, files, json.dumps(base))
    ops = json.loads(push["config-patch.json"])
    from rackops.render.diff import apply_patch

    return ops, apply_patch(base, ops)


def test_the_patch_applied_to_a_running_switch_is_yang_valid_and_idempotent(
    yang: sy.SonicYang,
) -> None:
    base = _running_base()
    assert yang.problems("leaf-r0", base) == []  # the base itself is a valid switch
    ops, after = _patched(ROCE, "leaf-r0", base)
    assert yang.problems("leaf-r0", after) == []
    assert not any(op["path"].startswith("/BUFFER_POOL") for op in ops)  # GCU refuses those
    # the switch keeps what rackops does not own
    assert after["PORT"]["Ethernet0"]["lanes"] == base["PORT"]["Ethernet0"]["lanes"]
    assert after["PORT"]["Ethernet0"]["alias"] == "etp1"
    assert after["PORT"]["Ethernet64"] == base["PORT"]["Ethernet64"]
    assert after["BUFFER_PG"]["Ethernet64|3-4"] == {"profile": "NULL"}
    assert after["DSCP_TO_TC_MAP"]["AZURE"] == base["DSCP_TO_TC_MAP"]["AZURE"]
    # and takes the design on the design's ports, stale stock entries gone
    assert "Ethernet0|3-4" not in after["BUFFER_PG"]
    assert after["BUFFER_PG"]["Ethernet0|3"] == {"profile": "NULL"}
    assert after["PORT_QOS_MAP"]["Ethernet8"]["pfc_enable"] == "3"
    assert after["PORT"]["Ethernet16"]["mtu"] == "9216"
    again, _ = _patched(ROCE, "leaf-r0", after)
    assert again == []  # a second push changes nothing


def test_a_patch_for_a_port_the_switch_lacks_is_refused() -> None:
    from rackops.render import switch_changes

    base = _running_base()
    del base["PORT"]["Ethernet24"]
    base["PORT_QOS_MAP"].pop("Ethernet24")
    files = render_switch(ROCE, "leaf-r0", "test")
    with pytest.raises(ValueError, match="Ethernet24"):
        switch_changes(ROCE, "leaf-r0", files, json.dumps(base))


def test_a_design_change_is_a_minimal_diff_on_every_os() -> None:
    from rackops.render import switch_changes

    f = ROCE.fabric
    assert f.roce is not None
    changed = ROCE.model_copy(
        update={
            "fabric": f.model_copy(
                update={
                    "roce": f.roce.model_copy(
                        update={
                            "ecn": f.roce.ecn.model_copy(update={"min_threshold_bytes": 200_000})
                        }
                    )
                }
            )
        }
    )
    for name, running_file, want in (
        (
            "leaf-r0",
            "config_db.json",
            ["replace /WRED_PROFILE/ROCE_LOSSLESS/green_min_threshold: '150000' -> '200000'"],
        ),
        (
            "leaf-r3",
            "startup.yaml",
            ["nv set qos congestion-control default-global traffic-class 3 min-threshold 200000"],
        ),
        ("leaf-r6", "running-config", None),
    ):
        running = ROOT / "tests/golden/render/example-roce/switches" / name / running_file
        files = render_switch(changed, name, "test")
        lines, _ = switch_changes(changed, name, files, running.read_text())
        if want is not None:
            assert lines == want, name
        else:
            assert len(lines) == 2 and lines[0].startswith("+ ") and lines[1].startswith("- ")
            assert "minimum-threshold 200000 bytes" in lines[0]
            assert "minimum-threshold 150000 bytes" in lines[1]


def test_without_lanes_the_tables_are_rendered_for_a_patch_and_the_fix_is_named(
    roce: Rack, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from rackops.cli import main

    inv = roce.path
    hosts = inv / "hosts.yml"
    text = hosts.read_text()
    cut = (
        text[: text.index("            rackops_switch_port_lanes:")]
        + text[text.index("            rackops_switch_buffers:") :]
    )
    hosts.write_text(cut)
    out = tmp_path / "out"
    assert main(["render", "-i", str(inv), "-o", str(out), "--switch", "leaf-r1"]) == 0
    err = capsys.readouterr().err
    assert "R-01 leaf-r1: no config_db.json" in err
    assert "Ethernet0, Ethernet8, Ethernet16, Ethernet24" in err
    assert "rackops_switch_port_lanes" in err
    assert not (out / "switches/leaf-r1/config_db.json").exists()
    tables = json.loads((out / "switches/leaf-r1/tables.json").read_text())
    assert "lanes" not in tables["PORT"]["Ethernet0"]
    (tmp_path / "running.json").write_text(json.dumps(_running_base()))
    rc = main(
        [
            "render",
            "-i",
            str(inv),
            "-o",
            str(out),
            "--switch",
            "leaf-r1",
            "--diff",
            str(tmp_path / "running.json"),
        ]
    )
    assert rc == 1
    patch = json.loads((out / "switches/leaf-r1/config-patch.json").read_text())
    assert patch and not any(op["path"].endswith("/lanes") for op in patch)
