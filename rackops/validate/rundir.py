"""The run directory: every raw output with its argv, exit code, duration and host, and
``results.jsonl`` appended as results arrive, so a crash or Ctrl-C loses nothing and
``--resume`` continues where the run stopped.

What it holds is read as untrusted input: every file with a size limit, only regular files
(never through a symlink, never a device or a FIFO), raw outputs only under ``raw/`` of this
directory, and every record checked against the schema (:mod:`rackops.validate.records`).
Every file it writes replaces the old one (a new file renamed over it), so a symlink planted
in the directory is replaced, never followed out of it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rackops.docload import load_json
from rackops.names import NODE_RE
from rackops.parsers import ParseError
from rackops.parsers._common import finite_json
from rackops.scale import RunLimits, Size, recorded_size, run_limits
from rackops.tools import get as get_tool
from rackops.tools import parse, registry
from rackops.validate.executor import CommandResult
from rackops.validate.records import (
    OUTPUT,
    Bad,
    DamagedRunDir,
    Record,
    accept,
    damaged,
    fields,
    integer,
    json_value,
    list_of,
    optional,
    record_meta,
    record_spec,
    short,
    text,
)

_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")

# the base bounds of a run directory's files (rackops.scale.RunLimits); a run that recorded
# its design's size in run.json is read within that size's bounds where they are larger
MAX_RESULTS_BYTES = RunLimits().results_bytes  # results.jsonl
MAX_RESULTS_LINES = RunLimits().results_lines  # records in results.jsonl
MAX_LINE_BYTES = 4 * 1024 * 1024  # one record
MAX_JSON_BYTES = RunLimits().json_bytes  # run.json, report.json, perftest-port-blocks.json
MAX_RAW_BYTES = RunLimits().raw_bytes  # one raw output under raw/


def _word(v: Any, where: str) -> None:
    text(v, where)
    if "\x00" in v or "\n" in v:
        raise Bad(where, v, "one line without NUL")


def _size(v: Any, where: str) -> None:
    try:
        Size.from_json(v, where)
    except ValueError as exc:
        raise Bad(where, v, str(exc).split(": ", 1)[-1]) from None


# what rackops writes in run.json (the keys readers use; others are any JSON)
RUN_JSON = {
    "size": (False, optional(_size)),
    "rackops_version": (False, optional(_word)),
    "inventory": (False, optional(_word)),
    "suite": (False, optional(_word)),
    "started": (False, optional(_word)),
    "plan": (False, optional(text)),
    "launcher": (False, optional(_word)),
    "scheduler": (False, optional(_word)),
    "slurm_conf": (False, optional(_word)),
}
JSON_FILES: dict[str, Callable[[Any, str], None]] = {
    "run.json": fields(RUN_JSON, closed=False),
    "perftest-port-blocks.json": list_of(integer),
}


class RunDir:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.raw = path / "raw"
        self.results = path / "results.jsonl"
        self._lock = threading.Lock()
        self.unreadable: list[int] = []  # results.jsonl lines that are not a record
        # The run's result set, in memory: read from results.jsonl once (what an earlier
        # run recorded, for --resume, replay and reports of a finished run), then kept as
        # each record is appended. results.jsonl is its durable log, never re-read.
        self._results: list[dict[str, Any]] | None = None
        self.reads = 0  # how many times results.jsonl was read (a test counts it)
        # the outputs this invocation's steps parsed, by step id: read by the stages after
        # (cabling, fleet) without reading raw/ again
        self._parsed: dict[str, Any] = {}
        self._limits: RunLimits | None = None
        if self.raw.is_symlink() or (self.raw.exists() and not self.raw.is_dir()):
            raise damaged(self.raw, None, None, "raw/ is not a directory of this run")
        self.raw.mkdir(parents=True, exist_ok=True)

    @property
    def limits(self) -> RunLimits:
        """The bounds of this run directory's files: the base, or those of the design size
        its run recorded in run.json (rackops.scale.run_limits), whichever are larger."""
        if self._limits is None:
            base = RunLimits(MAX_RESULTS_BYTES, MAX_RESULTS_LINES, MAX_RAW_BYTES, MAX_JSON_BYTES)
            try:
                meta = self.read_json("run.json", MAX_JSON_BYTES)
            except FileNotFoundError:
                meta = None
            self._limits = run_limits(recorded_size(meta, "run.json"), base)
        return self._limits

    def release(self) -> None:
        """Let go of the records and parsed outputs held in memory (read again if asked):
        a caller done with this run, holding another's."""
        with self._lock:
            self._results = None
            self._parsed.clear()

    def done_ids(self) -> set[str]:
        return {r["id"] for r in self.records()}

    def read_bytes(self, path: Path, limit: int, why: str = "") -> bytes:
        return read_regular(self.path, path, limit, why)

    def read_raw(self, rec: dict[str, Any], key: str = "stdout") -> str | None:
        """A record's raw output (its ``stdout``/``stderr`` file, or a meta key naming one),
        or None when the record names none or the file is gone."""
        rel = rec.get(key) if key in ("stdout", "stderr") else rec.get("meta", {}).get(key)
        if not isinstance(rel, str):
            return None
        try:
            data = self.read_bytes(self.path / rel, *self._raw_bound(rec))
        except FileNotFoundError:
            return None
        except DamagedRunDir as exc:  # name the record that points at it
            raise damaged(self.path / rel, None, rec.get("id"), f"{key} {exc.why}") from None
        return data.decode(errors="replace")

    def _raw_bound(self, rec: dict[str, Any]) -> tuple[int, str]:
        """One raw output's bound: a fabric-wide tool's by the run's design, any other
        tool's the fixed one (a node's output is no larger in a cluster)."""
        tool = registry().get(rec.get("tool", ""))
        if tool is not None and tool.fabric_wide:
            return self.limits.raw_bytes, self.limits.why
        return MAX_RAW_BYTES, "the fixed bound of one node's output"

    def keep_parsed(self, step_id: str, parsed: Any) -> None:
        with self._lock:
            self._parsed[step_id] = parsed

    def parsed_output(self, rec: dict[str, Any]) -> Any:
        """A node record's output, parsed: as its step parsed it in this invocation, else
        (a step an earlier invocation ran: --resume, a replay, a report) read from raw/ and
        parsed by its tool. None where there is none: no output kept, or one its tool
        cannot read (that step's own ERROR already says why)."""
        with self._lock:
            if rec["id"] in self._parsed:
                return self._parsed[rec["id"]]
        # records naming one file (a run directory may: 61 records, one 5 MiB output) are
        # read and parsed once: the cost of a run directory is its files, not its records
        key = f"{rec['tool']}\0{rec.get('stdout')}\0{rec.get('stderr')}"
        with self._lock:
            if key in self._parsed:
                return self._parsed[key]
        parsed = self._parse_raw(rec)
        with self._lock:
            self._parsed[key] = parsed
        return parsed

    def _parse_raw(self, rec: dict[str, Any]) -> Any:
        text = self.read_raw(rec)
        if text is None:
            return None
        if get_tool(rec["tool"]).both_streams or not text.strip():
            text += "\n" + (self.read_raw(rec, "stderr") or "")
        try:
            return parse(rec["tool"], text, self.limits.fabric)
        except (ParseError, KeyError):  # unreadable, or no tool of that name parses it
            return None

    def records(self) -> list[dict[str, Any]]:
        """Every record of the run, in the order recorded (the stages' shared result set:
        a list of its own to each caller, the records themselves shared and not to be
        changed)."""
        with self._lock:
            if self._results is None:
                self._results = self._read()
            return list(self._results)

    def _read(self) -> list[dict[str, Any]]:
        self.reads += 1
        limits = self.limits
        try:
            data = self.read_bytes(self.results, limits.results_bytes, limits.why)
        except FileNotFoundError:
            return []
        lines = data.split(b"\n")
        if len(lines) > limits.results_lines + 1:
            raise damaged(
                self.results, None, None, f"more than {limits.results_lines} lines ({limits.why})"
            )
        out = []
        bad = []
        for n, raw in enumerate(lines, 1):
            if len(raw) > MAX_LINE_BYTES:
                raise damaged(self.results, n, None, f"a line over {MAX_LINE_BYTES} bytes")
            rec = self._record(raw, n)
            if rec is not None:
                out.append(rec)
            elif raw.strip():
                bad.append(n)  # cut by a crash, or not ours: the report says so
        self.unreadable = bad
        return out

    def _record(self, raw: bytes, n: int) -> dict[str, Any] | None:
        where = f"{self.results}:{n}"
        try:
            value = load_json(raw.decode(errors="replace"), _no_constant, shared=True)
        except json.JSONDecodeError:  # cut by a crash, or not JSON: not a record
            return None
        except (ValueError, RecursionError) as exc:  # NaN, a 5000-digit number, nesting
            why = str(exc) if isinstance(exc, _Constant) else f"not JSON rackops writes ({exc})"
            raise damaged(self.results, n, None, why[:120]) from None
        return accept(value, where)

    def compact(self) -> int:
        """Drop the lines that are not records (a crash cut them; --resume runs their steps
        again). How many were dropped."""
        records = self.records()
        dropped = len(self.unreadable)
        if dropped:
            with self._lock:
                self._replace(
                    self.results, "".join(json.dumps(r, sort_keys=True) + "\n" for r in records)
                )
            self.unreadable = []
        return dropped

    def _replace(self, path: Path, content: str) -> None:
        """Write a file of the run directory as a new file renamed over the old: whatever
        stood at ``path`` (a symlink planted there) is replaced, never followed."""
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        try:
            with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape") as fh:
                fh.write(content)
            Path(tmp).replace(path)
        except BaseException:
            with contextlib.suppress(OSError):
                Path(tmp).unlink()
            raise

    def write_text(self, name: str, content: str) -> None:
        self._replace(self.path / name, content)

    def save_output(self, step_id: str, result: CommandResult) -> dict[str, Any]:
        stem = _SAFE.sub("_", step_id).lstrip(".") or "_"
        out, err = self.raw / f"{stem}.out", self.raw / f"{stem}.err"
        self._replace(out, result.stdout)
        self._replace(err, result.stderr)
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
        """Append one record. It is checked against the schema the reader applies first: a
        record this rackops would refuse to read back (a tool printed something no stage
        expected) is written as that step's ERROR instead, so one garbled output costs its
        node a verdict, never the run."""
        rec = record if isinstance(record, Record) else Record.of(record)
        value = writable(rec)
        line = json.dumps(value, sort_keys=True, allow_nan=False)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
        with self._lock:
            if self._results is None:  # what an earlier run recorded (--resume), first
                self._results = self._read()
            try:
                fd = os.open(self.results, flags, 0o644)
            except OSError as exc:
                raise damaged(self.results, None, None, f"cannot be appended to ({exc})") from None
            with os.fdopen(fd, "a") as fh:
                fh.write(line + "\n")
                fh.flush()
            # as the reader takes it (the same checks and defaults), without reading it back
            kept = accept(value, f"{self.results}:{len(self._results) + 1}")
            if kept is not None:
                self._results.append(kept)

    def write_json(self, name: str, data: Any) -> None:
        """A JSON file of the run directory: always JSON (a figure that is not a finite
        number, which no reader could take back, is written as null)."""
        text = json.dumps(finite_json(data), indent=2, sort_keys=True, allow_nan=False)
        self._replace(self.path / name, text + "\n")

    def read_json(self, name: str, limit: int | None = None) -> Any:
        """A JSON file of the run directory, checked as far as rackops knows what it holds:
        FileNotFoundError when absent, DamagedRunDir when it is not what rackops writes."""
        path = self.path / name
        data = self.read_bytes(path, self.limits.json_bytes if limit is None else limit)
        try:
            value = load_json(data.decode(errors="replace"), _no_constant)
        except (ValueError, RecursionError) as exc:
            raise damaged(path, None, None, f"not JSON ({str(exc)[:80]})") from None
        try:
            JSON_FILES.get(name, json_value)(value, name)
        except Bad as exc:
            raise damaged(path, None, None, str(exc)) from None
        return value


