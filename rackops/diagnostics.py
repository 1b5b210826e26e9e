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
