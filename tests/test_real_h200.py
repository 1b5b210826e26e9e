"""What one real H200 showed (issue 38, ``../shared/captures/h200-580`` copied into the
fixtures): each of its four defects pinned on the real output, and the same rule shown to
still fail the fault it is there for."""

from __future__ import annotations

from pathlib import Path

import pytest

from rackops.checks.gpu import check_nvlink
from rackops.checks.gpuload import judge_samples
from rackops.checks.nccl import check_nccl
from rackops.findings import Status
from rackops.parsers import ParseError
from rackops.parsers._common import plain
from rackops.parsers.nvidia_smi_perf import parse_smi_samples
from rackops.profiles import load_profile
from rackops.tools import parse

FIX = Path(__file__).parent / "fixtures"
H200 = load_profile("h200-sxm-ndr").profile
GEMM_CSV = (FIX / "nvidia-smi-perf/h200-580-query-gpu-lms250-gemm.txt").read_text()


def _rows(csv: str, edit: dict[str, str]) -> str:
    """The real stream with every loaded (power-capped) row's cells replaced by ``edit``:
    clock, power, reasons (the columns of its header)."""
    lines = csv.splitlines(keepends=True)
    head = [c.strip() for c in lines[0].split(",")]
    out = [lines[0]]
    for line in lines[1:]:
        cells = [c.strip() for c in line.split(",")]
        if cells[-1].endswith("4"):  # SW Power Cap: the loaded rows
            for col, value in edit.items():
                cells[head.index(col)] = value
        out.append(", ".join(cells) + "\n")
    return "".join(out)


def _load(csv: str) -> list:  # type: ignore[type-arg]
    return judge_samples(parse_smi_samples(csv).samples, "h200", H200.load)


# --- 1. load judged as the hardware behaves ------------------------------------------------


def test_a_power_capped_h200_under_gemm_is_healthy() -> None:
    """The real stream: 60 loaded samples at 691 W of 700 with SW Power Cap, SM median
    1,410 MHz, below the 1,590 MHz base clock. Healthy; the clock is still a figure for the
    peer gate, and the finding says the GPU was power-capped."""
    got = _load(GEMM_CSV)
    assert {f.status for f in got} == {Status.OK}, [f.message for f in got]
    clock = next(f for f in got if f.code == "LOAD-CLOCK")
    assert 1365 <= clock.observed <= 1545  # type: ignore[operator]
    summary = next(f for f in got if f.code == "GPU-LOAD-OK").message
    assert "power-capped (SW Power Cap) at 691 W of its 700 W limit in 60 of 60" in summary


def test_a_thermally_slowed_gpu_still_fails_at_the_same_clock() -> None:
    hot = _rows(GEMM_CSV, {"clocks_event_reasons.active": "0x0000000000000048"})
    (f,) = [f for f in _load(hot) if f.status is Status.FAIL]
    assert "HW Thermal Slowdown" in f.message and f.subject.gpu == 0


@pytest.mark.parametrize("reason", ["0x0000000000000020", "0x0000000000000088"])
def test_sw_thermal_and_power_brake_beside_the_cap_still_fail(reason: str) -> None:
    both = _rows(GEMM_CSV, {"clocks_event_reasons.active": hex(int(reason, 16) | 0x4)})
    assert any(f.status is Status.FAIL for f in _load(both))


def test_a_low_clock_no_reason_explains_fails_on_the_floor() -> None:
    slow = _rows(GEMM_CSV, {"clocks_event_reasons.active": "0x0000000000000000"})
    (f,) = [f for f in _load(slow) if f.status is Status.FAIL]
    assert "with no reason that explains it" in f.message and "1590 MHz floor" in f.message
    assert f.observed < 1590 and f.expected == 1590  # type: ignore[operator]


def test_a_cap_far_below_the_limit_explains_nothing() -> None:
    """SW Power Cap while drawing half the limit: something else capped it (a BMC or
    chassis power limit); the clock is held to the floor and the reason is said."""
    capped = _rows(GEMM_CSV, {"power.draw [W]": "350.00"})
    (f,) = [f for f in _load(capped) if f.status is Status.FAIL]
    assert "far below the limit" in f.message and "BMC" in f.message


