"""SONiC's counter commands, one reader for the family sonic-utilities prints them with:
``show interfaces counters`` (portstat: plain, ``-a``, ``errors``, ``rates``, ``fec-stats``),
``show pfc counters`` (pfcstat: a ``Port Rx`` and a ``Port Tx`` table), ``show queue counters``
(queuestat) and ``show queue wredcounters`` (wredstat: WRED drops and ECN marks per queue),
as tables or as their ``--json`` / ``portstat -j``.

The tables are ``tabulate``'s "simple" layout: a header, a line of dashes (one run per
column), right-aligned cells, so a column is where its run of dashes is — names with blanks
(``Port Rx``) and values with units (``653.87 MB/s``) are read by that span, not by splitting.
Numbers keep their commas (``471,729,839,997``) in portstat and pfcstat, and in queuestat
after a clear; ``N/A`` is a counter the platform has not. Lines before a table (``Last cached
time was ...``, ``For namespace asic0:``, ``The rates are calculated within 3 seconds period``,
``Reminder: ...``) are not rows.

A port's counters come back by column name as printed (``RX_ERR``, ``FEC_UNCORR``, ``PFC3``
rx/tx, ``EcnMarked/pkts``); a queue's by the queue (``UC3``). Cut output: a row with fewer
cells than the header, a pfcstat without its Tx table, JSON that does not close.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from rackops.docload import load_json
from rackops.parsers._common import MAX_COUNT, ParseError, check_limits

Value = int | float | str | None

_DASHES = re.compile(r"^\s*-+(\s{2,}-+)+\s*$")
_RATE = re.compile(r"^(-?[\d.]+)\s*(B|KB|MB|GB)/s$")
_PCT = re.compile(r"^(-?[\d.]+)%$")
_FLOAT = re.compile(r"^-?\d+(\.\d+)?([eE][-+]?\d+)?$")
_PREAMBLE = re.compile(
    r"^(Last cached time was|For namespace|The rates are calculated|Reminder:|"
    r"\S+ Last cached time was)"
)
_PORT = re.compile(r"^[A-Za-z][A-Za-z0-9_/|.:-]*$")
_QUEUE = re.compile(r"^(UC|MC|ALL|VOQ)\d+$")
_UNITS = {"B": 1, "KB": 1_000, "MB": 1_000_000, "GB": 1_000_000_000}


@dataclass(frozen=True)
class SonicCounters:
    kind: str  # interfaces | pfc | queue | wred
    complete: bool
    ports: dict[str, dict[str, Value]] = field(default_factory=dict)
    queues: dict[str, dict[str, dict[str, Value]]] = field(default_factory=dict)
    errors: tuple[str, ...] = ()


def value(text: str) -> Value:
    """A cell as a number: commas dropped, a rate in bytes/s, a share in %; N/A is None;
    anything else (a port state, ``7.81e-10 (89%)``) stays text."""
    t = text.strip()
    if t.upper() == "N/A" or t == "":
        return None
    plain = t.replace(",", "")
    if re.fullmatch(r"-?\d+", plain):
        return int(plain)
    if _FLOAT.fullmatch(plain):
        return float(plain)
    if m := _RATE.match(plain):
        return float(m.group(1)) * _UNITS[m.group(2)]
    if m := _PCT.match(plain):
        return float(m.group(1))
    return t


def _spans(dashes: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in re.finditer(r"-+", dashes)]


def _cells(line: str, spans: list[tuple[int, int]]) -> list[str] | None:
    """The row's cell under each run of dashes; None when the row ends before the last one
    (a cut line) or a cell spills past its column."""
    if len(line.rstrip()) < spans[-1][1] - 1:
        return None
    out = []
    for i, (_start, end) in enumerate(spans):
        lo = 0 if i == 0 else spans[i - 1][1]
        cell = line[lo:end]
        if not cell.strip():
            return None
        out.append(cell.strip())
    if line[spans[-1][1] :].strip():
        return None
    return out


def _tables(lines: list[str]) -> tuple[list[tuple[list[str], list[list[str]]]], list[str]]:
    """Every table as (header names, rows of cells); lines that are in no table."""
    tables: list[tuple[list[str], list[list[str]]]] = []
    stray: list[str] = []
    i = 0
    while i < len(lines):
        if i + 1 < len(lines) and _DASHES.match(lines[i + 1]) and lines[i].strip():
            spans = _spans(lines[i + 1])
            header = _cells(lines[i].ljust(spans[-1][1]), spans)
            if header is None:
                stray.append(lines[i])
                i += 1
                continue
            rows: list[list[str]] = []
            i += 2
            while i < len(lines) and lines[i].strip():
                if _PREAMBLE.match(lines[i].strip()):
                    break
                cells = _cells(lines[i], spans)
                if cells is None:
                    stray.append(lines[i])
                else:
                    rows.append(cells)
                i += 1
            tables.append((header, rows))
            continue
        if lines[i].strip() and not _PREAMBLE.match(lines[i].strip()):
            stray.append(lines[i])
        i += 1
    return tables, stray


def _kind(header: list[str]) -> str:
    if header[0] in ("Port Rx", "Port Tx"):
        return "pfc"
    if "TxQ" in header and any("Ecn" in h or "Wred" in h for h in header):
        return "wred"
    if "TxQ" in header or "Voq" in header:
        return "queue"
    return "interfaces"


def _from_tables(text: str) -> SonicCounters:
    lines = [raw.rstrip("\r") for raw in text.splitlines()]
    tables, stray = _tables(lines)
    if not tables:
        raise ParseError("no SONiC counter table (a header over a line of dashes) found")
    kinds = {_kind(h) for h, _ in tables}
    if len(kinds) > 1:
        raise ParseError(f"tables of several commands in one output: {sorted(kinds)}")
    kind = kinds.pop()
    ports: dict[str, dict[str, Value]] = {}
    queues: dict[str, dict[str, dict[str, Value]]] = {}
    errors = list(stray)
    for header, rows in tables:
        side = header[0].split()[-1].lower() if kind == "pfc" else ""
        for cells in rows:
            port = cells[0]
            if not _PORT.match(port):
                errors.append(f"not a port name: {port!r}")
                continue
            if kind in ("queue", "wred"):
                q = cells[1]
                if not _QUEUE.match(q):
                    errors.append(f"{port}: not a queue: {q!r}")
                    continue
                named = dict(zip(header[2:], (value(c) for c in cells[2:]), strict=True))
                queues.setdefault(port, {})[q] = named
            else:
                row = {
                    (f"{side}_{h}" if side else h): value(c)
                    for h, c in zip(header[1:], cells[1:], strict=True)
                }
                ports.setdefault(port, {}).update(row)
        if len(ports) + len(queues) > MAX_COUNT:
            raise ParseError(f"more than {MAX_COUNT} ports")
    if kind == "pfc":
        sides = {h[0] for h, _ in tables}
        if sides != {"Port Rx", "Port Tx"}:
            errors.append(f"pfcstat prints a Port Rx and a Port Tx table; only {sorted(sides)}")
    if not ports and not queues and not errors:
        errors.append("a table with no rows")
    return SonicCounters(kind, not errors, ports, queues, tuple(errors))


def _from_json(text: str) -> SonicCounters:
    start = text.index("{")
    pre = [x for x in text[:start].splitlines() if x.strip()]
    bad = [x for x in pre if not _PREAMBLE.match(x.strip())]
    try:
        data = load_json(text[start:])
    except ValueError as exc:
        return SonicCounters("interfaces", False, errors=(f"the JSON does not parse: {exc}",))
    if (
        not isinstance(data, dict)
        or not data
        or not all(isinstance(v, dict) for v in data.values())
    ):
        raise ParseError("SONiC counters JSON is an object of ports, each an object")
    ports: dict[str, dict[str, Value]] = {}
    queues: dict[str, dict[str, dict[str, Value]]] = {}
    kind = "interfaces"
    for port, body in data.items():
        if not _PORT.match(port) or len(data) > MAX_COUNT:
            raise ParseError(f"not a port name: {port[:40]!r}")
        qs = {k: v for k, v in body.items() if _QUEUE.match(k) and isinstance(v, dict)}
        if qs:
            kind = "wred" if any("ecnmarkedpacket" in v for v in qs.values()) else "queue"
            queues[port] = {q: {k: value(str(x)) for k, x in v.items()} for q, v in qs.items()}
        else:
            ports[port] = {k: value(str(x)) for k, x in body.items() if not isinstance(x, dict)}
    return SonicCounters(kind, not bad, ports, queues, tuple(bad))


def parse_sonic_counters(text: str) -> SonicCounters:
    check_limits(text)
    if not text.strip():
        raise ParseError("empty SONiC counters output")
    body = [x.strip() for x in text.splitlines() if x.strip() and not _PREAMBLE.match(x.strip())]
    if not body:
        raise ParseError("only SONiC's lines above a table, no table")
    if body[0].startswith("{"):
        return _from_json(text)
    return _from_tables(text)
