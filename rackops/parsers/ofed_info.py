"""``ofed_info -s`` / ``ofed_info`` / ``ofed_info -n``: the installed OFED stack.

Forms seen::

    MLNX_OFED_LINUX-5.8-3.0.7.0:                       (ofed_info -s, MLNX_OFED)
    MLNX_OFED_LINUX-23.10-1.1.9.0 (OFED-23.10-1.1.9):  (first line of ofed_info)
    OFED-internal-25.07-0.9.7:                         (DOCA-OFED, containers)
    25.07-0.9.7                                        (ofed_info -n)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rackops.parsers._common import ParseError


@dataclass(frozen=True)
class OfedInfo:
    flavour: str  # MLNX_OFED | DOCA-OFED | unknown
    version: str
    raw: str

    def matches(self, pinned: str) -> bool:
        """True when ``pinned`` names this build (a pin may omit trailing fields)."""
        return self.version == pinned or self.version.startswith(pinned + ".")


_MLNX = re.compile(r"^MLNX_OFED_LINUX-([\w.-]+?)(?:\s*\(.*\))?:?\s*$")
_INTERNAL = re.compile(r"^OFED-internal-([\w.-]+?):?\s*$")
_BARE = re.compile(r"^(\d+\.\d+-[\w.-]+)\s*$")


def parse_ofed_info(text: str) -> OfedInfo:
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if m := _MLNX.match(line):
            return OfedInfo("MLNX_OFED", m.group(1), line)
        if m := _INTERNAL.match(line):
            return OfedInfo("DOCA-OFED", m.group(1), line)
        if m := _BARE.match(line):
            return OfedInfo("unknown", m.group(1), line)
        raise ParseError(f"first line is not an OFED version: {line!r}")
    raise ParseError("empty ofed_info output")
