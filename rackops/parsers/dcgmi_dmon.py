"""``dcgmi dmon -e <ids> [-i …] [-g …] [-d ms] [-c n]``: DCGM field samples per entity.

Layout (``dcgmi/DeviceMonitor.cpp``; research docs/research/issue-24-clocks-dmon.md §3)::

    #Entity   TMPTR        POWER             TOTEC        (3.x/4.x; 2.x: "# Entity", right-aligned)
    ID         C            W                 mJ          (units; 2.x: "Id"; blank for no unit)
    GPU 7     45           57.430            108702777
    GPU 0     N/A          N/A               N/A

Both header lines are printed again every 14 iterations; a repeated header must name the
same fields (another field list is another output: ParseError). Rows are ``<entity> <id>``
plus one whitespace-free cell per field (``GPU 0 LINK 3`` style rows keep ``GPU 0 LINK`` as
the entity). Cells: ``N/A`` → None, integers (field 112, the clock event reasons mask, is
printed in **decimal**: decode it with :func:`rackops.parsers.nvidia_smi_perf.reasons`),
doubles (3 decimals), anything else kept as text (``…...`` truncation).

Not complete: a row with fewer or more cells than fields (cut, or a blank column), a header
with no row, an ``Error:`` line after rows, text that stops without its final newline.
An ``Error: …`` line with no rows (``Unable to connect to host engine``), rows with no
header, or text with neither raise ParseError.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rackops.parsers._common import MAX_COUNT, ParseError, bounded, check_limits, is_na

__all__ = ["Dmon", "DmonRow", "parse_dcgmi_dmon"]


@dataclass(frozen=True)
class DmonRow:
    entity: str
    id: int
    values: dict[str, float | str | None]


@dataclass(frozen=True)
class Dmon:
    fields: tuple[str, ...]
    units: tuple[str, ...]
    rows: tuple[DmonRow, ...]
    complete: bool
    errors: tuple[str, ...]

    def column(self, name: str) -> tuple[float | str | None, ...]:
        return tuple(r.values.get(name) for r in self.rows)


_INT = re.compile(r"[-+]?\d{1,20}")
_FLOAT = re.compile(r"[-+]?\d{1,20}\.\d{1,9}")
_ID = re.compile(r"\d{1,9}")
_SHORT = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,31}")
_ERROR = re.compile(r"^(Error|ERROR)\b|^Failed|Unable to connect|host engine", re.I)


def _value(cell: str) -> float | str | None:
    if is_na(cell):
        return None
    if _INT.fullmatch(cell):
        return int(cell)
    if _FLOAT.fullmatch(cell):
        return float(cell)
    return cell


def _spans(line: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in re.finditer(r"\S+", line)]


def _units(header: str, unit_line: str, nfields: int, right: bool) -> tuple[str, ...]:
    """Assign each unit token to the column it sits in (units are blank for fields with no
    unit, so a whitespace split would shift them)."""
    heads = _spans(header)[-nfields:] if nfields else []
    units = [""] * nfields
    for start, end in _spans(unit_line)[1:]:  # the first token is ID / Id
        if right:  # 2.x: right-aligned, a column ends where its name ends
            col = next((k for k, (_, e) in enumerate(heads) if end <= e), nfields - 1)
        else:  # 3.x+: left-aligned, a column starts where its name starts
            col = max((k for k, (s, _) in enumerate(heads) if s <= start + 1), default=0)
        if 0 <= col < nfields:
            units[col] = (units[col] + " " + unit_line[start:end]).strip()
    return tuple(units)


def parse_dcgmi_dmon(text: str) -> Dmon:
    check_limits(text)
    text = text.replace("\r\n", "\n")
    errors: list[str] = []
    fields: tuple[str, ...] | None = None
    units: tuple[str, ...] = ()
    header_line = ""
    right = False
    rows: list[DmonRow] = []
    expect_units = False
    lines = text.split("\n")
    cut_last = not text.endswith("\n")
    for n, raw in enumerate(lines, 1):
        line = raw.rstrip()
        if not line.strip():
            expect_units = False
            continue
        tokens = line.split()
        last = n == len(lines) and cut_last
        if line.startswith("#"):
            body = line[1:].split()
            if not body or body[0] != "Entity" or not all(_SHORT.fullmatch(t) for t in body[1:]):
                raise ParseError(f"line {n}: not a dcgmi dmon header: {line.strip()[:80]!r}")
            names = tuple(body[1:])
            if fields is None:
                fields, header_line, right = names, line, line.startswith("# ")
                bounded(len(fields), "dmon fields", 1024)
            elif names != fields:
                raise ParseError(f"line {n}: a header with other fields: two outputs joined")
            expect_units = True
            continue
        if tokens[0] in ("ID", "Id") and expect_units:
            expect_units = False
            if fields is not None and not units:
                units = _units(header_line, line, len(fields), right)
            continue
        expect_units = False
        if _ERROR.search(line):
            if not rows:
                raise ParseError(f"dcgmi dmon could not run: {line.strip()}")
            errors.append(line.strip())
            continue
        if fields is None:
            raise ParseError(
                "no '#Entity' header line: this is not 'dcgmi dmon' output "
                f"(line {n}: {line.strip()[:80]!r})"
            )
        if last:
            errors.append(f"line {n}: the last row has no final newline (cut mid-row?)")
            continue
        k = len(fields)
        if len(tokens) == k + 4 and _ID.fullmatch(tokens[1]) and _ID.fullmatch(tokens[3]):
            entity, ident, cells = " ".join(tokens[:3]), tokens[3], tokens[4:]
        elif len(tokens) >= 2 and _ID.fullmatch(tokens[1]):
            entity, ident, cells = tokens[0], tokens[1], tokens[2:]
        else:
            errors.append(f"line {n}: not a dmon row: {line.strip()[:80]!r}")
            continue
        if len(cells) != k:
            errors.append(f"line {n}: {len(cells)} values for {k} fields (cut or blank column?)")
            continue
        values = {f: _value(c) for f, c in zip(fields, cells, strict=True)}
        rows.append(DmonRow(entity, bounded(int(ident), "entity id", MAX_COUNT), values))
        bounded(len(rows), "dmon rows", MAX_COUNT * 16)
    if fields is None:
        raise ParseError("no '#Entity' header line: this is not 'dcgmi dmon' output")
    if not rows:
        errors.append("a dmon header with no sample row")
    return Dmon(fields, units, tuple(rows), not errors, tuple(errors))
