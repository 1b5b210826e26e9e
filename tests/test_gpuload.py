"""GPUs under load: kernel-log events and load samples judged per GPU (issue 24, wip)."""

from __future__ import annotations

from pathlib import Path

from rackops.checks.gpuload import judge_kernel_log, judge_samples
from rackops.findings import Status
from rackops.parsers.nvidia_smi_perf import parse_smi_samples
from rackops.profiles import load_profile
from rackops.tools import parse
from rackops.validate.stages.gpuload import _pid, chunks, kill_argv, split_by_baseline

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


CSV = (
    "timestamp, index, pci.bus_id, utilization.gpu [%], clocks.current.sm [MHz], "
    "temperature.gpu, temperature.memory, power.draw [W], clocks_event_reasons.active\n"
    "2026/11/26 10:00:00.000, 0, 00000000:18:00.0, 100, 1980, 70, 74, 690.00, 0x0000000000000000\n"
    "2026/11/26 10:00:00.000, 1, 00000000:2A:00.0, 100, 1410, 88, 92, 520.00, 0x0000000000000048\n"
    "2026/11/26 10:00:01.000, 0, 00000000:18:00.0, 100, 1980, 71, 75, 691.00, 0x0000000000000004\n"
    "2026/11/26 10:00:01.000, 1, 00000000:2A:00.0, 100, 1395, 89, 93, 515.00, 0x0000000000000048\n"
    "2026/11/26 10:00:02.000, 0, 00000000:18:00.0, 0, 345, 50, 55, 80.00, 0x0000000000000001\n"
)


def test_hardware_throttling_under_load_fails_the_gpu_with_its_reasons() -> None:
    got = judge_samples(parse_smi_samples(CSV).samples, "node01")
    bad = [f for f in got if f.status is Status.FAIL]
    assert [(f.subject.gpu, f.code) for f in bad] == [(1, "GPU-LOAD")]
    assert "HW Thermal Slowdown (the GPU reached its thermal limit) in 2 of 2" in bad[0].message
    assert "HW Slowdown" in bad[0].message
    # GPU 0: power cap (0x4) and idle (0x1) are not the hardware's doing
    ok = {(f.subject.gpu, f.code): f for f in got if f.status is Status.OK}
    assert ok[(0, "LOAD-CLOCK")].observed == 1980 and ok[(0, "LOAD-CLOCK")].unit == "MHz"
    # the peer figure is the power-capped regime's (the uncapped 690 W sample is the other one)
    assert ok[(0, "LOAD-POWER")].observed == 691.0
    assert "power-capped samples" in ok[(0, "LOAD-POWER")].message


def test_the_profile_floor_and_ceilings_name_a_hot_or_slow_gpu() -> None:
    limits = load_profile("h100-sxm-ndr").profile.load
    csv = CSV.replace(", 1980, 70, 74,", ", 1500, 70, 96,").replace("0x0000000000000048", "0x0")
    csv += "2026/11/26 10:00:02.000, 1, 00000000:2A:00.0, 100, 1402.5, 88, 92, 515.00, 0x0\n"
    got = {f.subject.gpu: f for f in judge_samples(parse_smi_samples(csv).samples, "n1", limits)}
    assert (
        got[0].status is Status.FAIL and "memory 96 °C, above the 95 °C ceiling" in got[0].message
    )
    assert "1740 MHz" not in got[0].message  # the median of the loaded samples only
    assert got[1].status is Status.FAIL and "89 °C, above the 87 °C ceiling" in got[1].message
    assert (
        "SM clock 1402.5 MHz under load with no reason that explains it" in got[1].message
        and "1590 MHz floor" in got[1].message
    )


def test_an_event_in_the_read_before_the_run_is_history_and_a_new_one_is_the_runs() -> None:
    before = _log("syslog-printk-xid48-64").events  # type: ignore[attr-defined]
    after = list(before) + list(_log("dmesg-quoted-xid79-fallen-sxid").events)  # type: ignore[attr-defined]
    history, during = split_by_baseline(after, list(before))
    assert history == list(before) and {e.code for e in during} >= {79}
    assert split_by_baseline(after, None) == ([], after)
    # the same line twice after, once before: one of them is new
    history, during = split_by_baseline([before[0], before[0]], [before[0]])
    assert len(history) == 1 and len(during) == 1


