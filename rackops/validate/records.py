"""What one line of ``results.jsonl`` is: a typed record with a schema version.

Every stage writes a :class:`Record`; readers get the line back as a plain dict (what the
report, localisation and the peer gate read) once :func:`accept` has checked it. Schema 1 is
what rackops wrote before records carried a version (the same fields, no ``schema`` key): it
is read as it is. A record of a newer schema is refused with a message that says so, never
half-read.

A run directory is input like any other, and may have been altered: every record is checked
field by field against :data:`SPEC` before anything reads it (numbers are finite numbers,
names are names, raw output paths stay under ``raw/``), and one that is not what rackops
writes is refused as a whole with :class:`DamagedRunDir`, naming the file, the line, the
record and the field.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from rackops.errors import ExitCode, InputError, RackopsError
from rackops.findings import ACTIONS
from rackops.names import NODE_RE

SCHEMA = 2
Kind = Literal[
    "node",
    "unreachable",
    "pair",
    "snapshot",
    "cabling",
    "peers",
    "nccl",
    "fleet",
    "switch",
    "fabric",
    "nvldomain",
]
KINDS: tuple[str, ...] = get_args(Kind)
STATUSES = ("OK", "WARN", "FAIL", "ERROR")

# what a name is: a letter or digit first (never '-', so never an option), then no space,
# no control character, no quote, no shell or hostlist syntax ('[', ']', ',')
# NODE_RE (rackops.names): a host, as it may reach a command line
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}")  # hca, switch, port, tool, code
_PORT = r"[A-Za-z0-9][A-Za-z0-9._:/-]{0,63}"
PORT_RE = re.compile(rf"{_PORT}(?: {_PORT})?")  # a switch port: swp1, Ethernet1/1, ethernet 1/1
ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/+-]{0,255}")  # a step id: node/<n>/<check>
RAW_RE = re.compile(r"raw/[A-Za-z0-9_][A-Za-z0-9_.-]{0,250}")  # RunDir.save_output's names
KEY_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:/-]{0,127}")  # a key of meta or of a map

MAX_TEXT = 64 * 1024  # characters of one string (a message, an argv word)
MAX_DEPTH = 12  # nesting of lists and dicts in one record
MAX_INT = 2**63  # integers are what a 64-bit counter holds
MAX_RAIL = 4096
_SURROGATE = re.compile("[\ud800-\udfff]")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


class DamagedRunDir(RackopsError):
    """A run directory holds something rackops never writes: it was altered or is damaged.
    Not an OSError, so no reader's "file missing" path swallows it; exit 3."""

    exit_code = ExitCode.UNREADABLE
    why: str = ""  # what is wrong, without where


class NewerSchema(InputError):
    pass


class Bad(Exception):
    """One field of one record is not what the schema says (raised inside the checks)."""

    def __init__(self, where: str, value: object, what: str) -> None:
        super().__init__(f"{where} is {short(value)}, not {what}")


