"""Parsers: pure functions from a tool's output text to frozen dataclasses.

One module per tool; no I/O inside. Malformed or truncated input raises
:class:`~rackops.errors.ParseError` or comes back with ``complete=False``,
never as a partial result that looks whole. Which parser reads which tool is the tool
registry's to say: ``rackops.tools.parse(tool, text)``.
"""

from __future__ import annotations

from rackops.parsers._common import ParseError, as_jsonable

__all__ = ["ParseError", "as_jsonable"]
