"""dcgmproftester -t 1004 / -t 1005: per-GPU gflops and device-memory copy figures.

The fixtures are real outputs (tests/fixtures/dcgmproftester/SOURCES.md); the corpus tests in
test_parsers.py run them all. No real ``-t 1005`` output, no real DCGM ≥ 3.2.5 MIG 1004 line,
no ``--cublas`` 1006-1008 output and no console ``Worker …: Error:`` capture was found: the
tests marked CONSTRUCTED build those lines from the format strings of
``dcgmproftester/PhysicalGpu.cpp`` (NVIDIA/DCGM at 2.1.4 ``779120f``, 3.1.8 ``631574f``,
4.6.0 ``72fa3fe``; research docs/research/issue-24-gemm-hbm.md §1, §6) and say so. Their
numbers are illustrative (the 1005 ones are of the size NVIDIA's diag-skus.yaml.in comments
quote for H100/A100, §1d).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from rackops.parsers import ParseError
from rackops.parsers._common import MAX_LINE_CHARS
from rackops.parsers.dcgmproftester import (
    MAX_FIGURE,
    ProfTester,
    parse_dcgmproftester,
)
from rackops.tools import parse, registry

FIX = Path(__file__).parent / "fixtures" / "dcgmproftester"


def _fx(name: str) -> str:
    return (FIX / f"{name}.txt").read_text()


def _p(*lines: str) -> ProfTester:
    return parse_dcgmproftester("".join(line + "\n" for line in lines))


# ------------------------------------------------------------------ real outputs, 1004


def test_dcgm_3_3_layout_space_before_bracket_and_three_digit_figures() -> None:
    got = parse_dcgmproftester(_fx("a100-pcie-dcgm3.3.5-1004-d30"))
    assert got.complete and got.errors == ()
    assert len(got.readings) == 32 and got.gpus(1004) == (0,)
    first = got.readings[0]
    assert (first.test, first.gpu, first.instance, first.worker, first.unit, first.line) == (
        1004,
        0,
        None,
        0,
        "gflops",
        2,
    )
    assert first.value == 1.78e05  # the ramp-up reading
    assert got.bus_ids == {0: "00000000:0A:00.0"}
    # the last 16 readings: eight 1.89e+05, six 1.90e+05, two 1.91e+05
    assert got.figure(1004, 0) == pytest.approx(1.895e05)
    assert got.values(1004, 0)[:3] == (1.78e05, 1.96e05, 1.97e05)


def test_dcgm_2_1_layout_no_space_no_trailing_dot_indented() -> None:
    got = parse_dcgmproftester(_fx("a100-dcgm-docs-1004"))
    assert got.complete
    assert got.values(1004, 0) == (
        250362.2,
        252917.0,
        253971.7,
        253700.2,
        252599.0,
        253134.6,
        252676.7,
        252861.4,
        252764.1,
        253109.4,
    )
    assert got.figure(1004, 0) == 252861.4  # median of the last five
    assert got.bus_ids == {0: "00000000:00:04.0"}


def test_hand_elisions_are_not_a_whole_output_but_the_readings_are_read() -> None:
    got = parse_dcgmproftester(_fx("a100-pcie-dcgm3.3.5-1004-author-trimmed"))
    assert not got.complete
    assert len(got.readings) == 6
    assert got.errors == tuple(
        f"line {n}: '.': lines were left out by hand (not a whole output)" for n in (3, 4, 5)
    )
    mig = parse_dcgmproftester(_fx("a100-mig-2x3g-dcgm-docs-1004-snipped"))
    assert not mig.complete and any("snip...snip" in e for e in mig.errors)


def test_mig_workers_are_kept_apart_and_figure_sums_the_slices() -> None:
    got = parse_dcgmproftester(_fx("a100-mig-2x3g-dcgm-docs-1004-snipped"))
    assert {r.worker for r in got.readings} == {0, 1}
    assert all(r.gpu == 0 and r.instance is None for r in got.readings)
    # worker 0: 102659.5 107747.3 [108107.6 108001.2]; worker 1: 102659.8 [107787.3 108102.3]
    assert got.figure(1004, 0) == pytest.approx(108054.4 + 107944.8)
    assert got.bus_ids == {}  # the MIG workers' messages carry no Bus ID line


def test_dcgm_2_0_lines_without_worker_are_not_read() -> None:
    got = parse_dcgmproftester(_fx("t4-dcgm2.0.10-1004-no-worker-prefix"))
    assert got.readings == () and not got.complete
    assert "16 readings without the 'Worker G:W[F]:' prefix" in got.errors[0]


def test_1007_without_cublas_prints_no_figure() -> None:
    got = parse_dcgmproftester(_fx("dcgm4.2.3-1007-no-cublas-no-figure"))
    assert got.readings == () and not got.complete
    assert got.figure(1007, 0) is None and got.gpus(1007) == ()
    assert "--cublas" in got.errors[-1]


@pytest.mark.parametrize(
    ("case", "error"),
    [
        ("dcgm3.1.7-error-0-from-runtests", "line 3: Error 0 from RunTests(). Exiting."),
        ("not-root-cachemanager-init-failed", "line 1: CacheManager Init Failed. Error: -29"),
    ],
)
def test_the_tools_own_errors_are_kept(case: str, error: str) -> None:
    got = parse_dcgmproftester(_fx(case))
    assert not got.complete and got.readings == ()
    assert got.errors[0] == error  # the plog prefix and [file:line] [function] suffix gone


def test_a_cut_anywhere_mid_line_is_never_complete() -> None:
    """A cut between two whole lines reads as a shorter run (no end marker is printed by
    every release); a cut inside a line never passes."""
    for name in ("a100-pcie-dcgm3.3.5-1004-d30", "a100-dcgm-docs-1004"):
        lines = _fx(name).splitlines(keepends=True)
        for k, line in enumerate(lines):
            for part in (line[: len(line) // 2], line.rstrip("\n")):
                if not part.strip():
                    continue
                text = "".join(lines[:k]) + part
                try:
                    got = parse_dcgmproftester(text)
                except ParseError:
                    continue
                assert not got.complete, text[-120:]


# ---------------------------------------------------------- CONSTRUCTED: -t 1005 layouts


def test_constructed_1005_dcgm_3_2_layout_gib_sec_is_reported_as_gb_s() -> None:
    """CONSTRUCTED from 4.6.0 PhysicalGpu.cpp l.2956-2974:
    ``Worker {gpu}:{index}[{field}]: DramUtil generated {:#.3}/{:#.3}, dcgm <value>
    ({:#.3} GiB/sec). bandwidthDivisor {:#.3}``. The first line of a worker prints the
    previous interval's figure, which is 0."""
    got = _p(
        "Worker 0:0[1005]: DramUtil generated 0.00/0.758, dcgm 0 (0.00 GiB/sec). "
        "bandwidthDivisor 1.00",
        "Worker 0:0[1005]: DramUtil generated 0.758/0.760, dcgm 0.7591 (2.53e+03 GiB/sec). "
        "bandwidthDivisor 1.00",
        "Worker 0:0[1005]: DramUtil generated 0.760/0.761, dcgm 0.7602 (2.54e+03 GiB/sec). "
        "bandwidthDivisor 1.00",
        "Worker 0:0[1005]: DramUtil generated 0.761/0.761, dcgm 0.7608 (2.54e+03 GiB/sec). "
        "bandwidthDivisor 1.00",
    )
    assert got.complete
    assert got.values(1005, 0) == (0.0, 2530.0, 2540.0, 2540.0)
    assert {r.unit for r in got.readings} == {"GB/s"}
    assert got.figure(1005, 0) == 2540.0  # the leading 0 is in the first half
    assert got.gpus(1004) == () and got.figure(1004, 0) is None


def test_constructed_1005_older_layouts() -> None:
    """CONSTRUCTED from 2.1.4 (``(%.1f GiB/sec)``) and 2.2.6-3.1.8 (``(%.1f GiB/sec),
    bandwidthDivisor %.3f.``, std::fixed)."""
    old = _p("Worker 3:0[1005]: DramUtil generated 0.771/0.772, dcgm 0.770 (1564.3 GiB/sec)")
    mid = _p(
        "Worker 3:0[1005]: DramUtil generated 0.771/0.772, dcgm 0.686 (1564.3 GiB/sec), "
        "bandwidthDivisor 1.125."
    )
    for got in (old, mid):
        assert got.complete and got.values(1005, 3) == (1564.3,) and got.gpus(1005) == (3,)


def test_constructed_1005_mig_instance() -> None:
    """CONSTRUCTED from 4.6.0 l.2956-2963: on MIG the GPU id is followed by ``/gi/ci`` and
    ValuesDump prints ``M:`` before the value group."""
    got = _p(
        "Worker 0/1/0:0[1005]: DramUtil generated 0.381/0.381, dcgm M:{ GPU: 0.38, GI: 0.76,"
        " CI: 0.76 } (7.60e+02 GiB/sec). bandwidthDivisor 1.00",
        "Worker 0/2/0:1[1005]: DramUtil generated 0.380/0.381, dcgm M:{ GPU: 0.38, GI: 0.76,"
        " CI: 0.76 } (7.58e+02 GiB/sec). bandwidthDivisor 1.00",
    )
    assert got.complete
    assert [(r.gpu, r.instance, r.worker) for r in got.readings] == [(0, "1/0", 0), (0, "2/0", 1)]
    assert got.figure(1005, 0) == pytest.approx(760.0 + 758.0)


def test_constructed_1004_mig_and_cublas_lines_of_dcgm_3_2() -> None:
    """CONSTRUCTED from 4.6.0 l.3245-3253 (``Worker {:d}:{:d} [{:d}]: {}:  generated ???,
    dcgm `` … `` ({:#.3} gflops).``), with the MIG ``M:{…}`` group and the 1007 header that
    ``--cublas`` gives (RunSubtestGemmUtil)."""
    got = _p(
        "Worker 0:1 [1004]: TensorEngineActive:  generated ???, dcgm M:{ GPU: 0.45, GI: 0.9,"
        " CI: 0.9 } (1.03e+05 gflops).",
        "Worker 2:0 [1007]: Fp32EngineActive:  generated ???, dcgm 0 (3.90e+04 gflops).",
    )
    assert got.complete
    assert got.values(1004, 0) == (103000.0,) and got.readings[0].worker == 1
    assert got.values(1007, 2) == (39000.0,) and got.readings[1].unit == "gflops"


def test_constructed_eight_gpus_interleaved() -> None:
    lines = [
        f"Worker {g}:0 [1004]: TensorEngineActive:  generated ???, dcgm 0 ({v:.2e} gflops)."
        for v in (5.0e5, 7.0e5, 7.1e5, 7.2e5)
        for g in (7, 3, 0, 1, 2, 4, 5, 6)
    ]
    got = _p(*lines)
    assert got.gpus(1004) == tuple(range(8))
    assert all(got.figure(1004, g) == pytest.approx(7.15e5) for g in range(8))
    assert got.values(1004, 3) == (5.0e5, 7.0e5, 7.1e5, 7.2e5)


# ------------------------------------------------------------------------ figure()


@pytest.mark.parametrize(
    ("values", "figure"),
    [
        ((5.0,), 5.0),
        ((1.0, 9.0), 9.0),
        ((1.0, 8.0, 9.0), 8.5),  # the last half of 3 is the last 2
        ((1.0, 2.0, 8.0, 9.0, 10.0), 9.0),
        ((1.0, 9.0, 9.5, 0.0, 9.0, 8.0), 8.0),  # a stall to 0 pulls it down
    ],
)
def test_figure_is_the_median_of_the_last_half(values: tuple[float, ...], figure: float) -> None:
    got = _p(
        *(
            f"Worker 1:0[1004]: TensorEngineActive: generated ???, dcgm 0.000 ({v} gflops)."
            for v in values
        )
    )
    assert got.values(1004, 1) == values
    assert got.figure(1004, 1) == figure
    assert got.figure(1004, 0) is None


# ------------------------------------------------------------------ whitespace, framing


def test_whitespace_and_crlf_are_read_loosely() -> None:
    text = (
        "  Worker  0:0\t[1004]:  TensorEngineActive:   generated ???,  dcgm  0  "
        "(1.89e+05 gflops).\r\n"
        "\tWorker 0:0[1004]: TensorEngineActive: generated ???, dcgm 0 (189000.0 gflops)\r\n"
    )
    got = parse(  # through the registry, as rackops parse reads it
        "dcgmproftester", text
    )
    assert isinstance(got, ProfTester)
    assert got.complete and got.values(1004, 0) == (189000.0, 189000.0)


def test_log_file_lines_are_read_through_their_plog_frame() -> None:
    """The ``--log-file`` form of a reading and of a worker error (the error line is the one
    quoted in https://github.com/NVIDIA/DCGM/issues/78, from a --log-file)."""
    got = _p(
        "2024-04-08 10:00:01.123 INFO  [11:11] Worker 0:0 [1004]: TensorEngineActive:  "
        "generated ???, dcgm 0 (1.89e+05 gflops). [/w/dcgmproftester/Reporter.cpp:56] "
        "[DcgmNs::ProfTester::ReporterBase::log]",
    )
    assert got.complete and got.values(1004, 0) == (189000.0,)
    bad = _p(
        "2023-04-27 17:46:19.705 INFO  [35456:35456] Worker 0:0[1005]: Error: cuInit returned"
        " no CUDA-capable device is detected for GPU-0aa435bb-a969-4b41-adc7-3bbe37d986a1 "
        "[/workspaces/dcgm_corex/dcgmproftester/Reporter.cpp:56] "
        "[DcgmNs::ProfTester::ReporterBase::log]",
        "2023-04-27 17:46:19.705 INFO  [35456:35456] failed to initialize, waiting to be "
        "killed. [/workspaces/dcgm_corex/dcgmproftester/Reporter.cpp:56] "
        "[DcgmNs::ProfTester::ReporterBase::log]",
    )
    assert not bad.complete
    assert bad.errors[0].startswith("line 1: Worker 0:0[1005]: Error: cuInit returned no CUDA")
    assert bad.errors[1] == "line 2: failed to initialize, waiting to be killed."


# ---------------------------------------------------- CONSTRUCTED: errors and end lines


READING = "Worker 0:0 [1004]: TensorEngineActive:  generated ???, dcgm 0 (1.89e+05 gflops)."


@pytest.mark.parametrize(
    "line",
    [
        # PhysicalGpu.cpp / DistributedCudaContext.cpp / DcgmProfTester.cpp at 4.6.0
        "A test for fieldId 1013 has not been implemented yet.",
        "Worker 1:0[1004]: Error: test 1004 failed to run: -1",
        "GPU 1, TestField 1004 test FAILED.",
        "GPU 1, TestField 1004 testing FAILED.",
        "Received signal 15",
        "Failed to start CUDA test on 1",
        "Wrong version of dcgmproftester is used. Expected Cuda version is 12. Installed Cuda "
        "version is 13.",
        "dcgmGetDeviceAttributes() returned -5.",
        "&&&& FAILED dcgmproftester_1004",
        ".",
        "...",
    ],
)
def test_an_error_line_after_readings_is_not_complete(line: str) -> None:
    got = _p(READING, line)
    assert got.values(1004, 0) == (189000.0,)
    assert not got.complete and any(line.strip(".") in e for e in got.errors)


def test_the_end_lines_and_validation_chatter_are_not_errors() -> None:
    got = _p(
        "Running version 13 binary with CUDA driver version 14.",
        "Skipping CreateDcgmGroups() since DCGM validation is disabled",
        READING,
        "Field 1004 @ 50.0% Validation Retry: 0.9 !< 0.1 < 1.0.",
        "Ignored a validation failure after last activity level success.",
        "Worker 0:0[1004]: Message: Bus ID 00000000:1B:00.0 mapped to cuda device ID 0",
        "DCGM CudaContext Init completed successfully.",
        "",
        "CUDA_VISIBLE_DEVICES: GPU-539a31f4-1487-3a42-cc55-910b7bf82d0c",
        "GPU 0, TestField 1004 test PASSED.",
        "All Tests Passed.",
    )
    assert got.complete, got.errors
    assert got.bus_ids == {0: "00000000:1B:00.0"}


def test_a_reading_cut_inside_the_output_is_an_error_not_a_reading() -> None:
    got = _p(
        READING,
        "Worker 0:0 [1004]: TensorEngineActive:  generated ???, dcgm 0 (1.89e+0",
        "Worker 0:0[1005]: DramUtil generated 0.760/0.761, dcgm 0.7608 (2.54e+03 GiB",
        READING,
    )
    assert got.values(1004, 0) == (189000.0, 189000.0) and got.values(1005, 0) == ()
    assert [e.split(":")[0] for e in got.errors] == ["line 2", "line 3"]


def test_a_gpu_that_started_but_printed_no_reading_is_named() -> None:
    got = _p(
        READING,
        "Worker 0:0[1004]: Message: Bus ID 00000000:1B:00.0 mapped to cuda device ID 0",
        "Worker 5:0[1004]: Message: Bus ID 00000000:9A:00.0 mapped to cuda device ID 5",
    )
    assert not got.complete
    assert got.errors == ("GPU 5 (00000000:9A:00.0) started a worker but printed no reading",)


def test_one_gpu_id_on_two_bus_ids_is_two_runs_joined() -> None:
    got = _p(
        READING,
        "Worker 0:0[1004]: Message: Bus ID 00000000:1B:00.0 mapped to cuda device ID 0",
        "Worker 0:0[1004]: Message: Bus ID 00000000:9A:00.0 mapped to cuda device ID 0",
    )
    assert not got.complete and "two runs joined" in got.errors[0]


# ------------------------------------------------------------------------- hostile


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e999", "-5.0", "1e12", "-0.5e+03"])
def test_a_value_that_is_no_figure_is_an_error_never_a_reading(value: str) -> None:
    got = _p(
        READING, f"Worker 0:0 [1004]: TensorEngineActive:  generated ???, dcgm 0 ({value} gflops)."
    )
    assert got.values(1004, 0) == (189000.0,)
    assert not got.complete and f"printed {value} gflops: not a figure" in got.errors[0]
    assert MAX_FIGURE == 1e9


@pytest.mark.parametrize(
    ("line", "match"),
    [
        (READING.replace("Worker 0:0", "Worker 99999:0"), "DCGM GPU id 99999"),
        (READING.replace("Worker 0:0", "Worker 0:70000"), "worker index 70000"),
        (READING.replace("[1004]", "[999999999]"), "field id 999999999"),
        (
            "Worker 0/99999999/0:0[1005]: DramUtil generated 0/0, dcgm 0 (1.0 GiB/sec)",
            "GPU instance",
        ),
    ],
)
def test_an_id_out_of_range_is_a_parse_error(line: str, match: str) -> None:
    with pytest.raises(ParseError, match=match):
        _p(line)


@pytest.mark.parametrize(
    "text",
    ["", "  \n\n", "hello\nworld\n", "+----+\n| GPU |\n", "Worker\n", "gflops\n"],
)
def test_empty_or_foreign_text_is_a_parse_error(text: str) -> None:
    with pytest.raises(ParseError):
        parse_dcgmproftester(text)


@pytest.mark.parametrize(
    "hostile",
    [
        "Worker 0:0 [1004]: " + " " * (MAX_LINE_CHARS - 40) + "x",
        "Worker 0:0 [1004]: TensorEngineActive:" + " " * (MAX_LINE_CHARS - 60) + "generated",
        "Worker 0:0 [1004]: T:  generated ???, dcgm {" + "(" * (MAX_LINE_CHARS - 60),
        "2024-01-01 00:00:00.000 ERROR [1:1] " + " [" * ((MAX_LINE_CHARS - 40) // 2),
        "2024-01-01 00:00:00.000 INFO  [1:1] x" + " " * (MAX_LINE_CHARS - 60) + "[a:1] [b]",
        "Error " * (MAX_LINE_CHARS // 7),
        "." * (MAX_LINE_CHARS - 1),
    ],
)
def test_a_long_line_parses_in_linear_time(hostile: str) -> None:
    text = READING + "\n" + hostile[:MAX_LINE_CHARS] + "\n" + READING + "\n"
    t = time.perf_counter()
    try:
        got = parse_dcgmproftester(text)
    except ParseError:
        got = None
    assert time.perf_counter() - t < 1.0
    assert got is None or len(got.readings) == 2


def test_a_1004_worker_line_that_is_no_reading_is_an_error() -> None:
    got = _p(READING, "Worker 0:0 [1004]: TensorEngineActive: generating", READING)
    assert not got.complete and got.errors[0].startswith("line 2: a 1004 line that is no reading")


def test_many_lines_are_bounded_and_errors_capped() -> None:
    text = (READING + "\n") * 50000 + "Error: x\n" * 5000
    t = time.perf_counter()
    got = parse_dcgmproftester(text)
    assert time.perf_counter() - t < 5.0
    assert len(got.readings) == 50000 and not got.complete
    assert len(got.errors) == 101 and got.errors[-1] == "… and 4900 more error lines"


# ------------------------------------------------------------------------ registry


def test_registered_with_both_cuda_flavours() -> None:
    tool = registry()["dcgmproftester"]
    assert tool.parse is parse_dcgmproftester
    assert [(b.name, b.package) for b in tool.binaries] == [
        ("dcgmproftester12", "datacenter-gpu-manager"),
        ("dcgmproftester13", "datacenter-gpu-manager"),
    ]
