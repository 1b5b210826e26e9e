"""The GPU-load stage inside a real run, on the recorded 2-node lab run: the samplers and the
kernel log scripted (what a node answers), everything else replayed. A sampler that could not
start, one that died early, an interrupted run and an Xid during the run each come out as an
ops engineer needs them: said, never a silent pass, never lost on --resume."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from test_runner import recording, runner

from rackops.suites import GpuLoadParams
from rackops.tools.nvidia_smi_perf import SAMPLER
from rackops.validate.executor import CommandResult, Target
from rackops.validate.replay import ReplayExecutor
from rackops.validate.rundir import RunDir

FIXTURES = Path(__file__).parent / "fixtures"

HEAD = (
    "timestamp, index, pci.bus_id, utilization.gpu [%], clocks.sm [MHz], temperature.gpu, "
    "power.draw [W], clocks_event_reasons.active\n"
)
BOOT = "[    4.100000] NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  580.95.05\n"
XID79 = (
    "[ 3600.250000] NVRM: Xid (PCI:0000:1b:00): 79, pid='<unknown>', name=<unknown>, "
    "GPU has fallen off the bus.\n"
)


def samples(n: int = 3) -> str:
    return HEAD + "".join(
        f"2026/11/26 10:00:0{t}.000, {g}, 00000000:{0x18 + g:02X}:00.0, 100, 1980, 60, "
        "590.00, 0x0000000000000000\n"
        for t in range(n)
        for g in range(8)
    )


@dataclass
class Sampler:
    """A started sampler as the launcher hands it back."""

    node: str
    argv: tuple[str, ...]
    stdout: str
    pid: str = "4242"
    rc: int = 0
    early: bool = False
    out: bytearray = field(default_factory=bytearray)
    err: bytearray = field(default_factory=bytearray)

    def __post_init__(self) -> None:
        self.err += f"rackops-sampler pid {self.pid}\n".encode()

    def wait_for(self, marker: bytes, timeout: float) -> bool:
        return marker in self.out or marker in self.err

    def exited(self) -> bool:
        return self.early

    def wait(self, timeout: float) -> CommandResult:
        return CommandResult(self.node, self.argv, self.rc, self.stdout, self.err.decode(), 1.0)


class Node(ReplayExecutor):
    def __init__(self, **how: Any) -> None:
        super().__init__(recording())
        self.how = how
        self.kills: list[tuple[str, str]] = []
        self.started: list[str] = []
        self.reads: dict[str, int] = {}

    def start(
        self, t: Target, argv: Sequence[str], timeout: float, become: bool | None = None
    ) -> Any:
        if SAMPLER not in argv:
            return super().start(t, argv, timeout, become)
        if t.name in self.how.get("start_fails", ()):
            raise ConnectionError("ChannelException(1, 'Administratively prohibited')")
        self.started.append(t.name)
        return Sampler(t.name, tuple(argv), samples(), **self.how.get("sampler", {}))

    def run(
        self, t: Target, argv: Sequence[str], timeout: float, become: bool | None = None
    ) -> CommandResult:
        if argv[0] == "dmesg":
            n = self.reads[t.name] = self.reads.get(t.name, 0) + 1
            logged = n > self.how.get("xid_after_read", 1) and t.name in self.how.get("xid_on", ())
            text = BOOT + (XID79 if logged else "")
            return CommandResult(t.name, tuple(argv), 0, text, "", 0.1)
        if tuple(argv) == ("nvidia-smi", "nvlink", "-e"):  # read around the load: the
            # recording predates it; a real H100's counters, unchanged between the two reads
            text = (FIXTURES / "nvidia-smi-nvlink-errors" / "derived-h100-18-links.txt").read_text()
            key = f"nvlink-{t.name}"
            n = self.reads[key] = self.reads.get(key, 0) + 1
            if n > 1 and t.name in self.how.get("recoveries_on", ()):  # grew under the load
                text = text.replace(
                    "\t Link 4: Recovery Errors: 0", "\t Link 4: Recovery Errors: 2"
                )
            return CommandResult(t.name, tuple(argv), 0, text, "", 0.1)
        if argv[:2] == ("sh", "-c") and "kill -TERM" in argv[2]:
            self.kills.append((t.name, argv[-1]))
            return CommandResult(t.name, tuple(argv), 0, "", "", 0.1)
        return super().run(t, argv, timeout, become)


def run(tmp: Path, ex: ReplayExecutor) -> dict[str, list[tuple[str, str, Any]]]:
    """Run the recorded rack's lab suite with GPU sampling; each step's findings."""
    load = GpuLoadParams(sample_interval_ms=250, kernel_log=True)  # no GEMM/HBM recorded
    r, plan = runner(tmp, ex, {"gpu_load": load})
    r.run(plan)
    return {
        rec["id"]: [(f["status"], f["code"], f["subject"]["gpu"]) for f in rec["findings"]]
        for rec in RunDir(tmp).records()
    }


def test_healthy_samplers_are_stopped_by_their_pid_and_judged(tmp_path: Path) -> None:
    ex = Node()
    steps = run(tmp_path, ex)
    assert sorted(ex.kills) == [("node01", "4242"), ("node02", "4242")]
    assert {s for s, _c, _g in steps["node/node01/gpu-samples"]} == {"OK"}
    assert steps["node/node02/kernel-after"] == [("OK", "XID-OK", None)]
    assert {n: k for n, k in ex.reads.items() if n.startswith("node")} == {"node01": 2, "node02": 2}
    assert steps["node/node01/nvlink-errors-after"] == [("OK", "NVE-000", None)]


def test_nvlink_counters_that_grew_under_the_load_fail_their_gpu(tmp_path: Path) -> None:
    """The stage compares each node's read after the load with its own read before."""
    steps = run(tmp_path, Node(recoveries_on=("node02",)))
    assert steps["node/node02/nvlink-errors-after"] == [("FAIL", "NVE-001", 0)]
    assert steps["node/node01/nvlink-errors-after"] == [("OK", "NVE-000", None)]


