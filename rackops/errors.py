"""One exception root for rackops, and the exit codes the CLI maps errors to.

Every error a user can cause carries enough context to be fixed without a
traceback: the file, the host or group, the key, what was found and what is
allowed. The CLI prints ``str(error)`` on one line and exits with ``exit_code``.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """Documented exit codes shared by every subcommand."""

    OK = 0
    WARNINGS = 1
    ERRORS = 2
    UNREADABLE = 3
    USAGE = 64


class RackopsError(Exception):
    """Root of every error rackops raises on purpose."""

    exit_code: ExitCode = ExitCode.USAGE


class InventoryError(RackopsError, ValueError):
    """The inventory cannot be read or does not describe a valid rack."""

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        line: int | None = None,
        subject: str | None = None,
        key: str | None = None,
    ) -> None:
        self.message = message
        self.path = path
        self.line = line
        self.subject = subject
        self.key = key
        super().__init__(self.__str__())

    def __str__(self) -> str:
        where = ""
        if self.path:
            where = f"{self.path}:{self.line}: " if self.line else f"{self.path}: "
        return f"{where}{self.message}"


class NotGolden(RackopsError):
    """A node asked to be golden that is not accepted itself (``rackops profile capture``)."""

    exit_code = ExitCode.ERRORS


class InputError(RackopsError, OSError):
    """A file given on the command line cannot be read."""

    exit_code = ExitCode.UNREADABLE


class ProfileError(RackopsError, ValueError):
    """A hardware profile or suite file is missing, unreadable or inconsistent."""


class ParseError(RackopsError, ValueError):
    """A tool's output cannot be read as a whole; never a partial result."""

    exit_code = ExitCode.UNREADABLE
