"""What a push would change on a running switch, and nothing more: the smallest change from a
saved running config to the design, within what rackops owns.

- SONiC: an RFC 6902 JSON Patch for ``config apply-patch`` (the Generic Config Updater
  simulates it on the running CONFIG_DB, validates the result against the YANG models and
  applies it in dependency order). Owned: the tables rackops renders, and in them the keys of
  the switch's design ports; PORT fields rackops sets (lanes/speed/alias stay the switch's).
  BUFFER_POOL is never patched (GCU refuses it: pools are the platform's), BUFFER_PROFILE only
  whole profiles (GCU allows no other field changes on most profiles).
- NVUE: ``nv set`` / ``nv unset`` lines between two config trees (``nv config show -o yaml``).
- EOS: per config block, the lines to add and to remove (``no …``).
"""

from __future__ import annotations

import copy
from typing import Any

from rackops.docload import load_yaml

# JSON Pointer (RFC 6901)


def _ptr(*parts: str) -> str:
    return "".join("/" + p.replace("~", "~0").replace("/", "~1") for p in parts)


def _unptr(path: str) -> list[str]:
    if not path.startswith("/"):
        raise ValueError(f"JSON Pointer {path!r} does not start with '/'")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def sonic_patch(
    running: dict[str, Any], desired: dict[str, Any], ports: list[str]
) -> list[dict[str, Any]]:
    """The JSON Patch that takes `running` to the design, touching only what rackops owns."""
    ops: list[dict[str, Any]] = []
    own = set(ports)
    for table, rows in desired.items():
        if table == "BUFFER_POOL":
            continue  # platform-owned; GCU refuses changes (see module doc)
        have = running.get(table)
        if have is None:
            ops.append({"op": "add", "path": _ptr(table), "value": rows})
            continue
        for key, fields in rows.items():
            cur = have.get(key)
            if cur is None and table == "PORT":
                raise ValueError(
                    f"port {key} of the design is not in the switch's PORT table "
                    f"(it has {', '.join(sorted(have)) or 'none'}): fix rackops_switch_ports, "
                    f"or the switch's breakout; a patch does not create ports"
                )
            if cur is None:
                ops.append({"op": "add", "path": _ptr(table, key), "value": fields})
            elif table == "BUFFER_PROFILE" or _whole(table):
                if cur != fields:
                    ops.append({"op": "replace", "path": _ptr(table, key), "value": fields})
            else:
                for f, v in fields.items():
                    if f == "lanes" and table == "PORT":
                        continue  # the switch's breakout owns its lanes
                    if f not in cur:
                        ops.append({"op": "add", "path": _ptr(table, key, f), "value": v})
                    elif cur[f] != v:
                        ops.append({"op": "replace", "path": _ptr(table, key, f), "value": v})
        # stale entries of the design's ports in a table rackops owns (e.g. a stock
        # BUFFER_PG "Ethernet0|3-4" beside ours "Ethernet0|3"): removed
        if table not in ("PORT", "DEVICE_METADATA"):
            for key in have:
                if key not in rows and key.split("|")[0] in own:
                    ops.append({"op": "remove", "path": _ptr(table, key)})
    return ops


def _whole(table: str) -> bool:
    """Tables whose entries are replaced as a whole: the maps (every field is one mapping)."""
    return "_TO_" in table or table == "CABLE_LENGTH"


def apply_patch(doc: dict[str, Any], ops: list[dict[str, Any]]) -> dict[str, Any]:
    """RFC 6902 add/replace/remove on a JSON object tree (what GCU simulates before it
    validates); raises ValueError naming the operation that cannot apply."""
    out = copy.deepcopy(doc)
    for i, op in enumerate(ops):
        parts = _unptr(op["path"])
        parent: Any = out
        for p in parts[:-1]:
            if not isinstance(parent, dict) or p not in parent:
                raise ValueError(f"op {i} ({op['op']} {op['path']}): {p!r} does not exist")
            parent = parent[p]
        last = parts[-1]
        if op["op"] == "add":
            parent[last] = copy.deepcopy(op["value"])
        elif op["op"] == "replace":
            if last not in parent:
                raise ValueError(f"op {i} (replace {op['path']}): nothing to replace")
            parent[last] = copy.deepcopy(op["value"])
        elif op["op"] == "remove":
            if last not in parent:
                raise ValueError(f"op {i} (remove {op['path']}): nothing to remove")
            del parent[last]
        else:
            raise ValueError(f"op {i}: {op['op']!r} is not used by rackops patches")
    empty = [t for t, rows in out.items() if rows == {}]
    if empty:  # GCU: "will result in empty tables which is not allowed in ConfigDb"
        raise ValueError(f"the patch leaves empty tables {empty}, which CONFIG_DB refuses")
    return out


