"""hwsim against real captures: what the simulator prints is checked against what one real
H200 printed (``../shared/captures/h200-580``, copied into ``tests/fixtures`` with their
sources), never against what rackops expects. A lab test then fails where a real node would.

Each test names the capture it holds hwsim to; docs/design.md ("The lab": a simulator fact
and its capture) says how the two are tied."""

from __future__ import annotations

import statistics
import subprocess
from pathlib import Path

from test_gpuload_sim import _bin, _sample_during_load

from rackops.checks.gpuload import judge_samples
from rackops.findings import Status
from rackops.parsers.nvidia_smi_perf import parse_smi_samples
from rackops.profiles import load_profile
from rackops.tools import parse
from rackops.tools.nvidia_smi_perf import sampler_argv

FIX = Path(__file__).parent / "fixtures"
REAL_CSV = (FIX / "nvidia-smi-perf/h200-580-query-gpu-lms250-gemm.txt").read_text()
REAL_TOPO = (FIX / "nvidia-smi-topo/h200-580-1gpu-underlined.txt").read_text()
REAL_NCCL_G1 = (FIX / "nccl-tests/h200-580-all-reduce-g1.txt").read_text()
REAL_NCCL_FAIL = (FIX / "nccl-tests/h200-580-g2-on-1gpu-failure.txt").read_text()


def _loaded(text: str) -> list:  # type: ignore[type-arg]
    return [s for s in parse_smi_samples(text).samples if s.util_pct and s.util_pct >= 50]


def _one_gpu(tmp: Path, **hw: object) -> dict[str, str]:
    return _bin(tmp, {"hardware": {"gpus": 1, "load_s": 1.5, **hw}, "nodes": {}})


def _run(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), env=env, capture_output=True, text=True, check=False)


def test_under_gemm_the_simulated_gpu_is_power_capped_as_the_real_one(tmp_path: Path) -> None:
    real = _loaded(REAL_CSV)
    sim = _loaded(_sample_during_load(_bin(tmp_path, {"hardware": {"gpus": 2, "load_s": 1.5}})))
    assert real and sim
    assert {s.reasons for s in sim} == {s.reasons for s in real} == {("sw_power_cap",)}
    lo, hi = min(s.sm_clock_mhz for s in real), max(s.sm_clock_mhz for s in real)
    assert all(lo <= s.sm_clock_mhz <= hi for s in sim), [s.sm_clock_mhz for s in sim]
    assert all(s.sm_clock_mhz % 15 == 0 for s in sim + real)  # the driver's 15 MHz steps

    def share(rows: list) -> float:  # type: ignore[type-arg]
        return statistics.median(s.power_w / s.power_limit_w for s in rows)

    assert abs(share(sim) - share(real)) < 0.02
    # and the same rule judges both alike: healthy
    load = load_profile("h100-sxm-ndr").profile.load
    for rows in (real, sim):
        assert {f.status for f in judge_samples(rows, "n", load)} == {Status.OK}


def test_a_memory_copy_runs_at_full_clock_below_the_cap(tmp_path: Path) -> None:
    """The real H200 under a copy: 1,980 MHz, ~466 W, no reason (issue 38)."""
    env = _one_gpu(tmp_path)
    proc = subprocess.Popen(sampler_argv(200), env=env, stdout=subprocess.PIPE, text=True)
    try:
        _run(env, "dcgmproftester13", "--no-dcgm-validation", "-t", "1005", "-d", "2")
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=20)
    sim = _loaded(out)
    assert sim and {s.reasons for s in sim} == {()}
    assert {s.sm_clock_mhz for s in sim} == {1980}
    assert all(abs(s.power_w - 466) < 5 for s in sim)


def test_the_sampling_header_names_the_fields_as_the_real_driver_does(tmp_path: Path) -> None:
    real_header = REAL_CSV.splitlines()[0]
    query = (
        "timestamp,index,pci.bus_id,utilization.gpu,clocks.sm,clocks.mem,temperature.gpu,"
        "temperature.memory,power.draw,power.limit,clocks_event_reasons.active"
    )
    out = _run(_one_gpu(tmp_path), "nvidia-smi", f"--query-gpu={query}", "--format=csv,nounits")
    assert out.returncode == 0 and out.stdout.splitlines()[0] == real_header


def test_topo_underlines_its_header_as_the_real_one(tmp_path: Path) -> None:
    sim = _run(_one_gpu(tmp_path, hcas=0, nvlink_links=0), "nvidia-smi", "topo", "-m").stdout
    assert sim.splitlines()[0] == REAL_TOPO.splitlines()[0]
    assert sim.splitlines()[1].split("\t")[:2] == REAL_TOPO.splitlines()[1].split("\t")[:2]
    assert parse("nvidia-smi-topo", sim).devices == parse("nvidia-smi-topo", REAL_TOPO).devices


