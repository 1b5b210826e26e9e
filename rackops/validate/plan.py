"""The plan: which commands run where, in which order, and how long that should take.

Per-node checks run on every node at once. RDMA pairs run in rounds: in each round every
node is in exactly one pair, and each pair tests all its rails at once (HCA of rail r ↔
HCA of rail r), so every rail of every node is busy in every round. ``full`` pairing is the
round-robin 1-factorisation (circle method): n−1 rounds for even n, n for odd n (one node
rests each round), every pair exactly once — the minimum number of rounds.
"""

from __future__ import annotations

import fnmatch
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import overload

from rackops.errors import RackopsError
from rackops.inventory.model import Cluster, Node
from rackops.suites import Suite
from rackops.tools import get as get_tool
from rackops.tools import node_checks
from rackops.tools.base import NodeCheck

__all__ = ["NodeCheck", "PairRound", "Plan", "limited", "make_plan", "node_checks"]

PERFTEST_PORT = 18515
MAX_LIMIT_PATTERNS = 10_000
# a node name, or a shell-style pattern of one (node0[1-4], su2-*): never an option, a
# path, a hostlist for another program or a second word
_PATTERN = re.compile(r"[A-Za-z0-9*?\[][A-Za-z0-9_.*?!\[\]-]{0,252}", re.ASCII)


def limited(cluster: Cluster, limit: str, inventory: str) -> Cluster:
    """The cluster with only the nodes ``limit`` selects: comma-separated node names or
    shell-style patterns (``node0[1-4]``), inventory order kept. Every pattern must select a
    node: a typo never quietly validates less than was asked for."""
    patterns = limit.split(",")
    if not limit.strip():
        raise RackopsError("--limit is empty: name the nodes to validate, e.g. node01,node0[3-4]")
    if len(patterns) > MAX_LIMIT_PATTERNS:
        raise RackopsError(
            f"--limit has more than {MAX_LIMIT_PATTERNS} names; select with patterns "
            "(node0*) or validate the whole inventory"
        )
    names = {n.name for n in cluster.nodes}
    chosen: set[str] = set()
    for pat in patterns:
        if not pat:
            raise RackopsError(f"--limit {limit[:80]!r}: an empty name between commas")
        if not _PATTERN.fullmatch(pat):
            raise RackopsError(
                f"--limit: {pat[:80]!r} is not a node name or pattern (letters, digits, "
                "'-', '_', '.', and the wildcards * ? [ ])"
            )
        if any(c in pat for c in "*?["):
            hits = {n for n in names if fnmatch.fnmatchcase(n, pat)}
        else:  # a plain name: a lookup, not a match against every node
            hits = {pat} & names
        if not hits:
            order = [n.name for n in cluster.nodes]
            shown = ", ".join(order[:8]) + (f", … ({len(order)} in all)" if len(order) > 8 else "")
            raise RackopsError(
                f"--limit: {pat!r} matches no node of {inventory}; its nodes are: {shown}"
            )
        chosen |= hits
    return cluster.model_copy(update={"nodes": tuple(n for n in cluster.nodes if n.name in chosen)})


@dataclass(frozen=True)
class Pair:
    server: str
    client: str


@dataclass(frozen=True)
class PairRound:
    index: int
    pairs: tuple[Pair, ...]


