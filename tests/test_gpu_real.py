"""On a real GPU machine (``pytest -m gpu``, as root; never selected in CI): rackops judges
the GPUs this machine really has, as a person would, healthy.

* node-check with a profile written for this machine (its GPU model, count, memory, PCIe
  and NVLink read from nvidia-smi; the load floors of the shipped profile of its family),
  GPU-only (the machine's HCAs and their cabling are not known here);
* rackops' own sampler (``tools/nvidia_smi_perf.SAMPLER``) under a real load, torch's
  FP16 GEMM where torch sees the GPU, else nccl-tests' all_reduce_perf on every GPU; the
  samples judged by the same rule a run uses.

Each test writes what it saw to ``$RACKOPS_GPU_RESULTS/<test>.json`` when that is set (the
device script puts them in ``bench/gpu-real/``). Nothing here changes the GPU's clocks,
power limit or modes."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from rackops.checks.gpuload import judge_samples, power_cap
from rackops.findings import Status
from rackops.parsers.nvidia_smi_perf import parse_smi_samples
from rackops.profiles import load_profile
from rackops.tools.nvidia_smi_perf import sampler_argv
from rackops.validate.nodecheck import node_check

pytestmark = pytest.mark.gpu

QUERY = "name,memory.total,pcie.link.gen.max,pcie.link.width.max,driver_version"


def _smi(*args: str) -> str:
    return subprocess.run(
        ["nvidia-smi", *args], capture_output=True, text=True, check=True, timeout=60
    ).stdout


@pytest.fixture(scope="module")
def machine() -> dict[str, Any]:
    if shutil.which("nvidia-smi") is None:
        pytest.skip("no nvidia-smi: not a GPU machine")
    if os.geteuid() != 0:
        pytest.skip("the GPU tests run as root (dmesg, the sampler)")
    rows = [
        [c.strip() for c in line.split(",")]
        for line in _smi(f"--query-gpu={QUERY}", "--format=csv,noheader,nounits").splitlines()
        if line.strip()
    ]
    if not rows:
        pytest.skip("nvidia-smi lists no GPU")
    links = sum(1 for line in _smi("nvlink", "-s").splitlines() if "Link " in line)
    name, mem, gen, width, driver = rows[0]
    return {
        "host": socket.gethostname().split(".")[0],
        "model": name,
        "count": len(rows),
        "memory_mib": int(float(mem)),
        "pcie_gen": int(gen),
        "pcie_width": int(width),
        "nvlink_links": links // len(rows),
        "driver": driver,
    }


def _family(model: str) -> str:
    return (
        "a100-sxm-hdr"
        if "A100" in model
        else ("h200-sxm-ndr" if "H200" in model else "h100-sxm-ndr")
    )


def _inventory(tmp: Path, m: dict[str, Any], suite: dict[str, Any]) -> Path:
    base = yaml.safe_load(Path(load_profile(_family(m["model"])).path).read_text())
    base.update(name="this-machine", description=f"{m['count']}x {m['model']} (read here)")
    base["gpu"].update(
        model=m["model"],
        count=m["count"],
        memory_mib=m["memory_mib"],
        pcie_gen=m["pcie_gen"],
        pcie_width=m["pcie_width"],
        nvlink_links=m["nvlink_links"],
        nvswitch=m["nvlink_links"] > 0 and m["count"] > 4,
        nvlink_gbs=base["gpu"]["nvlink_gbs"] if m["nvlink_links"] else 0,
    )
    base["hca"]["count"] = 0
    inv = tmp / "inv"
    (inv / "profiles").mkdir(parents=True)
    (inv / "suites").mkdir()
    (inv / "profiles/this-machine.yaml").write_text(yaml.safe_dump(base))
    (inv / "suites/gpu-machine.yaml").write_text(yaml.safe_dump(suite))
    hosts = {
        "all": {
            "children": {
                "gpu_nodes": {
                    "hosts": {m["host"]: {"ansible_host": "127.0.0.1", "rackops_hcas": []}},
                    "vars": {"rackops_profile": "this-machine"},
                },
                "switches": {
                    "children": {
                        "mlnx_os": {
                            "hosts": {
                                "leaf-r0": {"ansible_host": "192.0.2.20", "rackops_switch_rail": 0}
                            },
                            "vars": {
                                "rackops_switch_os": "mlnx-os",
                                "rackops_switch_role": "leaf",
                                "rackops_switch_ports": ["1/1"],
                            },
                        }
                    }
                },
            },
            "vars": {
                "rackops_fabric": {
                    "type": "infiniband",
                    "mtu": {"host": 4092, "switch": 4096, "ib": 4096},
                },
                "rackops_versions": {"ofed": "25.07-0.9.7", "driver": m["driver"], "dcgm": "4.4.1"},
            },
        }
    }
    (inv / "hosts.yml").write_text(yaml.safe_dump(hosts))
    return inv


def _results(name: str, data: dict[str, Any]) -> None:
    where = os.environ.get("RACKOPS_GPU_RESULTS")
    if where:
        Path(where).mkdir(parents=True, exist_ok=True)
        (Path(where) / f"{name}.json").write_text(json.dumps(data, indent=2, default=str) + "\n")


def test_node_check_on_this_machine_is_healthy(machine: dict[str, Any], tmp_path: Path) -> None:
    checks: dict[str, Any] = {"hca_ports": False, "gpu_inventory": True, "fleet": False}
    nccl = shutil.which("all_reduce_perf")
    family = load_profile(_family(machine["model"])).profile
    if nccl and machine["count"] == family.gpu.count:  # its floor holds for the full board
        size = 8 << 30  # the acceptance gate (the floor's source measured it there)
        checks["nccl_single_node"] = {
            "min_bytes": size,
            "max_bytes": size,
            "gate_sizes_bytes": [size],
            "timeout_s": 300,
        }
    suite = {"name": "gpu-machine", "description": "this machine's GPUs", "budget_minutes": 10}
    inv = _inventory(tmp_path, machine, {**suite, "checks": checks})
    health = node_check(str(inv), "gpu-machine", machine["host"], str(tmp_path / "run"))
    from rackops.validate.rundir import RunDir

    seen = [
        (r["id"], f["status"], f["code"], f["message"])
        for r in RunDir(tmp_path / "run").records()
        for f in r["findings"]
    ]
    _results("node-check", {"machine": machine, "status": health.status, "findings": seen})
    assert health.failures == [], seen
    assert health.status in (Status.OK, Status.WARN), seen
    assert any(code == "GPU-OK" for _i, _s, code, _m in seen), seen


def _torch_gemm(seconds: float) -> list[str] | None:
    probe = "import torch,sys; sys.exit(0 if torch.cuda.is_available() else 1)"
    if subprocess.run([sys.executable, "-c", probe], capture_output=True, check=False).returncode:
        return None
    script = (
        "import time, torch\n"
        "n = 8192\n"
        "a = torch.randn(n, n, device='cuda', dtype=torch.float16); b = torch.randn_like(a)\n"
        f"end = time.time() + {seconds}\n"
        "while time.time() < end:\n"
        "    for _ in range(20): a @ b\n"
        "    torch.cuda.synchronize()\n"
    )
    return [sys.executable, "-c", script]


def test_the_sampler_under_a_real_load_judges_this_machine_healthy(machine: dict[str, Any]) -> None:
    seconds = 20.0
    load = _torch_gemm(seconds)
    how = "torch fp16 GEMM 8192^3"
    if load is None:
        exe = shutil.which("all_reduce_perf")
        if exe is None:
            pytest.skip("neither torch with CUDA nor nccl-tests' all_reduce_perf here")
        load = [exe, "-b", "1G", "-e", "1G", "-g", str(machine["count"]), "-n", "2000"]
        how = "nccl-tests all_reduce_perf 1 GiB"
    sampler = subprocess.Popen(
        sampler_argv(250), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        time.sleep(2)  # idle samples first
        subprocess.run(load, capture_output=True, timeout=seconds + 600, check=False)
        time.sleep(2)
        assert sampler.stderr is not None
        pid = int(sampler.stderr.readline().split()[-1])
        os.kill(pid, signal.SIGTERM)  # as a run stops it
        out, _ = sampler.communicate(timeout=30)
    finally:
        sampler.kill()
    parsed = parse_smi_samples(out)
    assert parsed.complete, parsed.errors
    loaded = [s for s in parsed.samples if s.util_pct is not None and s.util_pct >= 50]
    assert loaded, "the load was never seen"
    prof = load_profile(_family(machine["model"])).profile
    got = judge_samples(parsed.samples, machine["host"], prof.load)
    cap = power_cap(loaded)
    _results(
        "sampler-under-load",
        {
            "machine": machine,
            "load": how,
            "samples": len(parsed.samples),
            "loaded": len(loaded),
            "power_cap": None if cap is None else cap.why,
            "findings": [(f.status, f.code, f.message) for f in got],
        },
    )
    assert not [f for f in got if f.status in (Status.FAIL, Status.ERROR)], [f.message for f in got]