def test_a_lowered_power_limit_hides_no_crippled_gpu() -> None:
    """Capped at a 400 W limit set below the board's 700 W, drawing 395 W at 900 MHz:
    the cap is real, but it explains nothing about the GPU; the floor holds and the
    finding says the limit was lowered."""
    low = _rows(
        GEMM_CSV,
        {"power.limit [W]": "400.00", "power.draw [W]": "395.00", "clocks.current.sm [MHz]": "900"},
    )
    (f,) = [f for f in _load(low) if f.status is Status.FAIL]
    assert "below the board's 700 W" in f.message and "900 MHz" in f.message


def test_a_memory_copy_at_full_clock_with_no_reason_passes() -> None:
    copy = _rows(
        GEMM_CSV,
        {
            "clocks.current.sm [MHz]": "1980",
            "power.draw [W]": "466.00",
            "clocks_event_reasons.active": "0x0000000000000000",
        },
    )
    assert {f.status for f in _load(copy)} == {Status.OK}


def test_rackops_parse_reads_the_sampling_stream() -> None:
    got = parse("nvidia-smi-perf", GEMM_CSV)
    assert got.complete and len(got.samples) == 126
    assert got.fields[4] == "clocks.current.sm [MHz]"


# --- 2. terminal escapes are not data -----------------------------------------------------


def test_topo_reads_the_underlined_header() -> None:
    raw = (FIX / "nvidia-smi-topo/h200-580-1gpu-underlined.txt").read_text()
    assert raw.lstrip("\t").startswith("\x1b[4mGPU0")  # the real bytes
    got = parse("nvidia-smi-topo", raw)
    assert list(got.devices) == ["GPU0"] and got.cpu_affinity == {"GPU0": "0-15"}


@pytest.mark.parametrize(
    ("printed", "shown"),
    [
        # mlxlink: a colour after the key, the reset at the start of the next line
        ("State : \x1b[32mActive\n\x1b[0mPhysical state : \x1b[32mLinkUp\n\x1b[0m",
         "State : Active\nPhysical state : LinkUp\n"),
        # a progress line redrawn with CR, then the result
        ("Scanning \r 10%\r 55%\r100%\nDone\n", "100%\nDone\n"),
        # erase-line, a window title (OSC), a bold 8-bit CSI, an overstruck (nroff) word
        ("\x1b[2K\rok\n\x1b]0;title\x07x\n\x9b1my\x9b0m\nb\bbo\bol\bld\bd\n",
         "ok\nx\ny\nbold\n"),
        ("line1\rline2\r", "line1\nline2\n"),  # old Mac line ends, no LF at all
    ],
)  # fmt: skip
def test_what_a_terminal_acts_on_is_removed(printed: str, shown: str) -> None:
    assert plain(printed) == shown


def test_an_mlxlink_output_in_colour_parses_as_the_plain_one() -> None:
    path = next(p for p in sorted((FIX / "mlxlink").glob("*.txt")) if "cut" not in p.name)
    text = path.read_text()
    coloured = "".join(
        line.replace(": ", ": \x1b[32m", 1) + "\x1b[0m" if ": " in line else line
        for line in text.splitlines(keepends=True)
    )
    assert coloured != text
    assert parse("mlxlink", coloured) == parse("mlxlink", text)


# --- 4. empty is an answer where the tool means it ------------------------------------------


def test_no_nvlink_is_ok_where_none_is_expected_and_fails_each_gpu_where_links_are() -> None:
    parsed = parse(
        "nvidia-smi-nvlink", (FIX / "nvidia-smi-nvlink/h200-580-no-nvlink.txt").read_text()
    )
    alone = H200.model_copy(
        update={"gpu": H200.gpu.model_copy(update={"count": 1, "nvlink_links": 0})}
    )
    assert [(f.status, f.code) for f in check_nvlink(parsed, alone, node="n1")] == [
        (Status.OK, "GPU-010")
    ]
    got = check_nvlink(parsed, H200, node="n1")
    assert [(f.status, f.subject.gpu) for f in got] == [(Status.FAIL, i) for i in range(8)]
    assert "no NVLink at all" in got[0].message