def test_a_gpu_without_nvlink_prints_nothing_as_the_real_one(tmp_path: Path) -> None:
    real = (FIX / "nvidia-smi-nvlink/h200-580-no-nvlink.txt").read_text()
    sim = _run(_one_gpu(tmp_path, nvlink_links=0), "nvidia-smi", "nvlink", "-s")
    assert (sim.returncode, sim.stdout, sim.stderr) == (0, real, "")


def _nccl_env(tmp: Path) -> dict[str, str]:
    env = _one_gpu(tmp)
    b = Path(env["PATH"].split(":")[0])
    exe = b / "all_reduce_perf"
    exe.write_text((b / "nvidia-smi").read_text().replace("nvidia-smi", "all_reduce_perf"))
    exe.chmod(0o755)
    return {**env, "RACKOPS_HWSIM_HOSTS": "node01"}


def test_one_gpu_all_reduce_prints_the_real_header_and_no_bus_bandwidth(tmp_path: Path) -> None:
    sim = _run(_nccl_env(tmp_path), "all_reduce_perf", "-b", "1K", "-e", "8G", "-f", "4", "-g", "1")
    assert sim.returncode == 0
    assert sim.stdout.splitlines()[0] == REAL_NCCL_G1.splitlines()[0]
    assert sim.stdout.splitlines()[2].endswith("unalign: 0")
    real, got = parse("nccl-tests", REAL_NCCL_G1), parse("nccl-tests", sim.stdout)
    assert got.complete and (got.nccl_version, got.tests_version) == ("2.28.9", "2.19.6")
    assert {r.bytes for r in got.rows} == {r.bytes for r in real.rows}
    assert {p.busbw_gbs for r in got.rows for p in (r.out_of_place, r.in_place)} == {0.0}


def test_more_gpus_than_the_node_has_fails_as_the_real_one(tmp_path: Path) -> None:
    sim = _run(_nccl_env(tmp_path), "all_reduce_perf", "-b", "1M", "-e", "1M", "-g", "2")
    real_out = REAL_NCCL_FAIL.split("Invalid number")[0]
    assert sim.returncode == 5  # the capture's .rc
    assert "Invalid number" + REAL_NCCL_FAIL.split("Invalid number")[1] == sim.stderr
    assert (
        sim.stdout.splitlines()[-1].split(":", 1)[1] == real_out.splitlines()[-1].split(":", 1)[1]
    )


def test_the_performance_report_and_its_reason_counters_are_the_real_layout(
    tmp_path: Path,
) -> None:
    """-q -d PERFORMANCE idle, line for line as 580.159.04 prints it but for the machine's
    own values; after a GEMM the SW Power Capping counter holds the load's time, as the
    real one held 15.4 s after 15 s of GEMM."""
    real_idle = (FIX / "nvidia-smi-perf/h200-580-d-perf-idle.txt").read_text()
    real_after = (FIX / "nvidia-smi-perf/h200-580-d-perf-after-gemm.txt").read_text()
    env = _one_gpu(tmp_path)
    idle = _run(env, "nvidia-smi", "-q", "-d", "PERFORMANCE").stdout

    def shape(text: str) -> list[str]:  # the machine's own values masked
        return [
            line.split(":")[0] if line.startswith(("Timestamp", "Driver", "GPU 0")) else line
            for line in text.splitlines()
        ]

    assert shape(idle) == shape(real_idle)
    _run(env, "dcgmproftester13", "--no-dcgm-validation", "-t", "1004", "-d", "2")
    after = parse("nvidia-smi-perf", _run(env, "nvidia-smi", "-q", "-d", "PERFORMANCE").stdout)
    real = parse("nvidia-smi-perf", real_after)
    (g,), (r,) = after.gpus, real.gpus
    assert g.reason_counters_us.keys() == r.reason_counters_us.keys()
    assert g.reasons.keys() == r.reasons.keys()
    assert 1.2e6 <= g.reason_counters_us["sw_power_cap"] <= 1.6e6  # the 1.5 s load
    assert r.reason_counters_us["sw_power_cap"] > 15e6


REAL_XML = FIX / "nvidia-smi-xml"


def _fabric_blocks(text: str) -> list[list[tuple[str, str]]]:
    """Each GPU's <fabric> block as (element, value) pairs in the order printed."""
    import xml.etree.ElementTree as ET

    root = ET.fromstring(text.strip())
    return [
        [(e.tag, (e.text or "").strip()) for e in g.find("fabric").iter() if e.tag != "fabric"]
        for g in root.findall("gpu")
    ]


