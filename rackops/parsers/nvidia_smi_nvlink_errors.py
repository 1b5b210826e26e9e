"""``nvidia-smi nvlink -e``: each GPU's NVLink error counters, per link.

    GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-…)
             Link 0: Replay Errors: 0
             Link 0: Recovery Errors: 0
             Link 0: CRC Errors: 0

Up to NVLink4 each link prints Replay, Recovery and CRC errors (a real H100 capture,
stas00/ml-engineering; an RTX A6000's). NVLink5 (Blackwell, R565+) prints other counters in
the same ``Link N: <name>: <value>`` lines — ``Effective Errors``, ``Effective BER``,
``Symbol Errors``, ``FEC Errors - 0``..``15``, ``Raw BER Lane 0``, ``Link recovery failed
events``, ``Rx Errors`` … (NVIDIA's nvidia-smi changelog; a B300 report); no verbatim NVLink5
block was found, so every name is read as printed and none is required (research:
docs/research/issue-42-nvlink-e.md). A value is a count, a number (``15e-255``) or ``N/A``.
A GPU whose links are all down prints NVML's ``Unable to retrieve NVLink information as all
links are inActive`` (a real B200 report). Link lines are indented by a tab and a space, or
spaces where a paste turned the tab; a blank line between links is allowed. A line that is
none of these (an elision ``[...]``, a cut) makes the result not ``complete``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from rackops.parsers._common import (
    MAX_COUNT,
    MAX_GPUS,
    MAX_NVLINKS,
    ParseError,
    bounded,
    check_limits,
    plain,
)

__all__ = ["GpuLinkErrors", "NvlinkErrors", "parse_nvlink_errors"]


@dataclass(frozen=True)
class GpuLinkErrors:
    index: int
    name: str
    uuid: str | None
    links: dict[int, dict[str, float | None]] = field(default_factory=dict)
    all_inactive: bool = False


@dataclass(frozen=True)
class NvlinkErrors:
    gpus: tuple[GpuLinkErrors, ...]
    complete: bool
    errors: tuple[str, ...]


_GPU = re.compile(r"GPU (\d{1,3}): (.{1,120}?)(?: \(UUID: (GPU-[0-9a-fA-F-]{8,60})\))?")
_LINK = re.compile(r"Link (\d{1,2}): ([A-Za-z][A-Za-z0-9 ()/_.+-]{0,60}?)\s*:\s*(\S.{0,40})")
_NUMBER = re.compile(r"[0-9]{1,30}(?:\.[0-9]{1,30})?(?:[eE][-+]?[0-9]{1,4})?")
INACTIVE = "Unable to retrieve NVLink information as all links are inActive"


def _value(text: str) -> float | None:
    if text.upper() == "N/A":
        return None
    if not _NUMBER.fullmatch(text):
        raise ValueError(text)
    v = float(text)
    if not math.isfinite(v):
        raise ValueError(text)
    return v


def parse_nvlink_errors(text: str) -> NvlinkErrors:
    text = plain(text)
    if not text.strip():
        raise ParseError("empty output: nvidia-smi nvlink -e printed nothing")
    check_limits(text)
    rows = text.split("\n")
    cut = rows.pop() != ""  # no final newline: the last line may be cut
    gpus: list[GpuLinkErrors] = []
    errors: list[str] = []
    for n, raw in enumerate(rows, 1):
        line = raw.strip()
        if not line:
            continue
        g = _GPU.fullmatch(line)
        if g:
            bounded(len(gpus) + 1, "GPUs", MAX_GPUS)
            gpus.append(GpuLinkErrors(int(g[1]), g[2], g[3]))
            continue
        if INACTIVE in line and gpus:
            gpus[-1] = GpuLinkErrors(gpus[-1].index, gpus[-1].name, gpus[-1].uuid, {}, True)
            continue
        m = _LINK.fullmatch(line)
        if m and gpus and raw[:1] in ("\t", " "):
            try:
                value = _value(m[3].strip())
            except ValueError:
                errors.append(f"line {n}: {m[2]} is not a number: {m[3][:40]!r}")
                continue
            link = bounded(int(m[1]), "link index", MAX_NVLINKS - 1)
            links = gpus[-1].links.setdefault(link, {})
            links[m[2]] = value
            bounded(len(links), "counters of one link", 256)
            continue
        if len(errors) < 50:
            errors.append(f"line {n}: not a GPU or link line: {line[:80]!r}")
    if not gpus:
        raise ParseError("no GPU line (GPU N: NAME (UUID: …)): not nvidia-smi nvlink -e output")
    bounded(sum(len(g.links) for g in gpus), "links", MAX_COUNT)
    if cut and rows:
        errors.append("the output ends without a final newline (cut)")
    return NvlinkErrors(tuple(gpus), not errors, tuple(errors))
