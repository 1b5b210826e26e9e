"""Checks: pure functions from parsed data + profile (+ cabling map) to findings.

No I/O and no thresholds in code: every floor and ceiling comes from the
profile, every pinned size from the suite. ``CHECKS`` maps a ``rackops parse``
tool name to the check that reads its output.
"""

from __future__ import annotations

from rackops.checks.dcgm import check_dcgm
from rackops.checks.gpu import check_gpu_query, check_gpu_xml, check_nvlink
from rackops.checks.hca import check_hca_ports
from rackops.checks.nccl import check_nccl
from rackops.checks.peers import peer_gate
from rackops.checks.perftest import check_perftest
from rackops.checks.repeat import combine_attempts

__all__ = [
    "check_dcgm",
    "check_gpu_query",
    "check_gpu_xml",
    "check_hca_ports",
    "check_nccl",
    "check_nvlink",
    "check_perftest",
    "combine_attempts",
    "peer_gate",
]
