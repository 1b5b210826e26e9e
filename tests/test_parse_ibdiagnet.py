"""ibdiagnet: what the fixtures' expected parses do not say on their own — the subnet manager
judged by count, the odd-rate link of a net_dump, a counter line, and the Summary's errors
that the screen's cap hid. Inputs are the real fixtures, changed only where a test says how."""

from __future__ import annotations

from pathlib import Path

import pytest

from rackops.findings import Status
from rackops.parsers import ParseError
from rackops.parsers.ibdiagnet import SubnetManager, endpoint, parse_ibdiagnet
from rackops.tools.base import Context
from rackops.tools.ibdiagnet import check, sm_findings

FIX = Path(__file__).parent / "fixtures" / "ibdiagnet"
CTX = Context(profile=None, node=None, cluster=None, suite=None)  # type: ignore[arg-type]


def _read(name: str) -> str:
    return (FIX / name).read_text()


def _codes(text: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for f in check(parse_ibdiagnet(text), CTX, None):
        out.setdefault(f.code, []).append(f"{f.status.name} {f.message}")
    return out


def _sm(state: str, desc: str, prio: int) -> SubnetManager:
    return SubnetManager(state, 1, 1, "0x0000000000000001", prio, None, "CA", desc)


@pytest.mark.parametrize(
    ("sms", "status", "words"),
    [
        ([_sm("master", "node01 mlx5_0", 15)], Status.OK, "one master SM: node01"),
        ([], Status.FAIL, "no master subnet manager"),
        ([_sm("standby", "node02 mlx5_0", 14)], Status.FAIL, "no master subnet manager"),
        (
            [_sm("master", "node01 mlx5_0", 15), _sm("master", "leaf-r0", 15)],
            Status.FAIL,
            "2 master subnet managers: node01 mlx5_0 (priority 15), leaf-r0",
        ),
    ],
)
def test_exactly_one_master_sm(sms: list[SubnetManager], status: Status, words: str) -> None:
    from dataclasses import replace

    parsed = replace(parse_ibdiagnet(_read("sm-one-master.txt")), sms=tuple(sms))
    (f,) = sm_findings(parsed, "node01")
    assert f.status is status and words in f.message, f.message


def test_a_sm_file_with_two_masters_and_a_standby_is_read_by_state() -> None:
    """The real .sm file with a second master group and a standby added (same layout)."""
    text = _read("sm-one-master.txt") + (
        "    Port=1 lid=0x0011 guid=0x0c42a10300aa0001 dev=4129 priority:15\n"
        "\n  SM - standby\n    Port=1 lid=0x0012 guid=0x0c42a10300aa0002 dev=4129 priority:0\n"
    )
    parsed = parse_ibdiagnet(text)
    assert parsed.complete
    assert [(s.state, s.lid) for s in parsed.sms] == [
        ("master", 4),
        ("master", 17),
        ("standby", 18),
    ]
    assert "2 master subnet managers" in sm_findings(parsed, None)[0].message


def test_a_console_without_a_master_is_a_fail() -> None:
    """No master: the Fabric Summary's own words (the standby line's layout)."""
    text = _read("console-2.7.0-width-errors.txt")
    master = next(x for x in text.splitlines() if x.startswith("Master SM:"))
    parsed = parse_ibdiagnet(text.replace(master, "Master SM : No Master SM"))
    assert parsed.complete and parsed.sm_reported and parsed.masters == []
    assert any(
        "no master subnet manager" in m
        for m in _codes(text.replace(master, "Master SM : No Master SM"))["IBD-SM"]
    )


def test_the_screen_cap_does_not_hide_a_stage_s_errors() -> None:
    got = _codes(_read("console-2.7.0-width-errors.txt"))
    assert got["IBD-WIDTH"][0].startswith("FAIL smg-ib-sw041/U1 port 24 ↔")
    assert "15 error(s), 14 not shown" in got["IBD-STAGE"][0]
    assert "IBD-E" not in got  # "... finished with errors" is the stage's own line, not a fault


def test_a_counter_line_names_the_port_and_the_growth() -> None:
    """The log's counter line (the form NCAR/ops_tracking_toolkit quotes), in a real run."""
    text = _read("console-2.7.0-width-errors.txt").replace(
        "-I- Ports counters Difference Check (during run) finished successfully",
        "-E- Ports counters Difference Check (during run) finished with errors\n"
        '-E- r9i1n24/U1/P1 - "port_rcv_remote_physical_errors" increased during the run '
        "(difference value=117,difference allowed threshold=1)",
    )
    parsed = parse_ibdiagnet(text)
    (msg,) = [m for m in parsed.messages if m.kind == "counter"]
    assert (msg.ends[0].node, msg.ends[0].port, msg.value) == ("r9i1n24/U1", 1, 117)
    assert "port_rcv_remote_physical_errors grew by 117" in _codes(text)["IBD-COUNTER"][0]


def test_the_odd_rate_link_of_a_net_dump_is_named() -> None:
    text = _read("net-dump-2.10.0-one-switch.txt")
    row = next(x for x in text.splitlines() if x.startswith("  5 "))
    slow = row.replace(": 50      :", ": 25      :")
    got = _codes(text.replace(row, slow))
    (fail,) = got["IBD-RATE"]
    assert "port 5" in fail and "4x at 25 Gb/s per lane, the fabric's other links 4x at 50" in fail


def test_endpoint_names() -> None:
    e = endpoint("S900a840300308e40/N900a840300308e40/P49")
    assert (e.port, e.guid) == (49, "0x900a840300308e40")
    assert endpoint("smg-ib-sw041/U1/P24") == type(e)("smg-ib-sw041/U1", 24, None)


@pytest.mark.parametrize(
    "text", ["", "hello\n", "# This database file was automatically generated by IBDIAG\n"]
)
def test_no_ibdiagnet_output_is_a_parse_error(text: str) -> None:
    with pytest.raises(ParseError):
        parse_ibdiagnet(text)
