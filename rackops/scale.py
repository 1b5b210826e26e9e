"""How large a run's inputs may be: bounds that grow with the design, not constants.

Everything rackops reads from outside is bounded (tool outputs, run directories): an input
past its bound is refused, never read in part. A fixed bound that fits a rack is one a
cluster's fabric outgrows: a 4,096-node NDR fabric in two tiers is ~1,500 switches and
~98,000 switch ports, and one ibdiagnet net_dump of it ~15 MB. So what grows with the
cluster is bounded by the larger of a base (what any rack fits in: the parsers' and the run
directory's fixed limits) and the design's own size times ``MARGIN``. The design's size is
itself bounded by what one inventory may hold (``MAX_DESIGN_HOSTS``), so no input can lift
a bound past what the largest design allows.

A run records its design's size in run.json (``size``); a run directory is read within the
bounds of that size, and the sweep's fabric-wide outputs within the bounds of the design.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rackops.errors import ParseError

__all__ = [
    "DEFAULT",
    "MARGIN",
    "MAX_COUNT",
    "MAX_DESIGN_HOSTS",
    "MAX_INPUT_CHARS",
    "RACK_FABRIC",
    "Limits",
    "RunLimits",
    "Size",
    "fabric_limits",
    "recorded_size",
    "run_limits",
]

# --- the base: what any rack fits in (parsers/_common re-exports these two) --------------
# The largest output of one node's tool (a DCGM level-4 log, nvidia-smi -q of 8 GPUs) is a
# few MB; fabric-wide outputs of a large fabric are bounded by the design instead.
MAX_INPUT_CHARS = 16 * 1024 * 1024
# Any count a parser reads from text (lane, port, GPU, link, row, rank) that could size a
# list: one node's are below a few thousand; a fabric's rows by the design.
MAX_COUNT = 65536

MARGIN = 2  # a designed size times this: spare ports, a few unplanned switches, growth
# nodes and switches of one inventory, host ranges counted expanded (the inventory's own
# refusal uses this number): no run, and so no run directory, describes more
MAX_DESIGN_HOSTS = 20_000
MAX_HCAS = 32  # HCAs of one node (the inventory's own bound; 8 rails is the common most)
# the largest InfiniBand switch radix shipped (Quantum-X800 Q3400: 144 XDR ports); a sweep
# lists every port of every switch it found, cabled or not
IB_SWITCH_RADIX = 144
# one port's row as ibdiagnet's net_dump or iblinkinfo print it: 150-200 characters with
# GUIDs and a node description of 64 characters at most (IB NodeDescription)
ROW_CHARS = 256
# what one node and one switch put in results.jsonl in a run, and one pair test (bandwidth
# and latency records); a record is ~1 KB, a switch's (its ports' reports) a few KB
NODE_LINES, SWITCH_LINES, PAIR_LINES = 64, 4, 2
LINE_BYTES = 2048
# the most a run directory may hold, whatever run.json says: the controller reads
# results.jsonl into memory, and 4 GiB of it is ~15 GB of Python objects
CEILING_RESULTS_BYTES = 4 * 1024**3
CEILING_RESULTS_LINES = 4_000_000
# and one raw output (a 98,304-port net_dump is 16 MB) and one JSON file (report.json of
# 4,096 nodes is 76 MB), whatever size a run directory claims under MAX_DESIGN_HOSTS
CEILING_RAW_BYTES = 256 * 1024**2
CEILING_JSON_BYTES = 1024**3


@dataclass(frozen=True)
class Size:
    """A design's size: what its bounds are derived from."""

    nodes: int = 0
    switches: int = 0
    host_ports: int = 0  # HCA ports cabled into the fabric
    pair_tests: int = 0  # node pairs × rails the run's plan tests (0: none, or unknown)

    def as_dict(self) -> dict[str, int]:
        return {
            "nodes": self.nodes,
            "switches": self.switches,
            "host_ports": self.host_ports,
            "pair_tests": self.pair_tests,
        }

    @classmethod
    def from_json(cls, doc: Any, where: str) -> Size:
        """run.json's ``size``, checked: a ValueError naming ``where`` and the key for a
        value that is not a count or is more than any design holds."""
        if not isinstance(doc, dict) or set(doc) - {
            "nodes",
            "switches",
            "host_ports",
            "pair_tests",
        }:
            raise ValueError(
                f"{where}: size is not an object of nodes, switches, host_ports, pair_tests"
            )
        values: dict[str, int] = {}
        for key in ("nodes", "switches", "host_ports", "pair_tests"):
            v = doc.get(key, 0)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError(f"{where}: size.{key} is {v!r}, not a count")
            values[key] = v
        size = cls(**values)
        size.check(where)
        return size

    def check(self, where: str) -> None:
        """Refuse a size no inventory can describe (it would lift every bound)."""
        hosts = self.nodes + self.switches
        if hosts > MAX_DESIGN_HOSTS:
            raise ValueError(
                f"{where}: {self.nodes} nodes and {self.switches} switches, more than the "
                f"{MAX_DESIGN_HOSTS} hosts one inventory may hold"
            )
        if self.host_ports > self.nodes * MAX_HCAS:
            raise ValueError(
                f"{where}: {self.host_ports} host ports on {self.nodes} nodes, more than "
                f"{MAX_HCAS} a node"
            )
        # a round pairs each node once at most, and no plan has more rounds than nodes (a
        # sampled plan may meet a pair again: not unique pairs)
        most_pairs = self.nodes * self.nodes * MAX_HCAS
        if self.pair_tests > most_pairs:
            raise ValueError(
                f"{where}: {self.pair_tests} pair tests, more than {self.nodes} nodes can "
                f"make ({most_pairs})"
            )


