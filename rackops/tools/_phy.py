"""What the physical-layer readers share: counters are judged on what grows during a run."""

from __future__ import annotations

COUNTERS_ONLY = (
    "no single-output check reads {tool}: its counters are judged on what grows during "
    "a run (rackops validate); use `rackops parse` to read one output"
)
