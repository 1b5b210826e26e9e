"""The tool registry: one module per tool, each declaring a :class:`~rackops.tools.base.Tool`
(``TOOL``, or ``TOOLS`` where one program has several readings, as nvidia-smi does).

Nothing else in rackops lists tool names: parse, check, the plan, the runner, the lab's
stand-in repository and fault vocabulary read this registry. Adding a tool is its module
here, its simulator in ``rackops/lab/hwsim/`` and its fixtures in ``tests/fixtures/``.
"""

from __future__ import annotations

import csv
import functools
import importlib
import pkgutil
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from rackops.errors import RackopsError
from rackops.findings import Finding, Status, Subject
from rackops.parsers._common import ParseError, check_limits, non_finite, plain
from rackops.scale import DEFAULT, RACK_FABRIC, Limits, fabric_limits
from rackops.tools.base import Binary, Context, NodeCheck, Tool

if TYPE_CHECKING:
    from rackops.inventory.model import Cluster
    from rackops.suites import Suite

_NOT_TOOLS = {"base", "offline"}  # the registry's types; `rackops check`'s context


@functools.cache
def registry() -> dict[str, Tool]:
    """Every tool, by name, found by importing each module of this package."""
    out: dict[str, Tool] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name.startswith("_") or info.name in _NOT_TOOLS:
            continue
        mod = importlib.import_module(f"{__name__}.{info.name}")
        tools = getattr(mod, "TOOLS", None) or (mod.TOOL,)
        for t in tools:
            if t.name in out:
                raise RuntimeError(f"tool {t.name} is declared twice ({info.name})")
            out[t.name] = t
    return out


def get(name: str) -> Tool:
    try:
        return registry()[name]
    except KeyError:
        raise KeyError(name) from None


def parsed_tools() -> list[str]:
    """The names `rackops parse` and `rackops check` accept."""
    return sorted(n for n, t in registry().items() if t.parse is not None)


def binaries() -> Iterator[tuple[Tool, Binary]]:
    seen: set[str] = set()
    for t in registry().values():
        for b in t.binaries:
            if b.name not in seen:
                seen.add(b.name)
                yield t, b


def simulated_binaries() -> tuple[str, ...]:
    """The programs hwsim stands in for in the lab: what a scenario's tool faults may name."""
    return tuple(sorted(b.name for _t, b in binaries() if b.simulated and not b.daemon))


def package_binaries(package: str) -> tuple[str, ...]:
    """The programs the registry says this package family installs (lab stand-in repo)."""
    return tuple(b.name for _t, b in binaries() if b.package == package)


def input_limits(tool: str, cluster: Cluster | None) -> Limits:
    """What one output of ``tool`` may hold: a fabric-wide tool's as much as the design
    allows (rackops.scale.fabric_limits), every other tool's the fixed bound."""
    t = registry().get(tool)
    if cluster is None or t is None or not t.fabric_wide:
        return DEFAULT
    return fabric_limits(cluster.size())


def parse(tool: str, text: str, limits: Limits = DEFAULT) -> Any:
    """Parse ``text`` as the output of ``tool``: a ParseError for anything unreadable. The
    result is that tool's parsed form (its parser's dataclass), which the caller, naming
    the tool, knows. ``limits`` bound a fabric-wide tool's output (the design's size,
    rackops.scale.fabric_limits); every other tool's are the fixed ones."""
    t = registry().get(tool)
    if t is None or t.parse is None:
        raise KeyError(tool)
    if not t.fabric_wide:
        limits = DEFAULT  # one node's output: the fixed bound, whatever the caller passes
    elif limits is DEFAULT:
        limits = RACK_FABRIC  # the same bound, saying where a larger fabric's comes from
    if len(text) <= limits.chars:  # larger: refused just below, unread
        text = plain(text)  # as a terminal shows it: escapes, progress redraws, old line ends
    if not text.strip():  # nothing a terminal would show
        if t.empty is not None:
            return t.empty()  # the tool's own answer (its exit status is the caller's)
        raise ParseError("the output is empty")
    check_limits(text, limits)  # size and line length, before any parser or regex sees it
    try:
        parsed = t.parse(text, limits) if t.fabric_wide else t.parse(text)
    except ParseError:
        raise
    except _BUGS as exc:
        # A parser bug or an output layout nobody has seen: never a traceback, never a pass.
        raise ParseError(f"unreadable {tool} output ({type(exc).__name__}: {exc})") from exc
    bad = non_finite(parsed)
    if bad is not None:  # NaN or ±inf as printed ("1e999" too): no tool measures that
        where, value = bad
        raise ParseError(f"{tool}: {where} is {value}, not a finite number: a garbled output")
    return parsed


# What a parser or a check fed a layout nobody has seen may raise (xml's ParseError is a
# SyntaxError): turned into an unreadable-output error, never a traceback or a pass.
_BUGS = (
    ValueError,
    LookupError,
    TypeError,
    AttributeError,
    ArithmeticError,
    AssertionError,
    SyntaxError,
    csv.Error,
    RecursionError,
)


def unreadable(tool: str, node: str | None, exc: Exception) -> Finding:
    return Finding(
        "PARSE-000",
        Status.ERROR,
        Subject(node=node),
        f"unreadable {tool} output: {exc}",
        remediation="capture the whole output again (stdout and stderr)",
    )


def evaluate(tool: str, text: str, ctx: Context, node: str | None) -> list[Finding]:
    """One output of ``tool`` judged on its own (``rackops check``)."""
    return judged(tool, text, ctx, node)[0]


def judged(tool: str, text: str, ctx: Context, node: str | None) -> tuple[list[Finding], Any]:
    """One output of ``tool`` judged on its own, and its parse (None where unreadable): a
    run keeps the parse, so the stages after never read the output again."""
    t = get(tool)
    try:
        parsed = parse(tool, text, input_limits(tool, ctx.cluster))
    except ParseError as exc:
        return [unreadable(tool, node, exc)], None
    if t.check is None:
        raise RackopsError(
            t.no_check
            or f"no single-output check reads {tool}: use `rackops parse` to read one output"
        )
    try:
        return t.check(parsed, ctx, node), parsed
    except _BUGS as exc:
        # A value no real output holds reached the check: the output is not judged.
        return [unreadable(tool, node, ParseError(f"{type(exc).__name__}: {exc}"))], None


def judge_live(tool: str, text: str, ctx: Context, node: str) -> tuple[list[Finding], Any]:
    """One output of ``tool`` from a run: its live check where it has one, else its check;
    the findings and the parse (None where unreadable)."""
    t = get(tool)
    if t.live is not None:
        try:
            return t.live(text, ctx, node)
        except _BUGS as exc:
            return [unreadable(tool, node, ParseError(f"{type(exc).__name__}: {exc}"))], None
    return judged(tool, text, ctx, node)


def node_checks(suite: Suite, cluster: Cluster) -> list[NodeCheck]:
    """Stage 1 of a plan: every tool's node checks for this suite and rack, in order."""
    out: list[NodeCheck] = []
    for t in sorted(registry().values(), key=lambda t: (t.order, t.name)):
        if t.plan is not None:
            out += t.plan(suite, cluster)
    return out


__all__ = [
    "Binary",
    "Context",
    "NodeCheck",
    "Tool",
    "binaries",
    "evaluate",
    "get",
    "judge_live",
    "judged",
    "node_checks",
    "package_binaries",
    "parse",
    "parsed_tools",
    "registry",
    "simulated_binaries",
]