def describe_patch(ops: list[dict[str, Any]], running: dict[str, Any]) -> list[str]:
    """One line per operation, old value beside new."""
    lines = []
    for op in ops:
        parts = _unptr(op["path"])
        old: Any = running
        for p in parts:
            old = old.get(p) if isinstance(old, dict) else None
        if op["op"] == "remove":
            lines.append(f"remove {op['path']} (was {old!r})")
        elif op["op"] == "replace":
            lines.append(f"replace {op['path']}: {old!r} -> {op['value']!r}")
        else:
            lines.append(f"add {op['path']}: {op['value']!r}")
    return lines


# NVUE ------------------------------------------------------------------------------------


def nvue_running(text: str) -> dict[str, Any]:
    """The `set` tree of `nv config show -o yaml` / a startup.yaml (header documents ignored)."""
    docs = load_yaml(text)
    if not isinstance(docs, list) or not all(isinstance(d, dict) for d in docs):
        raise ValueError("not NVUE YAML: expected a list of '- header:' / '- set:' documents")
    tree: dict[str, Any] = {}
    for d in docs:
        _merge(tree, d.get("set") or {})
    return tree


def _merge(into: dict[str, Any], more: dict[str, Any]) -> None:
    for k, v in more.items():
        if isinstance(v, dict) and isinstance(into.get(k), dict):
            _merge(into[k], v)
        else:
            into[str(k)] = v


def _nvue_owned(path: tuple[str, ...], ports: set[str]) -> bool:
    if path[:1] == ("qos",):
        return True
    return (
        len(path) >= 3
        and path[0] == "interface"
        and path[1] in ports
        and (path[2] in ("qos", "description") or path[2:4] == ("link", "mtu"))
    )


def nvue_changes(running: dict[str, Any], desired: dict[str, Any], ports: list[str]) -> list[str]:
    from rackops.render.nvue import _word, leaves

    have, want = leaves(running), leaves(desired)
    own = set(ports)
    out = []
    for path, value in want.items():
        if path not in have or have[path] != value:
            words = [*path, *([] if value is None else [value])]
            out.append("nv set " + " ".join(_word(w) for w in words))
    for path in have:
        if path not in want and _nvue_owned(path, own):
            # unset the highest owned node that the design does not have at all
            top = path
            while len(top) > 1 and not any(p[: len(top) - 1] == top[:-1] for p in want):
                top = top[:-1]
            line = "nv unset " + " ".join(_word(w) for w in top)
            if _nvue_owned(top, own) and line not in out:
                out.append(line)
    return out


# EOS -------------------------------------------------------------------------------------

EOS_OWNED_TOP = ("qos map dscp ", "priority-flow-control pause watchdog ", "qos profile ")
EOS_OWNED_IN_PORT = ("description ", "mtu ", "service-profile ")


def eos_lines(text: str) -> list[tuple[str, ...]]:
    """Each configuration line with the block lines above it: ('qos profile X',
    'uc-tx-queue 3', 'bandwidth percent 50')."""
    out: list[tuple[str, ...]] = []
    stack: list[tuple[int, str]] = []
    for raw in text.splitlines():
        if not raw.strip() or raw.strip().startswith("!"):
            continue
        indent = len(raw) - len(raw.lstrip(" "))
        while stack and stack[-1][0] >= indent:
            stack.pop()
        line = raw.strip()
        out.append((*(s for _, s in stack), line))
        stack.append((indent, line))
    return out


def _eos_owned(path: tuple[str, ...], ports: set[str], profiles: set[str]) -> bool:
    top = path[0]
    if top.startswith("interface "):
        return top.split()[1] in ports and len(path) > 1 and path[1].startswith(EOS_OWNED_IN_PORT)
    if top.startswith("qos profile "):
        return top.split()[2] in profiles
    return top.startswith(EOS_OWNED_TOP[:2])


def eos_changes(running: str, desired: str, ports: list[str]) -> list[str]:
    have, want = eos_lines(running), eos_lines(desired)
    profiles = {p[0].split()[2] for p in want if p[0].startswith("qos profile ")}
    have_set, want_set = set(have), set(want)
    out = []
    for path in want:
        if path not in have_set:
            out.append("+ " + " / ".join(path))
    for path in have:
        if path not in want_set and _eos_owned(path, set(ports), profiles):
            out.append("- " + " / ".join(path))
    return out
