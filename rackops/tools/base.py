"""What one tool is to rackops: how it is run, read, judged, installed and simulated.

A :class:`Tool` is declared once, in its own module of :mod:`rackops.tools`; ``rackops
parse``, ``rackops check``, the plan, the runner, the lab's stand-in repository, the lab's
fault vocabulary and hwsim's dispatch all read it from the registry.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # suites and profiles read the registry's names: no import cycle at run time
    from rackops.findings import Finding
    from rackops.inventory.model import Cluster, Node
    from rackops.profiles import Profile
    from rackops.suites import Suite


@dataclass(frozen=True)
class Context:
    """What a check may need besides the output: the node's profile, the node and the rack
    from the inventory, and the suite (pinned sizes, DCGM level)."""

    profile: Profile
    node: Node | None
    cluster: Cluster | None
    suite: Suite | None


@dataclass(frozen=True)
class NodeCheck:
    """One command the plan runs on every node (stage 1)."""

    name: str  # step id, unique per node: "ibstat", "dcgmi-diag", ...
    tool: str  # the registry name of the tool that reads its output
    argv: tuple[str, ...]
    timeout_s: float
    expected_s: float  # how long the tool itself runs when healthy (for the estimate)
    per_hca: bool = False  # run once per cabled HCA; "{netdev}" in argv is its interface,
    # "{device}" its RDMA device (in every check: "{netdevs}"/"{devices}" become one
    # argument per cabled interface/device, "{hw_root}" the node's rackops_hw_root,
    # "{gpus}" its GPU count from its profile)


@dataclass(frozen=True)
class Binary:
    """A program a tool runs, the package family that installs it (the lab's stand-in
    repository builds a package of that family holding it), and whether hwsim stands in
    for it in the lab (then a scenario may inject ``missing``/``hang``/``garbled`` into it)."""

    name: str
    package: str
    simulated: bool = True
    daemon: bool = False  # a service the package starts, not a command a check runs


class FactSink:
    """What node-check outputs say about a node that the fleet compares across the rack
    (versions, firmware, settings, PCIe links): each tool with ``facts`` adds its own, in
    the words the fleet's fact kinds name (``rackops.fleet.facts.KINDS``), with the command
    that read it. ``pci`` is each GPU's and HCA's PCI address, from the tools that read it,
    for the tools that join on it (lspci)."""

    def __init__(self, node: Node) -> None:
        self.node = node
        self.rows: list[tuple[str, str, object, str, str]] = []
        self.pci: dict[str, str] = {}

    def add(self, device: str, name: str, value: object, source: str, where: str = "") -> None:
        if value is None or value == "":
            return
        self.rows.append((device, name, value, source, where))


Check = Callable[[Any, Context, "str | None"], "list[Finding]"]
# a tool's fleet facts from one parsed output of it: (parsed, sink, check name: the device
# of a per-HCA check is its suffix, ``mlxconfig/mlx5_0``)
Facts = Callable[[Any, FactSink, str], None]
# a run's check of one raw output where it differs from ``check``: its findings, and the
# output as parsed (kept for the stages after), or None where it could not be parsed
LiveCheck = Callable[[str, Context, "str | None"], "tuple[list[Finding], Any]"]
Planner = Callable[["Suite", "Cluster"], Sequence[NodeCheck]]


@dataclass(frozen=True)
class Tool:
    name: str  # the name `rackops parse`/`rackops check` take, and results.jsonl's "tool"
    summary: str
    # (text) -> parsed; a fabric-wide tool's parser takes (text, limits) and is bounded by
    # the design's size (rackops.scale.fabric_limits) where the caller passes it
    parse: Callable[..., Any] | None = None
    fabric_wide: bool = False
    check: Check | None = None  # one output judged on its own (`rackops check`, the runner)
    live: LiveCheck | None = None  # in a run, where it differs from ``check`` (raw text in)
    plan: Planner | None = None  # the node checks this tool adds to a plan (stage 1)
    order: int = 100  # where its node checks stand in stage 1
    binaries: tuple[Binary, ...] = ()
    both_streams: bool = False  # its parser reads stdout and stderr together
    hca: bool = False  # reads the node's RDMA HCAs: not run on a GPU-only node (no HCA)
    # what an empty output with exit status 0 means, where the tool means something by it
    # (``nvidia-smi nvlink -s`` on a GPU with no NVLink prints nothing): None, an error
    empty: Callable[[], Any] | None = None
    settles: bool = False  # a FAIL may be a link still training: re-read in the hold-down
    loads_gpus: bool = False  # it loads every GPU: one such check per node at a time (stage 1)
    no_check: str = ""  # why `rackops check` cannot judge one output of it
    nvidia_stack: bool = False  # runs a program only NVIDIA's stack installs (DOCA-OFED, MFT):
    # not run on a node whose inventory says rackops_nvidia_stack: false
    facts: Facts | None = None  # what the fleet compares of its output, where it yields any
    facts_join: bool = False  # its facts join on the others' (FactSink.pci): read after them
    nvlink_domain: bool = False  # reads a multi-node NVLink domain (IMEX): trays of one only
