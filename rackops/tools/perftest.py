"""perftest (``ib_write_bw`` and kin): one link's bandwidth or latency, in the pair rounds."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rackops.suites import PERFTEST_BW, PERFTEST_LAT
from rackops.tools.base import Binary, Context, Tool

if TYPE_CHECKING:
    from rackops.findings import Finding
    from rackops.suites import PerftestBwParams, PerftestLatParams


def bw_options(p: PerftestBwParams, port: int) -> list[str]:
    """A bandwidth test's options, the same on server and client (-d and the server's
    address are added per end)."""
    length = ["-D", str(p.duration_s)] if p.duration_s is not None else ["-n", str(p.iterations)]
    opts = ["-s", str(p.message_size_bytes), *length, "-q", str(p.qps)]
    opts += ["-F", "--report_gbits", "-p", str(port)]
    return [*opts, "-b"] if p.bidirectional else opts


def lat_options(p: PerftestLatParams, port: int) -> list[str]:
    return ["-s", str(p.message_size_bytes), "-n", str(p.iterations), "-F", "-p", str(port)]


def check(parsed: Any, ctx: Context, node: str | None) -> list[Finding]:
    from rackops.checks.perftest import check_perftest
    from rackops.findings import Subject

    checks = ctx.suite.checks if ctx.suite else None
    params = (
        (checks.perftest_lat if parsed.kind == "lat" else checks.perftest_bw) if checks else None
    )
    size = params.message_size_bytes if params else None
    subj = Subject(node=node, hca=parsed.device)
    return check_perftest(parsed, ctx.profile, subject=subj, message_size_bytes=size)


def _parse(text: str) -> Any:
    from rackops.parsers.perftest import parse_perftest

    return parse_perftest(text)


TOOL = Tool(
    "perftest",
    "RDMA bandwidth and latency of one link",
    parse=_parse,
    check=check,
    binaries=tuple(Binary(b, "perftest") for b in PERFTEST_BW + PERFTEST_LAT),
    both_streams=True,
)
