"""A diagnostic is one thing wrong with the design, located in a file.

``rackops lint`` and the inventory loader both produce diagnostics. Each has a
stable code, a level, a message that says what was found, what was expected and
the fix, and the place (file, line, host or switch, key) a human edits.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def printable(text: str) -> str:
    """``text`` with control characters (newlines included) written as escapes."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)


_TERMINAL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")


class TerminalSafe:
    """A text stream that writes what a terminal would act on (ESC, BEL, CR, C1 controls
    such as U+009B) as escapes: every command prints through it, so a tool's output, a
    file name or a neighbour's name can neither move the cursor nor forge a line's start
    over another. Newlines and tabs pass."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw

    def write(self, text: str) -> int:
        self.raw.write(_TERMINAL.sub(lambda m: repr(m.group())[1:-1], text))
        return len(text)

    def flush(self) -> None:
        self.raw.flush()

    def isatty(self) -> bool:
        return bool(getattr(self.raw, "isatty", lambda: False)())

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)


class Level(StrEnum):
    ERROR = "ERROR"
    WARNING = "WARNING"


@dataclass(frozen=True)
class Diagnostic:
    code: str
    level: Level
    message: str
    path: str | None = None
    line: int | None = None
    subject: str | None = None
    key: str | None = None

    def location(self) -> str:
        if self.path is None:
            return "<inventory>"
        return f"{self.path}:{self.line}" if self.line else self.path

    def human(self) -> str:
        """One line, whatever the message quotes (a name with a newline stays one line)."""
        return printable(f"{self.location()}: {self.level.value} {self.code} {self.message}")

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["level"] = self.level.value
        return out