@dataclass(frozen=True)
class Limits:
    """What one tool output may hold: characters, and the rows or items it lists."""

    chars: int = MAX_INPUT_CHARS
    count: int = MAX_COUNT
    why: str = "no tool prints that much (MAX_INPUT_CHARS, MAX_COUNT: one tool's output)"

    def refuse(self, count: int, what: str) -> ParseError:
        """The error for ``count`` items of ``what``, past this limit."""
        return ParseError(f"more than {self.count} {what} ({count} read): {self.why}")


DEFAULT = Limits()
# a fabric-wide output read with no design: the same bound, and where a larger one comes from
RACK_FABRIC = Limits(
    why="a rack's fabric prints no more (MAX_INPUT_CHARS, MAX_COUNT); a larger fabric's "
    "output is bounded by its design: rackops parse/check -i INVENTORY, as a run does"
)


def fabric_limits(size: Size) -> Limits:
    """The bounds of one fabric-wide output (an ibdiagnet sweep's files, iblinkinfo,
    ibnetdiscover) for this design: every port of every switch at the largest radix and
    every host port, times the margin; the base where the design is smaller."""
    ports = MARGIN * (size.switches * IB_SWITCH_RADIX + size.host_ports)
    count = max(MAX_COUNT, ports)
    why = (
        f"the design's {size.switches} switches (at most {IB_SWITCH_RADIX} ports each) and "
        f"{size.host_ports} host ports allow {ports} with a margin of {MARGIN}"
        + ("" if ports > MAX_COUNT else f", within a rack's {MAX_COUNT}")
    )
    return Limits(max(MAX_INPUT_CHARS, count * ROW_CHARS), count, why)


@dataclass(frozen=True)
class RunLimits:
    """What a run directory may hold."""

    results_bytes: int = 64 * 1024 * 1024  # results.jsonl (a 1,000-node run: tens of MB)
    results_lines: int = 500_000  # records in results.jsonl
    raw_bytes: int = 16 * 1024 * 1024  # one raw output under raw/
    json_bytes: int = 16 * 1024 * 1024  # report.json and the run's other JSON files
    fabric: Limits = DEFAULT  # a fabric-wide output parsed again from raw/
    why: str = "the fixed limits of a run directory"


def recorded_size(meta: Any, where: str) -> Size | None:
    """The design size a run recorded in its run.json (``meta``, parsed), or None where it
    recorded none (an older run); a ValueError naming ``where`` for one no design has."""
    size = meta.get("size") if isinstance(meta, dict) else None
    return None if size is None else Size.from_json(size, where)


def run_limits(size: Size | None, base: RunLimits = RunLimits()) -> RunLimits:
    """The bounds of a run directory whose run recorded this design size (None: a run that
    recorded none, or an older one: the base)."""
    if size is None:
        return base
    fabric = fabric_limits(size)
    designed = MARGIN * (
        size.nodes * NODE_LINES + size.switches * SWITCH_LINES + size.pair_tests * PAIR_LINES
    )
    lines = min(max(base.results_lines, designed), CEILING_RESULTS_LINES)
    results = min(max(base.results_bytes, designed * LINE_BYTES), CEILING_RESULTS_BYTES)
    if (lines, results, fabric.chars) == (base.results_lines, base.results_bytes, base.raw_bytes):
        return base
    return RunLimits(
        results_bytes=results,
        results_lines=lines,
        raw_bytes=min(max(base.raw_bytes, fabric.chars), CEILING_RAW_BYTES),
        json_bytes=min(max(base.json_bytes, results // 2), CEILING_JSON_BYTES),
        fabric=fabric,
        why=(
            f"the run's design ({size.nodes} nodes, {size.switches} switches, "
            f"{size.pair_tests} pair tests) with a margin of {MARGIN}"
        ),
    )
