"""Every parser at its limits: the largest input and the longest lines it accepts.

    .venv/bin/python bench/parsers_limits.py            # every tool
    .venv/bin/python bench/parsers_limits.py --tools perftest ethtool-module

For each tool, in a fresh interpreter (peak RSS from resource.getrusage):

* ``size``: its largest fixture repeated to exactly MAX_INPUT_CHARS (the most a parser
  reads; one character more is refused before parsing);
* ``line``: its largest fixture with, in the middle, one line of exactly MAX_LINE_CHARS in
  each of the shapes that make regexes backtrack (runs of spaces, of a label character, of
  ``key: ``, of brackets, digits) — the worst shape's time is reported.

The limits are the named constants in ``rackops/parsers/_common.py``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rackops.parsers._common import MAX_INPUT_CHARS, MAX_LINE_CHARS  # noqa: E402

# Shapes of one long line: each is repeated to MAX_LINE_CHARS.
SHAPES = (
    " ",
    "a",
    "a ",
    "a: ",
    "a:",
    "1 ",
    "9",
    "( ",
    "(Channel ",
    "[",
    "\t",
    " x ",
    "Port ",
    "BW average[",
    "Link 1: ",
    "= ",
    "| ",
)

CHILD = """
import json, resource, sys, time
from rackops.tools import parse
from rackops.parsers import ParseError
tool, path, mode = sys.argv[1], sys.argv[2], sys.argv[3]
texts = json.load(open(path)) if mode == "line" else [open(path).read()]
worst, how_worst = 0.0, ""
for text in texts:
    t = time.perf_counter()
    try:
        parse(tool, text); how = "parsed"
    except ParseError as exc:
        how = "ParseError"
    dt = time.perf_counter() - t
    if dt >= worst:
        worst, how_worst = dt, how
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f"{worst:.3f} {peak:.0f} {how_worst}")
"""


def _run(tool: str, path: Path, mode: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, tool, str(path), mode],
        capture_output=True, text=True, check=False, timeout=1800, cwd=ROOT,
    )  # fmt: skip
    return out.stdout.split() or ["-", "-", f"crashed: {out.stderr.strip()[-200:]}"]


def _inputs(tool_dir: Path) -> tuple[str, list[str]]:
    fixtures = sorted(tool_dir.glob("*.txt"), key=lambda p: p.stat().st_size)
    text = fixtures[-1].read_text()
    big = (text * (MAX_INPUT_CHARS // max(1, len(text)) + 1))[:MAX_INPUT_CHARS]
    lines = text.splitlines(keepends=True)
    mid = len(lines) // 2
    long_lines = []
    for shape in SHAPES:
        line = (shape * (MAX_LINE_CHARS // len(shape) + 1))[:MAX_LINE_CHARS]
        long_lines.append("".join(lines[:mid]) + line + "\n" + "".join(lines[mid:]))
    return big, long_lines


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tools", nargs="*")
    args = ap.parse_args()
    rows = []
    for tool_dir in sorted((ROOT / "tests/fixtures").iterdir()):
        if not list(tool_dir.glob("*.txt")) or (args.tools and tool_dir.name not in args.tools):
            continue
        big, long_lines = _inputs(tool_dir)
        size_file = Path(f"/tmp/rackops-limits-{tool_dir.name}.txt")
        size_file.write_text(big)
        line_file = size_file.with_suffix(".json")
        line_file.write_text(json.dumps(long_lines))
        size = _run(tool_dir.name, size_file, "size")
        line = _run(tool_dir.name, line_file, "line")
        size_file.unlink()
        line_file.unlink()
        rows.append((tool_dir.name, *size, *line))
        print(json.dumps(rows[-1]), flush=True)
    print(
        f"\n| tool | {MAX_INPUT_CHARS >> 20} Mi chars: s | peak RSS MB | outcome "
        f"| worst {MAX_LINE_CHARS}-char line: s | peak RSS MB | outcome |"
        "\n| --- | ---: | ---: | --- | ---: | ---: | --- |"
    )
    for r in rows:
        print("| " + " | ".join(r) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
