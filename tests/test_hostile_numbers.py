"""Numbers that cannot be numbers (issue 41): a non-finite figure in any tool's output is an
unreadable output, never an ordinary value, and a figure past what the hardware can do is
garbage, never a pass. Each probe is a real layout with one figure replaced."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rackops.checks import check_perftest
from rackops.cli import main
from rackops.findings import Status, worst
from rackops.parsers import ParseError
from rackops.profiles import load_profile
from rackops.tools import parse

FIXTURES = Path(__file__).parent / "fixtures"
PROFILE = load_profile("h100-sxm-ndr").profile  # 400 Gb/s NDR ports


def _text(tool: str, name: str) -> str:
    return (FIXTURES / tool / f"{name}.txt").read_text()


PROBES = [  # (tool, fixture, the figure as printed, the hostile figure)
    ("perftest", "write-bw-ndr-gbits", "392.47", "1e999"),
    ("perftest", "write-bw-ndr-gbits", "392.47", "nan"),
    ("perftest", "json-bw-gbits", "391.66", "NaN"),
    ("perftest", "json-bw-gbits", "391.66", "Infinity"),
    ("nvidia-smi-nvlink", "h100x8-18-links", "26.562 GB/s", "nan GB/s"),
    ("nvidia-smi-nvlink", "h100x8-18-links", "26.562 GB/s", "inf GB/s"),
]


@pytest.mark.parametrize(("tool", "fixture", "real", "hostile"), PROBES)
def test_a_non_finite_figure_is_an_unreadable_output(
    tool: str, fixture: str, real: str, hostile: str
) -> None:
    text = _text(tool, fixture)
    assert real in text
    try:
        got = parse(tool, text.replace(real, hostile))
    except ParseError as exc:
        assert "not a finite number" in str(exc) or "garbled" in str(exc)
        return
    # a row perftest's table layout does not hold ("nan" is no number): never whole
    assert getattr(got, "complete", True) is False, got


def test_parse_json_never_prints_nan(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "out.txt"
    f.write_text(_text("perftest", "json-bw-gbits").replace("391.66", "NaN"))
    assert main(["parse", "perftest", str(f), "--format", "json"]) == 3
    out, err = capsys.readouterr()
    assert "NaN" not in out and "not a finite number" in err


@pytest.mark.parametrize("bw", ["4000.00", "1.7e308"])
def test_a_bandwidth_past_the_line_rate_is_an_error_not_a_pass(bw: str) -> None:
    """4000 Gb/s on a 400 Gb/s port (its own MsgRate column says ~392): not a measurement."""
    text = _text("perftest", "write-bw-ndr-gbits").replace("392.47", bw)
    found = check_perftest(parse("perftest", text), PROFILE)
    assert worst(found) is Status.ERROR, found
    assert any("line rate" in f.message for f in found), [f.message for f in found]
    json.dumps([f.as_dict() for f in found], allow_nan=False)


def _no_constants(name: str) -> None:
    raise AssertionError(f"{name} in JSON rackops wrote")


@pytest.mark.parametrize("nodes", [8, 64])
@pytest.mark.parametrize("figure", [1.7e308, 1e308])
def test_a_huge_finite_figure_never_breaks_the_report(
    tmp_path: Path, figure: float, nodes: int
) -> None:
    """A finite but absurd link figure (the overflow probe): the report is still written,
    every JSON file rackops writes is JSON (no Infinity), and the actions file exists."""
    from rackops.validate.report import write_reports
    from rackops.validate.rundir import RunDir
    from rackops.validate.synthrun import make_run

    run = make_run(tmp_path / "run", nodes=nodes, seed=3)
    lines = (run / "results.jsonl").read_text().splitlines()
    out = []
    hit = False
    for line in lines:
        rec = json.loads(line)
        if rec["kind"] == "pair" and not hit and "bw_gbps" in rec.get("meta", {}):
            rec["meta"]["bw_gbps"] = figure
            for f in rec["findings"]:
                if f.get("unit") == "Gb/s":
                    f["observed"] = figure
            hit = True
        out.append(json.dumps(rec))
    assert hit
    (run / "results.jsonl").write_text("\n".join(out) + "\n")
    write_reports(RunDir(run))
    json.loads((run / "report.json").read_text(), parse_constant=_no_constants)
    assert (run / "report.html").is_file() and (run / "actions.sh").is_file()


@pytest.mark.parametrize(
    ("real", "altered"),
    [
        ("47535  180.71", "47535  4000.0"),  # algbw raised; busbw and the average untouched
        ("8589934592    2147483648", "17179869184    2147483648"),  # its time says otherwise
    ],
    ids=["algbw", "size"],
)
def test_an_nccl_row_whose_figures_contradict_each_other_is_not_a_result(
    real: str, altered: str
) -> None:
    """nccl-tests prints algbw = size / time: a row where they disagree (past what the
    printed digits allow) was altered or garbled; the run is not complete, so not OK."""
    from rackops.checks import check_nccl

    text = _text("nccl-tests", "all-reduce-h100-2node-16rank-a3mega-full")
    assert parse("nccl-tests", text).complete
    assert real in text
    got = parse("nccl-tests", text.replace(real, altered, 1))
    assert not got.complete and any("not its size over its time" in c for c in got.cut), got.cut
    assert worst(check_nccl(got, PROFILE)) is not Status.OK
