"""Every parser on a large input: wall time and peak memory, one subprocess per tool.

    .venv/bin/python bench/parse_large.py --mb 8

Each tool's largest fixture is repeated up to the size asked (the shape a concatenated or
runaway log takes), parsed in a fresh interpreter, and measured with resource.getrusage.
`rackops parse`/`check` refuse anything above MAX_INPUT_BYTES (16 MB) before parsing; this
shows what the largest accepted input costs.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHILD = """
import resource, sys, time
from rackops.parsers import ParseError
from rackops.tools import parse
text = open(sys.argv[2], encoding="utf-8", errors="replace").read()
t = time.perf_counter()
try:
    parse(sys.argv[1], text); how = "parsed"
except ParseError as exc:
    how = "ParseError"
dt = time.perf_counter() - t
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f"{dt:.2f} {peak:.0f} {how}")
"""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=8)
    args = ap.parse_args()
    size = int(args.mb * 1024 * 1024)
    rows = []
    for tool_dir in sorted((ROOT / "tests/fixtures").iterdir()):
        fixtures = sorted(tool_dir.glob("*.txt"), key=lambda p: p.stat().st_size)
        if not fixtures:
            continue
        text = fixtures[-1].read_text()
        big = Path(f"/tmp/rackops-bench-{tool_dir.name}.txt")
        big.write_text((text * (size // max(1, len(text)) + 1))[:size])
        out = subprocess.run(
            [sys.executable, "-c", CHILD, tool_dir.name, str(big)],
            capture_output=True, text=True, check=False, timeout=1800,
        ).stdout.split()  # fmt: skip
        big.unlink()
        rows.append((tool_dir.name, *out))
        print(json.dumps(rows[-1]), flush=True)
    print(
        f"\n| tool | {args.mb:g} MB: seconds | peak RSS MB | outcome |\n| --- | --- | --- | --- |"
    )
    for r in rows:
        print("| " + " | ".join(r) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