MIG_CSV = (  # utilization.gpu is [N/A] under MIG: the idle reason tells idle from busy
    "timestamp, index, pci.bus_id, utilization.gpu [%], clocks.sm [MHz], temperature.gpu, "
    "power.draw [W], clocks_event_reasons.active\n"
    "2026/11/26 10:00:00.000, 0, 00000000:18:00.0, [N/A], 345, 40, 80.00, 0x0000000000000001\n"
    "2026/11/26 10:00:01.000, 0, 00000000:18:00.0, [N/A], 1980, 60, 600.00, 0x0000000000000000\n"
    "2026/11/26 10:00:02.000, 0, 00000000:18:00.0, [N/A], 1980, 61, 610.00, 0x0000000000000000\n"
)


def test_without_utilisation_an_idle_sample_is_not_taken_as_load() -> None:
    limits = load_profile("h100-sxm-ndr").profile.load
    got = judge_samples(parse_smi_samples(MIG_CSV).samples, "n1", limits)
    assert {f.status for f in got} == {Status.OK}
    clock = next(f for f in got if f.code == "LOAD-CLOCK")
    assert clock.observed == 1980


def test_a_gpu_never_under_load_is_said_not_passed_silently() -> None:
    idle = "\n".join(MIG_CSV.splitlines()[:2]) + "\n"
    got = judge_samples(
        parse_smi_samples(idle).samples, "n1", load_profile("h100-sxm-ndr").profile.load
    )
    warn = [f for f in got if f.status is Status.WARN]
    assert [(f.code, f.subject.gpu) for f in warn] == [("LOAD-003", None)]
    assert "GPU 0 never under load" in warn[0].message
    assert not any(f.code == "LOAD-CLOCK" for f in got)


def test_a_line_read_again_with_another_wall_clock_is_still_history() -> None:
    """dmesg's own stamp is seconds since boot: an NTP step between the two reads moves every
    wall-clock rendering of an old line, which must not make it the run's."""
    line = (
        "[ 1843.308145] NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, "
        "GPU has fallen off the bus.\n"
    )
    first = parse("kernel-xid", line).events  # type: ignore[attr-defined]
    again = parse("kernel-xid", line).events  # type: ignore[attr-defined]
    assert split_by_baseline(list(again), list(first)) == (list(again), [])


def test_the_samples_are_cut_into_parseable_pieces_at_row_boundaries() -> None:
    rows = "".join(f"2026/11/26 10:00:{i % 60:02d}.000, {i % 8}, 1980\n" for i in range(1000))
    text = "timestamp, index, clocks.sm [MHz]\n" + rows
    pieces = chunks(text, size=2000)
    assert len(pieces) > 5 and all(p.startswith("timestamp, index") for p in pieces)
    assert "".join(p.split("\n", 1)[1] for p in pieces) == rows
    assert sum(len(parse_smi_samples(p).samples) for p in pieces) == 1000


def test_a_pid_that_is_not_a_process_of_ours_is_never_killed() -> None:
    class H:
        def __init__(self, err: bytes) -> None:
            self.err = bytearray(err)

    assert _pid(H(b"rackops-sampler pid 4242\n")) == "4242"  # type: ignore[arg-type]
    for bad in (
        b"rackops-sampler pid 0\n",
        b"rackops-sampler pid 1\n",
        b"rackops-sampler pid 12; reboot\n",
        b"rackops-sampler pid -1\n",
        b"",
    ):
        assert _pid(H(bad)) is None, bad  # type: ignore[arg-type]
    assert kill_argv("4242") == ("sh", "-c", 'kill -TERM "$1"', "rackops-stop", "4242")


def test_idle_gpus_are_not_a_warning_when_nothing_was_meant_to_load_them() -> None:
    """A resumed run whose loading checks were all done before it samples idle GPUs."""
    idle = "\n".join(MIG_CSV.splitlines()[:2]) + "\n"
    got = judge_samples(parse_smi_samples(idle).samples, "n1", None, expect_load=False)
    assert {f.status for f in got} == {Status.OK}
