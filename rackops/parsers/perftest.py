"""perftest: ``ib_write_bw``/``ib_read_bw``/``ib_send_bw`` and ``*_lat``, text and JSON.

Text sample (bandwidth, ``--report_gbits``)::

    ---------------------------------------------------------------------------------------
                        RDMA_Write BW Test
     Dual-port       : OFF      Device         : mlx5_0
     Number of qps   : 1        Transport type : IB
     ...
     Mtu             : 4096[B]
     Link type       : IB
    ---------------------------------------------------------------------------------------
     #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
     65536      5000             391.25             390.98         0.745729
    ---------------------------------------------------------------------------------------

Bandwidth is always returned in Gb/s. Without ``--report_gbits`` perftest prints
``MB/sec`` (older) or ``MiB/sec`` (newer); both are 2^20 bytes in perftest's
code. The parser cross-checks against MsgRate × size and records which unit it
used in ``convention``. ``-b`` reports the sum of both directions
(``bidirectional``). In duration mode (``-D``) the peak is not measured: the
peak column reads 0.00 and becomes None. A run whose table never closed, or that
printed a connection or completion error, is ``complete=False`` with the
messages in ``errors``.

JSON (``--out_json``): ``{"test_info": {...}, "results": {"MsgSize", "n_iterations",
"BW_peak", "BW_average", "MsgRate"}}``; some builds emit unquoted words and
trailing commas, which are repaired before reading.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from rackops.docload import load_json
from rackops.parsers._common import ParseError, to_int

MIB_GBPS = 2**20 * 8 / 1e9  # 1 MiB/s in Gb/s
MB_GBPS = 8 / 1e3  # 1 MB/s (10^6 bytes) in Gb/s


@dataclass(frozen=True)
class BwRow:
    bytes: int
    iterations: int
    bw_peak_gbps: float | None
    bw_avg_gbps: float
    msg_rate_mpps: float | None


@dataclass(frozen=True)
class LatRow:
    bytes: int
    iterations: int
    t_min_us: float | None
    t_max_us: float | None
    t_typical_us: float | None
    t_avg_us: float | None
    t_stdev_us: float | None
    t_p99_us: float | None
    t_p999_us: float | None


@dataclass(frozen=True)
class Perftest:
    test: str | None
    kind: str  # "bw" | "lat"
    device: str | None
    link_type: str | None
    transport: str | None
    connection: str | None
    qps: int | None
    mtu: int | None
    gid_index: int | None
    bidirectional: bool
    use_cuda: bool
    units: str
    source_units: str
    convention: str
    rows: tuple[BwRow | LatRow, ...]
    errors: tuple[str, ...]
    complete: bool

    def row_at(self, size: int) -> BwRow | LatRow | None:
        return next((r for r in self.rows if r.bytes == size), None)


_ERRORS = re.compile(
    r"(couldn't|could not|unable to|failed|error|timed? ?out|refused|"
    r"no route|not found|cannot|can't|segmentation fault|aborted)",
    re.IGNORECASE,
)
_NOT_ERRORS = re.compile(r"(#bytes|^\s*cuda|cuMem|Failed status 0\b)", re.IGNORECASE)
_TITLE = re.compile(r"^\s*(\S.*?\b(?:BW|Latency|Lat)\s+Test)\s*$")
# The banner is split on tabs and runs of 2+ spaces first, then on ':' (str methods): the
# former one-regex reading backtracked for a minute on a 52 KB line.
_BANNER_SPLIT = re.compile(r"\t| {2,}")
_BANNER_KEY = re.compile(r"[A-Za-z][\w .*/-]*")
_NUMBER = re.compile(r"^[-+]?\d+(\.\d+)?([eE][-+]?\d+)?$")
_NON_FINITE = frozenset({"nan", "-nan", "+nan", "inf", "-inf", "+inf"})


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


_LAT_COLS = (
    ("#bytes", "bytes"),
    ("#iterations", "iterations"),
    ("t_min", "t_min_us"),
    ("t_max", "t_max_us"),
    ("t_typical", "t_typical_us"),
    ("t_avg", "t_avg_us"),
    ("t_stdev", "t_stdev_us"),
    ("99% percentile", "t_p99_us"),
    ("99.9% percentile", "t_p999_us"),
)


def _read_table(lines: list[str], header_idx: int, is_bw: bool) -> tuple[list[list[float]], bool]:
    """The result rows under the header, and whether the table's closing border came."""
    table: list[list[float]] = []
    closed = False
    # the closing border is as long as the border above the header: a border cut part-way
    # (the output ended inside it) does not close the table
    borders = [len(x.strip()) for x in lines[:header_idx] if set(x.strip()) == {"-"}]
    width = max(borders, default=20)
    for ln in lines[header_idx + 1 :]:
        tokens = ln.split()
        # a latency statistic perftest could not compute prints as -nan or inf (the stdev of
        # a rounding-negative variance; a server side that took no sample): that column is
        # unknown, the row is still whole
        if tokens and all(
            _NUMBER.match(t) or (not is_bw and i > 1 and t.lower() in _NON_FINITE)
            for i, t in enumerate(tokens)
        ):
            table.append([float(t) for t in tokens])
        elif ln.strip().startswith("---") and table:
            closed = set(ln.strip()) == {"-"} and len(ln.strip()) >= width
            break
    return table, closed


