"""Several read-only commands in one SSH channel: a node's port snapshot (perfquery or
``ethtool -S`` per cabled HCA, hw_counters, mlxlink, ``ethtool -m``, ibstat) costs one
round trip instead of a dozen.

The commands run side by side, at most ``PARALLEL`` at a time (each reads its own device; a
node's thirty reads all at once made a loaded host miss their timeouts), each under its own
``timeout`` with
stderr folded into stdout (perfquery prints its error to stdout and its warnings to
stderr; the parser wants both), into a private temporary directory; when all are done
their outputs are printed in order between marker lines that carry the key and the exit
status. So the batch lasts about as long as its slowest read. ``split`` gives back every
command's output and status; a command whose end marker is missing was cut off (the
batch timed out or the connection dropped), and says so.
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


PARALLEL = 8  # commands of one batch running at once: a node's 30-odd reads never all at once


def script(commands: Sequence[tuple[str, Sequence[str]]], timeout_s: float) -> tuple[str, ...]:
    """argv of one ``sh -c`` that runs every (key, argv), at most ``PARALLEL`` at a time, and
    prints them in order. A slot frees as soon as its command ends, so one hung read holds
    one slot for its timeout, never the others."""
    lines = ["d=$(mktemp -d) || exit 1", "trap 'rm -rf \"$d\"' EXIT"]
    for i, (key, argv) in enumerate(commands):
        if not _KEY.match(key):
            raise ValueError(f"batch key {key!r} must be a plain word")
        cmd = " ".join(shlex.quote(a) for a in argv)
        lines += [
            f"cat > \"$d/{i}.sh\" <<'{_EOF}'",
            f"exec timeout -k 2 {timeout_s:g} {cmd}",
            _EOF,
        ]
    if commands:
        lines.append(
            f"i=0; while [ $i -lt {len(commands)} ]; do echo $i; i=$((i + 1)); done | "
            f"xargs -P {PARALLEL} -I{{}} sh -c "
            '\'sh "$1/{}.sh" > "$1/{}" 2>&1; echo $? > "$1/{}.rc"\' _ "$d"'
        )
    for i, (key, _) in enumerate(commands):
        # the end marker starts on a line of its own: split() takes that one newline back,
        # so an output that did not end in one (cut off) still does not
        lines.append(
            f"echo '{MARK} {key}'; cat \"$d/{i}\"; "
            f'printf \'\\n{MARK}-rc %s\\n\' "$(cat "$d/{i}.rc" 2>/dev/null)"'
        )
    return ("sh", "-c", "\n".join(lines))


_EOF = "RACKOPS_BATCH_EOF"


def split(stdout: str) -> dict[str, Part]:
    out: dict[str, Part] = {}
    key: str | None = None
    buf: list[str] = []
    for line in stdout.splitlines(keepends=True):
        if line.startswith(MARK + "-rc"):
            if key is not None:
                words = line.split()
                rc = words[1] if len(words) > 1 else ""
                text = "".join(buf)
                text = text[:-1] if text.endswith("\n") else text
                out[key] = Part(key, int(rc) if rc.isdigit() else None, text)
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
