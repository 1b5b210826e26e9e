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

_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")


class RunDir:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.raw = path / "raw"
        self.results = path / "results.jsonl"
        self._lock = threading.Lock()
        self.raw.mkdir(parents=True, exist_ok=True)

    def done_ids(self) -> set[str]:
        return {r["id"] for r in self.records()}

    def records(self) -> list[dict[str, Any]]:
        if not self.results.exists():
            return []
        out = []
        for line in self.results.read_text().splitlines():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # a line cut by a crash: that step runs again on --resume
        return out

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

    def append(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, sort_keys=True)
        with self._lock, self.results.open("a") as fh:
            fh.write(line + "\n")
            fh.flush()

    def write_json(self, name: str, data: Any) -> None:
        (self.path / name).write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")

    def read_json(self, name: str) -> Any:
        return json.loads((self.path / name).read_text())
