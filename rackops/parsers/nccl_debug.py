"""NCCL's own log (``NCCL_DEBUG=INFO``, subsystem INIT): how a communicator connected its
ranks — the proof that a multi-node NVLink domain's traffic stayed on NVLink.

The lines, each after NCCL's ``host:pid:tid [cudaDev] NCCL INFO`` prefix (an MPI launcher may
put ``[rank] `` or ``[1,0]<stdout>:`` before it); formats from NCCL's source by version and
real lines (docs/research/issue-42-xid-nccl-mnnvl.md §2)::

    comm 0x5639e9f0e8c0 rank 0 nRanks 24 nNodes 3 localRanks 8 localRank 0 MNNVL 0   (2.19+)
    MNNVL busId 0x801000 fabric UUID 3143b15bc2cd192b.28cc… cliqueId 0x7ffe state 3 healthMask 0xaa
    MNNVL 1 cliqueId 7ffe cliqueSize 72 cliqueRank 5                      (2.23-2.29)
    MNNVL 1 cliqueId 7ffe cliqueSize 72 cliqueRank 5 nvlDomainSize 72     (2.30+)
    Channel 00/0 : 3[3] -> 4[0] via P2P/MNNVL                             (P2P/CUMEM, P2P/IPC,
    Channel 00/0 : 7[7] -> 8[0] [send] via NET/IB/0/GDRDMA                 P2P/direct pointer…)
    Channel 01 : 2[c7000] -> 0[87000] [receive] via NET/IB/5/GDRDMA        (before 2.12)

and the WARN that MNNVL is available but not working (2.25+). Every other line is skipped:
this text is nccl-tests' output with NCCL's lines among it. Text with no NCCL line at all
(NCCL_DEBUG not in force) is a ParseError; ``info_lines`` counts NCCL's INFO lines. A last
line cut by the end of the text (no final newline) is not read, and the result is then not
``complete``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rackops.parsers._common import MAX_COUNT, ParseError, bounded, check_limits, plain

__all__ = ["Channel", "Comm", "FabricGpu", "NcclDebug", "parse_nccl_debug"]


@dataclass(frozen=True)
class Comm:
    host: str
    rank: int
    ranks: int
    nodes: int
    mnnvl: bool


@dataclass(frozen=True)
class FabricGpu:
    host: str
    bus_id: int
    uuid: str  # "hi.lo" as printed ("0.0": no fabric)
    clique: int
    state: int  # NVML fabric state: 3 Completed


@dataclass(frozen=True)
class Channel:
    host: str
    src: int  # rank
    dst: int
    via: str  # "P2P/MNNVL", "NET/IB/0/GDRDMA", "SHM/direct/direct" ...


@dataclass(frozen=True)
class NcclDebug:
    complete: bool
    info_lines: int
    comms: tuple[Comm, ...]
    fabric: tuple[FabricGpu, ...]
    cliques: tuple[tuple[str, bool, int, int], ...]  # (host, MNNVL, clique id, clique size)
    channels: tuple[Channel, ...]
    warnings: tuple[str, ...]  # NCCL WARN lines about MNNVL, as printed


_PREFIX = re.compile(
    r"(?<![A-Za-z0-9_.-])(?P<host>[A-Za-z0-9][A-Za-z0-9_.-]{0,252})"
    r":(?P<pid>\d{1,10}):(?P<tid>\d{1,10}) "
    r"\[(?P<dev>\d{1,4})\] NCCL (?P<level>INFO|WARN) (?P<msg>.*)$"
)
_COMM = re.compile(
    r"comm 0x[0-9a-fA-F]{1,16} rank (\d{1,7}) nRanks (\d{1,7}) nNodes (\d{1,7}) "
    r"localRanks \d{1,7} localRank \d{1,7} MNNVL ([01])\b"
)
_FABRIC = re.compile(
    r"MNNVL busId 0x([0-9a-fA-F]{1,16}) fabric UUID ([0-9a-fA-F]{1,16}\.[0-9a-fA-F]{1,16}) "
    r"cliqueId 0x([0-9a-fA-F]{1,8}) state (\d{1,3})\b"
)
_CLIQUE = re.compile(r"MNNVL ([01]) cliqueId ([0-9a-fA-F]{1,8}) cliqueSize (\d{1,7})\b")
_CHANNEL = re.compile(  # the device in brackets: its index (2.12+) or its bus id (older)
    r"Channel \d{1,3}(?:/\d{1,3})? : (\d{1,7})\[[0-9a-fA-F]{1,16}\] -> (\d{1,7})"
    r"\[[0-9a-fA-F]{1,16}\]"
    r"(?: \[(?:send|receive)\])? via (\S{1,80})"
)


def parse_nccl_debug(text: str) -> NcclDebug:
    text = plain(text)
    check_limits(text)
    rows = text.split("\n")
    cut = rows.pop()  # "" after a final newline; else a line cut mid-way: not read
    complete = " NCCL " not in cut
    info = 0
    comms: list[Comm] = []
    fabric: list[FabricGpu] = []
    cliques: list[tuple[str, bool, int, int]] = []
    channels: list[Channel] = []
    warnings: list[str] = []
    for line in rows:
        at = line.find(" NCCL ")
        if at < 0:
            continue
        m = _PREFIX.search(line, max(0, at - 300))
        if m is None:
            continue
        host, msg = m.group("host"), m.group("msg").strip()
        if m.group("level") == "WARN":
            if "MNNVL" in msg:
                warnings.append(msg[:300])
            continue
        info = bounded(info + 1, "NCCL INFO lines", MAX_COUNT * 16)
        if c := _COMM.match(msg):
            comms.append(Comm(host, int(c[1]), int(c[2]), int(c[3]), c[4] == "1"))
        elif f := _FABRIC.match(msg):
            fabric.append(FabricGpu(host, int(f[1], 16), f[2].lower(), int(f[3], 16), int(f[4])))
        elif q := _CLIQUE.match(msg):
            cliques.append((host, q[1] == "1", int(q[2], 16), int(q[3])))
        elif ch := _CHANNEL.match(msg):
            channels.append(Channel(host, int(ch[1]), int(ch[2]), ch[3]))
        else:
            continue
        bounded(len(comms) + len(fabric) + len(cliques) + len(channels), "NCCL lines", MAX_COUNT)
    if not info and not warnings:
        raise ParseError(
            "no NCCL INFO line: run with NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS including INIT"
        )
    return NcclDebug(
        complete=complete,
        info_lines=info,
        comms=tuple(comms),
        fabric=tuple(fabric),
        cliques=tuple(cliques),
        channels=tuple(channels),
        warnings=tuple(warnings),
    )