def short(value: object, limit: int = 60) -> str:
    """A value as one short line (repr escapes control characters)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def one_line(text: str) -> str:
    return _CONTROL.sub("?", _SURROGATE.sub("?", text))


def damaged(path: object, line: int | None, rid: object, why: str) -> DamagedRunDir:
    where = f"{path}:{line}" if line else str(path)
    what = f" record {rid}:" if isinstance(rid, str) and ID_RE.fullmatch(rid) else ""
    # one line whatever the path or a key holds: control characters become '?'
    exc = DamagedRunDir(
        one_line(f"{where}:{what} {why}; the run directory was altered or is damaged")
    )
    exc.why = why
    return exc


# ---------------------------------------------------------------- the checks, one per type
Check = Callable[[Any, str], None]


def is_number(v: object) -> bool:
    """A finite int or float, not a bool."""
    if isinstance(v, bool) or not isinstance(v, int | float):
        return False
    return abs(v) < MAX_INT if isinstance(v, int) else math.isfinite(v)


def number(v: Any, where: str) -> None:
    if not is_number(v):
        raise Bad(where, v, "a number")


def integer(v: Any, where: str) -> None:
    if isinstance(v, bool) or not isinstance(v, int) or abs(v) >= MAX_INT:
        raise Bad(where, v, "an integer")


def rail(v: Any, where: str) -> None:
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < MAX_RAIL:
        raise Bad(where, v, f"a rail (0 to {MAX_RAIL - 1})")


def boolean(v: Any, where: str) -> None:
    if not isinstance(v, bool):
        raise Bad(where, v, "true or false")


def text(v: Any, where: str) -> None:
    if not isinstance(v, str) or len(v) > MAX_TEXT or _SURROGATE.search(v):
        raise Bad(where, v, f"a string (at most {MAX_TEXT} characters)")


def label(v: Any, where: str) -> None:
    """Short text shown beside names (a peer "n2/mlx5_0 [leaf p1]"): no control chars."""
    text(v, where)
    if len(v) > 512 or _CONTROL.search(v):
        raise Bad(where, v, "a one-line label")


def pattern(rx: re.Pattern[str], what: str) -> Check:
    def check(v: Any, where: str) -> None:
        if not isinstance(v, str) or not rx.fullmatch(v):
            raise Bad(where, v, what)

    return check


node_name = pattern(NODE_RE, "a node name")
name = pattern(NAME_RE, "a name")
step_id = pattern(ID_RE, "a step id")


def raw_path(v: Any, where: str) -> None:
    if not isinstance(v, str) or not RAW_RE.fullmatch(v) or ".." in v:
        raise Bad(where, v, "a file under raw/")


def switch_port(v: Any, where: str) -> None:
    """'<switch> <port>', as the pair stage writes it (localisation splits it)."""
    parts = v.split(" ", 1) if isinstance(v, str) else []
    if len(parts) != 2 or not NAME_RE.fullmatch(parts[0]) or not PORT_RE.fullmatch(parts[1]):
        raise Bad(where, v, "'<switch> <port>'")


def optional(check: Check) -> Check:
    def opt(v: Any, where: str) -> None:
        if v is not None:
            check(v, where)

    return opt


def one_of(*values: object) -> Check:
    def check(v: Any, where: str) -> None:
        if isinstance(v, bool) or v not in values:
            raise Bad(where, v, "one of " + ", ".join(map(str, values)))

    return check


def list_of(check: Check) -> Check:
    def lst(v: Any, where: str) -> None:
        if not isinstance(v, list):
            raise Bad(where, v, "a list")
        for i, x in enumerate(v):
            check(x, f"{where}[{i}]")

    return lst


def map_of(check: Check, key: Check | None = None) -> Check:
    def mp(v: Any, where: str) -> None:
        if not isinstance(v, dict):
            raise Bad(where, v, "a map")
        for k, x in v.items():
            (key or pattern(KEY_RE, "a key"))(k, f"{where} key")
            check(x, f"{where}.{k}")

    return mp


def json_value(v: Any, where: str, depth: int = 0) -> None:
    """Any JSON rackops could have written: finite numbers, strings, nested not too deep."""
    if depth > MAX_DEPTH:
        raise Bad(where, "…", f"nested at most {MAX_DEPTH} deep")
    if v is None or isinstance(v, bool):
        return
    if isinstance(v, int | float):
        number(v, where)
    elif isinstance(v, str):
        text(v, where)
    elif isinstance(v, list):
        for i, x in enumerate(v):
            json_value(x, f"{where}[{i}]", depth + 1)
    elif isinstance(v, dict):
        for k, x in v.items():
            text(k, f"{where} key")
            json_value(x, f"{where}.{k}", depth + 1)
    else:
        raise Bad(where, v, "a JSON value")


Spec = Mapping[str, tuple[bool, Check]]  # key: (required, check)


def fields(spec: Spec, *, closed: bool) -> Check:
    """A map with these keys (``closed``: no other key; open: others are any JSON)."""

    def check(v: Any, where: str) -> None:
        if not isinstance(v, dict):
            raise Bad(where, v, "a map")
        for key, (required, chk) in spec.items():
            if key in v:
                chk(v[key], f"{where}.{key}" if where else key)
            elif required:
                raise Bad(f"{where}.{key}" if where else key, "(missing)", "present")
        for key in v.keys() - spec.keys():
            if closed:
                raise Bad(f"{where}.{key}" if where else str(key), v[key], "a known field")
            pattern(KEY_RE, "a key")(key, f"{where} key" if where else "key")
            json_value(v[key], f"{where}.{key}" if where else key, 1)

    return check


# ---------------------------------------------------------------- the schema of a record
SUBJECT: Spec = {
    "node": (False, optional(node_name)),
    "gpu": (False, optional(integer)),
    "gpu_uuid": (False, optional(name)),
    "bus_id": (False, optional(name)),
    "hca": (False, optional(name)),
    "port": (False, optional(integer)),
    "peer": (False, optional(label)),
    "switch": (False, optional(name)),
    "switch_port": (False, optional(pattern(PORT_RE, "a switch port"))),
}
NCCL_SUBJECT: Spec = {  # multi-node NCCL names every node of its group: n1,n2,...
    **SUBJECT,
    "node": (False, optional(lambda v, w: _nodes(v, w))),
}
CABLING_OBSERVED: Spec = {
    "ends": (False, list_of(label)),
    "hcas": (False, list_of(lambda v, w: _node_hca(v, w))),
}


def _nodes(v: Any, where: str) -> None:
    if not isinstance(v, str) or len(v) > MAX_TEXT:
        raise Bad(where, v, "node names")
    for i, n in enumerate(v.split(",")):
        node_name(n, f"{where}[{i}]")


def _node_hca(v: Any, where: str) -> None:
    if not isinstance(v, list) or len(v) != 2:
        raise Bad(where, v, "[node, hca]")
    node_name(v[0], f"{where}[0]")
    optional(name)(v[1], f"{where}[1]")


def finding(v: Any, where: str, depth: int = 0, subject: Spec = SUBJECT) -> None:
    spec: Spec = {
        "code": (True, name),
        "status": (True, one_of(*STATUSES)),
        "subject": (True, fields(subject, closed=True)),
        "message": (True, text),
        "remediation": (False, optional(text)),
        "action": (False, optional(one_of(*ACTIONS))),
        "unit": (False, optional(label)),
        "observed": (False, json_value),
        "expected": (False, json_value),
        "attempts": (False, list_of(lambda a, w: _attempt(a, w, depth, subject))),
    }
    fields(spec, closed=True)(v, where)


def _attempt(v: Any, where: str, depth: int, subject: Spec) -> None:
    if depth >= 2:
        raise Bad(where, "…", "an attempt of a finding (one level)")
    finding(v, where, depth + 1, subject)


def nccl_finding(v: Any, where: str) -> None:
    finding(v, where, 0, NCCL_SUBJECT)


def cabling_finding(v: Any, where: str) -> None:
    finding(v, where)
    observed = v.get("observed")
    if observed is not None:
        fields(CABLING_OBSERVED, closed=False)(observed, f"{where}.observed")


PORT_REPORT: Spec = {  # a node's phy record: per port after the run
    "delta": (False, map_of(optional(number))),
    "absolute": (False, map_of(optional(number))),
    "raw_ber": (False, optional(number)),
    "effective_ber": (False, optional(number)),
    "rx_power_dbm": (False, list_of(optional(number))),
}
PORT_SAMPLE: Spec = {  # a snapshot before the run
    "family": (True, name),
    "counters": (True, map_of(integer)),
    "missing": (False, list_of(name)),
    "saturated": (False, list_of(name)),
    "garbled": (False, list_of(name)),
}
PAIR_META: Spec = {
    "server": (True, node_name),
    "client": (True, node_name),
    "rail": (True, rail),
    "server_hca": (True, name),
    "client_hca": (True, name),
    "server_switch_port": (True, switch_port),
    "client_switch_port": (True, switch_port),
    "metric": (False, optional(one_of("bw", "lat"))),
    "bw_gbps": (False, optional(number)),
    "lat_us": (False, optional(number)),
    "client_output": (False, optional(raw_path)),
    "jumbo_ping": (False, optional(raw_path)),
    "attempts": (False, list_of(optional(number))),
    "ports_in_use": (False, list_of(integer)),
    "skipped": (False, boolean),
}
META: dict[str, Spec] = {  # per kind (and the phy tool): what readers index
    "pair": PAIR_META,
    "snapshot": {
        "ports": (False, map_of(fields(PORT_SAMPLE, closed=False), name)),
        "states": (False, optional(map_of(optional(label), name))),  # None: unread
        "t": (False, optional(number)),
        "hold_down_s": (False, optional(number)),
    },
    "phy": {
        "ports": (False, map_of(fields(PORT_REPORT, closed=False), name)),
        "interval_s": (False, optional(number)),
    },
    "cabling": {"source": (False, optional(name)), "seen": (False, json_value)},
    "nccl": {"nodes": (False, list_of(node_name))},
    "fleet": {"how": (False, text)},
    "nvldomain": {"domain": (False, json_value), "cascade": (False, json_value)},
    "switch": {
        "switch": (False, optional(name)),
        "role": (False, optional(one_of("leaf", "spine"))),
        "ports": (False, map_of(fields(PORT_REPORT, closed=False), name)),
        "interval_s": (False, optional(number)),
    },
    "node": {"hold_down_tries": (False, optional(integer))},
}
OUTPUT: Spec = {  # RunDir.save_output: the command's evidence
    "host": (False, optional(node_name)),
    "argv": (False, list_of(text)),
    "rc": (False, optional(integer)),
    "duration_s": (False, optional(number)),
    "timed_out": (False, optional(boolean)),
    "error": (False, optional(text)),
    "stdout": (False, optional(raw_path)),
    "stderr": (False, optional(raw_path)),
}


def record_meta(kind: str, tool: object) -> Spec:
    """The meta fields of a record of this kind (and the phy tool)."""
    return META["phy"] if kind == "node" and tool == "phy" else META.get(kind, {})


def record_spec(kind: str, tool: object) -> Spec:
    """The fields of a record of this kind: what it is, its findings, meta and output."""
    meta = record_meta(kind, tool)
    return {
        "schema": (False, integer),
        "id": (True, step_id),
        "kind": (True, one_of(*KINDS)),
        "node": (False, optional(node_name)),
        "tool": (True, lambda v, w: None if v == "" else name(v, w)),
        "findings": (True, list_of(FINDING.get(kind, finding))),
        # readers index a kind's required meta fields: then the meta itself is required
        "meta": (any(req for req, _ in meta.values()), optional(fields(meta, closed=False))),
        **OUTPUT,
    }


FINDING: dict[str, Check] = {"cabling": cabling_finding, "nccl": nccl_finding}

# the schema, as a table for the docs and tests: kind -> fields a record of it may have
SPEC: dict[str, tuple[str, ...]] = {k: tuple(record_spec(k, None)) for k in KINDS}


@dataclass(frozen=True)
class Record:
    id: str  # the step: node/<n>/<check>, pair/<a>-<b>/rail<r>, lat/..., phy/<n>/<phase>, ...
    kind: Kind
    node: str | None
    tool: str
    findings: list[dict[str, Any]]
    meta: dict[str, Any] = field(default_factory=dict)
    # the command's evidence (RunDir.save_output): host, argv, rc, duration_s, timed_out,
    # error, and the stdout/stderr files under raw/
    output: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, rec: dict[str, Any]) -> Record:
        """A record given as its JSON form (tests, tools that build run directories)."""
        base = {"id", "kind", "node", "tool", "findings", "meta", "schema"}
        output = {k: v for k, v in rec.items() if k not in base}
        return cls(
            rec["id"],
            rec["kind"],
            rec.get("node"),
            rec.get("tool", ""),
            rec["findings"],
            rec.get("meta") or {},
            output,
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "id": self.id,
            "kind": self.kind,
            "node": self.node,
            "tool": self.tool,
            "findings": self.findings,
            "meta": self.meta,
            **self.output,
        }


def accept(rec: object, where: str, line: int | None = None) -> dict[str, Any] | None:
    """The record as a dict if it is one this rackops reads; None for a line that is not a
    record (cut by a crash, or not ours: not a map with id, kind and findings, or of a kind
    no rackops writes); NewerSchema for one a newer rackops wrote; DamagedRunDir for a
    record whose fields are not what rackops writes (the run directory was altered)."""
    if not isinstance(rec, dict) or not {"id", "kind", "findings"} <= rec.keys():
        return None
    schema = rec.get("schema", 1)
    if not isinstance(schema, int) or isinstance(schema, bool) or schema < 1:
        return None
    if schema > SCHEMA:
        raise NewerSchema(
            f"{where}: a record of schema {schema}, written by a newer rackops; this one reads "
            f"schemas 1 to {SCHEMA}: read the run with the rackops that wrote it, or upgrade"
        )
    if rec["kind"] not in KINDS or isinstance(rec["kind"], bool):
        return None
    try:
        fields(record_spec(rec["kind"], rec.get("tool")), closed=True)(rec, "")
    except Bad as exc:
        path, _, n = where.rpartition(":")
        at = (path, int(n)) if n.isdigit() else (where, line)
        raise damaged(at[0], at[1], rec.get("id"), str(exc)) from None
    rec.setdefault("meta", {})
    if rec["meta"] is None:
        rec["meta"] = {}
    for f in rec["findings"]:
        for key in SUBJECT:  # readers index the subject's fields: all present
            f["subject"].setdefault(key, None)
    return rec
