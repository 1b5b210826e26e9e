"""``nvidia-imex-ctl -N`` (and ``-N -H``, ``-N -j``): the IMEX domain as one tray's daemon
sees it — every node of ``nodes_config.cfg`` with its state and IMEX version, the connection
matrix between them, and the domain's state.

Text (R570+; the ``Version`` column and the ``!V!``/``!M!`` legend lines from 570.1xx)::

    Nodes:
    Node #0   - 172.31.48.81    - READY                - Version: 570.172
    Node #11  - 10.66.6.19      - UNAVAILABLE          - Version:                 - Hostname: h2
     Nodes From\\To  0   1
           0        C   C
           1        C   C
    Domain State: UP

JSON (``-j``): ``{"nodes": {"<n>": {"status", "host", "version", "hostName",
"connections": {"<m>": {"host", "status"}}}}, "timestamp", "status"}``; connection states
are words there (CONNECTED, INVALID), letters in the table (C, N, R, D, I, A, !V!, !M!).

``complete`` only with the domain state read (the tool prints it last) and a matrix row of
every node; a cut table is never a pass. Sources: tests/fixtures/nvidia-imex/SOURCES.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from rackops.docload import load_json
from rackops.parsers._common import ParseError, bounded

# what a connection letter means (the tool's own legend)
CONNECTION = {
    "C": "connected",
    "N": "never connected",
    "R": "recovering",
    "D": "disconnected",
    "I": "invalid (not reachable)",
    "A": "authenticating",
    "!V!": "version mismatch",
    "!M!": "node map mismatch",
}
_JSON_CONNECTION = {"CONNECTED": "C", "INVALID": "I", "DISCONNECTED": "D", "RECOVERING": "R"}
NODE_STATES = (
    "INITIALIZING",
    "STARTING_AUTH_SERVER",
    "WAITING_FOR_PEERS",
    "WAITING_FOR_RECOVERY",
    "INIT_GPU",
    "READY",
    "SHUTTING_DOWN",
    "UNAVAILABLE",
)
DOMAIN_STATES = ("UP", "DOWN", "DEGRADED")
MAX_NODES = 1024  # an NVL576 domain has 144 trays; no IMEX domain is larger


@dataclass(frozen=True)
class ImexNode:
    index: int
    address: str
    state: str
    version: str | None
    hostname: str | None


@dataclass(frozen=True)
class ImexLink:
    src: int  # the node the connection is seen from (a matrix row)
    dst: int
    state: str  # the letter the table prints: C, N, R, D, I, A, !V!, !M!


@dataclass(frozen=True)
class ImexDomain:
    nodes: tuple[ImexNode, ...]
    links: tuple[ImexLink, ...]  # every cell of the connection matrix
    state: str | None  # UP | DOWN | DEGRADED
    timestamp: str | None
    complete: bool
    errors: tuple[str, ...] = ()


_NODE = re.compile(
    r"^Node #(\d+)\s+[-*]\s+(\S+)\s+-\s+([A-Z_]+)"
    r"(?:\s+-\s+Version:[ \t]*(\S*))?(?:\s+-\s+Hostname:[ \t]*(\S*))?\s*$"
)
_CELL = re.compile(r"!V!|!M!|[CNRDIA]")


def parse_imex_domain(text: str) -> ImexDomain:
    stripped = text.strip()
    if not stripped:
        raise ParseError("empty nvidia-imex-ctl output")
    if stripped.startswith("{"):
        return _json(stripped)
    return _text(text)


def _text(text: str) -> ImexDomain:
    nodes: list[ImexNode] = []
    matrix: dict[tuple[int, int], str] = {}
    columns: list[int] | None = None
    state = timestamp = None
    errors: list[str] = []
    rows: set[int] = set()
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if m := _NODE.match(line):
            index = bounded(int(m.group(1)), "IMEX node index", MAX_NODES - 1)
            if m.group(3) not in NODE_STATES:
                raise ParseError(f"IMEX node #{index} is in state {m.group(3)!r}: not one IMEX has")
            nodes.append(
                ImexNode(index, m.group(2), m.group(3), m.group(4) or None, m.group(5) or None)
            )
        elif line.startswith("Nodes From\\To"):
            columns = [bounded(int(c), "IMEX node index", MAX_NODES - 1) for c in line.split()[2:]]
        elif line.startswith("Domain State:"):
            state = line.split(":", 1)[1].strip()
            if state not in DOMAIN_STATES:
                raise ParseError(f"IMEX domain state {state!r} is none of {DOMAIN_STATES}")
        elif columns is not None and state is None and re.match(r"^\d+\s", line):
            first, *cells = line.split()
            row = int(first)
            if len(cells) != len(columns) or not all(_CELL.fullmatch(c) for c in cells):
                errors.append(f"matrix row {row} is not {len(columns)} connection states: {line!r}")
                continue
            rows.add(row)
            matrix.update({(row, col): c for col, c in zip(columns, cells, strict=True)})
        elif re.match(r"^\d{1,2}/\d{1,2}/\d{4} \d", line):
            timestamp = line
        elif "Unable to open configuration file" in line or "Failed to" in line:
            errors.append(line)
    if not nodes and not errors:
        raise ParseError("no 'Node #' line: this is not nvidia-imex-ctl -N output")
    indexes = {n.index for n in nodes}
    complete = (
        state is not None
        and columns is not None
        and set(columns) == indexes
        and rows == indexes
        and not errors
    )
    return ImexDomain(tuple(nodes), _links(matrix), state, timestamp, complete, tuple(errors))


def _json(text: str) -> ImexDomain:
    try:
        doc: Any = load_json(text)
    except ValueError as exc:
        return ImexDomain((), (), None, None, False, (f"the JSON does not parse: {exc}",))
    if not isinstance(doc, dict) or not isinstance(doc.get("nodes"), dict):
        raise ParseError("nvidia-imex-ctl -N -j: expected an object with 'nodes'")
    if len(doc["nodes"]) > MAX_NODES:
        raise ParseError(f"{len(doc['nodes'])} IMEX nodes, more than {MAX_NODES}")
    nodes: list[ImexNode] = []
    matrix: dict[tuple[int, int], str] = {}
    for key, node in doc["nodes"].items():
        if not str(key).isdigit() or not isinstance(node, dict):
            raise ParseError(f"IMEX node {key!r} is not a numbered node object")
        index = bounded(int(key), "IMEX node index", MAX_NODES - 1)
        state = str(node.get("status", ""))
        if state not in NODE_STATES:
            raise ParseError(f"IMEX node {index} is in state {state!r}: not one IMEX has")
        nodes.append(
            ImexNode(
                index,
                str(node.get("host", "")),
                state,
                str(node["version"]) if node.get("version") else None,
                str(node["hostName"]) if node.get("hostName") not in (None, "", "N/A") else None,
            )
        )
        for peer, conn in (node.get("connections") or {}).items():
            if not str(peer).isdigit() or not isinstance(conn, dict):
                raise ParseError(f"IMEX node {index}: connection {peer!r} is not an object")
            word = str(conn.get("status", ""))
            dst = bounded(int(peer), "IMEX node index", MAX_NODES - 1)
            matrix[(index, dst)] = _JSON_CONNECTION.get(word, word)
    domain = doc.get("status")
    if domain not in DOMAIN_STATES:
        raise ParseError(f"IMEX domain state {domain!r} is none of {DOMAIN_STATES}")
    nodes.sort(key=lambda n: n.index)
    stamp = doc.get("timestamp")
    return ImexDomain(
        tuple(nodes), _links(matrix), str(domain), None if stamp is None else str(stamp), True
    )


def _links(matrix: dict[tuple[int, int], str]) -> tuple[ImexLink, ...]:
    return tuple(ImexLink(a, b, c) for (a, b), c in sorted(matrix.items()))