def test_empty_output_is_still_unreadable_for_a_tool_that_means_nothing_by_it() -> None:
    with pytest.raises(ParseError):
        parse("nvidia-smi-topo", "")


# --- 3. the GPU count from the profile; a failure quotes the tool's reason --------------------


def test_one_gpu_all_reduce_is_correctness_not_a_zero_bandwidth_fail() -> None:
    parsed = parse("nccl-tests", (FIX / "nccl-tests/h200-580-all-reduce-g1.txt").read_text())
    assert parsed.nccl_version == "2.28.9" and parsed.tests_version == "2.19.6"
    alone = H200.model_copy(
        update={"gpu": H200.gpu.model_copy(update={"count": 1, "nvlink_links": 0})}
    )
    (f,) = check_nccl(parsed, alone, node="n1")
    assert f.status is Status.OK and f.code == "NCCL-1GPU" and "not gated" in f.message
    # the same one-rank run on a node whose profile has 8 GPUs ran on 1 of them
    (f,) = check_nccl(parsed, H200, node="n1")
    assert f.status is Status.FAIL and f.code == "NCCL-003" and "1 GPU of the 8" in f.message


def test_a_failed_nccl_test_quotes_its_own_reason() -> None:
    text = (FIX / "nccl-tests/h200-580-g2-on-1gpu-failure.txt").read_text()
    (f,) = check_nccl(parse("nccl-tests", text), H200, node="n1")
    assert f.status is Status.ERROR
    assert "Invalid number of GPUs: 2 requested but only 1 were found" in f.message


def test_the_single_node_collective_takes_each_nodes_gpu_count(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from test_checks import LAB_INV

    from rackops.inventory import load_inventory
    from rackops.suites import load_suite
    from rackops.validate.plan import make_plan
    from rackops.validate.stages.nodes import NodeStage

    cluster = load_inventory(LAB_INV).raise_for_errors()
    plan = make_plan(cluster, load_suite("acceptance"))
    (single,) = [c for c in plan.node_checks if c.name == "nccl-single-node"]
    assert "{gpus}" in single.argv
    for count in (8, 4, 2, 1):
        node = cluster.node("node01").model_copy(update={"gpus": count})
        stage = SimpleNamespace(cluster=SimpleNamespace(node=lambda _n, nd=node: nd))
        got = [c for c in NodeStage._expand(stage, "node01", [single])]  # type: ignore[arg-type]
        if count == 1:
            assert got == []  # said instead (NodeStage._one_gpu_nodes)
        else:
            (c,) = got
            assert c.argv[c.argv.index("-g") + 1] == str(count)


def test_a_kernel_log_whose_last_xid_has_no_final_newline_keeps_it() -> None:
    line = (
        "[ 1843.308145] NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, "
        "GPU has fallen off the bus."
    )
    log = parse("kernel-xid", "[    0.000000] Linux version 6.8.0\n" + line)
    assert [e.code for e in log.events] == [79]


def test_the_peer_figures_come_from_one_regime_whatever_the_load_mix() -> None:
    """Two healthy GPUs, one sampled mostly under a copy (466 W, full clock), the other
    mostly under GEMM at the cap: over the mix their median power differs by ~200 W; the
    figures the peer gate compares are each GPU's power-capped samples, alike."""
    rows = [r for r in GEMM_CSV.splitlines()[1:] if r.rstrip().endswith("4")][20:40]  # steady
    copy = ", 1980, 3201, 50, 48, 466.00, 700.00, 0x0000000000000000"

    def gpu(index: int, capped: int) -> list[str]:
        out = []
        for i, row in enumerate(rows):
            cells = row.split(", ")
            cells[1] = str(index)
            line = ", ".join(cells)
            out.append(line if i < capped else ", ".join(cells[:4]) + copy)
        return out

    csv = GEMM_CSV.splitlines()[0] + "\n" + "\n".join(gpu(0, 16) + gpu(1, 4)) + "\n"
    got = judge_samples(parse_smi_samples(csv).samples, "n1", H200.load)
    power = {f.subject.gpu: f.observed for f in got if f.code == "LOAD-POWER"}
    assert abs(power[0] - power[1]) < 10, power  # type: ignore[operator]