def _units_factor(source: str, rows: list[list[float]]) -> tuple[float, str]:
    """Gb/s per source unit, and the convention text recorded with the result."""
    if source == "Gb/sec":
        return 1.0, "reported in Gb/s (--report_gbits)"
    # MB/sec and MiB/sec: perftest divides by 2^20; confirm with MsgRate x size.
    for size, _iters, _peak, avg, rate in rows:
        if rate and avg:
            expected = rate * 1e6 * size * 8 / 1e9
            mib, mb = avg * MIB_GBPS, avg * MB_GBPS
            if abs(mb - expected) < abs(mib - expected):
                return MB_GBPS, f"{source} read as 10^6 bytes/s: MsgRate x size agrees"
            return MIB_GBPS, f"{source} read as MiB/s (2^20 bytes): MsgRate x size agrees"
    return MIB_GBPS, f"{source} read as MiB/s (2^20 bytes), perftest's divisor"


def _banner_line(line: str, out: dict[str, str]) -> None:
    """`` Dual-port       : OFF\t\tDevice         : mlx5_0`` → {Dual-port: OFF, Device: mlx5_0}."""
    key: str | None = None  # a key whose ':' and value are in the next chunks
    for chunk in _BANNER_SPLIT.split(line):
        chunk = chunk.strip()
        if not chunk:
            continue
        head, colon, value = chunk.partition(":")
        if colon and (head.strip() or key):
            name = head.strip() or key
            assert name is not None
            key = None
            if not _BANNER_KEY.fullmatch(name):
                continue
            if value.strip():
                out.setdefault(name, value.strip())
            else:
                key = name
        elif key is not None and not colon:
            out.setdefault(key, chunk)
            key = None
        else:
            key = chunk if not colon else None


