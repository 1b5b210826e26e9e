"""nccl-tests (``all_reduce_perf``, ``all_gather_perf``, ``reduce_scatter_perf``,
``alltoall_perf``, ``sendrecv_perf``, ``broadcast_perf``): text and ``-J`` JSON.

Every text generation parses; columns are found from the header, values split
on whitespace (11-digit sizes break fixed-width slicing)::

    2018   bytes N type op time algbw busbw res ...              (no leading '#')
    2021   size count type redop time algbw busbw error ...      (Rank lines without Group)
    2022+  size count type redop root time algbw busbw #wrong ... (Group column)
    2025+  '# nccl-tests version', '# Collective test starting/concluded', [0000:1b:00]

Leading ``#`` may have been stripped by a log shipper; the parser does not rely
on it. ``#wrong`` ``N/A`` (in-place alltoall/sendrecv, or ``-c 0``) is None.
``avg_busbw_gbs`` is the tool's average over the whole size sweep: kept for the
record, never a gate. A ``Test NCCL failure`` / ``NCCL WARN`` / MPI abort line,
a missing summary, or (newest generation) a missing ``concluded`` line makes the
run ``complete=False`` whatever rows printed before.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from rackops.docload import load_json
from rackops.parsers._common import MAX_COUNT, ParseError, is_na


@dataclass(frozen=True)
class NcclRank:
    rank: int
    group: int | None
    pid: int | None
    host: str
    device: int
    bus_id: str | None
    gpu: str | None


@dataclass(frozen=True)
class NcclPlace:
    time_us: float
    algbw_gbs: float
    busbw_gbs: float
    wrong: int | None
    max_error: float | None


@dataclass(frozen=True)
class NcclRow:
    bytes: int
    count: int
    type: str
    redop: str | None
    root: int | None
    out_of_place: NcclPlace | None
    in_place: NcclPlace | None


@dataclass(frozen=True)
class NcclTests:
    collective: str | None
    generation: str
    nranks: int | None
    nccl_version: str | None
    tests_version: str | None
    ranks: tuple[NcclRank, ...]
    rows: tuple[NcclRow, ...]
    avg_busbw_gbs: float | None
    avg_busbw_ok: bool | None
    out_of_bounds: int | None
    errors: tuple[str, ...]
    complete: bool
    # why an output that looks whole is not what nccl-tests prints (rows cut out of the
    # table, a foreign line inside it, an average the rows cannot produce)
    cut: tuple[str, ...] = ()

    def row_at(self, size: int) -> NcclRow | None:
        return next((r for r in self.rows if r.bytes == size), None)


_RANK = re.compile(
    r"Rank\s+(\d+)\s+(?:Group\s+(\d+)\s+)?(?:Pid\s+(\d+)\s+)?on\s+(\S+)\s+device\s+(\d+)\s+"
    r"\[([^\]]*)\]\s*(.*)$"
)
_FAIL = re.compile(
    r"(Test (NCCL|CUDA)? ?failure|\b(NCCL|CUDA) failure\b|NCCL WARN|MPI_ABORT|mpirun noticed|"
    r"'unhandled (system|cuda) error|internal error - please report|'invalid usage|"
    r"'remote process exited|"
    r"exited on signal|Segmentation fault|terminate called|^error:|"
    r"process returned a non-zero|Bitwise mismatches\s*:\s*[1-9]|"
    r"srun: error|DUE TO TIME LIMIT|Aborted)",
    re.IGNORECASE,
)
_NUMBER = re.compile(r"^[-+]?\d+(\.\d+)?([eE][-+]?\d+)?$")


def _float(token: str) -> float:
    if not _NUMBER.match(token):
        raise ParseError(f"expected a number in the result table, found {token!r}")
    return float(token)


def _place(tokens: list[str], wrong_kind: str) -> NcclPlace:
    time_us, algbw, busbw, last = tokens
    wrong = None
    max_error = None
    if wrong_kind in ("#wrong", "wrong"):
        wrong = None if is_na(last) else int(_float(last))
    elif not is_na(last):
        max_error = _float(last)
    return NcclPlace(_float(time_us), _float(algbw), _float(busbw), wrong, max_error)


def parse_nccl_tests(text: str) -> NcclTests:
    """Parse nccl-tests text output, or its ``-J`` JSON file (detected by ``{``)."""
    if text.lstrip().startswith("{"):
        return parse_nccl_tests_json(text)
    collective = tests_version = nccl_version = None
    concluded = False
    ranks: list[NcclRank] = []
    rows: list[NcclRow] = []
    errors: list[str] = []
    header: list[str] | None = None
    header_seen = headless = False  # a table whose header lines were cut off still has rows
    avg = avg_ok = oob = None
    sweep: _Sweep | None = None
    foreign: list[str] = []  # lines inside the result table that nccl-tests never prints there
    altered: list[str] = []  # rows whose figures contradict each other
    said: list[str] = []  # other lines, not comments: a failure's reason ("Invalid number ...")
    for raw in text.splitlines():
        line = raw.strip()
        body = line.lstrip("#").strip()
        if not body:
            continue
        if rows and oob is None and _foreign(body):
            foreign.append(line)
        if body.startswith("nThread ") and "minBytes" in body:
            sweep = _sweep(body, sweep)
        elif body.startswith("Reducing maxBytes to "):
            sweep = _reduced(body, sweep)
        elif body.startswith("nccl-tests version"):
            words = body.split()
            tests_version = words[2] if len(words) > 2 else None
            nccl_version = nccl_version or _library(words)
        elif body.startswith("Collective test starting:"):
            collective = body.split(":", 1)[1].strip()
        elif body.startswith("Collective test concluded:"):
            concluded = True
            collective = collective or body.split(":", 1)[1].strip()
        elif m := re.match(r"NCCL version (\S+)", body):
            nccl_version = m.group(1)
        elif (m := _RANK.search(body)) and ("Rank" in body.split()[0]):
            ranks.append(_rank(m))
        elif "algbw" in body and "busbw" in body:
            header = body.split()
            header_seen = True
        elif body.startswith("Out of bounds values"):
            oob = int(body.split(":", 1)[1].split()[0])
        elif body.startswith("Avg bus bandwidth"):
            parts = body.split(":", 1)[1].split()
            avg = float(parts[0]) if parts else None
            avg_ok = {"OK": True, "FAILED": False}.get(parts[1]) if len(parts) > 1 else None
        elif (
            (tokens := body.split())
            and tokens[0].isdigit()
            and (len(tokens) > 1 and tokens[1].isdigit())
            and (header is not None or (header := _inferred_header(tokens)) is not None)
        ):
            if not header_seen:
                headless = True
            rows.append(_row(tokens, header, line))
            if len(altered) < 3 and (why := _contradiction(tokens, header, rows[-1])):
                altered.append(why)
        elif _failure(body):
            errors.append(line)
        elif errors and len(said) < 8 and _reason(line, body):
            said.append(line)  # after the failure line: its reason (on stderr)
    if errors:  # the failure line names the source line; the reason is the tool's own words
        errors += [ln for ln in said if ln not in errors][:3]
    if header is None and not rows:
        if errors:
            meta = (len(ranks) or None, nccl_version, tests_version, tuple(ranks))
            return NcclTests(
                collective, "unknown", *meta, (), None, None, None, tuple(errors), False
            )
        raise ParseError("no result table (size/time/algbw/busbw): this is not nccl-tests output")
    assert header is not None
    generation = _generation(tests_version, collective, header)
    whole = altered + _whole_table(rows, sweep, avg, len(ranks), foreign)
    complete = (
        bool(rows)
        and avg is not None
        and oob is not None
        and not errors
        and not headless
        and (concluded or generation != "2025")
    )
    cut = tuple(whole) if complete else ()  # looks whole, is not: say why
    return NcclTests(
        collective,
        generation,
        len(ranks) or None,
        nccl_version,
        tests_version,
        tuple(ranks),
        tuple(rows),
        avg,
        avg_ok,
        oob,
        tuple(errors),
        complete and not cut,
        cut,
    )


def _reason(line: str, body: str) -> bool:
    """A line of the tool's own words after a failure: not a comment, not NCCL's debug
    log, not a rule of dashes ("Invalid number of GPUs: 2 requested but only 1 were found.")."""
    return not line.startswith("#") and "NCCL INFO" not in body and any(c.isalpha() for c in body)


def _library(words: list[str]) -> str | None:
    """NCCL's version from the 2.19+ header's ``nccl-library=22809``: NCCL_VERSION_CODE,
    major*10000 + minor*100 + patch since 2.9 (22809 is 2.28.9), major*1000 + minor*100 +
    patch before it (2708 is 2.7.8)."""
    for w in words:
        key, _, value = w.partition("=")
        if key == "nccl-library" and value.isdigit() and len(value) <= 6:
            code = int(value)
            if code >= 10000:
                return f"{code // 10000}.{code % 10000 // 100}.{code % 100}"
            if code >= 1000:
                return f"{code // 1000}.{code % 1000 // 100}.{code % 100}"
    return None


def _foreign(body: str) -> bool:
    """A line inside the table that is no row, failure, summary, or NCCL_DEBUG line (those
    interleave from another stream)."""
    return not (
        _row_like(body)
        or _failure(body)
        or "NCCL INFO" in body
        or body.startswith("Out of bounds values")
    )


def _failure(body: str) -> bool:
    return bool(_FAIL.search(body)) or body.startswith("error:")


def _row_like(body: str) -> bool:
    tokens = body.split(maxsplit=2)
    return len(tokens) > 1 and tokens[0].isdigit() and tokens[1].isdigit()


@dataclass(frozen=True)
class _Sweep:
    """What the ``# nThread … minBytes … maxBytes … step: N(factor|bytes)`` line promises."""

    min_bytes: int
    max_bytes: int
    step: int
    factor: bool


def _sweep(body: str, old: _Sweep | None) -> _Sweep | None:
    words = body.replace(":", " ").replace("(", " ").replace(")", " ").split()
    try:
        lo = int(words[words.index("minBytes") + 1])
        hi = int(words[words.index("maxBytes") + 1])
        at = words.index("step")
        step, kind = int(words[at + 1]), words[at + 2]
    except (ValueError, IndexError):
        raise ParseError(f"unreadable nccl-tests parameter line: {body[:200]!r}") from None
    if old is not None:
        raise ParseError("two nccl-tests parameter lines: two runs in one output")
    return _Sweep(lo, hi, step, kind == "factor")


def _reduced(body: str, sweep: _Sweep | None) -> _Sweep | None:
    """``Reducing maxBytes to N due to memory limitation``: the sweep stops at N."""
    word = body.split()[3]
    if sweep is None or not word.isdigit():
        return sweep
    return _Sweep(sweep.min_bytes, int(word), sweep.step, sweep.factor)


def _sizes(sweep: _Sweep) -> list[int] | None:
    """The sizes nccl-tests' loop visits (``size *= factor`` or ``size += step``), or None
    when the loop would not end or exceeds MAX_COUNT rows (no real run prints that)."""
    out: list[int] = []
    size = sweep.min_bytes
    while size <= sweep.max_bytes:
        out.append(size)
        if len(out) > MAX_COUNT:
            return None
        nxt = size * sweep.step if sweep.factor else size + sweep.step
        if nxt <= size:
            return None
        size = nxt
    return out


def _whole_table(
    rows: list[NcclRow], sweep: _Sweep | None, avg: float | None, nranks: int, foreign: list[str]
) -> list[str]:
    """Why the printed table is not the whole one nccl-tests printed (empty if it is): a
    foreign line inside it, rows that are not the sweep the parameter line promises (one
    sweep per data type and op), or an average the printed rows cannot produce."""
    if foreign:
        return [f"a line nccl-tests never prints inside its table: {foreign[0][:200]!r}"]
    why: list[str] = []
    sizes = _sizes(sweep) if sweep is not None else None
    if sweep is not None and sizes is None:
        why.append("the parameter line promises a sweep no run finishes")
    elif sweep is not None and sizes and rows:
        # the printed size is the loop's size rounded down to whole elements per rank, and
        # alltoall rounds each rank's share down to 16 bytes (a size below nranks × 16
        # prints as 0): up to nranks × 16 bytes less, and twice that for safety
        slack = max(nranks, 1) * 32
        if len(rows) % len(sizes) or any(
            not 0 <= sizes[i % len(sizes)] - r.bytes < slack for i, r in enumerate(rows)
        ):
            why.append(
                f"{len(rows)} rows are not whole sweeps of the {len(sizes)} sizes from "
                f"minBytes {sweep.min_bytes} to maxBytes {sweep.max_bytes} (rows cut out?)"
            )
    busbw = [p.busbw_gbs for r in rows for p in (r.out_of_place, r.in_place) if p is not None]
    if avg is not None and busbw:
        # common.cu: Avg bus bandwidth is the mean busBw of every out-of-place and in-place
        # result, printed with %g; each row's busbw is printed with 2 decimals
        mean = sum(busbw) / len(busbw)
        if abs(mean - avg) > 0.005 + 1e-5 * abs(avg) + 1e-9:
            why.append(
                f"Avg bus bandwidth {avg:g} is not the mean of the printed rows' busbw "
                f"({mean:.4f}): rows are missing or altered"
            )
    return why


def _rank(m: re.Match[str]) -> NcclRank:
    return NcclRank(
        int(m.group(1)),
        int(m.group(2)) if m.group(2) else None,
        int(m.group(3)) if m.group(3) else None,
        m.group(4),
        int(m.group(5)),
        m.group(6),
        m.group(7).strip() or None,
    )


def _generation(tests_version: str | None, collective: str | None, header: list[str]) -> str:
    """Which nccl-tests layout printed the table (its header and preamble tell)."""
    if tests_version or collective:
        return "2025"
    if "root" in header:
        return "2022"
    return "2021" if header[0] == "size" else "2018"


_DTYPES = {
    "int8", "uint8", "int32", "uint32", "int64", "uint64", "half", "float", "double",
    "bfloat16", "fp8_e4m3", "fp8_e5m2", "char", "int", "float16", "float32", "float64",
}  # fmt: skip
_REDOPS = {"sum", "prod", "max", "min", "avg", "none", "premulsum"}


def _inferred_header(tokens: list[str]) -> list[str] | None:
    """The header of a data row whose header lines were cut off: size count type redop
    [root] then out-of-place and in-place time/algbw/busbw/#wrong."""
    if len(tokens) < 12 or tokens[2] not in _DTYPES or tokens[3] not in _REDOPS:
        return None
    place = ["time", "algbw", "busbw", "#wrong"]
    if len(tokens) == 13 and re.fullmatch(r"-?\d+", tokens[4]):
        return ["size", "count", "type", "redop", "root", *place, *place]
    if len(tokens) == 12:
        return ["size", "count", "type", "redop", *place, *place]
    return None


def _row(tokens: list[str], header: list[str], line: str) -> NcclRow:
    try:
        prefix = header.index("time") if "time" in header else header.index("cputime")
    except ValueError as exc:
        raise ParseError(f"nccl-tests header without a time column: {' '.join(header)}") from exc
    wrong_kind = header[prefix + 3] if len(header) > prefix + 3 else "#wrong"
    values = tokens[prefix:]
    if len(tokens) < prefix or len(values) not in (4, 8):
        raise ParseError(f"nccl-tests row does not match its header: {line!r}")
    named = dict(zip(header[:prefix], tokens[:prefix], strict=True))
    out_place = _place(values[:4], wrong_kind) if len(values) == 8 else None
    in_place = _place(values[-4:], wrong_kind)
    root = named.get("root")
    return NcclRow(
        bytes=int(named.get("size", named.get("bytes", tokens[0]))),
        count=int(named.get("count", named.get("N", tokens[1]))),
        type=named.get("type", ""),
        redop=named.get("redop", named.get("op")),
        root=int(root) if root is not None and root.lstrip("-").isdigit() else None,
        out_of_place=out_place,
        in_place=in_place,
    )


def _half_unit(token: str) -> float:
    """Half a unit in the last digit printed: what rounding to this token may have hidden
    (``1717.7``: 0.05; ``3e+06``, nccl-tests' %g past six digits: 500,000)."""
    mantissa, _, exponent = token.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    return 0.5 * 10.0 ** (int(exponent or 0) - decimals)


def _contradiction(tokens: list[str], header: list[str], row: NcclRow) -> str | None:
    """A row whose algbw is not its size over its time (nccl-tests computes it so: bytes /
    1e9 / seconds; the time is in microseconds, milliseconds in the 2018 layout), within
    what the printed digits allow. A garbled or altered figure is not a result."""
    prefix = header.index("time") if "time" in header else header.index("cputime")
    values = tokens[prefix:]
    places = [values[:4], values[-4:]] if len(values) == 8 else [values[-4:]]
    for time_tok, algbw_tok, *_ in places:
        if is_na(time_tok) or is_na(algbw_tok):
            continue
        time, algbw = float(time_tok), float(algbw_tok)
        if time <= 0:
            continue
        slack = _half_unit(algbw_tok)
        time_slack = _half_unit(time_tok) / time  # relative: the time's own rounding
        if not any(
            abs(algbw - expect) <= slack + expect * (time_slack + 0.01)
            for expect in (row.bytes / 1e3 / time, row.bytes / 1e6 / time)
        ):
            return (
                f"the {row.bytes}-byte row's algbw {algbw_tok} is not its size over its time "
                f"{time_tok} ({row.bytes / 1e3 / time:.4g} GB/s): an altered or garbled row"
            )
    return None


def _json_place(obj: Any) -> NcclPlace | None:
    if not isinstance(obj, dict):
        return None
    wrong = obj.get("nwrong")
    time: Any = obj.get("time", obj.get("cpu_time"))
    try:
        return NcclPlace(
            float(time),
            float(obj["alg_bw"]),
            float(obj["bus_bw"]),
            None if wrong is None else int(wrong),
            None,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ParseError(f"nccl-tests JSON result lacks time/alg_bw/bus_bw: {exc}") from exc


def parse_nccl_tests_json(text: str) -> NcclTests:
    try:
        data = load_json(text)
    except json.JSONDecodeError as exc:
        raise ParseError(
            f"nccl-tests JSON is unreadable (cut short?): {exc.msg} at line {exc.lineno}"
        ) from exc
    if not isinstance(data, dict) or "results" not in data:
        raise ParseError("nccl-tests JSON without a 'results' list")
    config = data.get("config") or {}
    devices = config.get("devices") or data.get("devices") or []
    ranks = tuple(
        NcclRank(
            int(d["rank"]),
            d.get("group"),
            d.get("pid"),
            str(d.get("hostname", "")),
            int(d.get("device", 0)),
            d.get("device_hex"),
            d.get("device_info"),
        )
        for d in devices
        if isinstance(d, dict) and "rank" in d
    )
    rows = []
    for r in data["results"] or []:
        root = str(r.get("root", "")).strip()
        rows.append(
            NcclRow(
                bytes=int(r["size"]),
                count=int(r["count"]),
                type=str(r.get("type", "")),
                redop=r.get("redop"),
                root=int(root) if root.lstrip("-").isdigit() else None,
                out_of_place=_json_place(r.get("out_of_place")),
                in_place=_json_place(r.get("in_place")),
            )
        )
    avg_obj = data.get("average_bus_bandwidth") or {}
    oob_obj = data.get("out_of_bounds") or {}
    errors = tuple(str(e) for e in data.get("errors") or [])
    okay = avg_obj.get("okay")
    avg = avg_obj.get("bandwidth")
    oob = oob_obj.get("count")
    args = data.get("args") or []
    collective = next((a.rsplit("/", 1)[-1] for a in args if "_perf" in str(a)), None)
    complete = bool(rows) and avg is not None and oob is not None and not errors
    nccl = data.get("nccl_version")
    return NcclTests(
        collective,
        "json",
        len(ranks) or None,
        None if nccl is None else str(nccl),
        None,
        ranks,
        tuple(rows),
        None if avg is None else float(avg),
        okay if isinstance(okay, bool) else None,
        None if oob is None else int(oob),
        errors,
        complete,
    )
