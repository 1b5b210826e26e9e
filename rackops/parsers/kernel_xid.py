"""Kernel log (``journalctl -k``, ``dmesg``, ``dmesg -T``, syslog): NVIDIA GPU events.

Reads the NVIDIA driver's error lines out of a kernel log and ignores every other line (a
kernel log is mostly other text). Three kinds of event (research: docs/research/issue-24-xid.md)::

    NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>', name=<unknown>, Graphics Exception: …
    NVRM: Xid (PCI:0000:9b:00): 119, pid=2024380, name=nvidia-smi, Timeout after 6s …
    NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper: New row marked …   (pid, no name)
    NVRM: Xid (PCI:0000:01:00): 31, Ch 0000003a, intr 10000000. MMU Fault: …  (≤418; ≥570)
    NVRM: Xid (PCI:0000:01:00 GPU-I:05): 94, pid=7194, Contained: …           (MIG)
    NVRM: Xid (0000:01:00): 3, C 00000005 …                                   (pre-PCI: form)
    NVRM: Xid (PCI:0000:dc:00): 45, pid=…, name=python3, Ch 00000001 caused by previous Xid 149
    nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20034, Fatal, Link 48 LTSSM Fault Up
    NVRM: GPU 0000:91:00.0: GPU has fallen off the bus.                       (no Xid)
    NVRM: GPU at 0000:65:00.0 has fallen off the bus.                         (old wording)
    NVRM: The NVIDIA GPU 0000:b3:00.0                                         (probe, one printk
    NVRM: (PCI ID: 10de:26b5) installed in this system has                    over three lines:
    NVRM: fallen off the bus and is not responding to commands.               one event)

The event is found anywhere in the line, after any prefix: none, ``kernel: ``, dmesg
``[ 1843.308145] `` (→ ``uptime_s``), ``dmesg -T`` ``[Mon Aug  5 03:54:13 2024] ``, syslog /
journalctl short ``Dec  2 11:38:47 host kernel: `` (hostname may be missing, the month
localised: ``11月 15``, ``oct.``) with or without a printk stamp after ``kernel:``, ISO
``2026-06-01T15:55:06.218036+03:00 host kernel: ``, ``dmesg --time-format iso``
(``kern  :err   : 2025-01-25T10:34:54,859532+00:00 ``), Talos ``IP: kern: warning: [RFC3339]: ``;
and the quoting people add when pasting: ``> `` (and bare ``>`` lines), ``- ``, backticks, a
fence glued to the line, ``"…"``, a trailing `` | |``. ``timestamp`` is kept as printed.

The BDF is normalised to ``dddd:bb:dd.f`` in lowercase: the Xid line prints no function digit
(``.0`` is added), SXid and the fallen-off lines do. ``pid='<unknown>'`` / ``name=<unknown>``
(515–565) become ``None``, as does an absent field (≤418 and ≥570.86 when the process is
unknown); ``pid=0`` is a real value. The code is the number after ``): `` (SXid's is
zero-padded to five digits: ``12028``). ``caused_by`` is the root-cause Xid that 570.123+
appends to Xid 45 (`` caused by previous Xid 149``); the text stays in ``message``.

A Blackwell NVLink5 Xid (144-150) names its unit, severity and the GPU's own link in its
body (``nvlink``; the text stays in ``message``)::

    NVRM: Xid (PCI:0009:01:00): 149, NETIR_LINK_EVT  Fatal   XC0 i0 Link 01 (0x021425c6 …)
    NVRM: Xid (PCI:0018:01:00): 145, pid=876767, name=ray::W…, RLW_RXPIPE Nonfatal XC0 i0 Link 13 …
    NVRM: Xid (PCI:0019:01:00): 149, NETIR Fatal XC0 i0 Link -1 (0x000fe406 …)   (the unit, no link)
    NVRM: Xid (PCI:0000:00:1e): 149, NETIR_LINK_EVT Fatal XC 1 i 2 Link 01 [0x0000000a]

``Link -1`` is the unit as a whole (``link`` None); the padding between the columns varies.
Sources: gpud's kmsg tests (GB200 PCI domains 0008/0009/0018/0019) and NVIDIA's Xid catalogue
sheet "XID 144-150 Decode" as gpud transcribed it (docs/research/issue-42-xid-nccl-mnnvl.md).
An NVLink5 Xid whose body does not read so keeps ``nvlink`` None: it is still an event.

One event per printed line: the driver prints several lines for one error (Xid 13's SM/ESR
lines; SXid's ``Fatal…``/``Severity…``/``Data {…}`` triplet) and both ``Xid 79`` and
``GPU has fallen off the bus.`` for one loss; counts are lines, not incidents (and lower
bounds: the driver rate-limits repeats).

A line holding ``NVRM: Xid (`` or ``SXid (`` that does not read (a redacted ``(PCI:...)``, a
line cut by a paste), a probe message cut short, or a last line without its final newline
that mentions ``NVRM``/``SXid`` make the result ``complete=False`` with the line in
``errors`` (no event is guessed from it). A log without any NVIDIA line is a whole result
with no events; text with no line that looks like a kernel log at all (no dmesg, syslog or
ISO prefix, no ``kernel:``, no NVIDIA line, no journalctl ``-- … --`` marker) and empty
input raise ParseError.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rackops.parsers._common import (
    MAX_COUNT,
    MAX_NVLINKS,
    ParseError,
    bounded,
    check_limits,
    plain,
)

__all__ = ["GpuEvent", "KernelLog", "NvlinkEvent", "parse_kernel_xid"]

# NVLink5 (Blackwell) Xids: their body names a unit, a severity and a link
NVLINK5_XIDS = range(144, 151)


@dataclass(frozen=True)
class NvlinkEvent:
    unit: str  # NETIR_LINK_EVT, RLW_SRC_TRACK, TLW_RX/TLW_RX_PIPE0 ...
    fatal: bool
    link: int | None  # the GPU's NVLink port (0-17 on GB200); None: the unit as a whole


@dataclass(frozen=True)
class GpuEvent:
    kind: str  # "xid" | "sxid" | "fallen_off_bus"
    code: int | None
    bdf: str
    mig: str | None
    pid: int | None
    process: str | None
    message: str
    timestamp: str | None
    uptime_s: float | None
    line: int
    caused_by: int | None = None
    nvlink: NvlinkEvent | None = None


@dataclass(frozen=True)
class KernelLog:
    events: tuple[GpuEvent, ...]
    lines: int
    complete: bool
    errors: tuple[str, ...]


# Linux's pid_max ceiling (PID_MAX_LIMIT on 64-bit): 2**22.
PID_MAX = 4 * 1024 * 1024
# Kept in `errors` at most; the rest are counted in one last entry.
MAX_ERRORS = 200

_HEX = "[0-9a-fA-F]"
_BDF = rf"(?P<dom>{_HEX}{{4}}):(?P<bus>{_HEX}{{2}}):(?P<dev>{_HEX}{{2}})"
_BDF_FN = rf"{_BDF}\.(?P<fn>[0-7])"

_XID = re.compile(
    rf"NVRM: Xid \((?:PCI:)?{_BDF}(?: (?P<mig>GPU-I:\d{{1,3}}(?: GPU-CI:\d{{1,3}})?))?\): "
    r"(?P<code>\d{1,5}),(?: (?P<rest>.*)|)$"
)
_SXID = re.compile(rf"SXid \((?:PCI:)?{_BDF_FN}\): (?P<code>\d{{1,5}}),(?: (?P<rest>.*)|)$")
_PID = re.compile(r"pid=(?P<pid>'<unknown>'|\d{1,10}),(?: |$)")
_NAME = re.compile(r"name=(?P<name>[^,]{0,256}),(?: |$)")
_CAUSED = re.compile(r" caused by previous Xid (\d{1,5})$")
_NVLINK5 = re.compile(
    r"(?P<unit>[A-Z][A-Z0-9_]{0,40}(?:/[A-Z][A-Z0-9_]{0,40})?)\s+(?P<sev>Nonfatal|Fatal)\s+"
    r"XC ?[01]\s+i ?\d{1,3}\s+Link\s+(?P<link>-1|\d{1,3})(?:\s|$)"
)

_FALLEN_FULL = re.compile(
    rf"NVRM: GPU {_BDF_FN}: (?P<msg>GPU has fallen off the bus\..*)$"
    rf"|NVRM: GPU at {_BDF_FN.replace('?P<', '?P<o')} (?P<omsg>has fallen off the bus\..*)$"
)
_PROBE = re.compile(rf"NVRM: The NVIDIA GPU {_BDF_FN}$")
_PROBE_2 = re.compile(
    rf"NVRM: (?P<msg>\(PCI ID: {_HEX}{{4}}:{_HEX}{{4}}\) installed in this system has)$"
)
_PROBE_3 = re.compile(r"NVRM: (?P<msg>fallen off the bus and is not responding to commands\.)$")

# Prefix pieces (searched only in the text before the NVIDIA marker).
_UPTIME = re.compile(r"\[ *(\d{1,10}\.\d{1,9})\]")
_ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?")
_CTIME = re.compile(r"\[([A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4})\]")
_DECOR = re.compile(r"[\s>`\"]*(?:- )?")
_SYSLOG = re.compile(r"(\S{1,12} {1,2}\d{1,2} \d\d:\d\d:\d\d(?:\.\d{1,9})?) ")
# Lines that show the text is a kernel log (after the paste decoration is skipped).
_KERNEL_LINE = re.compile(
    r"\[ *\d{1,10}\.\d{1,9}\]"
    r"|\[[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}\]"
    r"|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\S* "
    r"|\S{1,12} {1,2}\d{1,2} \d\d:\d\d:\d\d(?:\.\d{1,9})? (?:\S{1,253} )?kernel: "
    r"|kernel: "
    r"|kern +:\w+ *: "
    r"|-- (?:No entries|Logs begin at|Journal begins at|Boot [0-9a-f]{32}) ?.{0,200}--$"
)
_SUFFIX = re.compile(r"(?: \|)+ *$")


def _bdf(m: re.Match[str], prefix: str = "") -> str:
    fn = m.group(prefix + "fn") if prefix + "fn" in m.re.groupindex else None
    dom, bus, dev = (m.group(prefix + k) for k in ("dom", "bus", "dev"))
    return f"{dom}:{bus}:{dev}.{fn or '0'}".lower()


def _stamps(prefix: str) -> tuple[str | None, float | None]:
    """The timestamp (as printed) and the dmesg uptime in the text before the event."""
    up = _UPTIME.search(prefix)
    uptime = float(up.group(1)) if up else None
    iso = _ISO.search(prefix)
    if iso:
        return iso.group(), uptime
    ctime = _CTIME.search(prefix)
    if ctime:
        return ctime.group(1), uptime
    lead = _DECOR.match(prefix)
    start = lead.end() if lead else 0
    sys = _SYSLOG.match(prefix, start)
    if sys:
        return sys.group(1), uptime
    return None, uptime


def _body(line: str, start: int) -> str:
    """The line from ``start``, less what a paste added after it (`` | |``, a closing quote)."""
    body = _SUFFIX.sub("", line[start:]).rstrip()
    opener = line[:start].rstrip()[-1:]
    if opener in ('"', "`") and body.endswith(opener):
        body = body[:-1].rstrip()
    return body


def _xid(body: str, n: int, ts: str | None, up: float | None) -> GpuEvent | None:
    m = _XID.match(body)
    if m is None:
        return None
    rest = m.group("rest") or ""
    pid: int | None = None
    process: str | None = None
    pm = _PID.match(rest)
    if pm:
        raw = pm.group("pid")
        pid = None if raw.startswith("'") else bounded(int(raw), "pid", PID_MAX)
        rest = rest[pm.end() :]
        nm = _NAME.match(rest)
        if nm:
            name = nm.group("name")
            process = None if name == "<unknown>" else name
            rest = rest[nm.end() :]
    message = rest.strip()
    caused = _CAUSED.search(message)
    code = int(m.group("code"))
    return GpuEvent(
        kind="xid",
        code=code,
        bdf=_bdf(m),
        mig=m.group("mig"),
        pid=pid,
        process=process,
        message=message,
        timestamp=ts,
        uptime_s=up,
        line=n,
        caused_by=int(caused.group(1)) if caused else None,
        nvlink=_nvlink(message) if code in NVLINK5_XIDS else None,
    )


def _nvlink(message: str) -> NvlinkEvent | None:
    m = _NVLINK5.match(message)
    if m is None:
        return None
    link = int(m.group("link"))
    return NvlinkEvent(
        unit=m.group("unit"),
        fatal=m.group("sev") == "Fatal",
        link=link if 0 <= link < MAX_NVLINKS else None,
    )


def _sxid(body: str, n: int, ts: str | None, up: float | None) -> GpuEvent | None:
    m = _SXID.match(body)
    if m is None:
        return None
    return GpuEvent(
        kind="sxid",
        code=int(m.group("code")),
        bdf=_bdf(m),
        mig=None,
        pid=None,
        process=None,
        message=(m.group("rest") or "").strip(),
        timestamp=ts,
        uptime_s=up,
        line=n,
    )


def _after_nvrm(line: str) -> str | None:
    """A continuation line of a multi-line printk, from its ``NVRM: `` on."""
    at = line.find("NVRM: ")
    return None if at < 0 else _body(line, at)


def _fallen(bdf: str, message: str, ts: str | None, up: float | None, n: int) -> GpuEvent:
    return GpuEvent(
        kind="fallen_off_bus",
        code=None,
        bdf=bdf,
        mig=None,
        pid=None,
        process=None,
        message=message,
        timestamp=ts,
        uptime_s=up,
        line=n,
    )


def _probe_rest(rows: list[str], i: int, total: int, cut_at: int) -> str | None:
    """The two lines after a probe-time 'fallen off the bus' first line, joined; None when
    they are not there (or not whole)."""
    second = _after_nvrm(rows[i]) if i < total else None
    third = _after_nvrm(rows[i + 1]) if i + 1 < total else None
    m2 = _PROBE_2.match(second) if second is not None else None
    m3 = _PROBE_3.match(third) if third is not None else None
    if m2 and m3 and i + 1 < cut_at:
        return f"{m2.group('msg')} {m3.group('msg')}"
    return None


def parse_kernel_xid(text: str) -> KernelLog:
    text = plain(text)  # dmesg --color=always, CR line ends
    if not text.strip():
        raise ParseError("empty kernel log: no dmesg / journalctl -k text")
    check_limits(text)
    ends_cut = not text.endswith("\n")
    rows = text.split("\n")
    if not ends_cut:
        rows.pop()
    events: list[GpuEvent] = []
    errors: list[str] = []
    complete = True
    kernel_like = False
    dropped = 0

    def fail(n: int, why: str, line: str) -> None:
        nonlocal complete, dropped
        complete = False
        if len(errors) < MAX_ERRORS:
            errors.append(f"line {n}: {why}: {line.strip()[:300]}")
        else:
            dropped += 1

    def add(event: GpuEvent) -> None:
        bounded(len(events) + 1, "NVIDIA events in one log", MAX_COUNT)
        events.append(event)

    i = 0
    total = len(rows)
    while i < total:
        line = rows[i]
        n = i + 1
        i += 1
        if not kernel_like:
            lead = _DECOR.match(line)
            if _KERNEL_LINE.match(line, lead.end() if lead else 0):
                kernel_like = True
        nvrm = line.find("NVRM: Xid (")
        if nvrm < 0:
            nvrm = line.find("NVRM: ")
        sx = line.find("SXid (")
        if nvrm < 0 and sx < 0:
            continue
        kernel_like = True
        if ends_cut and n == total:
            # never whole (it may be cut mid-line), but an Xid whose code was printed is an
            # event: the line is read as far as it goes, not dropped
            fail(n, "cut (the log ends without a final newline)", line)
        if sx >= 0 and (nvrm < 0 or sx < nvrm):
            body = _body(line, sx)
            ts, up = _stamps(line[:sx])
            event = _sxid(body, n, ts, up)
            if event is None:
                fail(n, "unreadable SXid line", line)
            else:
                add(event)
            continue
        body = _body(line, nvrm)
        ts, up = _stamps(line[:nvrm])
        if body.startswith("NVRM: Xid ("):
            event = _xid(body, n, ts, up)
            if event is None:
                fail(n, "unreadable Xid line", line)
            else:
                add(event)
            continue
        fm = _FALLEN_FULL.match(body)
        if fm:
            old = fm.group("omsg") is not None
            message = (fm.group("omsg") if old else fm.group("msg")).strip()
            add(_fallen(_bdf(fm, "o" if old else ""), message, ts, up, n))
            continue
        pm = _PROBE.match(body)
        if pm:
            cut_at = total - 1 if ends_cut else total
            message = _probe_rest(rows, i, total, cut_at)
            if message is not None:
                add(_fallen(_bdf(pm), message, ts, up, n))
                i += 2
            elif i + 2 > cut_at:  # the message runs past the end of the text
                fail(n, "probe message cut short", line)
                break
            continue
        if "Xid (" in body:
            fail(n, "unreadable Xid line", line)
    if not kernel_like:
        raise ParseError(
            "no kernel log line (no dmesg, syslog or ISO timestamp, no 'kernel:', no NVRM "
            "line): pass the output of journalctl -k or dmesg"
        )
    if dropped:
        errors.append(f"... and {dropped} more unreadable lines")
    return KernelLog(events=tuple(events), lines=total, complete=complete, errors=tuple(errors))
