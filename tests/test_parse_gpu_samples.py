"""nvidia-smi clocks/reasons/temperature/power (`-q`, `--query-gpu -lms`) and `dcgmi dmon`.

The fixtures are real outputs (tests/fixtures/{nvidia-smi-perf,dcgmi-dmon}/SOURCES.md). No real
`--query-gpu … -lms` stream, dmon repeated-header block, dmon field 112 or dmon error transcript
was found: the unit tests for those are CONSTRUCTED from the header and cell texts the research
(docs/research/issue-24-clocks-dmon.md §2a/§2b/§2d/§3d) quotes from real captures and the DCGM
source, and say so.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rackops.parsers import ParseError, as_jsonable
from rackops.parsers.dcgmi_dmon import parse_dcgmi_dmon
from rackops.parsers.nvidia_smi_perf import (
    REASON_BITS,
    parse_smi_any,
    parse_smi_perf,
    parse_smi_samples,
    reasons,
)

FIXTURES = Path(__file__).parent / "fixtures"
PARSERS: dict[str, Callable[[str], Any]] = {
    "nvidia-smi-perf": parse_smi_any,  # the -q report or the --query-gpu -lms stream
    "dcgmi-dmon": parse_dcgmi_dmon,
}
CASES = sorted(p for tool in PARSERS for p in (FIXTURES / tool).glob("*.txt"))


def _parse(tool: str, text: str) -> Any:
    try:
        return as_jsonable(PARSERS[tool](text))
    except ParseError as exc:
        return {"error": str(exc)}


def test_fixtures_are_there() -> None:
    assert len(list((FIXTURES / "nvidia-smi-perf").glob("*.txt"))) >= 6
    assert len(list((FIXTURES / "dcgmi-dmon").glob("*.txt"))) >= 3


@pytest.mark.parametrize("case", CASES, ids=[f"{p.parent.name}/{p.stem}" for p in CASES])
def test_fixture_parses_as_expected(case: Path) -> None:
    expected = json.loads(case.with_suffix(".json").read_text())
    got = json.loads(json.dumps(_parse(case.parent.name, case.read_text()), sort_keys=True))
    assert got == expected


@pytest.mark.parametrize("case", CASES, ids=[f"{p.parent.name}/{p.stem}" for p in CASES])
def test_cut_fixtures_are_never_complete(case: Path) -> None:
    got = _parse(case.parent.name, case.read_text())
    if case.stem.startswith("cut-"):
        assert got.get("complete") is False


def _fx(tool: str, name: str) -> str:
    return (FIXTURES / tool / f"{name}.txt").read_text()


# ------------------------------------------------------------------------ -q text


def test_both_section_names() -> None:
    old = parse_smi_perf(_fx("nvidia-smi-perf", "v100-418-throttle-flat-power-trimmed"))
    new = parse_smi_perf(_fx("nvidia-smi-perf", "h100x8-535-hw-power-brake"))
    assert old.gpus[0].reasons["gpu_idle"] is True
    assert (
        set(old.gpus[0].reasons)
        == set(new.gpus[0].reasons)
        == set(REASON_BITS.values())
        - {
            "board_limit",
            "reliability",
        }
    )
    assert new.complete and len(new.gpus) == 8
    for g in new.gpus:
        assert g.reasons["hw_slowdown"] and g.reasons["hw_power_brake_slowdown"]
        assert g.reasons["hw_thermal_slowdown"] is False
    assert new.gpus[0].sm_clock_mhz == 86 and new.gpus[0].power_w == 67.74


def test_counters_block_is_not_the_reasons_block() -> None:
    got = parse_smi_perf(_fx("nvidia-smi-perf", "h100-590-load-event-counters"))
    g = got.gpus[0]
    assert got.complete and g.reasons["sync_boost"] is False
    assert g.reason_counters_us == dict.fromkeys(
        (
            "sw_power_cap",
            "sync_boost",
            "sw_thermal_slowdown",
            "hw_thermal_slowdown",
            "hw_power_brake_slowdown",
        ),
        0,
    )
    assert (g.power_w, g.power_instant_w, g.power_limit_w) == (629.45, 588.39, 700.0)
    assert (g.sm_clock_mhz, g.mem_clock_mhz) == (1980, 2619)  # Clocks, not Max Clocks


def test_relative_vs_absolute_thresholds() -> None:
    rel = parse_smi_perf(_fx("nvidia-smi-perf", "h100-590-load-event-counters")).gpus[0]
    assert rel.slowdown_relative is True
    assert (rel.shutdown_temp_c, rel.slowdown_temp_c, rel.max_operating_temp_c) == (-8, -2, 0)
    assert (rel.temp_c, rel.tlimit_c) == (59, 26)
    ab = parse_smi_perf(_fx("nvidia-smi-perf", "h800-525-throttle-absolute-i0")).gpus[0]
    assert ab.slowdown_relative is False
    assert (ab.shutdown_temp_c, ab.slowdown_temp_c, ab.max_operating_temp_c) == (92, 89, 87)
    assert (ab.mem_max_operating_temp_c, ab.tlimit_c) == (95, 51)
    assert ab.power_limit_w == 700.0  # Enforced Power Limit (flat Power Readings)


def test_a_block_mixing_both_forms_is_not_complete() -> None:
    text = _fx("nvidia-smi-perf", "h100-590-idle").replace(
        "GPU Shutdown T.Limit Temp   ", "GPU Shutdown Temp           "
    )
    got = parse_smi_perf(text)
    assert not got.complete and any("absolute and" in e for e in got.errors)


def test_na_sub_reasons_under_not_active_parent() -> None:
    # the nvidia-docker#1090 lines quoted by the research (children N/A, parent Not Active)
    text = _fx("nvidia-smi-perf", "v100-418-throttle-flat-power-trimmed")
    text = text.replace(
        "            HW Thermal Slowdown     : Not Active",
        "            HW Thermal Slowdown     : N/A",
    ).replace(
        "            HW Power Brake Slowdown : Not Active",
        "            HW Power Brake Slowdown : N/A",
    )
    g = parse_smi_perf(text).gpus[0]
    assert g.reasons["hw_slowdown"] is False
    assert g.reasons["hw_thermal_slowdown"] is None and g.reasons["hw_power_brake_slowdown"] is None


def test_gpu_header_without_sections_is_not_complete() -> None:
    head = _fx("nvidia-smi-perf", "rtxpro-580-d-memory-performance-excerpt").split("GPU 0000")[0]
    got = parse_smi_perf(head + "GPU 00000000:42:00.0\n")
    assert not got.complete and any("no clocks/reasons" in e for e in got.errors)


def test_cut_anywhere_in_a_complete_q_is_never_complete() -> None:
    text = _fx("nvidia-smi-perf", "h100-590-load-event-counters")
    lines = text.splitlines(keepends=True)
    end = max(i for i, x in enumerate(lines) if x.strip().startswith("Processes"))
    for k in range(1, end + 1):
        for cut in ("".join(lines[:k]), "".join(lines[:k]) + lines[k][: len(lines[k]) // 2]):
            try:
                got = parse_smi_perf(cut)
            except ParseError:
                continue
            assert got.complete is False, cut[-200:]


def test_smi_failure_is_a_parse_error() -> None:
    for text in (
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
        "Make sure that the latest NVIDIA driver is installed and running.\n",
        "random words\n",
        "",
    ):
        with pytest.raises(ParseError):
            parse_smi_perf(text)


# ------------------------------------------------------------------------ bitmask


def test_bitmask_decoding() -> None:
    assert reasons(0x40) == ("hw_thermal_slowdown",)
    assert reasons(0x80) == ("hw_power_brake_slowdown",)
    assert reasons(0x8) == ("hw_slowdown",)
    assert reasons(0x88) == ("hw_slowdown", "hw_power_brake_slowdown")
    assert reasons(0x0) == ()
    assert reasons(0x1) == ("gpu_idle",) and reasons(0x4) == ("sw_power_cap",)
    assert len(reasons(0x1FF)) == 9 and reasons(0x100) == ("display_clock_setting",)
    assert reasons(0x800) == ("unknown_0x800",)
    with pytest.raises(ParseError):
        reasons(1 << 64)


# ------------------------------------------------------------------- CSV samples
# CONSTRUCTED from the research's real header names (§2a/§2b) and cell texts: " 0x…0001",
# " [N/A]", bare " N/A" (temperature.memory on RTX 2080S/595), "700.00 W", "1980 MHz".

HEADER = (
    "timestamp, index, pci.bus_id, clocks.current.sm [MHz], clocks.current.memory [MHz], "
    "temperature.gpu, temperature.memory, power.draw [W], power.limit [W], "
    "clocks_event_reasons.active\n"
)
ROW_IDLE = (
    "2026/07/14 08:12:38.696, 0, 00000000:00:09.0, 345, 2619, 41, 48, 69.85, 700.00, "
    "0x0000000000000001\n"
)
ROW_LOAD = (
    "2026/07/14 08:12:53.353, 0, 00000000:00:09.0, 1980 MHz, 2619 MHz, 59, N/A, 631.95 W, "
    "700.00 W, 0x0000000000000088\n"
)
ROW_NA = "2026/06/24 10:26:34.977, 1, 00000000:01:00.0, 765, [N/A], 40, N/A, 39.32, [N/A], [N/A]\n"


def test_samples_stream() -> None:
    got = parse_smi_samples(HEADER + ROW_IDLE + ROW_NA + ROW_LOAD)
    assert got.complete and len(got.samples) == 3
    idle, na, load = got.samples
    assert idle.reasons == ("gpu_idle",) and idle.sm_clock_mhz == 345
    assert load.reasons_mask == 0x88 and load.reasons == ("hw_slowdown", "hw_power_brake_slowdown")
    assert load.sm_clock_mhz == 1980 and load.power_w == 631.95 and load.mem_temp_c is None
    assert na.mem_clock_mhz is None and na.power_limit_w is None and na.reasons_mask is None
    assert na.mem_temp_c is None and na.reasons == ()
    assert list(got.by_gpu()) == ["00000000:00:09.0", "00000000:01:00.0"]
    assert len(got.by_gpu()["00000000:00:09.0"]) == 2


def test_samples_old_name_and_repeated_header() -> None:
    head = HEADER.replace("clocks_event_reasons", "clocks_throttle_reasons")
    got = parse_smi_samples(head + ROW_IDLE + head + ROW_LOAD)
    assert got.complete and [s.reasons_mask for s in got.samples] == [1, 0x88]
    with pytest.raises(ParseError):
        parse_smi_samples(HEADER + ROW_IDLE + head + ROW_LOAD)  # another field list


def test_samples_cut_rows_are_not_complete() -> None:
    short = parse_smi_samples(HEADER + ROW_IDLE[:60] + "\n" + ROW_LOAD)
    assert not short.complete and len(short.samples) == 1
    nonl = parse_smi_samples(HEADER + ROW_IDLE + ROW_LOAD[:-1])
    assert not nonl.complete and len(nonl.samples) == 1  # the unterminated row is dropped
    cut_mask = parse_smi_samples(HEADER + ROW_IDLE + ROW_LOAD[:-4])
    assert not cut_mask.complete
    assert not parse_smi_samples(HEADER).complete


def test_samples_errors() -> None:
    with pytest.raises(ParseError):
        parse_smi_samples("NVIDIA-SMI has failed because it couldn't communicate\n")
    with pytest.raises(ParseError):
        parse_smi_samples(ROW_IDLE)  # no header
    bad = parse_smi_samples(HEADER + ROW_IDLE.replace(" 41,", " hot,"))
    assert not bad.complete and bad.samples[0].temp_c is None


# ------------------------------------------------------------------------ dcgmi dmon


def test_dmon_real_outputs() -> None:
    na = parse_dcgmi_dmon(_fx("dcgmi-dmon", "h800-nvl-pcie-first-na"))
    assert na.complete and na.fields == ("NVLTX", "NVLRX", "PCITX", "PCIRX")
    assert na.rows[0].values == dict.fromkeys(na.fields)
    assert na.rows[-1].values["PCITX"] == 548740
    four = parse_dcgmi_dmon(_fx("dcgmi-dmon", "h800x4-nvltx-nvlrx"))
    assert [r.id for r in four.rows[:4]] == [3, 2, 1, 0] and len(four.rows) == 24


# CONSTRUCTED from the 3.x layout in dcgmi/DeviceMonitor.cpp (research §3d): `{:<10}` first
# column, left-aligned width+6+2 columns, doubles with 3 decimals, 112 in decimal, the two
# header lines again after 14 iterations. Cell texts as in the research's §3c ii rows.
DMON_HEAD = (
    "#Entity   SMCLK      MMCLK      DVCCTR                    TMPTR      POWER          \n"
    "ID                                                        C          W              \n"
)


def _dmon_row(gpu: int, mask: str) -> str:
    return f"GPU {gpu}     1980       2619       {mask:<26}45         57.430         \n"


def test_dmon_repeated_headers_and_decimal_112() -> None:
    text = DMON_HEAD + _dmon_row(1, "0") + _dmon_row(0, "136") + DMON_HEAD + _dmon_row(1, "72")
    got = parse_dcgmi_dmon(text)
    assert got.complete and len(got.rows) == 3
    assert got.units == ("", "", "", "C", "W")
    assert got.column("DVCCTR") == (0, 136, 72)
    assert reasons(136) == ("hw_slowdown", "hw_power_brake_slowdown")  # 136 == 0x88
    assert reasons(72) == ("hw_slowdown", "hw_thermal_slowdown")  # 72 == 0x48
    assert got.rows[0].values["POWER"] == 57.43 and got.rows[1].id == 0


def test_dmon_2x_header_and_na() -> None:
    text = "# Entity  TMPTR  POWER\n      Id      C      W\n    GPU 0     N/A  57.430\n"
    got = parse_dcgmi_dmon(text)
    assert got.complete and got.units == ("C", "W")
    assert got.rows[0].values == {"TMPTR": None, "POWER": 57.43}


def test_dmon_cut_and_errors() -> None:
    full = _fx("dcgmi-dmon", "h800-nvl-pcie-first-na")
    assert not parse_dcgmi_dmon(full.rstrip("\n")).complete
    assert not parse_dcgmi_dmon(full.replace("498948 ", "")).complete  # a row short of a cell
    assert not parse_dcgmi_dmon(DMON_HEAD).complete
    with pytest.raises(ParseError):
        parse_dcgmi_dmon(
            "Error: Unable to connect to host engine. Host engine connection invalid\n"
        )
    with pytest.raises(ParseError):
        parse_dcgmi_dmon(DMON_HEAD + _dmon_row(0, "0") + DMON_HEAD.replace("POWER", "PVIOL"))
    with pytest.raises(ParseError):
        parse_dcgmi_dmon(_dmon_row(0, "0"))  # rows without a header
    late = parse_dcgmi_dmon(DMON_HEAD + _dmon_row(0, "0") + "Error: Host engine is not valid\n")
    assert not late.complete and late.errors


@pytest.mark.parametrize("tool", sorted(PARSERS))
@settings(max_examples=150, deadline=None)
@given(text=st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=400))
def test_arbitrary_text_is_never_complete(tool: str, text: str) -> None:
    try:
        got = PARSERS[tool](text)
    except ParseError:
        return
    assert got.complete is False, (tool, text)
    json.dumps(as_jsonable(got))


@settings(max_examples=150, deadline=None)
@given(text=st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=400))
def test_arbitrary_csv_is_never_complete(text: str) -> None:
    try:
        got = parse_smi_samples(text)
    except ParseError:
        return
    assert got.complete is False, text
