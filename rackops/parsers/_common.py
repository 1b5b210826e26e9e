"""Helpers shared by the parsers: number conversion, N/A handling, serialisation."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from rackops.errors import ParseError

__all__ = ["ParseError", "as_jsonable", "need", "num", "to_float", "to_int"]

_NA = {
    "",
    "n/a",
    "[n/a]",
    "na",
    "-",
    "[not supported]",
    "not supported",
    "[unknown error]",
    "unknown",
    "[insufficient permissions]",
    "[gpu requires reset]",
    "[not found]",
}


def is_na(text: str | None) -> bool:
    return text is None or text.strip().lower() in _NA


def to_float(text: str | None) -> float | None:
    """``'390.98'`` → 390.98; N/A forms → None; anything else raises ParseError."""
    if is_na(text):
        return None
    assert text is not None
    cleaned = text.strip()
    try:
        return float(cleaned)
    except ValueError as exc:
        raise ParseError(f"expected a number, found {cleaned!r}") from exc


def to_int(text: str | None, base: int = 10) -> int | None:
    if is_na(text):
        return None
    assert text is not None
    cleaned = text.strip()
    try:
        return int(cleaned, 0 if cleaned.lower().startswith("0x") else base)
    except ValueError as exc:
        raise ParseError(f"expected an integer, found {cleaned!r}") from exc


_NUM = re.compile(r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def num(text: str) -> float | None:
    """The first number in ``text`` (units stripped: ``'1024 MiB'`` → 1024.0)."""
    if is_na(text):
        return None
    m = _NUM.search(text)
    return float(m.group()) if m else None


def need(condition: object, message: str) -> None:
    """Raise the parsers' error unless ``condition`` holds."""
    if not condition:
        raise ParseError(message)


def as_jsonable(value: Any) -> Any:
    """Frozen dataclasses (and tuples of them) → plain JSON-ready structures."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: as_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple | list):
        return [as_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): as_jsonable(v) for k, v in value.items()}
    return value
