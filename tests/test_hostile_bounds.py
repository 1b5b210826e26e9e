"""Every reader is bounded (issue 41): the cost of reading a run directory is its files, not
its records. 61 records naming one 5 MiB raw NCCL output are read and parsed once."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rackops.validate import rundir as rundir_module
from rackops.validate.report import write_reports
from rackops.validate.rundir import RunDir
from rackops.validate.synthrun import make_run

FIXTURE = Path(__file__).parent / "fixtures" / "nccl-tests" / "all-reduce-2node-16rank-2022.txt"


def test_one_raw_file_named_by_many_records_is_parsed_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = make_run(tmp_path / "run", nodes=8, seed=3)
    text = FIXTURE.read_text()
    lines = text.splitlines(keepends=True)
    pad = "#  padding a hostile run directory added to make the file large\n"
    big = lines[:3] + [pad] * (5 * 2**20 // len(pad)) + lines[3:]
    (run / "raw" / "big.out").write_text("".join(big))
    (run / "raw" / "big.err").write_text("")
    with (run / "results.jsonl").open("a") as fh:
        for i in range(61):
            rec = {
                "schema": 2,
                "id": f"node/node0001/nccl-copy{i}",
                "kind": "node",
                "node": "node0001",
                "tool": "nccl-tests",
                "findings": [
                    {
                        "code": "NCCL-OK",
                        "status": "OK",
                        "subject": {"node": "node0001"},
                        "message": "copied",
                    }
                ],
                "meta": {},
                "stdout": "raw/big.out",
                "stderr": "raw/big.err",
            }
            fh.write(json.dumps(rec) + "\n")
    parsed: list[str] = []
    real = rundir_module.parse

    def counted(tool: str, body: str, *limits: Any) -> Any:
        parsed.append(tool)
        return real(tool, body, *limits)

    monkeypatch.setattr(rundir_module, "parse", counted)
    report, _, _ = write_reports(RunDir(run))
    assert parsed.count("nccl-tests") == 1, len(parsed)
    assert sum(c["name"].startswith("node/node0001/nccl-copy") for c in report["nccl_curves"]) == 61


# --- a saved running config is bounded in aliases, depth and size before it is built ------

ROOT = Path(__file__).resolve().parent.parent
LAUGHS = "".join(
    [
        "- set:\n",
        '    l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n',
        *(f"    l{i}: &l{i} [{','.join([f'*l{i - 1}'] * 9)}]\n" for i in range(1, 9)),
    ]
)


def _render_limited(args: list[str], timeout: float = 30) -> subprocess.CompletedProcess[str]:
    """`rackops` in a child limited to 1 GiB of address space: a blow-up fails there."""

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2**30, 2**30))

    return subprocess.run(
        [sys.executable, "-m", "rackops", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=cap,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


@pytest.mark.parametrize(
    "switch, body, why",
    [
        ("leaf-r3", LAUGHS, "alias"),
        ("leaf-r3", "- set:\n    k:\n    " + "- " * 5000 + "x\n", "deep"),
        ("leaf-r3", "- set: " + "[" * 200_000, "deep"),
        ("leaf-r0", "[" * 200_000, "deep"),
        ("leaf-r0", '{"PORT": ' + "[" * 900 + "]" * 900 + "}", "deep"),
        ("leaf-r3", "- set:\n    k:\n    " + "- " * 300 + "x\n", "deep"),  # under libyaml's
    ],
    ids=[
        "nvue-alias-bomb",
        "nvue-5k-deep",
        "nvue-flow-200k",
        "sonic-200k",
        "sonic-900-deep",
        "nvue-300-deep",
    ],
)
def test_a_hostile_running_config_is_refused_before_it_is_built(
    switch: str, body: str, why: str, tmp_path: Path
) -> None:
    running = tmp_path / "running.txt"
    running.write_text(body)
    inv = str(ROOT / "inventories/example-roce")
    out = tmp_path / "out"
    args = ["render", "-i", inv, "-o", str(out), "--switch", switch, "--diff", str(running)]
    proc = _render_limited(args)
    text = proc.stdout + proc.stderr
    assert proc.returncode == 3, text[-2000:]  # bad input: one line naming the file
    assert "Traceback" not in text and "Error:" not in text.replace("error:", ""), text[-2000:]
    line = next(x for x in proc.stderr.splitlines() if "running.txt" in x)
    assert why in line, line
