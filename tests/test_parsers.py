"""The fixture corpus: every captured output beside its expected parse, and fuzzing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rackops.cli import main
from rackops.parsers import ParseError, as_jsonable
from rackops.parsers._common import plain
from rackops.tools import get as get_tool
from rackops.tools import parse, parsed_tools

TOOLS = parsed_tools()

FIXTURES = Path(__file__).parent / "fixtures"
CASES = sorted(FIXTURES.glob("*/*.txt"))


def test_corpus_is_there() -> None:
    assert len(CASES) >= 60, f"only {len(CASES)} fixtures"
    assert {p.parent.name for p in CASES} == set(TOOLS), "every tool needs fixtures"
    for case in CASES:
        assert case.with_suffix(".json").exists(), f"{case} has no expected parse"


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_every_fixture_is_cited_in_its_tools_sources(tool: str) -> None:
    """Every tool has a SOURCES.md that names each of its fixtures and says what it is: a
    real output (cited), composed in a real layout, or derived from another fixture."""
    sources = FIXTURES / tool / "SOURCES.md"
    assert sources.is_file(), f"{tool} has no SOURCES.md"
    text = sources.read_text()
    cases = [c for c in CASES if c.parent.name == tool]
    assert cases, f"{tool} has no fixtures"
    uncited = [c.name for c in cases if f"`{c.name}`" not in text]
    assert uncited == [], f"{tool}: not in SOURCES.md: {uncited}"


@pytest.mark.parametrize("case", CASES, ids=[f"{p.parent.name}/{p.stem}" for p in CASES])
def test_fixture_parses_as_expected(case: Path) -> None:
    expected = json.loads(case.with_suffix(".json").read_text())
    try:
        got = as_jsonable(parse(case.parent.name, case.read_text()))
    except ParseError as exc:
        got = {"error": str(exc)}
    assert json.loads(json.dumps(got, sort_keys=True)) == expected


@pytest.mark.parametrize("case", CASES, ids=[f"{p.parent.name}/{p.stem}" for p in CASES])
def test_cli_parse_exit_code(case: Path, capsys: pytest.CaptureFixture[str]) -> None:
    expected = json.loads(case.with_suffix(".json").read_text())
    rc = main(["parse", case.parent.name, str(case), "--format", "json"])
    out, err = capsys.readouterr()
    if "error" in expected:
        assert rc == 3 and expected["error"] in err
    else:
        assert rc == 0 and json.loads(out) == expected


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_empty_input_is_an_error(tool: str) -> None:
    """Empty output is an error, except where the tool means something by it (its
    ``empty``: ``nvidia-smi nvlink -s`` on GPUs with no NVLink), and then only that."""
    from rackops.tools import get

    if get(tool).empty is None:
        with pytest.raises(ParseError):
            parse(tool, "  \n")
    else:
        assert parse(tool, "  \n") == get(tool).empty()  # type: ignore[misc]


@pytest.mark.parametrize("tool", sorted(TOOLS))
@settings(max_examples=150, deadline=None)
@given(text=st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=400))
def test_arbitrary_text_raises_only_parse_error(tool: str, text: str) -> None:
    """Random text is a ParseError or an incomplete result, never a complete output."""
    try:
        got = parse(tool, text)
    except ParseError:
        return
    if not plain(text).strip() and get_tool(tool).empty is not None:
        return  # the tool's own answer to printing nothing (test_empty_input_is_an_error)
    # a result that cannot say it is incomplete must never come of random text
    assert hasattr(got, "complete"), (tool, text, got)
    assert got.complete is False, (tool, text, got)
    json.dumps(as_jsonable(got))


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_every_tool_parses_some_fixture(tool: str) -> None:
    """The fuzz tests above pass for a parser that always raises; this one does not."""
    good = [
        c
        for c in CASES
        if c.parent.name == tool and "error" not in json.loads(c.with_suffix(".json").read_text())
    ]
    assert good, f"{tool}: no fixture that parses"
    for case in good:
        parse(tool, case.read_text())


@pytest.mark.parametrize("case", CASES[::3], ids=[f"{p.parent.name}/{p.stem}" for p in CASES[::3]])
@settings(max_examples=30, deadline=None)
@given(cut=st.floats(min_value=0.05, max_value=0.95), noise=st.text(max_size=20))
def test_mangled_fixture_raises_only_parse_error(case: Path, cut: float, noise: str) -> None:
    """Cut a real layout anywhere and add noise: a result or ParseError, nothing else."""
    text = case.read_text()
    mangled = text[: int(len(text) * cut)] + noise
    try:
        got = parse(case.parent.name, mangled)
    except ParseError:
        return
    json.dumps(as_jsonable(got))


def test_unreadable_file_exit_3(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["parse", "ibstat", str(tmp_path / "missing.txt")]) == 3
    assert "cannot read" in capsys.readouterr().err


def test_unknown_tool_is_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["parse", "ibstatx", "-"])
    assert exc.value.code == 64


# where a complete output of a tool ends: a cut anywhere before it is never complete
END_MARKER = {
    "nccl-tests": lambda lines: max(i for i, x in enumerate(lines) if "Avg bus bandwidth" in x),
    "perftest": lambda lines: max(i for i, x in enumerate(lines) if x.strip().startswith("---")),
    "dcgmi-diag": lambda lines: max(i for i, x in enumerate(lines) if x.strip().startswith("+--")),
    "nvidia-smi-xml": lambda lines: max(i for i, x in enumerate(lines) if "</nvidia_smi_log>" in x),
}
COMPLETE = [
    c
    for c in CASES
    if c.parent.name in END_MARKER
    and not c.read_text().lstrip().startswith("{")
    and json.loads(c.with_suffix(".json").read_text()).get("complete") is True
]


@pytest.mark.parametrize("case", COMPLETE, ids=[f"{p.parent.name}/{p.stem}" for p in COMPLETE])
def test_cut_anywhere_before_the_end_is_never_complete(case: Path) -> None:
    """Cut at every line and mid-line before the tool's last line (the summary, the table's
    closing border, the closing tag): a ParseError or complete=False, never a pass."""
    lines = case.read_text().splitlines(keepends=True)
    end = END_MARKER[case.parent.name](lines)
    cuts = ["".join(lines[:k]) for k in range(1, end + 1)]
    cuts += ["".join(lines[:k]) + lines[k][: len(lines[k]) // 2] for k in range(end + 1)]
    assert cuts
    for text in cuts:
        try:
            got = parse(case.parent.name, text)
        except ParseError:
            continue
        assert got.complete is False, text[-200:]  # type: ignore[attr-defined]


def test_an_input_larger_than_any_tool_output_is_refused_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from rackops.cli import MAX_INPUT_BYTES

    big = tmp_path / "big.txt"
    one = (FIXTURES / "ibstat/h100x8-ndr-healthy.txt").read_text()
    big.write_text(one * (MAX_INPUT_BYTES // len(one) + 2))
    assert main(["parse", "ibstat", str(big)]) == 3
    assert "more than 16 MB" in capsys.readouterr().err
