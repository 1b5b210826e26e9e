"""Parser throughput on the fixture corpus: how many outputs per second one core reads.

    .venv/bin/python bench/parsers.py [--rounds 20]

A 1000-node acceptance run produces ~20 outputs per node; this says whether parsing is
ever the bottleneck (it is not: the tools take minutes, parsing takes milliseconds).
"""

from __future__ import annotations

import argparse
import contextlib
import time
from collections import defaultdict
from pathlib import Path

from rackops.parsers import ParseError
from rackops.tools import parse

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=20)
    args = ap.parse_args()
    cases = [(p.parent.name, p.read_text()) for p in sorted(FIXTURES.glob("*/*.txt"))]
    per_tool: dict[str, list[float]] = defaultdict(list)
    for tool, text in cases:
        t0 = time.perf_counter()
        for _ in range(args.rounds):
            with contextlib.suppress(ParseError):
                parse(tool, text)
        per_tool[tool].append((time.perf_counter() - t0) / args.rounds)
    total = sum(sum(v) for v in per_tool.values())
    print(f"{'tool':20} {'cases':>5} {'ms/output':>10}")
    for tool, times in sorted(per_tool.items()):
        print(f"{tool:20} {len(times):>5} {1000 * sum(times) / len(times):>10.3f}")
    print(
        f"{'all':20} {len(cases):>5} {1000 * total / len(cases):>10.3f}"
        f"   ({len(cases) / total:.0f} outputs/s on one core)"
    )


if __name__ == "__main__":
    main()