def test_an_xid_between_the_two_reads_fails_the_gpu_the_samples_call_by_that_address(
    tmp_path: Path,
) -> None:
    steps = run(tmp_path, Node(xid_on=("node02",)))
    assert steps["node/node02/kernel-after"] == [("FAIL", "XID-79", 3)]  # 0000:1b:00 is GPU 3


def test_a_sampler_that_could_not_start_is_an_error_not_a_pass(tmp_path: Path) -> None:
    steps = run(tmp_path, Node(start_fails=("node02",)))
    assert steps["node/node02/gpu-samples"] == [("ERROR", "LOAD-000", None)]


def test_a_sampler_that_stopped_on_its_own_is_an_error_and_is_not_killed(tmp_path: Path) -> None:
    ex = Node(sampler={"early": True, "rc": 9})
    steps = run(tmp_path, ex)
    assert ("ERROR", "LOAD-001", None) in steps["node/node01/gpu-samples"]
    assert ex.kills == []  # its pid may be another process's by now


def test_an_interrupted_run_records_no_load_and_a_resumed_one_watches_anew(
    tmp_path: Path,
) -> None:
    class Interrupted(Node):
        def run_many(self, jobs: Sequence[tuple[Target, Sequence[str]]], timeout: float) -> Any:
            if any(argv[0] == "dcgmi" for _t, argv in jobs):
                raise KeyboardInterrupt
            return super().run_many(jobs, timeout)

    first = Interrupted()
    with pytest.raises(KeyboardInterrupt):
        run(tmp_path, first)
    assert sorted(first.kills) == [("node01", "4242"), ("node02", "4242")]  # stopped anyway
    done = RunDir(tmp_path).done_ids()
    assert not {i for i in done if i.endswith(("gpu-samples", "kernel-after"))}
    again = Node(xid_on=("node02",), xid_after_read=0)  # logged after the first run's baseline
    steps = run(tmp_path, again)
    assert sorted(again.started) == ["node01", "node02"]
    assert steps["node/node02/kernel-after"] == [("FAIL", "XID-79", 3)]