def writable(rec: Record) -> dict[str, Any]:
    """The record's JSON if the reader accepts it; else the same step as an ERROR record
    that says what could not be recorded (its raw output stays under raw/)."""
    value = rec.as_json()
    try:
        checked: dict[str, Any] = json.loads(json.dumps(value, allow_nan=False))  # no NaN
        fields(record_spec(rec.kind, rec.tool), closed=True)(checked, "")
        return checked
    except (Bad, ValueError, TypeError, RecursionError) as exc:
        why = short(str(exc), 300)
    node = rec.node if isinstance(rec.node, str) and NODE_RE.fullmatch(rec.node) else None
    finding = {
        "code": "RUN-002",
        "status": "ERROR",
        "subject": {"node": node},
        "message": f"this step's result could not be recorded as read ({why}): a tool printed "
        "something no check expected; its raw output is kept under raw/",
        "remediation": "rerun this node's checks; if it repeats, read the tool's raw output "
        "and report it to rackops",
    }
    indexed = any(req for req, _ in record_meta(rec.kind, rec.tool).values())
    kind = "node" if indexed else rec.kind  # a kind whose meta readers index: a node record
    safe: dict[str, Any] = {
        "schema": value.get("schema"),
        "id": rec.id,
        "kind": kind,
        "node": node,
        "tool": rec.tool,
        "findings": [finding],
        "meta": {},
    }
    output = {k: v for k, v in rec.output.items() if k in OUTPUT}
    try:
        fields(record_spec(kind, rec.tool), closed=True)({**safe, **output}, "")
        return {**safe, **output}
    except (Bad, TypeError):
        return safe