def _banner(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in text.splitlines():
        if line.strip().startswith(("local address", "remote address", "GID:", "#")):
            continue
        _banner_line(line, out)
    return out


def _common(banner: dict[str, str]) -> dict[str, Any]:
    mtu = banner.get("Mtu", "")
    return {
        "device": banner.get("Device"),
        "link_type": banner.get("Link type"),
        "transport": banner.get("Transport type"),
        "connection": banner.get("Connection type"),
        "qps": to_int(banner.get("Number of qps")) if banner.get("Number of qps") else None,
        "mtu": int(m.group()) if (m := re.match(r"\d+", mtu)) else None,
        "gid_index": to_int(banner.get("GID index")) if banner.get("GID index") else None,
    }


def parse_perftest(text: str) -> Perftest:
    """Parse perftest text output, or its ``--out_json`` file (detected by ``{``)."""
    if text.lstrip().startswith("{"):
        return parse_perftest_json(text)
    lines = text.splitlines()
    title = next(
        (m.group(1) for ln in lines if ln.rstrip().endswith("Test") and (m := _TITLE.match(ln))),
        None,
    )
    header_idx = next((i for i, ln in enumerate(lines) if ln.strip().startswith("#bytes")), None)
    errors = [
        ln.strip()
        for ln in lines
        if _ERRORS.search(ln) and not _NOT_ERRORS.search(ln) and "WARNING" not in ln
    ]
    banner = _banner("\n".join(lines[: header_idx if header_idx is not None else len(lines)]))
    if header_idx is None:
        if title is None and not errors:
            raise ParseError("no '#bytes' result header: this is not perftest output")
        return Perftest(
            title,
            "lat" if title and "Lat" in title else "bw",
            bidirectional=bool(title and "Bidirectional" in title),
            use_cuda="CUDA" in text,
            units="Gb/s",
            source_units="",
            convention="",
            rows=(),
            errors=tuple(errors) or ("no result table",),
            complete=False,
            **_common(banner),
        )
    header = lines[header_idx]
    is_bw = "BW" in header
    table, closed = _read_table(lines, header_idx, is_bw)
    kind = "bw" if is_bw else "lat"
    rows: list[BwRow | LatRow] = []
    if is_bw:
        unit_m = re.search(r"BW average\[([^\]]{1,40})\]", header)
        source = unit_m.group(1) if unit_m else "MB/sec"
        for t in table:
            if len(t) < 4:
                raise ParseError(f"bandwidth row with {len(t)} columns: {t}")
        factor, convention = _units_factor(
            source, [[*t[:4], t[4] if len(t) > 4 else 0.0] for t in table]
        )
        for t in table:
            peak = t[2] * factor if t[2] > 0 else None
            rows.append(
                BwRow(
                    int(t[0]),
                    int(t[1]),
                    _r(peak),
                    _r(t[3] * factor) or 0.0,
                    t[4] if len(t) > 4 else None,
                )
            )
        units = "Gb/s"
    else:
        cols = sorted((header.find(label), key) for label, key in _LAT_COLS if label in header)
        keys = [k for _, k in cols]
        for t in table:
            if len(t) != len(keys):
                raise ParseError(f"latency row has {len(t)} columns, header has {len(keys)}")
            values = dict(zip(keys, t, strict=True))
            rows.append(
                LatRow(
                    bytes=int(values["bytes"]),
                    iterations=int(values["iterations"]),
                    **{k: _finite(values.get(k)) for _, k in _LAT_COLS[2:]},
                )
            )
        source, units, convention = "usec", "usec", "latency in microseconds"
    complete = closed and bool(rows) and not errors
    return Perftest(
        title,
        kind,
        bidirectional=bool(title and "Bidirectional" in title),
        use_cuda="CUDA" in text,
        units=units,
        source_units=source,
        convention=convention,
        rows=tuple(rows),
        errors=tuple(errors),
        complete=complete,
        **_common(banner),
    )


def _r(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _repair_json(text: str) -> Any:
    try:
        return load_json(text)
    except json.JSONDecodeError:
        pass
    fixed = re.sub(r":\s*([A-Za-z_][\w.*-]*)\s*(?=[,}\n])", r': "\1"', text)
    fixed = re.sub(r",\s*([}\]])", r"\1", fixed)
    try:
        return load_json(fixed)
    except json.JSONDecodeError as exc:
        raise ParseError(f"perftest JSON is unreadable: {exc.msg} at line {exc.lineno}") from exc


def parse_perftest_json(text: str) -> Perftest:
    data = _repair_json(text)
    if not isinstance(data, dict) or "results" not in data:
        raise ParseError("perftest JSON without a 'results' object")
    info = data.get("test_info") or {}
    res = data["results"]
    if not isinstance(res, dict) or not isinstance(info, dict):
        raise ParseError("perftest JSON 'results'/'test_info' are not objects")
    title = str(info.get("test", "")).replace("_", " ") or None
    banner = {k.replace("_", " "): str(v) for k, v in info.items()}
    banner["Number of qps"] = str(info.get("Number_of_qps", "")) or ""
    try:
        size, iters = int(res["MsgSize"]), int(res["n_iterations"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ParseError(f"perftest JSON result lacks MsgSize/n_iterations: {exc}") from exc
    rows: list[BwRow | LatRow]
    if "BW_average" in res:
        avg, peak, rate = (
            float(res[k]) if res.get(k) is not None else None
            for k in ("BW_average", "BW_peak", "MsgRate")
        )
        assert avg is not None
        source = "Gb/sec"
        if rate:
            expected = rate * 1e6 * size * 8 / 1e9
            if abs(avg * MIB_GBPS - expected) < abs(avg - expected):
                source = "MiB/sec"
        factor, convention = _units_factor(source, [[size, iters, peak or 0.0, avg, rate or 0.0]])
        if source == "Gb/sec":
            convention = "JSON has no unit; MsgRate x size says Gb/s (--report_gbits)"
        rows = [
            BwRow(size, iters, _r(peak * factor) if peak else None, _r(avg * factor) or 0.0, rate)
        ]
        kind, units = "bw", "Gb/s"
    else:

        def get(*names: str) -> float | None:
            for n in names:
                if res.get(n) is not None:
                    return float(res[n])
            return None

        rows = [
            LatRow(
                size,
                iters,
                get("t_min"),
                get("t_max"),
                get("t_typical"),
                get("t_avg"),
                get("t_stdev"),
                get("99percentile", "t_99_percentile"),
                get("99.9percentile", "t_99.9_percentile"),
            )
        ]
        kind, units, source, convention = "lat", "usec", "usec", "latency in microseconds"
    return Perftest(
        title,
        kind,
        bidirectional=bool(title and "Bidirectional" in title),
        use_cuda=str(info.get("Use_CUDA_memory", info.get("use_cuda", "OFF")))
        not in ("OFF", "0", "False"),
        units=units,
        source_units=source,
        convention=convention,
        rows=tuple(rows),
        errors=(),
        complete=True,
        **_common(banner),
    )
