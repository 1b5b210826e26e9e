"""Tool output is untrusted: each attack class the probes found, as a test.

Sizes and line lengths are bounded before any parser runs, counts read from the text are
bounded before they size anything, no regex backtracks on a long line, garbage is a
ParseError (ERROR) never a traceback, and a cut output is never complete."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

import pytest

from rackops.findings import Status, worst
from rackops.parsers import ParseError
from rackops.parsers._common import MAX_INPUT_CHARS, MAX_LANES, MAX_LINE_CHARS
from rackops.parsers.host_tuning import cpus
from rackops.tools import evaluate, parse, parsed_tools
from rackops.tools.offline import build_context

FIX = Path(__file__).parent / "fixtures"


def text(tool: str, case: str) -> str:
    return (FIX / tool / f"{case}.txt").read_text()


# --- 1. bounded work ----------------------------------------------------------------------


@pytest.mark.parametrize("tool", parsed_tools())
def test_input_over_the_size_limit_is_refused_naming_it(tool: str) -> None:
    with pytest.raises(ParseError, match="MAX_INPUT_CHARS"):
        parse(tool, ("x" * 100 + "\n") * (MAX_INPUT_CHARS // 101 + 2))


@pytest.mark.parametrize("tool", parsed_tools())
def test_a_line_over_the_length_limit_is_refused_naming_it(tool: str) -> None:
    with pytest.raises(ParseError, match="MAX_LINE_CHARS"):
        parse(tool, "a" * (MAX_LINE_CHARS + 1) + "\n")


def test_channel_number_does_not_size_a_list() -> None:
    """A 7.5 KB ethtool -m capture with 'Channel 99999999' ran out of memory."""
    base = text("ethtool-module", "sff8636-qsfp-plus-40g-sr4-full-thresholds")
    hostile = base.replace("(Channel 4)", "(Channel 99999999)")
    assert hostile != base
    with pytest.raises(ParseError, match=r"lane 99999999 is outside 1\.\.32"):
        parse("ethtool-module", hostile)
    assert MAX_LANES < 1000


def test_cpu_list_range_does_not_size_a_set() -> None:
    with pytest.raises(ParseError, match="MAX_COUNT"):
        cpus("0-999999999999")


@pytest.mark.parametrize(
    ("tool", "case", "line"),
    [
        ("perftest", "write-bw-ndr-gbits", "Dual-port : OFF" + " " * 16000 + "x"),
        ("ibstat", "h100x8-ndr-healthy", "State: x" + "\t" * 16000 + "x"),
        ("nvidia-smi-nvlink", "h100x8-18-links", "GPU 0: x" + " " * 16000 + "x"),
        ("ethtool-module", "cmis-qsfp-dd-400g-dac-no-dom", "Identifier" + " " * 16000 + "x"),
    ],
)
def test_a_long_line_under_the_limit_parses_in_linear_time(tool: str, case: str, line: str) -> None:
    """A 52 KB perftest line took 54 s (backtracking); each was quadratic or worse."""
    lines = text(tool, case).splitlines(keepends=True)
    hostile = "".join(lines[:5]) + line[:MAX_LINE_CHARS] + "\n" + "".join(lines[5:])
    t = time.perf_counter()
    with contextlib.suppress(ParseError):
        parse(tool, hostile)
    assert time.perf_counter() - t < 1.0


@pytest.mark.parametrize(
    "hostile",
    [
        "\x9d" * 2_000_000,  # OSC starts (C1), none ended: 43 s before its body excluded them
        ("\x1b]" + "a" * 4095) * 500,  # unended titles, each as long as one may be
        "\x1b[" + "1" * 2_000_000,  # a CSI whose parameters never end
        "a\b" * 1_000_000,  # overstrikes
        ("x\r" * 1000 + "\n") * 1000,  # progress redrawn a thousand times per line
    ],
    ids=["c1-osc-starts", "unended-osc", "endless-csi", "backspaces", "cr-redraws"],
)
def test_terminal_control_text_is_read_in_linear_time(hostile: str) -> None:
    """What a terminal acts on is removed (parsers/_common.plain) before any parser looks,
    on every output: hostile control text costs a scan, never a backtracking search."""
    t = time.perf_counter()
    with contextlib.suppress(ParseError):
        parse("ibstat", hostile)
    assert time.perf_counter() - t < 2.0


# --- 2. no traceback: garbage is an ERROR -------------------------------------------------


def test_text_in_a_numeric_nvidia_smi_field_is_a_parse_error() -> None:
    base = text("nvidia-smi-query", "h100x8-idle-gen1-header")
    header, first, *rest = base.splitlines(keepends=True)
    hostile = header + first.replace(first.split(",")[0], "abc", 1) + "".join(rest)
    with pytest.raises(ParseError):
        parse("nvidia-smi-query", hostile)
    ctx = build_context("h100-sxm-ndr", None, None, None)
    assert worst(evaluate("nvidia-smi-query", hostile, ctx, None)) is Status.ERROR


def test_a_check_crashing_on_a_value_is_an_error_finding(monkeypatch: pytest.MonkeyPatch) -> None:
    import dataclasses

    from rackops import tools

    t = tools.get("ibstat")

    def boom(parsed: object, ctx: object, node: object) -> list[object]:
        raise TypeError("'<' not supported between instances of 'str' and 'int'")

    monkeypatch.setitem(tools.registry(), "ibstat", dataclasses.replace(t, check=boom))
    ctx = build_context("h100-sxm-ndr", None, None, None)
    findings = evaluate("ibstat", text("ibstat", "h100x8-ndr-healthy"), ctx, None)
    assert worst(findings) is Status.ERROR


# --- 3. cut captures are never complete ---------------------------------------------------


@pytest.mark.parametrize(
    "case", ["cut-text-second-neighbour-without-chassis", "cut-keyvalue-first-five-lines"]
)
def test_lldp_neighbour_without_chassis_or_port_id_is_cut(case: str) -> None:
    got = parse("lldpctl", text("lldpctl", case))
    assert got.complete is False and any("no " in e for e in got.errors)


def test_lldp_json_neighbour_without_port_id_is_cut() -> None:
    import json

    doc = json.loads(text("lldpctl", "json-one-interface"))
    body = next(iter(doc["lldp"]["interface"].values()))
    body.pop("port")
    assert parse("lldpctl", json.dumps(doc)).complete is False


@pytest.mark.parametrize(
    "case", ["cut-a3mega-three-rows-removed", "cut-a3mega-rows-replaced-by-a-comment"]
)
def test_nccl_table_with_rows_cut_out_is_not_complete(case: str) -> None:
    assert parse(
        "nccl-tests", text("nccl-tests", "all-reduce-h100-2node-16rank-a3mega-full")
    ).complete
    got = parse("nccl-tests", text("nccl-tests", case))
    assert got.complete is False and got.cut
    ctx = build_context("h100-sxm-ndr", None, None, None)
    assert worst(evaluate("nccl-tests", text("nccl-tests", case), ctx, None)) is Status.ERROR


def test_nccl_average_the_rows_cannot_produce_is_cut() -> None:
    base = text("nccl-tests", "all-reduce-h100-2node-16rank-a3mega-full")
    hostile = base.replace("Avg bus bandwidth    : 70.742", "Avg bus bandwidth    : 75.742")
    assert parse("nccl-tests", hostile).complete is False


@pytest.mark.parametrize("case", ["cut-fragment-gpu2-to-gpu7", "cut-fragment-inside-gpu4-links"])
def test_nvlink_fragment_is_not_complete(case: str) -> None:
    assert parse("nvidia-smi-nvlink", text("nvidia-smi-nvlink", case)).complete is False


def test_nvlink_fewer_links_than_the_profile_is_an_error_not_links_down() -> None:
    lines = text("nvidia-smi-nvlink", "h100x8-18-links").splitlines(keepends=True)
    # every GPU block keeps its first 12 links only: consistent, but not what an H100 prints
    kept = [
        ln for ln in lines if not ln.strip().startswith(tuple(f"Link {i}:" for i in range(12, 18)))
    ]
    ctx = build_context("h100-sxm-ndr", None, None, None)
    findings = evaluate("nvidia-smi-nvlink", "".join(kept), ctx, None)
    assert worst(findings) is Status.ERROR
