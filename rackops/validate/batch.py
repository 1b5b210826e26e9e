"""Several read-only commands in one SSH channel: a node's port snapshot (perfquery or
``ethtool -S`` per cabled HCA, hw_counters, mlxlink, ``ethtool -m``, ibstat) costs one
round trip instead of a dozen.

Each command runs under its own ``timeout`` with stderr folded into stdout (perfquery
prints its error to stdout and its warnings to stderr; the parser wants both), between
marker lines that carry its key and exit status. ``split`` gives back every command's
output and status; a command whose end marker is missing was cut off (the batch timed
out or the connection dropped), and says so.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

MARK = "@@rackops-batch"
_KEY = re.compile(r"^[A-Za-z0-9_./:-]+$")


@dataclass(frozen=True)
class Part:
    key: str
    rc: int | None  # None: the output was cut before the command finished
    text: str


def script(commands: Sequence[tuple[str, Sequence[str]]], timeout_s: float) -> tuple[str, ...]:
    """argv of one ``sh -c`` that runs every (key, argv) in turn."""
    lines = []
    for key, argv in commands:
        if not _KEY.match(key):
            raise ValueError(f"batch key {key!r} must be a plain word")
        cmd = " ".join(shlex.quote(a) for a in argv)
        lines.append(
            f"echo '{MARK} {key}'; timeout -k 2 {timeout_s:g} {cmd} 2>&1; echo \"{MARK}-rc $?\""
        )
    return ("sh", "-c", "\n".join(lines))


def split(stdout: str) -> dict[str, Part]:
    out: dict[str, Part] = {}
    key: str | None = None
    buf: list[str] = []
    for line in stdout.splitlines(keepends=True):
        if line.startswith(MARK + "-rc "):
            if key is not None:
                rc = line.split()[1]
                out[key] = Part(key, int(rc) if rc.isdigit() else None, "".join(buf))
            key, buf = None, []
        elif line.startswith(MARK + " "):
            if key is not None:  # the previous command never printed its end marker
                out[key] = Part(key, None, "".join(buf))
            key, buf = line.split(None, 1)[1].strip(), []
        elif key is not None:
            buf.append(line)
    if key is not None:
        out[key] = Part(key, None, "".join(buf))
    return out
