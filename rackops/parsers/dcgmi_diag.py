"""``dcgmi diag -r <level>`` text (DCGM 2.x/3.x/4.x) and ``-j`` JSON.

4.x text (lowercase plugin names, per-GPU rows)::

    |-----  Deployment  --------+------------------------------------------------|
    | software                  | Pass                                           |
    |                           | GPU0: Pass                                     |
    +-----  Integration  -------+------------------------------------------------+
    | pcie                      | Fail                                           |
    | Warning                   | There was an internal error during the test:   |
    |                           | 'A child process (153) exited with non-zero s  |
    |                           | GPU0: Pass                                     |

3.x prints ``Pass - All``, ``Fail - GPU: 0`` and ``Pass - GPUs: 1, 2``; 2.x says
``Blacklist`` where 3.x says ``Denylist``. Warning text wraps at the cell width
and splits words; continuation cells are joined as printed.

A plugin-level ``Fail`` wins over per-GPU ``Pass``. ``Skip`` and ``Not Run`` are
never a pass: ``overall`` is ``Skip`` when nothing ran. A table that does not
close, or an ``Error:`` line, makes the run ``complete=False``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from rackops.docload import load_json
from rackops.parsers._common import ParseError

RESULTS = ("Pass", "Fail", "Warn", "Skip", "Not Run")
_RANK = {"Fail": 4, "Warn": 3, "Pass": 2, "Skip": 1, "Not Run": 0}
# Tests each level adds (config.md §9.4), lowercase, any generation's spelling.
_LEVEL_TESTS = {
    4: {"memtest", "pulse_test", "pulse test"},
    3: {
        "diagnostic",
        "targeted_stress",
        "targeted stress",
        "targeted_power",
        "targeted power",
        "memory_bandwidth",
        "memory bandwidth",
        "sm stress",
        "sm_stress",
        "nvbandwidth",
        "eud",
        "eud test",
        "cpu_eud",
    },
    2: {"memory", "gpu memory", "pcie"},
}


@dataclass(frozen=True)
class DcgmTest:
    name: str
    category: str | None
    result: str
    gpus: dict[str, str]
    messages: tuple[str, ...]


@dataclass(frozen=True)
class DcgmDiag:
    dcgm_version: str | None
    driver_version: str | None
    gpu_device_ids: tuple[str, ...]
    level: int | None
    tests: tuple[DcgmTest, ...]
    overall: str
    errors: tuple[str, ...]
    complete: bool

    def test(self, name: str) -> DcgmTest | None:
        return next((t for t in self.tests if t.name.lower() == name.lower()), None)


def _norm(status: str) -> str | None:
    s = status.strip()
    for r in RESULTS:
        if s.lower() == r.lower():
            return r
    return None


def _worst(statuses: list[str]) -> str:
    return max(statuses, key=lambda s: _RANK[s]) if statuses else "Not Run"


def _overall(tests: list[DcgmTest]) -> str:
    """Fail wins at plugin or GPU level; then Warn; a run whose hardware tests were all
    skipped validated nothing (Skip), even when the software checks passed."""
    every = [t.result for t in tests] + [s for t in tests for s in t.gpus.values()]
    if "Fail" in every:
        return "Fail"
    if "Warn" in every:
        return "Warn"
    beyond_software = [t for t in tests if (t.category or "").lower() != "deployment"]
    ran = [t for t in (beyond_software or tests) if t.result not in ("Skip", "Not Run")]
    return "Pass" if ran else "Skip"


def _level(tests: list[DcgmTest]) -> int | None:
    names = {t.name.lower() for t in tests if t.result not in ("Not Run",)}
    for level in (4, 3, 2):
        if names & _LEVEL_TESTS[level]:
            return level
    return 1 if names else None


_GPU_ROW = re.compile(r"^GPU\s*(\d+):\s*(Pass|Fail|Warn|Skip|Not Run)\b", re.IGNORECASE)
_V3 = re.compile(r"^(Pass|Fail|Warn|Skip|Not Run)\s*-\s*(All|GPUs?:\s*([\d,\s]+))", re.IGNORECASE)
_SECTION = re.compile(r"^[|+]-+\s+([A-Za-z][A-Za-z ]*?)\s+-+\+")


def _cells(line: str) -> tuple[str, str] | None:
    if not (line.startswith("|") and line.rstrip().endswith("|")):
        return None
    inner = line.rstrip()[1:-1]
    if "|" not in inner:
        return None
    name, _, value = inner.partition("|")
    return name.strip(), value[1:] if value.startswith(" ") else value


def _chunk(value: str) -> str:
    """One wrapped piece of a message, exactly as dcgmi cut it.

    A cell is ``| `` + 46 columns + `` |``; dcgmi cuts messages every 45 characters
    (mid-word included), so the piece is the first 45 columns: a space there is
    part of the text, the 46th column is padding.
    """
    return value[:45]


def parse_dcgmi_diag(text: str) -> DcgmDiag:
    """Parse ``dcgmi diag`` text, or its ``-j`` JSON (detected by ``{``)."""
    if text.lstrip().startswith("{"):
        return parse_dcgmi_diag_json(text)
    meta: dict[str, str] = {}
    tests: list[dict[str, Any]] = []
    errors: list[str] = []
    category: str | None = None
    msg_open = False
    table_seen = closed = False
    width = 0  # of the table's rows: a border cut part-way does not close the table
    for raw in text.splitlines():
        line = raw.rstrip()
        stripped = line.strip()
        if not stripped:
            continue
        if m := _SECTION.match(stripped):
            category, msg_open, table_seen, closed = m.group(1).strip(), False, True, False
            continue
        if stripped.startswith("+") and set(stripped) <= set("+-="):
            whole = stripped.endswith("+") and len(stripped) >= width
            closed = table_seen and bool(tests) and whole
            width = max(width, len(stripped)) if whole else width
            continue
        cells = _cells(stripped)
        if cells is None:
            if (
                stripped.lower().startswith(("error", "dcgmi:", "failed"))
                or "error" in (stripped.lower()[:40])
            ):
                errors.append(stripped)
            continue
        table_seen, closed = True, False
        width = max(width, len(stripped))
        name, value = cells
        value_s = value.strip()
        if name == "Diagnostic" and value_s == "Result":
            continue
        if category == "Metadata" and name:
            meta[name] = value_s
            continue
        if name in ("Warning", "Info", "Error"):
            if tests:
                tests[-1]["messages"].append(_chunk(value))
                msg_open = True
            continue
        if name:
            result, gpus = _result_cell(value_s)
            tests.append(
                {
                    "name": name,
                    "category": category,
                    "results": [result],
                    "gpus": gpus,
                    "messages": [],
                }
            )
            msg_open = False
            continue
        if not tests:
            continue
        if m := _GPU_ROW.match(value_s):
            tests[-1]["gpus"][m.group(1)] = _norm(m.group(2)) or m.group(2)
            msg_open = False
        elif _V3.match(value_s):
            result, gpus = _result_cell(value_s)
            tests[-1]["results"].append(result)
            tests[-1]["gpus"].update(gpus)
            msg_open = False
        elif msg_open and tests[-1]["messages"]:
            tests[-1]["messages"][-1] += _chunk(value)
    if not tests and not errors:
        raise ParseError("no diagnostic table: this is not dcgmi diag output")
    built = [
        DcgmTest(
            t["name"],
            t["category"],
            _worst([r for r in t["results"] if r]),
            t["gpus"],
            tuple(" ".join(msg.split()) for msg in t["messages"]),
        )
        for t in tests
    ]
    ids = meta.get("GPU Device IDs Detected", "")
    return DcgmDiag(
        dcgm_version=meta.get("DCGM Version"),
        driver_version=meta.get("Driver Version Detected"),
        gpu_device_ids=tuple(i.strip() for i in ids.split(",") if i.strip()),
        level=_level(built),
        tests=tuple(built),
        overall=_overall(built),
        errors=tuple(errors),
        complete=bool(built) and closed and not errors,
    )


def _result_cell(value: str) -> tuple[str, dict[str, str]]:
    if m := _V3.match(value):
        status: str | None = _norm(m.group(1)) or "Fail"
        assert status is not None
        ids = m.group(3)
        gpus = {g.strip(): status for g in ids.split(",") if g.strip()} if ids else {}
        return status, gpus
    status = _norm(value)
    if status is None:
        raise ParseError(f"unknown DCGM result {value!r}; expected one of {', '.join(RESULTS)}")
    return status, {}


def _find(data: Any, key: str) -> Any:
    if isinstance(data, dict):
        if key in data:
            return data[key]
        for v in data.values():
            found = _find(v, key)
            if found is not None:
                return found
    return None


def parse_dcgmi_diag_json(text: str) -> DcgmDiag:
    try:
        data = load_json(text)
    except json.JSONDecodeError as exc:
        raise ParseError(
            f"dcgmi JSON is unreadable (cut short?): {exc.msg} at line {exc.lineno}"
        ) from exc
    categories = _find(data, "test_categories")
    runtime_error = _find(data, "runtime_error")
    errors = [str(runtime_error)] if runtime_error else []
    if categories is None and not errors:
        raise ParseError("dcgmi JSON without 'test_categories'")
    tests = []
    for cat in categories or []:
        for t in cat.get("tests", []):
            statuses: list[str] = []
            gpus: dict[str, str] = {}
            messages: list[str] = []
            for r in t.get("results", []):
                status = _norm(str(r.get("status", ""))) or "Fail"
                statuses.append(status)
                gid = r.get("entity_id", r.get("gpu_id", r.get("gpu_ids")))
                if gid is not None and r.get("entity_group", "GPU") in ("GPU", "gpu"):
                    for g in str(gid).split(","):
                        if g.strip():
                            gpus[g.strip()] = status
                for w in r.get("warnings", []) or []:
                    messages.append(str(w.get("warning", w)) if isinstance(w, dict) else str(w))
                if r.get("info"):
                    info = r["info"]
                    messages.extend(str(i) for i in (info if isinstance(info, list) else [info]))
            summary = t.get("test_summary") or {}
            plugin = _norm(str(summary.get("status", ""))) if summary else None
            result: str = plugin or _worst(statuses)
            if plugin and plugin != "Fail" and "Fail" in statuses:
                result = "Fail"
            for w in summary.get("warnings", []) or []:
                messages.append(str(w.get("warning", w)) if isinstance(w, dict) else str(w))
            tests.append(
                DcgmTest(str(t.get("name")), cat.get("category"), result, gpus, tuple(messages))
            )
    ids = _find(data, "GPU Device IDs") or []
    version = _find(data, "version") or _find(data, "DCGM Version")
    return DcgmDiag(
        dcgm_version=None if version is None else str(version),
        driver_version=_find(data, "Driver Version Detected"),
        gpu_device_ids=tuple(str(i) for i in ids) if isinstance(ids, list) else (),
        level=_level(tests),
        tests=tuple(tests),
        overall=_overall(tests),
        errors=tuple(errors),
        complete=bool(tests) and not errors,
    )
