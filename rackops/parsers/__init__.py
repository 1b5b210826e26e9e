"""Parsers: pure functions from a tool's output text to frozen dataclasses.

One module per tool; no I/O inside. Malformed or truncated input raises
:class:`~rackops.errors.ParseError` or comes back with ``complete=False``,
never as a partial result that looks whole. Which parser reads which tool is the tool
registry's to say (:mod:`rackops.tools`).
"""

from __future__ import annotations

from typing import Any

from rackops.parsers._common import ParseError, as_jsonable


def parse(tool: str, text: str) -> Any:
    """Parse ``text`` as the output of ``tool`` (a name in the tool registry,
    :mod:`rackops.tools`): a :class:`ParseError` for anything unreadable."""
    from rackops.tools import parse as parse_tool

    return parse_tool(tool, text)


__all__ = ["ParseError", "as_jsonable", "parse"]
