"""The report's GPUs under load: figures per GPU in report.json, metrics.prom and JUnit, and
a trace drawn for every GPU a finding names, from the samples the run saved."""

from __future__ import annotations

import json
from pathlib import Path

from rackops.checks.gpuload import judge_samples
from rackops.findings import Finding, Status, Subject
from rackops.parsers.nvidia_smi_perf import parse_smi_samples
from rackops.validate.executor import CommandResult
from rackops.validate.records import Record
from rackops.validate.report import write_reports
from rackops.validate.rundir import RunDir

HEAD = (
    "timestamp, index, pci.bus_id, utilization.gpu [%], clocks.sm [MHz], temperature.gpu, "
    "power.draw [W], clocks_event_reasons.active\n"
)


def _samples() -> str:
    rows = []
    for t in range(30):
        for g in range(4):
            hot = g == 2 and t > 10
            rows.append(
                f"2026/11/26 10:00:{t:02d}.000, {g}, 00000000:{18 + g:02X}:00.0, 100, "
                f"{1305 if hot else 1980}, {92 if hot else 60 + t // 10}, "
                f"{560 if hot else 590}.00, "
                f"{'0x0000000000000048' if hot else '0x0000000000000000'}\n"
            )
    return HEAD + "".join(rows)


def test_a_named_gpu_gets_a_trace_and_every_gpu_its_figures(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "run")
    run.write_json("run.json", {"suite": "lab", "inventory": "inventories/lab"})
    text = _samples()
    result = CommandResult("node01", ("sh", "-c", "sampler"), 0, text, "", 31.0)
    findings = judge_samples(parse_smi_samples(text).samples, "node01")
    out = run.save_output("node/node01/gpu-samples", result)
    run.append(Record("node/node01/gpu-samples", "node", "node01", "gpu-samples",
                      [f.as_dict() for f in findings], {}, out))  # fmt: skip
    gemm = Finding("GEMM-OK", Status.OK, Subject(node="node01", gpu=0), "x", 731.2, 600, "TFLOPS")
    run.append(Record("node/node01/gemm", "node", "node01", "dcgmproftester", [gemm.as_dict()]))
    report, verdict, _ = write_reports(run)
    assert verdict.exit_code == 2
    assert [(t["node"], t["gpu"]) for t in report["gpu_traces"]] == [("node01", 2)]
    trace = report["gpu_traces"][0]
    assert trace["samples"] == 30 and trace["throttled"].count(True) == 19
    assert {(g["gpu"], g["status"]) for g in report["gpus"]} == {
        (0, "OK"), (1, "OK"), (3, "OK"), (2, "FAIL")
    }  # fmt: skip
    page = (run.path / "report.html").read_text()
    assert "node01 GPU 2: 30 samples" in page and page.count("<polyline") >= 3
    prom = (run.path / "metrics.prom").read_text()
    assert 'rackops_gpu_gemm_tflops{node="node01",gpu="0"} 731.2' in prom
    assert 'rackops_gpu_sm_clock_mhz{node="node01",gpu="1"} 1980' in prom
    junit = (run.path / "junit.xml").read_text()
    assert '<property name="observed" value="731.2"' in junit
    json.dumps(report)  # report.json stays plain JSON
