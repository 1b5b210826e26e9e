"""Arista EOS counter commands as JSON (``| json`` on the CLI, or eAPI's ``result``):

- ``show interfaces counters errors`` → ``interfaceErrorCounters.<if>.{fcsErrors, symbolErrors,
  alignmentErrors, inErrors, outErrors, frameTooLongs, frameTooShorts}``
- ``show interfaces counters discards`` → ``interfaces.<if>.{inDiscards, outDiscards}`` (and totals)
- ``show priority-flow-control counters`` → ``interfaceCounters.<if>.{rxFrames, txFrames}``
- ``show qos interfaces ecn counters queue`` → ``intfQueueCounters.<if>.queueCounters.<q>``, each a
  string; ``"-"`` is a queue without ECN
- ``show interfaces counters queue drops`` → ``egressQueueCounters.interfaces.<if>.ucastQueues
  .trafficClasses.TC<n>.dropPrecedences.DP<n>.droppedPackets``

The top-level key says which command printed it. JSON that does not close (a cut read) is
never complete.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from rackops.docload import load_json
from rackops.parsers._common import MAX_COUNT, ParseError, check_limits

_IF = re.compile(r"^[A-Za-z][A-Za-z0-9/._-]*$")
KINDS = {
    "interfaceErrorCounters": "errors",
    "interfaces": "discards",
    "interfaceCounters": "pfc",
    "intfQueueCounters": "ecn",
    "egressQueueCounters": "queue_drops",
}


@dataclass(frozen=True)
class EosCounters:
    kind: str  # errors | discards | pfc | ecn | queue_drops
    complete: bool
    ports: dict[str, dict[str, int | None]] = field(default_factory=dict)
    queues: dict[str, dict[str, int | None]] = field(default_factory=dict)  # if -> queue -> n
    errors: tuple[str, ...] = ()


def _count(v: Any) -> int | None:
    """A counter: an integer, or its string (ECN), ``"-"`` for none."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, str) and re.fullmatch(r"\d+", v.strip()):
        return int(v)
    return None


def _obj(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _interfaces(table: Any, what: str) -> dict[str, Any]:
    if not isinstance(table, dict) or not table:
        raise ParseError(f"EOS {what}: expected an object of interfaces, got {str(table)[:40]!r}")
    if len(table) > MAX_COUNT:
        raise ParseError(f"EOS {what}: more than {MAX_COUNT} interfaces")
    bad = [k for k in table if not _IF.match(str(k))]
    if bad:
        raise ParseError(f"EOS {what}: not an interface name: {str(bad[0])[:40]!r}")
    return table


def _flat(table: dict[str, Any]) -> dict[str, dict[str, int | None]]:
    return {
        name: {k: _count(v) for k, v in body.items() if not isinstance(v, dict | list)}
        for name, body in table.items()
        if isinstance(body, dict)
    }


def _queue_drops(data: dict[str, Any]) -> dict[str, dict[str, int | None]]:
    out: dict[str, dict[str, int | None]] = {}
    table = _interfaces(_obj(data.get("egressQueueCounters")).get("interfaces"), "queue drops")
    for name, body in table.items():
        tcs = _obj(_obj(_obj(body).get("ucastQueues")).get("trafficClasses"))
        per: dict[str, int | None] = {}
        for tc, tbody in tcs.items():
            dps = _obj(_obj(tbody).get("dropPrecedences"))
            drops = [_count(_obj(d).get("droppedPackets")) for d in dps.values()]
            per[str(tc)] = sum(d for d in drops if d is not None)
        out[name] = per
    return out


def eos_json(text: str, what: str) -> dict[str, Any] | str:
    """One EOS command's JSON object (``| json``, or the first of an eAPI ``result``); a
    string saying why when the JSON was cut (it started as JSON and does not close)."""
    check_limits(text)
    if not text.strip():
        raise ParseError(f"empty EOS {what} output")
    try:
        data = load_json(text)
    except ValueError as exc:
        if text.lstrip().startswith("{"):  # started as JSON: a cut read
            return f"the JSON does not parse: {exc}"
        raise ParseError(f"EOS {what} are read as JSON (`| json`): this is not JSON") from exc
    if isinstance(data, dict) and isinstance(data.get("result"), list) and data["result"]:
        data = data["result"][0]  # an eAPI response
    if not isinstance(data, dict):
        raise ParseError(f"EOS {what} JSON is an object")
    return data


def parse_eos_counters(text: str) -> EosCounters:
    data = eos_json(text, "counters")
    if isinstance(data, str):
        return EosCounters("unknown", False, errors=(data,))
    keys = [k for k in KINDS if k in data]
    if not keys:
        raise ParseError(f"none of {sorted(KINDS)} in the JSON: not an EOS counters command")
    kind = KINDS[keys[0]]
    if kind == "queue_drops":
        return EosCounters(kind, True, queues=_queue_drops(data))
    table = _interfaces(data[keys[0]], kind)
    if kind == "ecn":
        queues = {
            name: {str(q): _count(v) for q, v in _obj(_obj(body).get("queueCounters")).items()}
            for name, body in table.items()
        }
        return EosCounters(kind, True, queues=queues)
    return EosCounters(kind, True, ports=_flat(table))
