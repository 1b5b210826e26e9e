"""Parsers: pure functions from a tool's output text to frozen dataclasses.

One module per tool; no I/O inside. Malformed or truncated input raises
:class:`~rackops.errors.ParseError` or comes back with ``complete=False``,
never as a partial result that looks whole. ``TOOLS`` maps the names that
``rackops parse`` and ``rackops check`` accept to their parse functions.
"""

from __future__ import annotations

import csv
from collections.abc import Callable
from typing import Any

from rackops.parsers._common import ParseError, as_jsonable
from rackops.parsers.dcgmi_diag import parse_dcgmi_diag
from rackops.parsers.ethtool_module import parse_ethtool_module
from rackops.parsers.ethtool_stats import parse_ethtool_stats
from rackops.parsers.host_tuning import parse_host_tuning
from rackops.parsers.iblinkinfo import parse_iblinkinfo
from rackops.parsers.ibnetdiscover import parse_ibnetdiscover
from rackops.parsers.ibstat import parse_ibstat
from rackops.parsers.ibstatus import parse_ibstatus
from rackops.parsers.ibv_devinfo import parse_ibv_devinfo
from rackops.parsers.lldpctl import parse_lldpctl
from rackops.parsers.mlnx_qos import parse_mlnx_qos
from rackops.parsers.mlxlink import parse_mlxlink
from rackops.parsers.nccl_tests import parse_nccl_tests
from rackops.parsers.nvidia_smi import (
    parse_query_gpu,
    parse_smi_nvlink,
    parse_smi_topo,
    parse_smi_xml,
)
from rackops.parsers.ofed_info import parse_ofed_info
from rackops.parsers.perfquery import parse_perfquery
from rackops.parsers.perftest import parse_perftest
from rackops.parsers.ping import parse_ping
from rackops.parsers.rdma_link import parse_rdma_link
from rackops.parsers.show_gids import parse_show_gids

TOOLS: dict[str, Callable[[str], Any]] = {
    "ibstat": parse_ibstat,
    "ibstatus": parse_ibstatus,
    "ibv_devinfo": parse_ibv_devinfo,
    "show_gids": parse_show_gids,
    "ofed_info": parse_ofed_info,
    "mlnx_qos": parse_mlnx_qos,
    "perftest": parse_perftest,
    "nccl-tests": parse_nccl_tests,
    "dcgmi-diag": parse_dcgmi_diag,
    "nvidia-smi-query": parse_query_gpu,
    "nvidia-smi-xml": parse_smi_xml,
    "nvidia-smi-topo": parse_smi_topo,
    "nvidia-smi-nvlink": parse_smi_nvlink,
    "host-tuning": parse_host_tuning,
    "ping": parse_ping,
    # the physical layer: counters, BER, optics, cabling
    "perfquery": parse_perfquery,
    "ethtool-stats": parse_ethtool_stats,
    "ethtool-module": parse_ethtool_module,
    "mlxlink": parse_mlxlink,
    "iblinkinfo": parse_iblinkinfo,
    "ibnetdiscover": parse_ibnetdiscover,
    "lldpctl": parse_lldpctl,
    "rdma-link": parse_rdma_link,
}


def parse(tool: str, text: str) -> Any:
    """Parse ``text`` as the output of ``tool`` (a key of ``TOOLS``)."""
    if tool not in TOOLS:
        raise KeyError(tool)
    if not text.strip():
        raise ParseError("the output is empty")
    text = text.replace("\r\n", "\n").replace("\r", "\n")  # captures pasted from tickets
    try:
        return TOOLS[tool](text)
    except ParseError:
        raise
    except (
        ValueError,
        IndexError,
        KeyError,
        TypeError,
        AttributeError,
        ArithmeticError,
        csv.Error,
        RecursionError,
    ) as exc:
        # A parser bug or an output layout nobody has seen: never a traceback, never a pass.
        raise ParseError(f"unreadable {tool} output ({type(exc).__name__}: {exc})") from exc


__all__ = ["TOOLS", "ParseError", "as_jsonable", "parse"]
