"""One tray's IMEX as its files and daemon show it (GB200/GB300 NVL72): what
``tools/imex_node.py``'s script prints, each part in the real tool's own layout.

    # rackops imex-node 1
    == ctl                 nvidia-imex-ctl -q: READY (570+; its states per NVIDIA/DCGM:
    READY                  INITIALIZING ... WAITING_FOR_PEERS ... UNAVAILABLE)
    == devices             grep nvidia /proc/devices
    195 nvidia
    234 nvidia-caps-imex-channels
    == channels            ls -l /dev/nvidia-caps-imex-channels/
    total 0
    crw-rw-rw-  1 root root 234, 0 Feb 13 19:46 channel0
    == nodes_config        /etc/nvidia-imex/nodes_config.cfg: one IP or host name per line
    172.27.58.70
    == end

Sources of each layout (docs/research/issue-42-imex.md): ``-q`` READY (jgehrcke/jpsnips-nv,
570.00); /proc/devices and the channel listing (NVIDIA's IMEX guide, imexchannels.html;
nvidia-modprobe#9; a GB200 NVL72 node whose channel0 took nvidia-caps' major and minor,
``497, 4323``); nodes_config.cfg (Crusoe's IMEX setup guide). A part that is missing, or
output without ``== end``, is not ``complete``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rackops.parsers._common import MAX_COUNT, ParseError, bounded, check_limits, plain

__all__ = ["Channel", "ImexNode", "parse_imex_node"]

HEADER = "# rackops imex-node 1"
PARTS = ("ctl", "devices", "channels", "nodes_config")


@dataclass(frozen=True)
class Channel:
    name: str  # channel0
    kind: str  # "c" (a character device), "-" (a plain file), ...
    major: int | None
    minor: int | None


@dataclass(frozen=True)
class ImexNode:
    complete: bool
    ctl: str | None  # the state -q printed (READY), or its first line; None: nothing
    ctl_said: tuple[str, ...]  # every line it printed (an error says why)
    channel_major: int | None  # nvidia-caps-imex-channels in /proc/devices; None: absent
    channels: tuple[Channel, ...]
    channels_error: str | None  # ls's own complaint (no such directory)
    nodes: tuple[str, ...]  # nodes_config.cfg's entries, in order
    nodes_error: str | None  # cat's complaint (no such file)


_DEVICE = re.compile(r"(\d{1,4})\s+(nvidia-caps-imex-channels)\b")
_LS = re.compile(
    r"(?P<kind>[-bcdlps])[-rwxsStT]{9}[.+@]?\s+\d{1,6}\s+\S{1,64}\s+\S{1,64}\s+"
    r"(?:(?P<major>\d{1,6}),\s*(?P<minor>\d{1,10})|\d{1,20})\s+.{1,40}?\s"
    r"(?P<name>channel\d{1,6})$"
)
_ENTRY = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,252}")
_STATE = re.compile(r"[A-Z][A-Z_]{2,40}")


def parse_imex_node(text: str) -> ImexNode:
    text = plain(text)
    check_limits(text)
    rows = text.split("\n")
    if not rows or rows[0].strip() != HEADER:
        raise ParseError(f"not rackops' imex-node output (no {HEADER!r} first line)")
    parts: dict[str, list[str]] = {}
    current: str | None = None
    ended = False
    for n, line in enumerate(rows[1:], 2):
        if line.startswith("== "):
            name = line[3:].strip()
            if name == "end":
                ended = True
                break
            if name not in PARTS or name in parts:
                raise ParseError(f"line {n}: unknown or repeated part {name[:40]!r}")
            current = name
            parts[current] = []
            continue
        if current is None:
            if line.strip():
                raise ParseError(f"line {n}: text before the first part: {line[:60]!r}")
            continue
        parts[current].append(line)
        bounded(len(parts[current]), f"lines of part {current}", MAX_COUNT)
    complete = ended and all(p in parts for p in PARTS)
    said = tuple(s.strip() for s in parts.get("ctl", []) if s.strip())
    ctl = said[0] if said else None
    if ctl is not None and _STATE.fullmatch(ctl) is None:
        ctl = ctl[:200]
    major = None
    for line in parts.get("devices", []):
        m = _DEVICE.fullmatch(line.strip().split(" (")[0])  # "(major number)": a paste's note
        if m:
            major = int(m.group(1))
    channels: list[Channel] = []
    channels_error = None
    for line in parts.get("channels", []):
        s = line.strip()
        if not s or s.startswith("total ") or s.endswith((" .", " ..", " ./", " ../")):
            continue
        m = _LS.fullmatch(s)
        if m:
            channels.append(
                Channel(
                    m.group("name"),
                    m.group("kind"),
                    int(m.group("major")) if m.group("major") else None,
                    int(m.group("minor")) if m.group("minor") else None,
                )
            )
        elif s.startswith("ls:") and channels_error is None:
            channels_error = s[:300]
        else:
            complete = False  # a line that is no listing: cut or garbled
    nodes: list[str] = []
    nodes_error = None
    for line in parts.get("nodes_config", []):
        s = line.split("#", 1)[0].strip()
        if not s:
            continue
        if s.startswith("cat:"):
            nodes_error = s[:300]
        elif _ENTRY.fullmatch(s):
            nodes.append(s)
        else:
            raise ParseError(f"nodes_config.cfg entry {s[:60]!r} is not an address or host name")
    return ImexNode(
        complete=complete,
        ctl=ctl,
        ctl_said=said[:20],
        channel_major=major,
        channels=tuple(channels),
        channels_error=channels_error,
        nodes=tuple(nodes),
        nodes_error=nodes_error,
    )
