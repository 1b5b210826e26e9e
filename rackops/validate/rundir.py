"""The run directory: every raw output with its argv, exit code, duration and host, and
``results.jsonl`` appended as results arrive, so a crash or Ctrl-C loses nothing and
``--resume`` continues where the run stopped."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Any

from rackops.validate.executor import CommandResult
from rackops.validate.records import Record, accept

_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")


class RunDir:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.raw = path / "raw"
        self.results = path / "results.jsonl"
        self._lock = threading.Lock()
        self.unreadable: list[int] = []  # results.jsonl lines that are not a record
        self.raw.mkdir(parents=True, exist_ok=True)

    def done_ids(self) -> set[str]:
        return {r["id"] for r in self.records()}

    def records(self) -> list[dict[str, Any]]:
        if not self.results.exists():
            return []
        out = []
        bad = []
        for n, line in enumerate(self.results.read_text(errors="replace").splitlines(), 1):
            try:
                rec = accept(json.loads(line), f"{self.results}:{n}")
            except json.JSONDecodeError:
                rec = None
            if rec is not None:
                out.append(rec)
            elif line.strip():
                bad.append(n)  # cut by a crash, or not ours: the report says so
        self.unreadable = bad
        return out

    def compact(self) -> int:
        """Drop the lines that are not records (a crash cut them; --resume runs their steps
        again). How many were dropped."""
        records = self.records()
        dropped = len(self.unreadable)
        if dropped:
            tmp = self.results.with_suffix(".jsonl.tmp")
            tmp.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in records))
            tmp.replace(self.results)
            self.unreadable = []
        return dropped

    def save_output(self, step_id: str, result: CommandResult) -> dict[str, Any]:
        stem = _SAFE.sub("_", step_id)
        out, err = self.raw / f"{stem}.out", self.raw / f"{stem}.err"
        out.write_text(result.stdout)
        err.write_text(result.stderr)
        return {
            "host": result.host,
            "argv": list(result.argv),
            "rc": result.rc,
            "duration_s": round(result.duration_s, 3),
            "timed_out": result.timed_out,
            "error": result.error,
            "stdout": str(out.relative_to(self.path)),
            "stderr": str(err.relative_to(self.path)),
        }

    def append(self, record: Record | dict[str, Any]) -> None:
        rec = record if isinstance(record, Record) else Record.of(record)
        line = json.dumps(rec.as_json(), sort_keys=True)
        with self._lock, self.results.open("a") as fh:
            fh.write(line + "\n")
            fh.flush()

    def write_json(self, name: str, data: Any) -> None:
        (self.path / name).write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")

    def read_json(self, name: str) -> Any:
        return json.loads((self.path / name).read_text())
