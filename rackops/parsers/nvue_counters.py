"""Cumulus Linux NVUE counter commands: ``nv show interface <if> counters`` (and its
``errors``/``drops``/``qos`` views) and ``nv show interface <if> qos roce counters``, as NVUE
prints them, or with ``-o json``.

Text is NVUE's renderer, left-aligned columns under a line of dashes, in two layouts:

- a tree (``operational  applied  description``): a key's depth is its indent, its value the
  operational column — ``tx-stats`` / ``  tx-ecn-stats`` / ``    ecn-marked-packets  693777677344``
  → ``tx-stats.tx-ecn-stats.ecn-marked-packets``;
- sections: a title over a line of ``=``, then a table (``Counter  Receive  Transmit``, or a
  priority/traffic-class table) → ``Error Counters.FCS Errors.Receive``.

Values carry NVUE's units (``144 Bytes``, ``56.52 MB``, decimal); ``n/a`` is a counter a
direction has not. ``-o json`` is flattened to the same dotted names. Cut output: a table
row with no value under a column its header has, a section title with no table, JSON that does
not close.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from rackops.docload import load_json
from rackops.parsers._common import MAX_COUNT, ParseError, check_limits

Value = int | float | None

_DASHES = re.compile(r"^\s*-+(\s{2,}-+)+\s*$")
_TITLE_RULE = re.compile(r"^\s*={3,}\s*$")
_SIZE = re.compile(r"^(-?[\d.]+)\s*(Bytes|B|KB|MB|GB|TB)$")
_UNITS = {"Bytes": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12}
_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 ._()/-]*$")


@dataclass(frozen=True)
class NvueCounters:
    complete: bool
    values: dict[str, Value] = field(default_factory=dict)
    errors: tuple[str, ...] = ()


def value(text: str) -> Value | str:
    t = text.strip()
    if t.lower() in ("n/a", ""):
        return None
    if re.fullmatch(r"-?\d+", t):
        return int(t)
    if m := _SIZE.match(t):
        size = float(m.group(1)) * _UNITS[m.group(2)]
        return int(size) if size.is_integer() else size
    try:
        return float(t)
    except ValueError:
        return t


def _starts(dashes: str) -> list[int]:
    return [m.start() for m in re.finditer(r"-+", dashes)]


def _cut(line: str, starts: list[int]) -> list[str]:
    bounds = [*starts[1:], max(len(line), starts[-1] + 1)]
    first = line[: starts[1]] if len(starts) > 1 else line
    return [first, *(line[a:b] for a, b in zip(starts[1:], bounds[1:], strict=True))]


def _put(out: dict[str, Value], key: str, raw: str, errors: list[str]) -> None:
    v = value(raw)
    if isinstance(v, str):
        errors.append(f"{key}: not a counter: {v[:40]!r}")
    else:
        out[key] = v
    if len(out) > MAX_COUNT:
        raise ParseError(f"more than {MAX_COUNT} NVUE counters")


def _table(lines: list[str], i: int, section: str, out: dict[str, Value], errors: list[str]) -> int:
    """The table whose header is lines[i] (its dashes lines[i+1]); the index after it."""
    starts = _starts(lines[i + 1])
    header = [c.strip() for c in _cut(lines[i], starts)]
    tree = header[1:2] == ["operational"]
    path: list[tuple[int, str]] = []
    i += 2
    while i < len(lines) and lines[i].strip():
        if i + 1 < len(lines) and _TITLE_RULE.match(lines[i + 1]):
            break  # the next section's title
        line = lines[i]
        cells = _cut(line, starts)
        name = cells[0].strip()
        indent = len(cells[0]) - len(cells[0].lstrip())
        if not _KEY.match(name):
            errors.append(line.strip())
        elif tree:
            path = [(d, k) for d, k in path if d < indent]
            vals = cells[1].strip() if len(cells) > 1 else ""
            key = ".".join([*(k for _, k in path), name])
            if vals:
                _put(out, key, vals, errors)
                if "description" in header and not cells[-1].strip():
                    errors.append(f"{key}: no description, the line is cut")
            else:
                path.append((indent, name))
        else:
            row = [c.strip() for c in cells[1:]]
            if len(row) < len(header) - 1 or not all(row[: len(header) - 1]):
                errors.append(f"{section}: {name}: a column is empty (cut?)")
            for col, raw in zip(header[1:], row, strict=False):
                _put(out, ".".join(x for x in (section, name, col) if x), raw, errors)
        i += 1
    return i


def _text(text: str) -> NvueCounters:
    lines = [raw.rstrip("\r") for raw in text.splitlines()]
    out: dict[str, Value] = {}
    errors: list[str] = []
    section, tables, i = "", 0, 0
    while i < len(lines):
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if lines[i].strip() and _TITLE_RULE.match(nxt):
            if section and section not in {k.split(".", 1)[0] for k in out}:
                errors.append(f"section {section!r} has no table")
            section, i = lines[i].strip(), i + 2
            continue
        if lines[i].strip() and _DASHES.match(nxt):
            i = _table(lines, i, section, out, errors)
            tables += 1
            continue
        if lines[i].strip():
            errors.append(lines[i].strip())
        i += 1
    if not tables:
        raise ParseError("no NVUE table (a header over a line of dashes) found")
    if section and section not in {k.split(".", 1)[0] for k in out}:
        errors.append(f"section {section!r} has no table")
    tops = {k.split(".", 1)[0] for k in out}
    if tops & {"rx-stats", "tx-stats"} and not {"rx-stats", "tx-stats"} <= tops:
        errors.append("qos roce counters print rx-stats and tx-stats: one is missing (cut)")
    return NvueCounters(not errors, out, tuple(errors))


def _flatten(prefix: str, data: Any, out: dict[str, Value], errors: list[str]) -> None:
    if isinstance(data, dict):
        for k, v in data.items():
            _flatten(f"{prefix}.{k}" if prefix else str(k), v, out, errors)
    elif isinstance(data, bool) or not isinstance(data, int | float | str | None):
        errors.append(f"{prefix}: not a counter")
    else:
        _put(out, prefix, "" if data is None else str(data), errors)


def parse_nvue_counters(text: str) -> NvueCounters:
    check_limits(text)
    if not text.strip():
        raise ParseError("empty NVUE counters output")
    if text.lstrip().startswith("{"):
        try:
            data = load_json(text)
        except ValueError as exc:
            return NvueCounters(False, errors=(f"the JSON does not parse: {exc}",))
        out: dict[str, Value] = {}
        errors: list[str] = []
        _flatten("", data, out, errors)
        if not out:
            raise ParseError("NVUE counters JSON with no counter")
        return NvueCounters(not errors, out, tuple(errors))
    return _text(text)
