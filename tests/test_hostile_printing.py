"""Every printer is clean (issue 41): what a tool printed, a file name or a neighbour's name
reaches the terminal as text, never as an escape a terminal acts on, and no field forges a
line of its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from rackops.cli import main
from rackops.validate.compare import summary

HOSTILE = "\x1b]0;owned\x07\x1b[2J\x9b31m\rFIXED  node01: all good"


def test_compare_prints_a_hostile_message_as_one_plain_line() -> None:
    culprit = {"where": "node01 mlx5_0", "message": "slow\n" + HOSTILE}
    run = {"run": "r", "verdict": "REJECTED"}
    cmp = {
        "runs": {"old": run, "new": run},
        "notes": [],
        "fixed": [],
        "new": [culprit],
        "still": [],
        "untested": [],
        "regressed": [],
        "noise_pct": 5.0,
    }
    text = summary(cmp)
    assert not any(c in text for c in "\x1b\x07\x9b\r")
    assert [ln for ln in text.splitlines() if ln.startswith("FIXED")] == []


def test_a_file_name_with_escapes_is_printed_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "x\x1b[2Jy\x07.txt"
    f.write_text("not an ibstat output\n")
    assert main(["parse", "ibstat", str(f)]) == 3
    out, err = capsys.readouterr()
    assert "x" in err and not any(c in out + err for c in "\x1b\x07")
    assert "\\x1b" in err  # shown, as text


def test_the_terminal_stream_keeps_lines_and_tabs() -> None:
    from io import StringIO

    from rackops.diagnostics import TerminalSafe

    raw = StringIO()
    TerminalSafe(raw).write("a\tb\nc\x1b[31md\x9be\r\n")
    assert raw.getvalue() == "a\tb\nc\\x1b[31md\\x9be\\r\n"


FIXTURES = Path(__file__).parent / "fixtures"
ONE_PER_TOOL = sorted(
    {p.parent.name: p for p in sorted(FIXTURES.glob("*/*.txt"), reverse=True)}.values()
)
CONTROL = set("\x1b\x07\x9b\x9d") | {chr(c) for c in range(0x80, 0xA0)}


@pytest.mark.parametrize("case", ONE_PER_TOOL, ids=[p.parent.name for p in ONE_PER_TOOL])
def test_every_tools_output_with_escapes_in_it_prints_clean(
    case: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each tool's real output with control sequences in its first line and in its middle:
    whatever `parse` and `check` print of it (values, messages, errors) is plain text."""
    from test_checks import _args

    lines = case.read_text().split("\n")
    lines[0] = HOSTILE + lines[0]
    mid = len(lines) // 2
    lines[mid] = lines[mid].replace(" ", " " + HOSTILE + " ", 1)
    hostile = tmp_path / case.name
    hostile.write_text("\n".join(lines))
    main(["parse", case.parent.name, str(hostile), "--format", "json"])
    main(["check", case.parent.name, str(hostile), *_args(case.parent.name)])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    assert not CONTROL & set(out + err), sorted(CONTROL & set(out + err))
