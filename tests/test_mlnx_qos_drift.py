"""The host QoS is read one way: the roce_host_qos role decides what to repair with the
collection's filter ``rackops.rackops.mlnx_qos_drift``, which is rackops' mlnx_qos parser
and ``checks.host.qos_drift`` (the role used to read mlnx_qos again in awk). On every real
mlnx_qos layout in the fixtures, the role repairs exactly when validate FAILs the host."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from test_lab import ROOT

from rackops.checks.host import check_mlnx_qos
from rackops.design import HostRoce
from rackops.findings import Status, Subject
from rackops.inventory.model import RoceQos

spec = importlib.util.spec_from_file_location(
    "mlnx_qos_drift", ROOT / "plugins/filter/mlnx_qos_drift.py"
)
assert spec is not None and spec.loader is not None
plugin = importlib.util.module_from_spec(spec)
spec.loader.exec_module(plugin)

FIXTURES = ROOT / "tests" / "fixtures" / "mlnx_qos"
HOST = HostRoce("dscp", 26, 3, 48, 6, (3,), {26: 3, 48: 6}, None)  # the rack's defaults


def drift(name: str, host: HostRoce = HOST) -> list[str]:
    text = (FIXTURES / f"{name}.txt").read_text()
    results = [{"item": "ens1f0np0", "stdout": text}, {"skipped": True, "item": "ens2f0np0"}]
    return plugin.mlnx_qos_drift(results, host.pfc_vector, sorted(host.dscp2prio.items()))


def test_as_designed_is_no_drift() -> None:
    assert drift("dscp-lossless-prio3") == []


def test_each_difference_is_named_with_its_interface() -> None:
    assert drift("pfc-on-cnp-priority") == [
        "ens1f0np0: PFC 0,0,0,1,0,0,1,0, designed 0,0,0,1,0,0,0,0"
    ]
    assert drift("pcp-trust-no-pfc") == [
        "ens1f0np0: trust pcp, designed dscp",
        "ens1f0np0: PFC 0,0,0,0,0,0,0,0, designed 0,0,0,1,0,0,0,0",
    ]
    own = HostRoce("dscp", 26, 3, 48, 6, (3,), {26: 3, 48: 6, 46: 3}, None)
    assert drift("dscp-lossless-prio3", own) == ["ens1f0np0: DSCP 46 priority 5, designed 3"]


def test_a_cut_output_stops_the_role_naming_the_interface() -> None:
    with pytest.raises(Exception, match="ens1f0np0: mlnx_qos output unreadable"):
        drift("cut-before-pfc-row")


@pytest.mark.parametrize("name", ["dscp-lossless-prio3", "pfc-on-cnp-priority", "pcp-trust-no-pfc"])
@pytest.mark.parametrize("extra", [{}, {46: 3}, {8: 1}])
def test_the_role_repairs_exactly_what_validate_fails(name: str, extra: dict[int, int]) -> None:
    from rackops.parsers.mlnx_qos import parse_mlnx_qos

    host = HostRoce("dscp", 26, 3, 48, 6, (3,), {26: 3, 48: 6, **extra}, None)
    parsed = parse_mlnx_qos((FIXTURES / f"{name}.txt").read_text())
    found = check_mlnx_qos(parsed, RoceQos(), subject=Subject(node="n1"), host=host)
    fails = any(f.status is Status.FAIL for f in found)
    assert fails == bool(drift(name, host)), (found, drift(name, host))


def test_fixtures_are_the_parser_corpus() -> None:
    assert {p.stem for p in Path(FIXTURES).glob("*.txt")} >= {
        "dscp-lossless-prio3",
        "pfc-on-cnp-priority",
        "pcp-trust-no-pfc",
        "cut-before-pfc-row",
    }
