"""Every reader is bounded (issue 41): the cost of reading a run directory is its files, not
its records. 61 records naming one 5 MiB raw NCCL output are read and parsed once."""

from __future__ import annotations

import json
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

    def counted(tool: str, body: str) -> Any:
        parsed.append(tool)
        return real(tool, body)

    monkeypatch.setattr(rundir_module, "parse", counted)
    report, _, _ = write_reports(RunDir(run))
    assert parsed.count("nccl-tests") == 1, len(parsed)
    assert sum(c["name"].startswith("node/node0001/nccl-copy") for c in report["nccl_curves"]) == 61