def read_regular(root: Path, path: Path, limit: int, why: str = "") -> bytes:
    """A regular file under ``root``, at most ``limit`` bytes: FileNotFoundError when it is
    not there; DamagedRunDir for a symlink, a device, a FIFO, a directory, a file outside
    ``root`` or one over the limit."""
    base = root.resolve()
    try:
        where = path.parent.resolve(strict=True) / path.name
    except FileNotFoundError:
        raise
    except (OSError, RuntimeError) as exc:
        raise damaged(path, None, None, f"cannot be read ({exc})") from None
    if where != base and base not in where.parents:
        raise damaged(path, None, None, "is outside the run directory")
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(where, flags)
    except FileNotFoundError:
        raise
    except OSError as exc:
        why = "is a symlink" if where.is_symlink() else f"cannot be read ({exc.strerror})"
        raise damaged(path, None, None, why) from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise damaged(path, None, None, "is not a regular file")
    if info.st_size > limit:  # refused unread, naming both sizes
        os.close(fd)
        bound = f" ({why})" if why else ""
        raise damaged(path, None, None, f"is {info.st_size} bytes, larger than {limit}{bound}")
    with os.fdopen(fd, "rb") as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:  # grew while read
        raise damaged(path, None, None, f"is larger than {limit} bytes")
    return data


class _Constant(ValueError):
    pass


def _no_constant(word: str) -> Any:
    raise _Constant(f"{word} is not a number rackops writes")
