"""GPUs under load, end to end on one machine: the run's own sampler script (sh) runs
hwsim's nvidia-smi while hwsim's load runs, is stopped the way a run stops it (kill of the
pid it prints), and its samples are judged; hwsim's dmesg logs an injected Xid only once a
load ran, so the read before the load and the one after split history from the run's."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from rackops.checks.gpuload import judge_kernel_log, judge_samples
from rackops.findings import Status
from rackops.parsers.kernel_xid import parse_kernel_xid
from rackops.parsers.nvidia_smi_perf import parse_smi_samples
from rackops.profiles import load_profile
from rackops.tools.kernel_xid import KERNEL_LOG_ARGV
from rackops.tools.nvidia_smi_perf import sampler_argv
from rackops.validate.stages.gpuload import split_by_baseline

LAB = Path(__file__).resolve().parents[1] / "rackops" / "lab"


def _bin(tmp: Path, scenario: dict[str, Any]) -> dict[str, str]:
    """A PATH with hwsim's nvidia-smi, dmesg and dcgmproftester13, as the lab installs them."""
    b = tmp / "bin"
    b.mkdir()
    for tool in ("nvidia-smi", "dmesg", "dcgmproftester13"):
        (b / tool).write_text(
            f'#!/bin/sh\nexec env PYTHONPATH={LAB} {sys.executable} -m hwsim {tool} "$@"\n'
        )
        (b / tool).chmod(0o755)
    (tmp / "scenario.json").write_text(json.dumps(scenario))
    env = dict(os.environ)
    env.update(
        PATH=f"{b}:{env['PATH']}",
        RACKOPS_HWSIM_SCENARIO=str(tmp / "scenario.json"),
        RACKOPS_HWSIM_STATE=str(tmp / "state"),
        RACKOPS_HWSIM_NODE="node01",
    )
    return env


def _scenario(faults: list[dict[str, Any]]) -> dict[str, Any]:
    return {"hardware": {"gpus": 4, "load_s": 1.5}, "nodes": {"node01": {"faults": faults}}}


def _sample_during_load(env: dict[str, str]) -> str:
    proc = subprocess.Popen(
        sampler_argv(200), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        time.sleep(0.5)
        subprocess.run(["dcgmproftester13", "--no-dcgm-validation", "-t", "1004", "-d", "2"],
                       env=env, check=True, capture_output=True)  # fmt: skip
        time.sleep(0.3)
        assert proc.stderr is not None
        line = proc.stderr.readline()
        pid = re.fullmatch(r"rackops-sampler pid (\d+)\n", line)
        assert pid, line
        os.kill(int(pid.group(1)), signal.SIGTERM)  # what the run does with kill -TERM
        out, _ = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert proc.returncode == 0
    return out


def test_a_gpu_that_overheats_under_load_is_named_and_its_peers_are_not(tmp_path: Path) -> None:
    env = _bin(tmp_path, _scenario([{"kind": "thermal", "gpu": 2}]))
    parsed = parse_smi_samples(_sample_during_load(env))
    assert {s.index for s in parsed.samples} == {0, 1, 2, 3}
    assert any(s.util_pct == 100 for s in parsed.samples)  # the load was seen
    got = judge_samples(parsed.samples, "node01", load_profile("h100-sxm-ndr").profile.load)
    bad = [f for f in got if f.status is not Status.OK]
    assert [(f.subject.gpu, f.code) for f in bad] == [(2, "GPU-LOAD")]
    assert "HW Thermal Slowdown" in bad[0].message and "87 °C ceiling" in bad[0].message


def test_a_power_brake_under_load_is_named(tmp_path: Path) -> None:
    env = _bin(tmp_path, _scenario([{"kind": "power_brake", "gpu": 0}]))
    got = judge_samples(parse_smi_samples(_sample_during_load(env)).samples, "node01")
    bad = [f for f in got if f.status is not Status.OK]
    assert [(f.subject.gpu, f.code) for f in bad] == [(0, "GPU-LOAD")]
    assert "HW Power Brake" in bad[0].message


@pytest.mark.parametrize("when", ["during", "before"])
def test_an_xid_is_the_runs_only_if_it_came_with_the_runs_load(tmp_path: Path, when: str) -> None:
    env = _bin(tmp_path, _scenario([{"kind": "xid", "gpu": 1, "code": 79, "when": when}]))
    read = lambda: subprocess.run(KERNEL_LOG_ARGV, env=env, check=True, capture_output=True,  # noqa: E731
                                  text=True).stdout  # fmt: skip
    first = parse_kernel_xid(read())
    subprocess.run(["dcgmproftester13", "-t", "1005"], env=env, check=True, capture_output=True)
    second = parse_kernel_xid(read())
    assert first.complete and second.complete
    history, during = split_by_baseline(list(second.events), list(first.events))
    gpus = {"0000:2a:00.0": 1}
    findings = judge_kernel_log(history, gpus, "node01", before_run=True)
    findings += judge_kernel_log(during, gpus, "node01", before_run=False)
    assert [(f.code, f.subject.gpu, f.status) for f in findings] == [
        ("XID-79", 1, Status.FAIL if when == "during" else Status.WARN)
    ]


def test_a_sampler_whose_nvidia_smi_dies_exits_with_its_status(tmp_path: Path) -> None:
    """Stopped by the run it exits 0; ended on its own it must not look like a whole run."""
    b = tmp_path / "bin"
    b.mkdir()
    (b / "nvidia-smi").write_text(
        "#!/bin/sh\necho 'NVIDIA-SMI has failed because it couldn'\"'\"'t communicate with the "
        "NVIDIA driver.'\nexit 9\n"
    )
    (b / "nvidia-smi").chmod(0o755)
    env = {**os.environ, "PATH": f"{b}:{os.environ['PATH']}"}
    proc = subprocess.run(sampler_argv(200), env=env, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 9
    assert "rackops-sampler: nvidia-smi exited 9" in proc.stderr
