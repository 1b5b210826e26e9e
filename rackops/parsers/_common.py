"""Helpers shared by the parsers: number conversion, N/A handling, serialisation."""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any

from rackops.errors import ParseError
from rackops.scale import DEFAULT, MAX_COUNT, MAX_INPUT_CHARS, Limits

__all__ = [
    "MAX_COUNT",
    "MAX_GPUS",
    "MAX_INPUT_CHARS",
    "MAX_LANES",
    "MAX_LINE_CHARS",
    "MAX_NVLINKS",
    "ParseError",
    "as_jsonable",
    "bounded",
    "check_limits",
    "need",
    "num",
    "to_float",
    "to_int",
]

# --- the limits every parser works within (tool output is untrusted) ----------------------
# MAX_INPUT_CHARS and MAX_COUNT are the base bounds (rackops.scale): a fabric-wide output
# (an ibdiagnet sweep's files, iblinkinfo) is bounded by the design's size instead.
# The longest real line in any tool's output is a few hundred characters (an nvidia-smi
# --query-gpu CSV row with every field is ~3 KB; JSON and XML outputs are pretty-printed).
MAX_LINE_CHARS = 16 * 1024
# Narrower bounds where the hardware sets them: lanes of one optical module (CMIS: 8, an
# OSFP/QSFP-DD breakout at most 16), NVLinks of one GPU (H100/B200: 18), GPUs of one node.
MAX_LANES = 32
MAX_NVLINKS = 64
MAX_GPUS = 1024

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


# What a terminal acts on rather than shows. Real tools print these without a terminal too:
# ``nvidia-smi topo -m`` underlines its header (ESC[4m ... ESC[0m) on every driver seen,
# mlxlink colours its values (ESC[32m ... with the reset at the start of the next line) and
# redraws progress with CR, mstflint's tools erase lines (ESC[2K) and back up (BS).
_CSI = re.compile(r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]")  # colours, underline, erase, cursor
# titles, links; its body stops at the next escape or OSC start, so a scan never overlaps
# the next one (linear in the text, whatever it holds)
_OSC = re.compile(r"(?:\x1b\]|\x9d)[^\x07\x1b\x9c\x9d\n]{0,4096}(?:\x07|\x1b\\|\x9c)")
_ESC = re.compile(r"\x1b[@-Z\\^_]|\x1b[ -/]*[0-~]")  # the other escapes: ESC and one char
_BACKSPACED = re.compile(r"[^\n\x08]\x08")


def plain(text: str) -> str:
    """A tool's output as a terminal would show it: escape sequences (colour, underline,
    erase, titles) removed, a character and the backspace after it removed, and of a line a
    progress bar redrew with carriage returns only what was drawn last. Text with CR and
    no LF at all is a capture with old line ends: CR ends each line."""
    text = text.replace("\r\n", "\n")
    if "\x1b" in text or "\x9b" in text or "\x9d" in text:
        text = _ESC.sub("", _CSI.sub("", _OSC.sub("", text)))
    if "\x08" in text:
        for _ in range(64):  # nested overstrikes; bounded
            text, n = _BACKSPACED.subn("", text)
            if not n:
                break
        text = text.replace("\x08", "")
    if "\r" in text:
        if "\n" not in text:
            return text.replace("\r", "\n")
        text = "\n".join(_last_drawn(line) for line in text.split("\n"))
    return text


def _last_drawn(line: str) -> str:
    if "\r" not in line:
        return line
    drawn = [part for part in line.split("\r") if part.strip()]
    return drawn[-1] if drawn else ""


def check_limits(text: str, limits: Limits = DEFAULT) -> None:
    """Refuse input larger than the limits above before any parser looks at it."""
    if len(text) > limits.chars:
        raise ParseError(
            f"the output is {len(text)} characters, more than {limits.chars}: "
            f"{limits.why}; pass one tool's own output"
        )
    start = 0
    size = len(text)
    while start < size:
        end = text.find("\n", start)
        if end < 0:
            end = size
        if end - start > MAX_LINE_CHARS:
            line = text.count("\n", 0, start) + 1
            raise ParseError(
                f"line {line} is {end - start} characters, more than MAX_LINE_CHARS="
                f"{MAX_LINE_CHARS}: no tool prints such a line (binary or joined output?)"
            )
        start = end + 1


def bounded(value: int, what: str, limit: int = MAX_COUNT, low: int = 0) -> int:
    """A count or index read from the text, refused outside ``low..limit`` before it sizes
    anything (``Channel 99999999`` must not become a list of a hundred million lanes)."""
    if not low <= value <= limit:
        raise ParseError(
            f"{what} {value} is outside {low}..{limit} (rackops/parsers/_common.py): "
            "not a real output"
        )
    return value


def need(condition: object, message: str) -> None:
    """Raise the parsers' error unless ``condition`` holds."""
    if not condition:
        raise ParseError(message)


def non_finite(value: Any, where: str = "") -> tuple[str, float] | None:
    """The first NaN or ±inf in a parsed output (its dataclasses, tuples, lists and dicts),
    with where it sits (``rows[0].bw_avg_gbps``), or None: every figure a tool prints is a
    finite number, so one that is not is a garbled output, whichever parser read it."""
    if isinstance(value, float):
        return None if math.isfinite(value) else (where or "a figure", value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            bad = non_finite(getattr(value, f.name), f"{where}.{f.name}" if where else f.name)
            if bad is not None:
                return bad
    elif isinstance(value, tuple | list):
        for i, v in enumerate(value):
            if isinstance(v, str | int):
                continue
            bad = non_finite(v, f"{where}[{i}]")
            if bad is not None:
                return bad
    elif isinstance(value, dict):
        for k, v in value.items():
            bad = non_finite(v, f"{where}[{k!r}]")
            if bad is not None:
                return bad
    return None


def finite_json(value: Any) -> Any:
    """``value`` with every NaN or ±inf float as None (JSON has no such numbers)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite_json(v) for v in value]
    return value


def as_jsonable(value: Any) -> Any:
    """Frozen dataclasses (and tuples of them) → plain JSON-ready structures."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: as_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple | list):
        return [as_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): as_jsonable(v) for k, v in value.items()}
    return value
