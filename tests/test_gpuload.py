"""GPUs under load: kernel-log events and load samples judged per GPU (issue 24, wip)."""

from __future__ import annotations

from pathlib import Path

from rackops.checks.gpuload import judge_kernel_log, judge_samples
from rackops.findings import Status
from rackops.parsers.nvidia_smi_perf import parse_smi_samples
from rackops.tools import parse

FIX = Path(__file__).parent / "fixtures" / "kernel-xid"


def _log(name: str) -> object:
    return parse("kernel-xid", (FIX / f"{name}.txt").read_text())


def test_a_gpu_off_the_bus_during_the_run_fails_once_and_an_sxid_is_named() -> None:
    log = _log("dmesg-quoted-xid79-fallen-sxid")
    got = judge_kernel_log(log.events, {"0000:91:00.0": 3}, "node01", before_run=False)  # type: ignore[attr-defined]
    assert [(f.code, f.status, f.subject.gpu) for f in got] == [
        ("XID-79", Status.FAIL, 3),
        ("XID-SX", Status.WARN, None),
    ]


def test_the_same_log_from_before_the_run_is_history() -> None:
    log = _log("dmesg-quoted-xid79-fallen-sxid")
    got = judge_kernel_log(log.events, {"0000:91:00.0": 3}, "node01", before_run=True)  # type: ignore[attr-defined]
    assert {f.status for f in got} == {Status.WARN}


def test_an_application_xid_is_a_warning_a_memory_one_a_failure() -> None:
    log = _log("syslog-printk-xid48-64")
    events = log.events  # type: ignore[attr-defined]
    gpus = {e.bdf: 0 for e in events}
    got = judge_kernel_log(events, gpus, "node01", before_run=False)
    assert {f.code: f.status for f in got} == {"XID-48": Status.FAIL, "XID-64": Status.FAIL}
    log = _log("dmesg-ctime-quoted-xid13-109")
    got = judge_kernel_log(log.events, {}, "node01", before_run=False)  # type: ignore[attr-defined]
    assert {f.code: f.status for f in got}["XID-13"] is Status.WARN


def test_hardware_throttling_under_load_fails_the_gpu_with_its_reason() -> None:
    csv = (
        "timestamp, index, pci.bus_id, clocks.current.sm [MHz], temperature.gpu, "
        "power.draw [W], clocks_event_reasons.active\n"
        "2026/11/26 10:00:00.000, 0, 00000000:18:00.0, 1980, 70, 690.00, 0x0000000000000000\n"
        "2026/11/26 10:00:00.000, 1, 00000000:2A:00.0, 1410, 88, 520.00, 0x0000000000000040\n"
        "2026/11/26 10:00:01.000, 0, 00000000:18:00.0, 1980, 71, 691.00, 0x0000000000000004\n"
        "2026/11/26 10:00:01.000, 1, 00000000:2A:00.0, 1395, 89, 515.00, 0x0000000000000040\n"
    )
    samples = parse_smi_samples(csv)
    got = judge_samples(samples.samples, "node01")
    assert [(f.subject.gpu, f.code, f.observed) for f in got] == [(1, "GPU-THROTTLE", 2)]
    assert "HW Thermal Slowdown" in got[0].message and "2 of 2 samples" in got[0].message