class RoundRobin(Sequence[PairRound]):
    """The circle-method rounds of ``nodes``, computed on demand: a 4,096-node plan has
    4,095 rounds of 2,048 pairs, which would be 8 million objects if built up front."""

    def __init__(self, nodes: Sequence[str]) -> None:
        self.ring: list[str | None] = list(nodes)
        if len(self.ring) % 2:
            self.ring.append(None)
        self.n = len(self.ring)

    def __len__(self) -> int:
        return max(0, self.n - 1)

    @overload
    def __getitem__(self, i: int) -> PairRound: ...
    @overload
    def __getitem__(self, i: slice) -> list[PairRound]: ...
    def __getitem__(self, i: int | slice) -> PairRound | list[PairRound]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if not 0 <= i < len(self):
            raise IndexError(i)
        n = self.n

        # position p of round i holds ring[0] for p == 0, else ring[1 + (p - 1 - i) mod (n-1)]
        def at(p: int) -> str | None:
            return self.ring[0] if p == 0 else self.ring[1 + (p - 1 - i) % (n - 1)]

        pairs = []
        for k in range(n // 2):
            a, b = at(k), at(n - 1 - k)
            if a is not None and b is not None:
                pairs.append(Pair(a, b))
        return PairRound(i, tuple(pairs))

    def pair_count(self) -> int:
        real = sum(1 for x in self.ring if x is not None)
        return real * (real - 1) // 2


@dataclass(frozen=True)
class NcclGroup:
    name: str
    nodes: tuple[str, ...]


@dataclass(frozen=True)
class Plan:
    nodes: tuple[str, ...]
    node_checks: tuple[NodeCheck, ...]
    pairing: str
    rounds: Sequence[PairRound]
    rails: tuple[int, ...]
    nccl_groups: tuple[NcclGroup, ...]
    estimate_s: float
    latency: bool = False
    physical: bool = False

    def pair_count(self) -> int:
        """Node pairs the rounds test (each on every rail)."""
        if isinstance(self.rounds, RoundRobin):
            return self.rounds.pair_count()
        return sum(len(r.pairs) for r in self.rounds)

    def describe(self) -> str:
        lines = [f"plan: {len(self.nodes)} nodes, rails {list(self.rails)}, pairing {self.pairing}"]
        lines.append(
            f"  stage 1: per-node checks on all nodes at once: "
            f"{', '.join(c.name for c in self.node_checks)}"
        )
        pairs = self.pair_count()
        lines.append(
            f"  stage 2: {len(self.rounds)} pair rounds, {pairs} node pairs × "
            f"{len(self.rails)} rails = {pairs * len(self.rails)} links"
            + (" (bandwidth, then latency)" if self.latency else "")
        )
        if self.physical:
            lines.append(
                "  physical layer: cabling against the map first; port counters before and "
                "after the pair rounds; BER and optics after them"
            )
        for r in self.rounds[:3]:
            lines.append(
                f"    round {r.index + 1}: " + ", ".join(f"{p.server}↔{p.client}" for p in r.pairs)
            )
        if len(self.rounds) > 3:
            lines.append(f"    … {len(self.rounds) - 3} more rounds")
        for g in self.nccl_groups:
            lines.append(f"  stage 3: NCCL group {g.name}: {len(g.nodes)} nodes")
        lines.append(f"  estimated wall time: {self.estimate_s / 60:.1f} min")
        return "\n".join(lines)


def random_matchings(nodes: Sequence[str], k: int, seed: int) -> list[list[tuple[str, str]]]:
    rng = random.Random(seed)
    rounds = []
    for _ in range(k):
        order = list(nodes)
        rng.shuffle(order)
        rounds.append([(order[i], order[i + 1]) for i in range(0, len(order) - 1, 2)])
    return rounds


def suspect_rounds(suspects: Sequence[str], good: Sequence[str]) -> list[list[tuple[str, str]]]:
    """Each suspect against known-good partners, one partner per round, no node twice a round."""
    if not good:
        return []
    rounds: list[list[tuple[str, str]]] = []
    for shift in range(min(2, len(good))):
        pairs, used = [], set()
        for i, s in enumerate(suspects):
            partner = good[(i + shift) % len(good)]
            if partner in used:
                continue
            used.add(partner)
            pairs.append((partner, s))
        rounds.append(pairs)
    return rounds


def make_plan(
    cluster: Cluster,
    suite: Suite,
    *,
    pairing: str | None = None,
    suspects: Sequence[str] = (),
    sample_rounds: int = 3,
    seed: int = 0,
) -> Plan:
    names = [n.name for n in cluster.nodes]
    rails = sorted({h.rail for n in cluster.nodes for h in n.hcas})
    bw = suite.checks.perftest_bw
    mode = pairing or (bw.pairing if bw else "full")
    raw: list[list[tuple[str, str]]] = []
    rounds: Sequence[PairRound] = ()
    if bw and len(names) > 1:
        if mode == "full":
            rounds = RoundRobin(names)
        else:
            if mode == "sample":
                raw = random_matchings(names, sample_rounds, seed)
            else:
                raw = suspect_rounds(list(suspects), [n for n in names if n not in suspects])
            rounds = tuple(PairRound(i, tuple(Pair(a, b) for a, b in r)) for i, r in enumerate(raw))
    groups: list[NcclGroup] = []
    if suite.checks.nccl_multi_node and len(names) > 1:
        groups.append(NcclGroup("all", tuple(names)))
    checks = node_checks(suite, cluster)
    serial = sum(c.expected_s for c in checks if get_tool(c.tool).loads_gpus)  # one at a time
    per_node = max(max((c.expected_s for c in checks), default=0), serial) * 1.2
    per_round = (bw.expected_s * 1.3 + 5) * max(1, bw.repeats) if bw else 0
    if suite.checks.perftest_lat:  # ~1 µs per iteration, plus connecting both ends
        per_round += suite.checks.perftest_lat.iterations * 5e-6 + 3
    phy = suite.checks.physical
    if phy:  # two port snapshots (a few reads each), the hold-down at most, and cabling
        per_node += phy.hold_down_s + 10
    nccl = 300 * len(groups)
    return Plan(
        tuple(names),
        tuple(checks),
        mode,
        rounds,
        tuple(rails),
        tuple(groups),
        per_node + per_round * len(rounds) + nccl,
        latency=bool(bw and suite.checks.perftest_lat),
        physical=phy is not None,
    )


def hca_on_rail(node: Node, rail: int) -> str | None:
    return next((h.device for h in node.hcas if h.rail == rail), None)
