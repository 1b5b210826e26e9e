"""Files written under an output directory the user named (`render -o`, `render --diff`'s
files, captures), which is as untrusted as what already stands in it: a checkout's output
directory holding a planted symbolic link is one `git clone` away.

Every directory on the way is a real directory (a link is refused, naming it), and every
file is written as a new file renamed over the old one, so a link planted where the file
goes is replaced, never followed out of the directory (the run directory's rule,
``rackops.validate.rundir``).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from rackops.errors import RackopsError


class OutputError(RackopsError):
    """The output directory holds something rackops will not write through."""


def write_under(root: Path, rel: str | Path, content: str) -> Path:
    """Write ``content`` to ``root/rel``; the path written."""
    parts = Path(rel).parts
    if not parts or Path(rel).is_absolute() or ".." in parts:
        raise OutputError(f"{rel!s}: not a path inside {root}")
    if root.exists() and not root.is_dir():
        raise OutputError(f"{root}: not a directory; choose another output directory")
    root.mkdir(parents=True, exist_ok=True)
    here = root
    for part in parts[:-1]:
        here = here / part
        if here.is_symlink():
            raise OutputError(
                f"{here} is a symbolic link: rackops does not write through it "
                "(remove it, or choose another output directory)"
            )
        if here.exists() and not here.is_dir():
            raise OutputError(f"{here}: not a directory; remove it or choose another output")
        here.mkdir(exist_ok=True)
    target = here / parts[-1]
    if target.is_dir() and not target.is_symlink():
        raise OutputError(f"{target}: a directory where a file goes; remove it")
    fd, tmp = tempfile.mkstemp(dir=here, prefix=f".{parts[-1]}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(content)
        Path(tmp).replace(target)  # over whatever stood there, a planted link included
    except BaseException:
        with contextlib.suppress(OSError):
            Path(tmp).unlink()
        raise
    return target
