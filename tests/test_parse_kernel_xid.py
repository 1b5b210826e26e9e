"""kernel-xid: NVIDIA Xid / SXid / fallen-off-the-bus lines from dmesg and journalctl -k.

Every log line here is a real one quoted in docs/research/issue-24-xid.md (sample named in
each test), except the MIG lines, which are NVIDIA's own examples in the driver source (§0.7).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rackops.checks.xid import XIDS, info
from rackops.parsers import ParseError, as_jsonable
from rackops.parsers.kernel_xid import GpuEvent, parse_kernel_xid

FIXTURES = Path(__file__).parent / "fixtures" / "kernel-xid"
CASES = sorted(FIXTURES.glob("*.txt"))


def one(text: str) -> GpuEvent:
    log = parse_kernel_xid(text)
    assert log.complete, log.errors
    assert len(log.events) == 1, log.events
    return log.events[0]


@pytest.mark.parametrize("case", CASES, ids=[p.stem for p in CASES])
def test_fixture(case: Path) -> None:
    expected = json.loads(case.with_suffix(".json").read_text())
    try:
        got = as_jsonable(parse_kernel_xid(case.read_text()))
    except ParseError as exc:
        got = {"error": str(exc)}
    assert json.loads(json.dumps(got, sort_keys=True)) == expected


def test_fixture_corpus() -> None:
    assert len(CASES) >= 8
    assert any(c.stem.startswith("cut-") for c in CASES)
    for case in CASES:
        assert case.with_suffix(".json").exists(), case


XID_BODY = (
    "NVRM: Xid (PCI:0000:41:00): 13, Graphics SM Warp Exception on (GPC 1, TPC 0, SM 0): "
    "Illegal Instruction Encoding"
)


@pytest.mark.parametrize(
    ("prefix", "timestamp", "uptime"),
    [
        ("", None, None),  # S9, S24
        ("kernel: ", None, None),  # S13, S17
        ("[ 1843.308145] ", None, 1843.308145),  # S14
        ("[Mon Aug  5 03:54:13 2024] ", "Mon Aug  5 03:54:13 2024", None),  # S11
        ("Feb 15 17:37:45 Gipfeli kernel: [82659.755933] ", "Feb 15 17:37:45", 82659.755933),
        ("Dec  2 11:38:47 worker4 kernel: [  219.470994] ", "Dec  2 11:38:47", 219.470994),
        ("Mar 29 15:38:59 kernel: ", "Mar 29 15:38:59", None),  # S23 (no hostname)
        ("11月 15 14:15:47 leon-NF5468M6 kernel: ", "11月 15 14:15:47", None),  # S22 month
        ("oct. 10 18:26:25 host kernel: ", "oct. 10 18:26:25", None),  # pop-os/pop#368
        (
            "2026-06-01T15:55:06.218036+03:00 isaac-Predator-PO5-650 kernel: ",
            "2026-06-01T15:55:06.218036+03:00",
            None,
        ),  # S29
        (
            "kern  :err   : 2025-01-25T10:34:54,859532+00:00 ",
            "2025-01-25T10:34:54,859532+00:00",
            None,
        ),  # S19
        (
            "192.168.11.119: kern: warning: [2026-04-22T21:27:51.291660856Z]: ",
            "2026-04-22T21:27:51.291660856Z",
            None,
        ),  # S20 (Talos)
        ("> [Fri Aug 30 11:43:09 2024] ", "Fri Aug 30 11:43:09 2024", None),  # S1
        ("- Jan 18 11:38:05 localhost kernel: [ 269.517039] ", "Jan 18 11:38:05", 269.517039),
        ("```[93297.027938] ", None, 93297.027938),  # S10
    ],
)
def test_prefix_variants(prefix: str, timestamp: str | None, uptime: float | None) -> None:
    ev = one(prefix + XID_BODY + "\n")
    assert (ev.kind, ev.code, ev.bdf) == ("xid", 13, "0000:41:00.0")
    assert ev.timestamp == timestamp
    assert ev.uptime_s == uptime
    assert ev.message.startswith("Graphics SM Warp Exception on (GPC 1")
    assert ev.message.endswith("Illegal Instruction Encoding")


def test_paste_decorations_stripped() -> None:
    # S5: inline backticks; S21: re-quoted by a tool; S27: gist renderer suffix.
    ev = one(
        "`NVRM: Xid (PCI:0000:01:00): 31, Ch 0000005a, intr 10000000. MMU Fault: ENGINE "
        "GRAPHICS GPCCLIENT_T1_1 faulted @ 0x0_00000000. Fault is of type FAULT_PDE "
        "ACCESS_TYPE_READ`\n"
    )
    assert ev.message.endswith("ACCESS_TYPE_READ")
    ev = one(
        '[XID found] (54 minutes ago) "NVRM: Xid (PCI:0000:9b:00): 119, pid=4071838, '
        "name=python, Timeout after 45s of waiting for RPC response from GPU4 GSP! Expected "
        'function 76 (GSP_RM_CONTROL) (0x20801702 0x4)."\n'
    )
    assert (ev.code, ev.pid, ev.process) == (119, 4071838, "python")
    assert ev.message.endswith("(0x20801702 0x4).")
    ev = one(
        "Sep 09 15:53:19 saturn kernel: NVRM: Xid (PCI:0000:10:00): 79, pid=0, "
        "GPU has fallen off the bus. | |\n"
    )
    assert (ev.code, ev.pid, ev.process, ev.message) == (79, 0, None, "GPU has fallen off the bus.")


def test_bdf_normalised() -> None:
    # S4: device 1c; S16: domain 0019; S28: the pre-"PCI:" form; hex lowercased.
    assert one(
        "NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper: New row marked for "
        "remapping, reset gpu to activate.\n"
    ).bdf == ("0000:10:1c.0")
    ev = one(
        "NVRM: Xid (PCI:0019:01:00): 149, NETIR Fatal XC0 i0 Link -1 (0x000fe406 0x00000000 "
        "0x00000000 0x00000000 0x00000000 0x00000000)\n"
    )
    assert (ev.bdf, ev.code) == ("0019:01:00.0", 149)
    ev = one(
        "Jan 18 11:38:05 localhost kernel: [ 269.517039] NVRM: Xid (0000:01:00): 3, "
        "C 00000005 SC 00000007 M 00001ffc Data ffffffff\n"
    )
    assert (ev.bdf, ev.code) == ("0000:01:00.0", 3)
    assert one("NVRM: Xid (PCI:0000:CB:00): 13, x\n").bdf == "0000:cb:00.0"


def test_pid_and_name_forms() -> None:
    # S9: pid + name (515); S7: pid without name (2019); S1: '<unknown>' (515–565).
    ev = one(
        "NVRM: Xid (PCI:0000:08:00): 31, pid=169800, name=chrome, Ch 00000023, intr 00000000."
        " MMU Fault: ENGINE CE0 HUBCLIENT_HSCE0 faulted @ 0x0_0abe0000. Fault is of type "
        "FAULT_PTE ACCESS_TYPE_VIRT_READ\n"
    )
    assert (ev.pid, ev.process) == (169800, "chrome")
    assert ev.message.startswith("Ch 00000023, intr")
    ev = one(
        "NVRM: Xid (PCI:0000:00:06): 31, pid=2708, Ch 0000003d, intr 10000000. MMU Fault: "
        "ENGINE NVDEC HUBCLIENT_NVDEV faulted @ 0x0_00000000. Fault is of type FAULT_PDE "
        "ACCESS_TYPE_READ\n"
    )
    assert (ev.pid, ev.process) == (2708, None)
    assert ev.message.startswith("Ch 0000003d,")
    ev = one(
        "NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>', name=<unknown>, Graphics "
        "Exception: ESR 0x57c730=0xc04000b\n"
    )
    assert (ev.pid, ev.process) == (None, None)
    assert ev.message == "Graphics Exception: ESR 0x57c730=0xc04000b"
    # S23: a process name with "::".
    ev = one(
        "Mar 27 17:40:36 kernel: NVRM: Xid (PCI:0000:01:00): 45, pid=12542, "
        "name=VLLM::Worker, channel 0x00000002\n"
    )
    assert (ev.pid, ev.process, ev.message) == (12542, "VLLM::Worker", "channel 0x00000002")


def test_570_without_pid_and_name() -> None:
    # S15 (575.51.02) and S25 (595.71.05): the process is unknown, the field is gone.
    ev = one(
        "Apr 19 13:16:41 Kyrios kernel: NVRM: Xid (PCI:0000:02:00): 120, GSP task exception: "
        "load access page fault (cause:0xd) @ pc:0x140ca4a, partition:4#0, task:3\n"
    )
    assert (ev.code, ev.pid, ev.process) == (120, None, None)
    assert ev.message.startswith("GSP task exception: load access page fault")
    ev = one(
        "May 18 19:02:39 kernel: NVRM: Xid (PCI:0000:2b:00): 79, GPU has fallen off the bus.\n"
    )
    assert (ev.code, ev.pid, ev.message) == (79, None, "GPU has fallen off the bus.")


def test_mig() -> None:
    # NVIDIA's example lines, kern_gpu_error_cont_ga100.c (§0.7).
    ev = one(
        "NVRM: Xid (PCI:0000:01:00 GPU-I:05): 94, pid=7194, Contained: CE User Channel "
        "(0x9). RST: No, D-RST: No\n"
    )
    assert (ev.bdf, ev.mig, ev.code, ev.pid) == ("0000:01:00.0", "GPU-I:05", 94, 7194)
    assert ev.message == "Contained: CE User Channel (0x9). RST: No, D-RST: No"
    ev = one("NVRM: Xid (PCI:0000:01:00 GPU-I:05 GPU-CI:01): 43, pid=7, name=a, Ch 00000008\n")
    assert ev.mig == "GPU-I:05 GPU-CI:01"


def test_sxid() -> None:
    # S18: three lines of one SXid; S19: code 12028 (zero-padded field, %05d).
    log = parse_kernel_xid(
        "[   25.948274] nvidia-nvswitch1: SXid (PCI:0000:02:00.0): 22013, Non-fatal, Link 00 "
        "Minion Link DLREQ interrupt\n"
        "[   25.950244] nvidia-nvswitch1: SXid (PCI:0000:02:00.0): 22013, Severity 0 Engine "
        "instance 00 Sub-engine instance 00\n"
    )
    assert log.complete
    assert [(e.kind, e.code, e.bdf) for e in log.events] == [("sxid", 22013, "0000:02:00.0")] * 2
    assert log.events[0].uptime_s == 25.948274
    assert log.events[0].message == "Non-fatal, Link 00 Minion Link DLREQ interrupt"
    ev = one("nvidia-nvswitch0: SXid (PCI:0000:84:00.0): 01234, Data {0x0}\n")
    assert ev.code == 1234


def test_fallen_off_bus_three_shapes() -> None:
    # (a) Xid 79 + (b) the companion line with a function digit (S25).
    log = parse_kernel_xid(
        "May 18 19:02:39 kernel: NVRM: GPU at PCI:0000:2b:00: "
        "GPU-0b11d014-1685-04bd-26ed-5fc0bc1c44ae\n"
        "May 18 19:02:39 kernel: NVRM: Xid (PCI:0000:2b:00): 79, GPU has fallen off the bus.\n"
        "May 18 19:02:39 kernel: NVRM: GPU 0000:2b:00.0: GPU has fallen off the bus.\n"
    )
    assert log.complete
    assert [(e.kind, e.code, e.bdf, e.line) for e in log.events] == [
        ("xid", 79, "0000:2b:00.0", 2),
        ("fallen_off_bus", None, "0000:2b:00.0", 3),
    ]
    # the old wording (S26, S28), with the gist suffix.
    ev = one(
        "Mar 26 12:33:30 Ubuntu-PC kernel: NVRM: GPU at 0000:65:00.0 has fallen off the bus. | |\n"
    )
    assert (ev.kind, ev.bdf, ev.message) == (
        "fallen_off_bus",
        "0000:65:00.0",
        "has fallen off the bus.",
    )
    # (c) the probe-time printk over three lines, as journalctl prints it (no indent).
    log = parse_kernel_xid(
        "Jun 01 10:00:00 h kernel: NVRM: The NVIDIA GPU 0000:b3:00.0\n"
        "NVRM: (PCI ID: 10de:26b5) installed in this system has\n"
        "NVRM: fallen off the bus and is not responding to commands.\n"
    )
    assert log.complete and len(log.events) == 1
    ev = log.events[0]
    assert (ev.kind, ev.code, ev.bdf, ev.line) == ("fallen_off_bus", None, "0000:b3:00.0", 1)
    assert ev.message.endswith("fallen off the bus and is not responding to commands.")


def test_probe_message_cut_short() -> None:
    log = parse_kernel_xid(
        "[ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0\n"
        "               NVRM: (PCI ID: 10de:26b5) installed in this system has\n"
    )
    assert not log.complete and not log.events


def test_unparseable_nvrm_line_is_incomplete() -> None:
    # S17: a user-redacted BDF; S11: a line cut by the index (with its newline).
    log = parse_kernel_xid(
        "kernel: NVRM: Xid (PCI:...): 145, RLW_RXPIPE Nonfatal XC0 i0 Link 11 (...)\n"
        "kernel: NVRM: Xid (PCI:0000:18:00): 137, RLW_RXPIPE interrupt hit on link 11 on "
        "GPU0: PRIV Error\n"
    )
    assert not log.complete
    assert len(log.errors) == 1 and log.errors[0].startswith("line 1: unreadable Xid line")
    assert [e.code for e in log.events] == [137]
    log = parse_kernel_xid("[Fri Aug  9 13:32:56 2024] NVRM: Xid (PCI\n")
    assert not log.complete and not log.events
    log = parse_kernel_xid("nvidia-nvswitch1: SXid (PCI:0000:06:00): 20034, Fatal\n")  # no .f
    assert not log.complete and not log.events


def test_cut_last_line_is_incomplete() -> None:
    full = "[ 25.948274] NVRM: Xid (PCI:0000:01:00): 13, Graphics Exception: ESR 0x4041b0=0x0\n"
    assert parse_kernel_xid(full).complete
    log = parse_kernel_xid(full.rstrip("\n"))  # never whole, but the Xid is not lost
    assert not log.complete and [e.code for e in log.events] == [13]
    assert "final newline" in log.errors[0]
    cut = parse_kernel_xid(full[:30])  # cut before the code: no event, still not whole
    assert not cut.complete and not cut.events
    # a cut non-NVIDIA last line is harmless.
    log = parse_kernel_xid(full + "[ 26.000000] clocksource: Long readout")
    assert log.complete and len(log.events) == 1


def test_logs_without_events() -> None:
    for text in (
        "-- No entries --\n",
        "-- Logs begin at Mon 2024-03-04 10:00:00 UTC, end at Tue 2024-03-05 10:00:00 UTC. --\n"
        "Mar 05 10:00:00 host kernel: Linux version 6.8.0\n",
        "[Sun Feb 23 16:24:30 2025] clocksource: Long readout interval, skipping watchdog check\n",
        # S20: an NVRM line that is not an event.
        "192.168.11.119: kern: warning: [2026-04-22T21:27:51.291660856Z]: NVRM: "
        "kflcnCoreDumpNondestructive_IMPL: TRACE: 08 = 0x0000000004d4b1a0\n",
        # S3: the rate-limit line names a BDF but is not an Xid.
        "NVRM: Rate limiting GSP RPC error prints for GPU at PCI:0000:9b:00 (printing 1 of "
        "every 30).  The GPU likely needs to be reset.\n",
    ):
        log = parse_kernel_xid(text)
        assert log.complete and log.events == () and log.errors == (), text


@pytest.mark.parametrize("text", ["", "  \n", "hello world\n", "a: b\nc d e\n"])
def test_not_a_kernel_log_raises(text: str) -> None:
    with pytest.raises(ParseError):
        parse_kernel_xid(text)


def test_counts_bounded() -> None:
    with pytest.raises(ParseError, match="pid"):
        parse_kernel_xid("NVRM: Xid (PCI:0000:01:00): 13, pid=99999999, name=x, y\n")


def test_long_line_is_linear() -> None:
    # A hostile line near MAX_LINE_CHARS with many near-matches must not backtrack.
    line = "kernel: " + "NVRM: Xid (PCI:0000:01:00" * 600 + "\n"
    log = parse_kernel_xid(line * 50)
    assert not log.complete


def test_catalogue() -> None:
    assert info(79).hardware and info(79).cause == "bus"
    for code in (13, 31, 43):
        assert info(code).cause == "application" and not info(code).hardware
    for code in (48, 64, 74, 95, 144, 145, 149):
        assert info(code).hardware, code
    unknown = info(9999)
    assert unknown.cause == "unknown" and unknown.hardware and unknown.code == 9999
    causes = {"hardware", "driver", "application", "thermal", "bus", "nvlink", "memory", "unknown"}
    for code, row in XIDS.items():
        assert row.code == code and row.cause in causes and row.source.startswith("https://")
        assert row.meaning and row.action