def test_an_hgx_gpus_fabric_block_is_the_real_r580_one(tmp_path: Path) -> None:
    env = _bin(tmp_path, {"hardware": {"gpus": 8}, "nodes": {}})
    sim = _fabric_blocks(_run(env, "nvidia-smi", "-q", "-x").stdout)
    real = _fabric_blocks((REAL_XML / "h100x8-580-real.txt").read_text())
    assert sim == real


def test_a_trays_fabric_block_is_the_real_gb200_one(tmp_path: Path) -> None:
    hw = {"gpus": 4, "gpu_model": "NVIDIA GB200", "nvlink_domain": "nvl72-a"}
    env = _bin(tmp_path, {"hardware": hw, "nodes": {}})
    sim = _fabric_blocks(_run(env, "nvidia-smi", "-q", "-x").stdout)
    real = _fabric_blocks((REAL_XML / "gb200x4-580-real.txt").read_text())
    assert sim == real


def test_a_trays_fabric_faults_print_what_the_public_reports_show(tmp_path: Path) -> None:
    hw = {"gpus": 4, "gpu_model": "NVIDIA GB200", "nvlink_domain": "nvl72-a"}
    faults = [
        {"kind": "fabric_insufficient", "gpu": 2},
        {"kind": "fabric_unhealthy", "gpu": 1},
        {"kind": "fabric_clique", "gpu": 3, "clique": 7},
    ]
    env = _bin(tmp_path, {"hardware": hw, "nodes": {"node01": {"faults": faults}}})
    sim = _run(env, "nvidia-smi", "-q", "-x").stdout
    derived = (REAL_XML / "gb200x4-gpu2-insufficient-resources.txt").read_text()
    blocks, want = _fabric_blocks(sim), _fabric_blocks(derived)
    assert blocks[2] == want[2] and blocks[0] == want[0]
    assert ("summary", "Unhealthy") in blocks[1] and ("cliqueId", "7") in blocks[3]


def _imex_bin(tmp: Path, trays: int, faults: dict[str, list[dict[str, object]]]) -> dict[str, str]:
    env = _bin(
        tmp,
        {
            "hardware": {"gpus": 4, "nvlink_domain": "nvl-a", "driver": "570.172"},
            "nodes": {
                f"tray{i:02d}": {"index": i, "faults": faults.get(f"tray{i:02d}", [])}
                for i in range(1, trays + 1)
            },
        },
    )
    wrapper = tmp / "bin" / "nvidia-imex-ctl"
    wrapper.write_text(
        (tmp / "bin" / "nvidia-smi").read_text().replace("nvidia-smi", "nvidia-imex-ctl")
    )
    wrapper.chmod(0o755)
    return {**env, "RACKOPS_HWSIM_NODE": "tray01"}


def test_the_imex_table_is_the_real_r570_layout(tmp_path: Path) -> None:
    import re

    env = _imex_bin(tmp_path, 18, {})
    sim = _run(env, "nvidia-imex-ctl", "-N").stdout
    real = (FIX / "nvidia-imex/aws-pcs-570-18node-up.txt").read_text()

    def shape(text: str) -> list[str]:  # the lines with their values masked
        masked = re.sub(r"\d+\.\d+\.\d+\.\d+", "ADDR", text)
        masked = re.sub(r"\d+/\d+/\d{4} [\d:.]+", "TIME", masked)
        return [re.sub(r"\s+", " ", x).strip() for x in masked.splitlines() if x.strip()]

    assert shape(sim) == shape(real)
    got = parse("nvidia-imex", sim)
    assert got.complete and got.state == "UP" and len(got.nodes) == 18


def test_a_tray_whose_imex_is_down_is_unavailable_in_the_others_tables(tmp_path: Path) -> None:
    env = _imex_bin(tmp_path, 4, {"tray03": [{"kind": "imex_down"}]})
    got = parse("nvidia-imex", _run(env, "nvidia-imex-ctl", "-N", "-H").stdout)
    assert got.complete and got.state == "DEGRADED"
    assert [(n.hostname, n.state, n.version) for n in got.nodes][2] == (
        "tray03",
        "UNAVAILABLE",
        None,
    )
    assert {lk.state for lk in got.links if 2 in (lk.src, lk.dst)} == {"N"}
    own = _run({**env, "RACKOPS_HWSIM_NODE": "tray03"}, "nvidia-imex-ctl", "-N", "-H")
    assert own.returncode != 0 and own.stdout == ""
