"""``show_gids [dev]`` (mlnx-tools): the GID table with RoCE version and netdev.

Sample::

    DEV PORT    INDEX   GID                 IPv4        VER DEV
    --- ----    -----   ---                 ------------    --- ---
    mlx5_0  1   3   0000:0000:0000:0000:0000:ffff:c633:6401 198.51.100.1    v2  enp24s0np0
    n_gids_found=4

Columns misalign with long device names, so rows split on whitespace; a row has
6 fields without an IPv4 address and 7 with one. Some builds omit the trailer;
when it is present and disagrees with the rows, the table is incomplete.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rackops.parsers._common import ParseError

_IPV4 = re.compile(r"^\d{1,3}(\.\d{1,3}){3}$")
_VER = re.compile(r"^v[12]$")


@dataclass(frozen=True)
class Gid:
    device: str
    port: int
    index: int
    gid: str
    ipv4: str | None
    version: str
    netdev: str | None


@dataclass(frozen=True)
class ShowGids:
    gids: tuple[Gid, ...]
    n_gids_found: int | None
    complete: bool

    def roce_v2(self, device: str, ipv4: str | None = None) -> Gid | None:
        """The RoCE v2 GID of ``device`` (bound to ``ipv4`` when given)."""
        for g in self.gids:
            if (
                g.device == device
                and g.version == "v2"
                and g.ipv4
                and (ipv4 is None or g.ipv4 == ipv4)
            ):
                return g
        return None


def parse_show_gids(text: str) -> ShowGids:
    rows: list[Gid] = []
    trailer: int | None = None
    header = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if line.startswith("DEV") and "GID" in line:
            header = True
            continue
        if set(line) <= set("- \t"):
            continue
        if line.startswith("n_gids_found="):
            trailer = int(line.split("=", 1)[1])
            continue
        fields = line.split()
        if len(fields) not in (5, 6, 7) or not fields[1].isdigit() or not fields[2].isdigit():
            raise ParseError(f"unexpected show_gids row: {line!r}")
        ipv4 = fields[4] if len(fields) >= 6 and _IPV4.match(fields[4]) else None
        rest = fields[5:] if ipv4 else fields[4:]
        if not rest or not _VER.match(rest[0]):
            raise ParseError(f"show_gids row without a v1/v2 version: {line!r}")
        rows.append(
            Gid(
                fields[0],
                int(fields[1]),
                int(fields[2]),
                fields[3],
                ipv4,
                rest[0],
                rest[1] if len(rest) > 1 else None,
            )
        )
    if not header and not rows:
        raise ParseError("no GID table: this is not show_gids output")
    complete = trailer is None or trailer == len(rows)
    return ShowGids(tuple(rows), trailer, complete)
