"""Rendered SONiC configs against SONiC's own YANG models (libyang), as `config load` and
`config apply-patch` check them on a switch."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_render import ROCE, _design

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
    assert names == ["leaf-r0", "leaf-r1", "leaf-r2"]
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
    dscp=st.integers(0, 63),
    cnp_dscp=st.integers(0, 63),
    prio=st.integers(0, 7),
    cnp_prio=st.integers(0, 7),
    host_mtu=st.integers(4200, 9198),
    ecn_min=st.integers(1, 2_000_000),
    ecn_span=st.integers(0, 2_000_000),
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
