"""Validate a SONiC CONFIG_DB document against SONiC's own YANG models, with libyang.

SONiC validates CONFIG_DB with libyang over the models in sonic-buildimage's
``src/sonic-yang-models`` (``sonic-yang-mgmt``, ``config load``, ``config apply-patch``). This
module does the same translation that ``sonic_yang_ext.py`` does — a table ``T`` becomes the
list ``T_LIST`` of its model, a key ``a|b`` is split over the list's keys, a map table's
field/value pairs become its inner list, numbers and booleans are typed from the schema — and
then parses the result strictly (types, patterns, ranges, enums, leafrefs, ``must``).

libyang stops at the first violation of a document, so each table is checked on its own,
together with the tables its leafrefs and ``must`` expressions point into; every problem is
named by switch, table, key and field.

Needs the C libyang 2 (Debian ``libyang2-dev``) and its CFFI binding ``libyang==2.7.1``
(``pip install 'rackops[yang]'``); :func:`available` says whether both are there.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MODELS_ENV = "RACKOPS_SONIC_YANG"


@dataclass(frozen=True)
class YangProblem:
    switch: str
    table: str
    key: str
    field: str
    message: str

    def __str__(self) -> str:
        where = "/".join(x for x in (self.table, self.key, self.field) if x)
        return f"{self.switch}: {where}: {self.message}"


def available() -> str | None:
    """None when libyang can be used, else why not (with the fix)."""
    try:
        import libyang  # noqa: F401
    except ImportError as exc:
        return (
            f"libyang is not importable ({exc}): apt-get install libyang2-dev, "
            f"then pip install 'libyang==2.7.1'"
        )
    return None


def default_models() -> Path | None:
    """The vendored models: $RACKOPS_SONIC_YANG, or ../shared/vendor/sonic-yang beside the
    checkout."""
    import os

    env = os.environ.get(MODELS_ENV)
    if env:
        return Path(env)
    here = Path(__file__).resolve()
    for parent in here.parents:
        cand = parent.parent / "shared" / "vendor" / "sonic-yang"
        if cand.is_dir():
            return cand
    return None


# tables whose key is "<name>" and whose fields are an inner key -> value list
def _leaf_kind(leaf: Any) -> str:
    """'int', 'bool' or 'str': how a CONFIG_DB string is typed in YANG JSON."""
    t = leaf.type()
    bases = [u.base() for u in t.union_types()] if t.base() == t.UNION else [t.base()]
    ints = {t.INT8, t.INT16, t.INT32, t.UINT8, t.UINT16, t.UINT32}
    if bases and all(b in ints for b in bases):
        return "int"
    if bases and all(b == t.BOOL for b in bases):
        return "bool"
    return "str"


class SonicYang:
    """The models of one directory, loaded once."""

    def __init__(self, models: Path) -> None:
        import libyang

        self.dir = models
        self.ctx: Any = libyang.Context(str(models))
        self.table_module: dict[str, str] = {}
        for path in sorted(models.glob("*.yang")):
            mod: Any = self.ctx.load_module(path.stem)
            for top in mod.children():
                for table in top.children():
                    self.table_module[table.name()] = mod.name()
        self.elsewhere: set[str] = set()
        all_tables = models / "ALL_TABLES.txt"
        if all_tables.is_file():
            for line in all_tables.read_text().splitlines():
                if line.strip() and not line.startswith("#"):
                    self.elsewhere.add(line.split()[0])

    # -- translation -------------------------------------------------------------------------
    def _table_node(self, table: str) -> Any:
        mod = self.table_module[table]
        return next(
            t
            for top in self.ctx.get_module(mod).children()
            for t in top.children()
            if t.name() == table
        )

    def _typed(self, leaf: Any, value: Any) -> Any:
        from libyang.schema import SLeafList

        kind = _leaf_kind(leaf)

        def one(v: Any) -> Any:
            if kind == "int" and isinstance(v, str) and re.fullmatch(r"-?\d+", v):
                return int(v)
            if kind == "bool" and v in ("true", "false"):
                return v == "true"
            return v

        if isinstance(leaf, SLeafList):
            items = value if isinstance(value, list) else [x for x in str(value).split(",") if x]
            return [one(v) for v in items]
        return one(value)

    def _entry(self, node: Any, fields: dict[str, Any], table: str, key: str) -> dict[str, Any]:
        from libyang.schema import SLeaf, SLeafList

        leaves = {c.name(): c for c in node.children() if isinstance(c, SLeaf | SLeafList)}
        out: dict[str, Any] = {}
        for name, value in fields.items():
            if name not in leaves:
                raise _Unknown(table, key, name, f"no field {name!r} in the model")
            out[name] = self._typed(leaves[name], value)
        return out

    def _table(self, table: str, rows: Any) -> dict[str, Any]:
        from libyang.schema import SContainer, SList

        node = self._table_node(table)
        children = list(node.children())
        containers = {c.name(): c for c in children if isinstance(c, SContainer)}
        lists = [c for c in children if isinstance(c, SList)]
        out: dict[str, Any] = {}
        if not isinstance(rows, dict):
            raise _Unknown(table, "", "", "a table is a JSON object of keys")
        for key, fields in rows.items():
            if not isinstance(fields, dict):
                raise _Unknown(table, key, "", "an entry is a JSON object of fields")
            if key in containers:
                out[key] = self._entry(containers[key], fields, table, key)
                continue
            parts = key.split("|")
            lst = next((x for x in lists if len(list(x.keys())) == len(parts)), None)
            if lst is None:
                raise _Unknown(table, key, "", "key does not match the model's list keys")
            names = [k.name() for k in lst.keys()]  # noqa: SIM118 - libyang SList.keys()
            entry: dict[str, Any] = {}
            inner = [c for c in lst.children() if isinstance(c, SList)]
            keyleaves = {k.name(): k for k in lst.keys()}  # noqa: SIM118
            for n, p in zip(names, parts, strict=True):
                entry[n] = self._typed(keyleaves[n], p)
            if inner:  # map tables and CABLE_LENGTH: field -> value pairs
                il = inner[0]
                ikey = next(iter(il.keys()))
                ival = next(c for c in il.children() if c.name() != ikey.name())
                entry[il.name()] = [
                    {ikey.name(): self._typed(ikey, k), ival.name(): self._typed(ival, v)}
                    for k, v in fields.items()
                ]
            else:
                entry.update(self._entry(lst, fields, table, key))
            out.setdefault(lst.name(), []).append(entry)
        return out

    def instance(self, cfg: dict[str, Any], tables: set[str] | None = None) -> dict[str, Any]:
        doc: dict[str, Any] = {}
        for table, rows in cfg.items():
            if table not in self.table_module or (tables is not None and table not in tables):
                continue
            mod = self.table_module[table]
            doc.setdefault(f"{mod}:{mod}", {})[table] = self._table(table, rows)
        return doc

    # -- validation --------------------------------------------------------------------------
    @functools.cache  # noqa: B019 - one instance per models directory, kept for the process
    def _deps(self, table: str) -> set[str]:
        """Tables the model of `table` refers to (leafref paths and must expressions)."""
        text = (self.dir / f"{self.table_module[table]}.yang").read_text()
        return {t for t in re.findall(r"[:/]([A-Z][A-Z0-9_]+)(?=[/\[])", text) if t != table} & set(
            self.table_module
        )

    def _closure(self, table: str) -> set[str]:
        seen = {table}
        todo = [table]
        while todo:
            for d in self._deps(todo.pop()):
                if d not in seen:
                    seen.add(d)
                    todo.append(d)
        return seen

    def _parse(self, doc: dict[str, Any]) -> str | None:
        import libyang

        try:
            dnode = self.ctx.parse_data_mem(
                json.dumps(doc), "json", strict=True, no_state=True, validate_present=True
            )
        except libyang.LibyangError as exc:
            return str(exc)
        if dnode is not None:
            dnode.free()
        return None

    def problems(self, switch: str, cfg: dict[str, Any]) -> list[YangProblem]:
        out: list[YangProblem] = []
        for table in cfg:
            if table not in self.table_module:
                msg = (
                    "no model for this table in the vendored subset"
                    if table in self.elsewhere
                    else "no SONiC YANG model defines this table: misspelt?"
                )
                if table not in self.elsewhere:
                    out.append(YangProblem(switch, table, "", "", msg))
                continue
            tables = self._closure(table) & (set(cfg) | {table})  # referenced tables ride along
            try:
                doc = self.instance(cfg, tables)
            except _Unknown as exc:
                out.append(YangProblem(switch, exc.table, exc.key, exc.field, exc.message))
                continue
            err = self._parse(doc)
            if err is None:
                continue
            out += self._by_key(switch, cfg, table, tables, err)
        return out

    def _by_key(
        self, switch: str, cfg: dict[str, Any], table: str, tables: set[str], err: str
    ) -> list[YangProblem]:
        """Name the keys and fields of a table that libyang refused (its messages carry no
        data path in libyang 2.1): each key is parsed alone beside the tables it refers to."""
        rows = cfg[table]
        found: list[YangProblem] = []
        dep_errors = {d: self._parse(self.instance(cfg, {d})) for d in sorted(tables - {table})}
        seen = {_clean(m) for m in dep_errors.values() if m}
        for key, fields in rows.items():
            one = {**{t: cfg[t] for t in tables}, table: {key: fields}}
            msg = self._parse(self.instance(one, tables))
            if msg is None or _clean(msg) in seen:  # reported on the table it comes from
                continue
            found.append(YangProblem(switch, table, key, _field(msg, fields), _clean(msg)))
        if not found and _clean(err) not in seen:  # a must over several keys of the table
            found.append(YangProblem(switch, table, "", "", _clean(err)))
        return found


def _clean(msg: str) -> str:
    return msg.removeprefix("failed to parse data tree: ")


def _field(msg: str, fields: Any) -> str:
    """The field a libyang message names: 'node "lanes"', or the field holding a quoted
    value."""
    m = re.search(r'node "([\w-]+)"', msg)
    if m:
        return m.group(1)
    for v in re.findall(r'"([^"]*)"', msg):
        if isinstance(fields, dict):
            for k, fv in fields.items():
                if str(fv) == v or v in str(fv).split(","):
                    return str(k)
    return ""


class _Unknown(Exception):
    def __init__(self, table: str, key: str, field: str, message: str) -> None:
        super().__init__(message)
        self.table, self.key, self.field, self.message = table, key, field, message


@functools.cache
def loaded(models: str) -> SonicYang:
    return SonicYang(Path(models))
