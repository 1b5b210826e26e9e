"""``perfquery`` (rdma-core / infiniband-diags): a port's PMA PortCounters.

Command: ``perfquery [LID|-G GUID] [PORT]`` (basic PortCounters) or ``perfquery -x ...``
(PortCountersExtended), also with ``-C CA -P PORT``, ``-l`` (one block per port) and ``-a``.
Forms handled::

    # Port extended counters: Lid 2052 port 1 (CapMask: 0x5300 CapMask2: 0x0000002)
    PortSelect:......................1
    CounterSelect:...................0x0000
    PortXmitData:....................178791657177235
    ...
    QP1Dropped:......................0
    # Port counters: Lid 12 port 1 (CapMask: 0x1400)       (basic; CapMask since 1.5.9)
    # Port counters: Lid 12 port 1                          (infiniband-diags <= 1.5.8)
    SymbolErrors:....................7836                   (2008 libibmad names)
    LinkRecovers:....................255

Every ``Name:....value`` line goes into ``counters`` under its current libibmad name (the old
names ``SymbolErrors``, ``LinkRecovers``, ``XmtData``, ``RcvPkts``, ``XmtWait``, ... are
mapped); ``PortSelect``, ``CounterSelect`` and ``CounterSelect2`` are not counters and stay
out. Blocks may follow one another (``-l``, several ports, concatenated runs); the header's
``Lid`` is the LID that was *queried*, so every block of a ``-l`` run repeats it. A header
whose ``#`` was lost (web archives) still parses; dot padding, TABs and spaces may vary.

A -x block has 6, 10, 21 or 25 counter lines depending on the version and on CapMask /
CapMask2 (rdma-core ``dump_perfcounters_ext()``). Basic counters are 4 to 32 bits wide and stick
at their maximum; those sitting there are listed in ``saturated`` (their deltas mean nothing).

``ibwarn:`` / ``iberror:`` / ``ibpanic:`` lines are kept in ``errors``. With no counter block,
an ``iberror`` (e.g. ``Failed to open '(null)' port '0'`` on a RoCE-only host) raises
:class:`ParseError` naming it, as does text with no block at all and the other perfquery
queries (``-E``, ``-D``, ``-T``, ``-X``, ``--xmtsl``, ``-c``, ...), which are not handled.
``complete=False`` when the text is detectably cut or mangled:

* a block without the fields its kind always prints: basic through ``PortRcvPkts`` (and
  ``PortXmitWait`` when ``QP1Dropped`` is printed); -x the four data/packet counters, the
  four unicast/multicast ones once one of them is printed or CapMask bit 9 (0x200) is set,
  and ``CounterSelect2`` plus the 14 added error counters through ``QP1Dropped`` once one of
  them is printed or CapMask2 bit 1 is set; a block not starting with ``PortSelect``;
* counter lines with no header before them (the top was cut), a header cut mid-line, a
  repeated field, a line of no known form after the first block (kept in ``errors``);
* an ``iberror`` / ``ibpanic`` line (the tool stopped); text not ending in a newline: the
  last value may be cut mid-number, so that line is left out of ``counters`` (and kept in
  ``errors``).

perfquery prints no trailer, so some cuts at a line boundary cannot be seen: after the last
line of a whole block (the blocks after it are simply missing); a -x block cut right after
``PortMulticastRcvPkts`` with CapMask2 bit 1 clear (rdma-core v29+ stops there, older tools
print 15 more lines); a basic block cut between ``PortRcvPkts`` and ``PortXmitWait`` on a tool
that prints no ``QP1Dropped`` (older tools stop there). A basic ``PortXmitWait`` of
0 may mean "not supported" (perfquery zeroes it when CapMask bit 12 is clear).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from rackops.parsers._common import ParseError

__all__ = ["PerfQuery", "PortCounters", "parse_perfquery"]


@dataclass(frozen=True)
class PortCounters:
    lid: int | None  # from the header "... Lid N port N" (None for a DR path / no header)
    port: int | None  # header port, else PortSelect
    extended: bool  # "# Port extended counters" (perfquery -x) vs "# Port counters"
    cap_mask: str | None  # "0x5A00" as printed
    counters: dict[str, int]  # current libibmad names; selects left out
    saturated: tuple[str, ...]  # basic counters at their width's maximum


@dataclass(frozen=True)
class PerfQuery:
    ports: tuple[PortCounters, ...]
    complete: bool
    errors: tuple[str, ...]  # ibwarn/iberror/ibpanic lines (and unreadable lines), verbatim


# 2008-era libibmad names → the names libibmad/fields.c prints today.
OLD_NAMES = {
    "SymbolErrors": "SymbolErrorCounter",
    "LinkRecovers": "LinkErrorRecoveryCounter",
    "LinkDowned": "LinkDownedCounter",
    "RcvErrors": "PortRcvErrors",
    "RcvRemotePhysErrors": "PortRcvRemotePhysicalErrors",
    "RcvSwRelayErrors": "PortRcvSwitchRelayErrors",
    "XmtDiscards": "PortXmitDiscards",
    "XmtConstraintErrors": "PortXmitConstraintErrors",
    "RcvConstraintErrors": "PortRcvConstraintErrors",
    "LinkIntegrityErrors": "LocalLinkIntegrityErrors",
    "ExcBufOverrunErrors": "ExcessiveBufferOverrunErrors",
    "XmtData": "PortXmitData",
    "RcvData": "PortRcvData",
    "XmtPkts": "PortXmitPkts",
    "RcvPkts": "PortRcvPkts",
    "XmtWait": "PortXmitWait",
}

SELECTS = ("PortSelect", "CounterSelect", "CounterSelect2")

# IBTA PortCounters widths (libibmad/fields.c); every PortCountersExtended counter is 64-bit.
BASIC_WIDTHS = {
    "SymbolErrorCounter": 16,
    "LinkErrorRecoveryCounter": 8,
    "LinkDownedCounter": 8,
    "PortRcvErrors": 16,
    "PortRcvRemotePhysicalErrors": 16,
    "PortRcvSwitchRelayErrors": 16,
    "PortXmitDiscards": 16,
    "PortXmitConstraintErrors": 8,
    "PortRcvConstraintErrors": 8,
    "LocalLinkIntegrityErrors": 4,
    "ExcessiveBufferOverrunErrors": 4,
    "VL15Dropped": 16,
    "QP1Dropped": 16,
    "PortXmitData": 32,
    "PortRcvData": 32,
    "PortXmitPkts": 32,
    "PortRcvPkts": 32,
    "PortXmitWait": 32,
}

# What each kind of block always prints (after name mapping).
BASIC_REQUIRED = (
    "SymbolErrorCounter",
    "LinkErrorRecoveryCounter",
    "LinkDownedCounter",
    "PortRcvErrors",
    "PortRcvRemotePhysicalErrors",
    "PortRcvSwitchRelayErrors",
    "PortXmitDiscards",
    "PortXmitConstraintErrors",
    "PortRcvConstraintErrors",
    "LocalLinkIntegrityErrors",
    "ExcessiveBufferOverrunErrors",
    "VL15Dropped",
    "PortXmitData",
    "PortRcvData",
    "PortXmitPkts",
    "PortRcvPkts",
)
EXT_DATA = ("PortXmitData", "PortRcvData", "PortXmitPkts", "PortRcvPkts")
EXT_CASTS = (
    "PortUnicastXmitPkts",
    "PortUnicastRcvPkts",
    "PortMulticastXmitPkts",
    "PortMulticastRcvPkts",
)
EXT_ADDITIONAL = (
    "SymbolErrorCounter",
    "LinkErrorRecoveryCounter",
    "LinkDownedCounter",
    "PortRcvErrors",
    "PortRcvRemotePhysicalErrors",
    "PortRcvSwitchRelayErrors",
    "PortXmitDiscards",
    "PortXmitConstraintErrors",
    "PortRcvConstraintErrors",
    "LocalLinkIntegrityErrors",
    "ExcessiveBufferOverrunErrors",
    "VL15Dropped",
    "PortXmitWait",
    "QP1Dropped",
)
_CAP_EXT_WIDTH = 0x200  # CapMask bit 9: IsExtendedWidthSupported (unicast/multicast printed)
_CAP2_ADDL = 0x2  # CapMask2 bit 1 as printed: IsAdditionalPortCountersExtendedSupported

KNOWN_FIELDS = frozenset(
    {*SELECTS, *OLD_NAMES, *BASIC_WIDTHS, *EXT_CASTS},
)

_HEADER = re.compile(
    r"^#?[ \t]*Port (?P<ext>extended )?counters:[ \t]*(?P<portid>.*?)[ \t]+port[ \t]+"
    r"(?P<port>[0-9]{1,10})(?:[ \t]*\((?P<caps>[^()]*)\))?[ \t]*$"
)
_ANY_HEADER = re.compile(r"^#?[ \t]*(?P<kind>Port[^:]*?)(?: counters)?:[ \t]*(?:Lid|DR path)\b")
_LID = re.compile(r"^Lid[ \t]+([0-9]{1,10})\b")
_CAPMASK = re.compile(r"\bCapMask:[ \t]*(0x[0-9A-Fa-f]{1,40})\b")
_CAPMASK2 = re.compile(r"\bCapMask2:[ \t]*(0x[0-9A-Fa-f]{1,40})\b")
_FIELD = re.compile(r"^(?P<name>[A-Za-z][A-Za-z0-9_]*):[.\t ]*(?P<value>.*?)[ \t]*$")
_INT = re.compile(r"^[0-9]{1,40}$")  # int() refuses > 4300 digits
_HEX = re.compile(r"^0x[0-9A-Fa-f]{1,40}$")
_TOOL_ERROR = re.compile(r"\bib(?:warn|error|panic):|^perfquery: ")
_FATAL = re.compile(r"\bib(?:error|panic):|^perfquery: ")  # the tool exited
_SRC_WARN = re.compile(r"^\S+\.c:[0-9]+; ")  # libibumad/libibnetdisc "file.c:NN; ..." lines
_PROMPT = re.compile(r"^\S*[$#>][ \t]*(?:sudo[ \t]+)?perfquery(?:[ \t]|$)")  # "# perfquery -x"
_HEADER_STARTS = ("port counters:", "port extended counters:")


@dataclass
class _Block:
    extended: bool | None
    headed: bool
    lid: int | None = None
    port: int | None = None
    cap_mask: str | None = None
    cap_mask2: int | None = None
    names: list[str] = field(default_factory=list)
    counters: dict[str, int] = field(default_factory=dict)
    port_select: int | None = None
    broken: bool = False


def _hex(text: str | None) -> int | None:
    return int(text, 16) if text is not None else None


def _header(m: re.Match[str]) -> _Block:
    caps = m.group("caps") or ""
    lid = _LID.match(m.group("portid"))
    cap = _CAPMASK.search(caps)
    cap2 = _CAPMASK2.search(caps)
    return _Block(
        extended=m.group("ext") is not None,
        headed=True,
        lid=int(lid.group(1)) if lid else None,
        port=int(m.group("port")),
        cap_mask=cap.group(1) if cap else None,
        cap_mask2=_hex(cap2.group(1)) if cap2 else None,
    )


def _is_partial_header(line: str) -> bool:
    """A line that starts like a PortCounters header but is not a whole one (cut mid-line)."""
    rest = line.lstrip("#").strip().lower()
    if not rest:
        return line.startswith("#")
    return any(h.startswith(rest) or rest.startswith(h) for h in _HEADER_STARTS)


def _guess_extended(names: list[str]) -> bool:
    if any(n in EXT_CASTS for n in names):
        return True
    order = [n for n in names if n in ("PortXmitData", "SymbolErrorCounter")]
    return bool(order) and order[0] == "PortXmitData"


def _block_complete(b: _Block) -> bool:
    if b.broken or not b.headed or not b.names or b.names[0] != "PortSelect":
        return False
    seen = set(b.names)
    required = ["CounterSelect"]  # every version prints PortSelect, CounterSelect first
    if b.extended:
        cap = _hex(b.cap_mask) or 0
        required += EXT_DATA
        if cap & _CAP_EXT_WIDTH or seen.intersection(EXT_CASTS):
            required += EXT_CASTS
        addl_started = "CounterSelect2" in seen or seen.intersection(EXT_ADDITIONAL)
        if (b.cap_mask2 or 0) & _CAP2_ADDL or addl_started:
            required += ("CounterSelect2", *EXT_ADDITIONAL)
    else:
        required += BASIC_REQUIRED
        if "QP1Dropped" in seen:  # a libibmad new enough for QP1Dropped also dumps XmitWait
            required.append("PortXmitWait")
    return all(r in seen for r in required)


def _finish(b: _Block) -> PortCounters:
    extended = b.extended if b.extended is not None else _guess_extended(b.names)
    saturated: tuple[str, ...] = ()
    if not extended:
        saturated = tuple(
            name
            for name, value in b.counters.items()
            if name in BASIC_WIDTHS and value >= (1 << BASIC_WIDTHS[name]) - 1
        )
    return PortCounters(
        lid=b.lid,
        port=b.port if b.port is not None else b.port_select,
        extended=extended,
        cap_mask=b.cap_mask,
        counters=dict(b.counters),
        saturated=saturated,
    )


def parse_perfquery(text: str) -> PerfQuery:
    blocks: list[_Block] = []
    errors: list[str] = []
    complete = True
    partial_header: str | None = None
    lines = [raw.strip() for raw in text.splitlines()]
    last = max((i for i, ln in enumerate(lines) if ln), default=-1)
    # perfquery ends every line: an unterminated last line may stop mid-number ("39078...")
    cut_line = len(lines) - 1 if lines and not text.endswith("\n") else -1

    for i, line in enumerate(lines):
        if not line:
            continue
        if _TOOL_ERROR.search(line) or _SRC_WARN.match(line):
            errors.append(line)
            if _FATAL.search(line):
                complete = False
            continue
        if m := _HEADER.match(line):
            blocks.append(_header(m))
            continue
        if (m := _ANY_HEADER.match(line)) and m.group("kind") not in ("Port", "Port extended"):
            raise ParseError(
                f"perfquery {m.group('kind')!r} output is not handled: only PortCounters "
                "(perfquery) and PortCountersExtended (perfquery -x) are read"
            )
        if _PROMPT.match(line):
            continue
        if (m := _FIELD.match(line)) and (blocks or m.group("name") in KNOWN_FIELDS):
            name = OLD_NAMES.get(m.group("name"), m.group("name"))
            value = m.group("value")
            if not blocks:  # counter lines with no header: the top was cut
                blocks.append(_Block(extended=None, headed=False))
            b = blocks[-1]
            hexa = _HEX.match(value) is not None
            if (
                name in b.names
                or i == cut_line
                or not (_INT.match(value) or (hexa and name in SELECTS))
            ):
                # a repeated field; "Name:...." with no value or a cut one; an unknown value form
                b.broken = True
                errors.append(line)
                continue
            b.names.append(name)
            if name == "PortSelect":
                b.port_select = int(value, 16) if hexa else int(value)
            elif name not in SELECTS:
                b.counters[name] = int(value)
            continue
        if i == last and _is_partial_header(line):
            partial_header = line
            complete = False
            continue
        if blocks:
            errors.append(line)
            blocks[-1].broken = True
        # text before the first block (a prompt, a comment) is read past

    if not blocks:
        if errors:
            raise ParseError("perfquery did not run: " + "; ".join(errors))
        if partial_header is not None:
            raise ParseError(f"perfquery output cut off in its first header: {partial_header!r}")
        raise ParseError(
            "no '# Port counters' or '# Port extended counters' block: this is not perfquery output"
        )
    if not all(_block_complete(b) for b in blocks):
        complete = False
    if cut_line >= 0:
        complete = False
    return PerfQuery(tuple(_finish(b) for b in blocks), complete, tuple(errors))
