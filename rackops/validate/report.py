"""Reports from a run directory alone: terminal summary, report.json, junit.xml,
metrics.prom (node_exporter textfile) and a self-contained report.html."""

from __future__ import annotations

import re
import shlex
from collections import Counter, defaultdict
from collections.abc import Callable
from typing import Any, NamedTuple
from xml.etree import ElementTree as ET

import jinja2
import markupsafe

from rackops import data
from rackops.errors import RackopsError
from rackops.findings import STATUS_VALUE, Finding, Status, Subject
from rackops.names import natural_key
from rackops.validate import svgplots
from rackops.validate.fabricreport import SWITCH_COLUMNS, isls, switch_ports
from rackops.validate.firstscreen import ACTIONS, fix_groups, stage_margins
from rackops.validate.gpureport import gpu_figures, gpu_traces, svg_trace
from rackops.validate.localise import Verdict, localise
from rackops.validate.records import damaged, is_number, one_line
from rackops.validate.rundir import RunDir

TEMPLATES = data.path("templates")
MATRIX_MAX_NODES = 48  # above this, one row per node (its slowest link per rail), not n × n


def verdict_of(run: RunDir, records: list[dict[str, Any]]) -> Verdict:
    """The localised verdict, and what the run directory itself lacks: a run with no
    result, or with lines that are not results, is never accepted."""
    verdict = localise(records)
    problems = []
    if not records:
        problems.append(f"{run.results}: no result recorded; the run did not happen")
    if run.unreadable:
        lines = ", ".join(str(n) for n in run.unreadable[:5])
        more = f" (+{len(run.unreadable) - 5} more)" if len(run.unreadable) > 5 else ""
        problems.append(
            f"{run.results}: line {lines}{more} is not a result (cut by a crash?): those "
            f"steps are unknown; rackops validate --resume {run.path} runs them again"
        )
    for msg in problems:
        verdict.errors.append(
            Finding("RUN-001", Status.ERROR, Subject(), msg).as_dict() | {"step": "results"}
        )
    return verdict


def build_report(run: RunDir) -> dict[str, Any]:
    records = run.records()
    return report_of(run, records, verdict_of(run, records))


def report_of(run: RunDir, records: list[dict[str, Any]], verdict: Verdict) -> dict[str, Any]:
    """report.json's content from the run's records, read once, and their verdict,
    localised once (write_reports passes both on to the other files)."""
    meta = _run_json(run)
    nodes: dict[str, dict[str, str]] = defaultdict(dict)
    for rec in records:
        if rec["kind"] in ("node", "unreachable") and rec.get("node"):
            st = max(
                (f["status"] for f in rec["findings"]), key=STATUS_VALUE.__getitem__, default="OK"
            )
            nodes[rec["node"]][rec["tool"]] = st
    pairs = _links(records)
    ports = _ports(records)
    sw_ports = switch_ports(records)
    curves = []
    for rec in records:
        if rec["tool"] == "nccl-tests" and isinstance(rec.get("stdout"), str):
            curve = _nccl_curve(run, rec)
            if curve:
                curves.append(curve)
    return {
        "rackops_version": meta.get("rackops_version"),
        "inventory": meta.get("inventory"),
        "suite": meta.get("suite"),
        "started": meta.get("started"),
        "plan": meta.get("plan"),
        "limit": meta.get("limit") if isinstance(meta.get("limit"), str) else None,
        "verdict": verdict.label,
        "exit_code": verdict.exit_code,
        "culprits": [c.as_dict() for c in verdict.culprits],
        "errors": verdict.errors,
        "warnings": verdict.warnings,
        "nodes": dict(sorted(nodes.items(), key=lambda kv: natural_key(kv[0]))),
        "pairs": pairs,
        "ports": ports,
        "cabling": next(
            (
                {"source": r["meta"].get("source"), "seen": r["meta"].get("seen", {})}
                for r in records
                if r["kind"] == "cabling"
            ),
            None,
        ),
        "nccl_curves": curves,
        "fleet": _fleet(run),
        "nvlink_domains": _domains(records),
        "switch_ports": sw_ports,
        "isls": isls(sw_ports),
        "gpus": gpu_figures(records),
        "gpu_traces": gpu_traces(run, records),
        "steps": len(records),
        "stages": stage_margins(records),
        "link_lines": _link_lines(records),
    }


def _link_lines(records: list[dict[str, Any]]) -> dict[str, dict[str, float | None]]:
    """The lines the link pictures draw: the floor the pair tests were judged on (the most
    common one, where profiles differ) and the peer gate the run computed."""
    out: dict[str, dict[str, float | None]] = {}
    for tool, key, unit in (("perftest", "bw_gbps", "Gb/s"), ("perftest-lat", "lat_us", "us")):
        floors = Counter(  # the figure's own floor: not a path MTU's or a message size's
            f["expected"]
            for r in records
            if r["kind"] == "pair" and r["tool"] == tool
            for f in r["findings"]
            if is_number(f.get("expected")) and f.get("unit") == unit
        )
        gates = [
            g["limit"]
            for r in records
            if r["kind"] == "peers"
            for g in (r.get("meta") or {}).get("limits") or []
            if isinstance(g, dict) and g.get("tool") == tool and is_number(g.get("limit"))
        ]
        out[key] = {
            "floor": floors.most_common(1)[0][0] if floors else None,
            "gate": (max(gates) if key == "lat_us" else min(gates)) if gates else None,
        }
    return out


MAX_FLEET_ROWS = 200  # differing facts shown in the report's fleet table


def _domains(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each multi-node NVLink domain as its stage saw it (``nvldomain`` records' view): the
    partition, how many of its GPUs are in it, and the trays short of their GPUs in it."""
    out = []
    first_links: dict[str, list[dict[str, Any]]] = {}  # the NVLink groups' first links
    for r in records:
        cascade = (r.get("meta") or {}).get("cascade") if r["kind"] == "nvldomain" else None
        if isinstance(cascade, dict) and isinstance(cascade.get("origins"), list):
            first_links[str(cascade.get("group"))] = [
                {k: o.get(k) for k in ("node", "gpu", "link", "xid", "unit")}
                | {"followed": len(o.get("followed") or ())}
                for o in cascade["origins"]
                if isinstance(o, dict)
            ]
    # what → tray → findings: IMEX (the domain as the tray's daemon sees it, and the tray's
    # own daemon, channel and node list), NVLink (link speeds, error counters under load)
    column = {
        "nvidia-imex": "imex",
        "imex-node": "imex",
        "nvidia-smi-nvlink": "nvlink",
        "nvidia-smi-nvlink-errors": "nvlink",
    }
    tray_findings: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for r in records:
        if r["kind"] == "node" and r.get("tool") in column:
            by_tray = tray_findings.setdefault(column[r["tool"]], {})
            by_tray.setdefault(str(r.get("node")), []).extend(r["findings"])
    for r in records:
        view = (r.get("meta") or {}).get("domain") if r["kind"] == "nvldomain" else None
        if not isinstance(view, dict):
            continue
        given = view.get("trays")
        trays: dict[str, Any] = given if isinstance(given, dict) else {}
        short = [
            {"node": n, **t}
            for n, t in sorted(trays.items(), key=lambda kv: natural_key(kv[0]))
            if isinstance(t, dict) and (not t.get("read") or t.get("in_partition") != t.get("gpus"))
        ]
        out.append(
            {
                "domain": view.get("domain"),
                "size": view.get("size"),
                "partition": view.get("partition"),
                "in_partition": view.get("in_partition"),
                "trays": len(trays),
                "short": short,
                "first_links": first_links.get(str(view.get("domain"))),  # None: not judged
                "imex": _trays_said(tray_findings.get("imex", {}), trays),
                "nvlink": _trays_said(tray_findings.get("nvlink", {}), trays),
                "status": max(
                    (f["status"] for f in r["findings"]),
                    key=lambda st: STATUS_VALUE.get(st, 0),
                    default="OK",
                ),
            }
        )
    return out


def _trays_said(by_tray: dict[str, list[dict[str, Any]]], trays: dict[str, Any]) -> dict[str, Any]:
    """What one tool said on a domain's trays: how many it read with nothing wrong, and each
    problem (the tray, its GPU where one is named, the message)."""
    read = [n for n in trays if n in by_tray]
    problems = [
        {"node": n, "gpu": (f.get("subject") or {}).get("gpu"), "code": f["code"],
         "status": f["status"], "message": f["message"]}
        for n in sorted(read, key=natural_key)
        for f in by_tray[n]
        if f["status"] != "OK"
    ]  # fmt: skip
    clean = sum(1 for n in read if all(f["status"] == "OK" for f in by_tray[n]))
    return {
        "read": len(read),
        "clean": clean,
        "problems": problems[:50],
        "more": max(0, len(problems) - 50),
    }


class Row(NamedTuple):
    """One fact of the fleet table: each node's cell, and (a cluster's table, whose columns
    are the nodes that differ) the value most of the nodes not shown have."""

    fact: str
    cells: dict[str, dict[str, Any]]
    ref: str | None


def _most(row: Row, shown: set[str]) -> str | None:
    """The value most of the row's nodes outside ``shown`` have (None: none has one)."""
    values = Counter(
        c["value"] for n, c in row.cells.items() if n not in shown and c["value"] is not None
    )
    return values.most_common(1)[0][0] if values else None


def _fleet(run: RunDir) -> dict[str, Any] | None:
    """The fleet table (fact × node) of the facts where some node differs from its
    reference — the golden value of its profile, or the majority of its profile's nodes —
    each cell marked as the fact's kind weighs a difference."""
    from rackops.fleet.facts import Fact
    from rackops.validate.stages.fleet import FLEET_FILE

    try:
        data = run.read_json(FLEET_FILE)
    except (FileNotFoundError, RackopsError):
        return None
    try:
        keys: list[str] = data["keys"]
        nodes: dict[str, list[str | None]] = data["nodes"]
        profiles: dict[str, str] = data["profiles"]
        golden: dict[str, dict[str, Any]] = data["golden"]
        rows: list[Row] = []
        for i, key in enumerate(keys):
            by_profile: dict[str, Counter[str]] = defaultdict(Counter)
            for n, vals in nodes.items():
                v = vals[i]
                if v is not None:
                    by_profile[profiles[n]][v] += 1
            cells: dict[str, dict[str, Any]] = {}
            differs = False
            for n, vals in sorted(nodes.items()):
                p = profiles[n]
                ref = golden[p]["facts"].get(key) if p in golden else None
                if ref is None and p not in golden and by_profile[p]:
                    top, c = by_profile[p].most_common(1)[0]
                    ref = top if 2 * c > sum(by_profile[p].values()) else None
                value = vals[i]
                device, _, name = key.partition("/")
                split = ref is None and len(by_profile[p]) > 1  # no majority: all marked
                odd = value is not None and (split or (ref is not None and value != ref))
                status = Fact(device, name, value or "", "").status().value if odd else "OK"
                differs |= odd
                cells[n] = {"value": value, "status": status if value is not None else "none"}
            if differs:
                rows.append(Row(fact=key, cells=cells, ref=None))
        more = max(0, len(rows) - MAX_FLEET_ROWS)
        rows = rows[:MAX_FLEET_ROWS]
        shown = sorted(nodes)
        if len(shown) > MATRIX_MAX_NODES:  # a cluster: the nodes that differ, and the others
            odd = {n for row in rows for n, c in row.cells.items()
                   if c["status"] not in ("OK", "none")}  # fmt: skip
            shown = [n for n in shown if n in odd]
            rows = [r._replace(ref=_most(r, odd)) for r in rows]
        return {
            "how": data["how"],
            "facts": len(keys),
            "rows": [dict(r._asdict()) for r in rows],
            "more_rows": more,
            "nodes": shown,
            "others": len(nodes) - len(shown),
        }
    except (KeyError, TypeError, IndexError, AttributeError, ValueError) as exc:
        return {
            "how": f"fleet.json unreadable ({type(exc).__name__}): not shown",
            "facts": 0,
            "rows": [],
            "more_rows": 0,
            "nodes": [],
            "others": 0,
        }


def _run_json(run: RunDir) -> dict[str, Any]:
    """run.json (checked by RunDir.read_json), or nothing when the run has none."""
    try:
        meta = run.read_json("run.json")
    except FileNotFoundError:
        return {}
    return meta if isinstance(meta, dict) else {}


def _worst(findings: list[dict[str, Any]]) -> str:
    return max((f["status"] for f in findings), key=STATUS_VALUE.__getitem__, default="OK")


def _links(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per tested link: bandwidth, and latency beside it where it was measured."""
    out: dict[tuple[Any, ...], dict[str, Any]] = {}
    lat: list[dict[str, Any]] = []
    for r in records:
        if r["kind"] != "pair":
            continue
        if r["meta"].get("metric") == "lat":
            lat.append(r)
            continue
        m = r["meta"]
        st = _worst(r["findings"])
        out[(m["server"], m["client"], m["rail"])] = {**m, "status": st, "bw_status": st}
    for r in lat:
        m = r["meta"]
        key = (m["server"], m["client"], m["rail"])
        st = _worst(r["findings"])
        entry = out.setdefault(key, {k: v for k, v in m.items() if k != "metric"})
        entry["lat_us"], entry["lat_status"] = m.get("lat_us"), st
        entry["status"] = max(entry.get("status", "OK"), st, key=STATUS_VALUE.__getitem__)
    return list(out.values())


# the counters the report shows per port (normalised names from rackops.checks.phy)
PORT_COLUMNS = (
    "symbol_errors",
    "corrected_bits",
    "link_downed",
    "link_recovery",
    "rcv_errors",
    "crc_errors",
    "xmit_discards",
    "rx_discards",
)


def _ports(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per cabled port after the run: error deltas under load, absolutes, BER, rx power."""
    out = []
    for r in records:
        if r["kind"] != "node" or r["tool"] != "phy":
            continue
        for dev, rep in sorted(r["meta"].get("ports", {}).items()):
            fs = [f for f in r["findings"] if f["subject"].get("hca") == dev]
            subj = fs[0]["subject"] if fs else {}
            rx = [v for v in rep.get("rx_power_dbm", []) if is_number(v)]
            delta, absolute = rep.get("delta") or {}, rep.get("absolute") or {}
            out.append(
                {
                    "node": r["node"],
                    "hca": dev,
                    "switch": subj.get("switch"),
                    "switch_port": subj.get("switch_port"),
                    "status": _worst(fs),
                    "delta": {k: delta[k] for k in PORT_COLUMNS if k in delta},
                    "absolute": {k: absolute[k] for k in PORT_COLUMNS if k in absolute},
                    "raw_ber": rep.get("raw_ber"),
                    "effective_ber": rep.get("effective_ber"),
                    "rx_power_min_dbm": min(rx) if rx else None,
                    "interval_s": r["meta"].get("interval_s"),
                }
            )
    return out


def _nccl_curve(run: RunDir, rec: dict[str, Any]) -> dict[str, Any] | None:
    # as the run parsed it, else read from raw/ (inside the run directory, a regular file,
    # size-limited) and parsed once however many records name the file
    parsed = run.parsed_output({**rec, "tool": "nccl-tests"})
    if parsed is None:
        return None
    floors = (f.get("expected") for f in rec["findings"])
    floor = next((x for x in floors if is_number(x) and x > 0), None)
    points = [
        (r.bytes, min(p.busbw_gbs for p in (r.out_of_place, r.in_place) if p))
        for r in parsed.rows
        if (r.out_of_place or r.in_place)
    ]
    points = [(b, v) for b, v in points if is_number(b) and is_number(v)]
    return {"name": rec["id"], "floor_gbs": floor, "points": points}


def summary(report: dict[str, Any]) -> str:
    lines = [
        f"verdict: {report['verdict']} (exit {report['exit_code']}) — "
        f"{len(report['nodes'])} nodes, {len(report['pairs'])} links tested"
        + (f" (only --limit {report['limit']})" if report.get("limit") else "")
    ]
    for c in report["culprits"]:
        lines.append(f"  FIX  {c['where']}: {c['message']}")
        lines.append(f"       → {c['remediation']}")
    for e in report["errors"][:20]:
        lines.append(f"  ERROR {e['subject'].get('node') or ''} {e['code']}: {e['message']}")
    if len(report["errors"]) > 20:
        lines.append(f"  … {len(report['errors']) - 20} more errors in report.json")
    for w in report["warnings"][:10]:
        lines.append(f"  WARN {w['subject'].get('node') or ''} {w['code']}: {w['message']}")
    # a message is the tools' words: never a control character on the terminal
    return "\n".join(one_line(x) for x in lines)


# characters XML 1.0 does not allow (even escaped): C0 controls but tab, LF and CR,
# lone surrogates, U+FFFE and U+FFFF
_XML_INVALID = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_text(value: object) -> str:
    """A string an XML 1.0 parser reads: invalid characters become U+FFFD."""
    return _XML_INVALID.sub("\ufffd", str(value))


def junit(report: dict[str, Any], records: list[dict[str, Any]]) -> str:
    suites = ET.Element("testsuites", name="rackops validate")
    by_kind: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for rec in records:
        by_kind[rec["kind"]].append(rec)
    for kind, recs in by_kind.items():
        cases = [(rec, f) for rec in recs for f in rec["findings"]]
        suite = ET.SubElement(
            suites,
            "testsuite",
            name=kind,
            tests=str(len(cases)),
            failures=str(sum(f["status"] == "FAIL" for _, f in cases)),
            errors=str(sum(f["status"] == "ERROR" for _, f in cases)),
        )
        for rec, f in cases:
            subj = f["subject"]
            who = " ".join(
                str(subj[k])
                for k in ("node", "gpu", "hca", "switch", "switch_port", "peer")
                if subj.get(k) is not None
            )
            took = rec.get("duration_s")
            case = ET.SubElement(
                suite,
                "testcase",
                classname=xml_text(f"{kind}.{rec['tool']}"),
                name=xml_text(f"{f['code']} {who}".strip()),
                time=str(took if is_number(took) else 0),
            )
            message = xml_text(f["message"])
            if is_number(f.get("observed")):  # the figure measured, for CI dashboards
                props = ET.SubElement(case, "properties")  # first, as the JUnit schema has it
                for key in ("observed", "expected", "unit"):
                    if f.get(key) is not None:
                        ET.SubElement(props, "property", name=key, value=xml_text(str(f[key])))
            if f["status"] == "FAIL":
                ET.SubElement(case, "failure", message=message).text = xml_text(
                    f.get("remediation") or ""
                )
            elif f["status"] == "ERROR":
                ET.SubElement(case, "error", message=message)
            elif f["status"] == "WARN":
                ET.SubElement(case, "system-out").text = f"WARN: {message}"

    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"


def _label(value: Any) -> str:
    """A label value as the Prometheus text format escapes it: backslash, quote, newline."""
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def prometheus(report: dict[str, Any]) -> str:
    out = [
        "# HELP rackops_validate_verdict Exit code of the last validation "
        "(0 accepted, 1 warnings, 2 rejected, 3 undecided).",
        "# TYPE rackops_validate_verdict gauge",
        f"rackops_validate_verdict {report['exit_code']}",
        "# HELP rackops_check_status Worst status per node and check "
        "(0 OK, 1 WARN, 2 ERROR, 3 FAIL).",
        "# TYPE rackops_check_status gauge",
    ]
    for node, checks in report["nodes"].items():
        for check, st in sorted(checks.items()):
            if st not in STATUS_VALUE:
                continue
            out.append(
                f'rackops_check_status{{node="{_label(node)}",check="{_label(check)}"}} '
                f"{STATUS_VALUE[st]}"
            )

    def link(p: dict[str, Any]) -> dict[str, Any]:
        return {"server": p["server"], "client": p["client"], "rail": p["rail"]}

    def port(p: dict[str, Any]) -> dict[str, Any]:
        return {"node": p["node"], "hca": p["hca"]}

    ports = report.get("ports", [])
    out += _gauge(
        "rackops_link_bandwidth_gbps",
        "ib_write_bw average at the pinned size.",
        [(link(p), p.get("bw_gbps")) for p in report["pairs"]],
    )
    out += _gauge(
        "rackops_link_latency_us",
        "ib_write_lat average at the pinned size.",
        [(link(p), p.get("lat_us")) for p in report["pairs"]],
    )
    out += _gauge(
        "rackops_port_counter_delta",
        "What a port counter grew by during the run.",
        [({**port(p), "counter": c}, v) for p in ports for c, v in sorted(p["delta"].items())],
    )
    out += _gauge(
        "rackops_port_raw_ber",
        "Raw (pre-FEC) physical BER of a port (mlxlink).",
        [(port(p), p.get("raw_ber")) for p in ports],
        fmt="{:.3e}",
    )
    out += _gauge(
        "rackops_switch_port_counter_delta",
        "What a switch port's own counter grew by during the run.",
        [
            ({"switch": p["switch"], "port": p["port"], "counter": c}, v)
            for p in report.get("switch_ports", [])
            for c, v in sorted(p["delta"].items())
        ],
    )
    out += _gpu_gauges(report)
    out += [
        "# HELP rackops_culprits Number of things to fix.",
        "# TYPE rackops_culprits gauge",
        f"rackops_culprits {len(report['culprits'])}",
    ]
    groups = {g["action"]: len(g["culprits"]) for g in fix_groups(report["culprits"])}
    out += _gauge(
        "rackops_fixes",
        "Things to fix by what a technician does (cable, hca, gpu, switch, node, rerun).",
        [({"action": a}, groups.get(a, 0)) for a in ACTIONS],
    )
    stages = report.get("stages") or []
    out += _gauge(
        "rackops_stage_margin_percent",
        "The margin of a stage's figure closest to its floor (or ceiling), in percent of it.",
        [({"stage": st["stage"], "unit": st["unit"]}, st["worst_margin_pct"]) for st in stages],
    )
    out += _gauge(
        "rackops_stage_below_floor",
        "How many of a stage's figures are on the wrong side of their floor (or ceiling).",
        [({"stage": st["stage"], "unit": st["unit"]}, st["below_floor"]) for st in stages],
    )
    return "\n".join(out) + "\n"


def _gauge(
    name: str, help_text: str, rows: list[tuple[dict[str, Any], Any]], fmt: str = "{}"
) -> list[str]:
    """One node_exporter gauge: HELP, TYPE and a sample per row with a value."""
    out = [f"# HELP {name} {help_text}", f"# TYPE {name} gauge"]
    for labels, value in rows:
        if is_number(value):  # a sample is a finite number; anything else is never written
            text = ",".join(f'{k}="{_label(v)}"' for k, v in labels.items())
            out.append(f"{name}{{{text}}} {fmt.format(value)}")
    return out


def _gpu_gauges(report: dict[str, Any]) -> list[str]:
    rows = report.get("gpus", [])
    out: list[str] = []
    for field, name, help_text in (
        ("gemm_tflops", "rackops_gpu_gemm_tflops", "FP16 GEMM per GPU (dcgmproftester -t 1004)."),
        ("hbm_gbs", "rackops_gpu_hbm_gbs", "Memory bandwidth per GPU (dcgmproftester -t 1005)."),
        ("sm_mhz", "rackops_gpu_sm_clock_mhz", "Median SM clock under load."),
        ("power_w", "rackops_gpu_power_watts", "Median power draw under load."),
    ):
        out += _gauge(
            name, help_text, [({"node": g["node"], "gpu": g["gpu"]}, g.get(field)) for g in rows]
        )
    return out


PORT_ROWS_MAX = 256  # above this, a port or link table holds the named ones and the worst grown


def _shown(
    rows: list[dict[str, Any]], grown: Callable[[dict[str, Any]], int]
) -> tuple[list[dict[str, Any]], int]:
    """A table's rows: all of them, or at scale the rows that are not OK and the 20 whose
    errors grew most (in their order); and how many were left to report.json."""
    if len(rows) <= PORT_ROWS_MAX:
        return rows, 0
    worst = {id(p) for p in sorted(rows, key=grown, reverse=True)[:20] if grown(p)}
    shown = [p for p in rows if p["status"] != "OK" or id(p) in worst]
    return shown, len(rows) - len(shown)


def _port_rows(report: dict[str, Any]) -> tuple[list[dict[str, Any]], int]:
    """The port table's rows, by node then HCA (``_shown``)."""
    ports = sorted(report["ports"], key=lambda p: (natural_key(p["node"]), natural_key(p["hca"])))

    def grown(p: dict[str, Any]) -> int:
        return sum(svgplots.count(v) for c, v in p["delta"].items() if c != "corrected_bits")

    return _shown(ports, grown)


def _link_rows(
    nodes: list[str],
    rails: list[int],
    worst_link: dict[tuple[str, int], dict[str, Any]],
    matrix: bool,
) -> tuple[list[str], int]:
    """The nodes of the slowest-link table (``_shown``: at scale those with a link not OK
    and the 20 slowest), and how many were left to report.json."""
    if matrix:
        return nodes, 0
    rows = []
    for n in nodes:
        links = [worst_link[(n, r)] for r in rails if (n, r) in worst_link]
        statuses = {p.get("status", "OK") for p in links}
        slowest = min((p.get("bw_gbps") or 0.0 for p in links), default=0.0)
        rows.append({"node": n, "status": "OK" if statuses <= {"OK"} else "FAIL", "bw": slowest})
    shown, left = _shown(rows, lambda row: int(1e6 - row["bw"]))
    return [row["node"] for row in shown], left


def _pictures(report: dict[str, Any]) -> list[tuple[str, markupsafe.Markup]]:
    """The link distributions and the worst ports, drawn here (our own escaped SVG)."""
    lines = report.get("link_lines") or {}
    out = []
    for key, unit, what, lower in (
        ("bw_gbps", "Gb/s", "Link bandwidth per rail", False),
        ("lat_us", "µs", "Link latency per rail", True),
    ):
        line = lines.get(key) or {}
        status = "bw_status" if key == "bw_gbps" else "lat_status"
        svg = svgplots.rail_distribution(
            report["pairs"], key, unit, line.get("floor"), line.get("gate"), lower, status
        )
        if svg:
            out.append((what, markupsafe.Markup(svg)))
    drawn = svgplots.fabric(report)
    if drawn:
        out.append(("The fabric: leaves per rail; in red what to fix", markupsafe.Markup(drawn)))
    ports = svgplots.port_growth(report["ports"], PORT_COLUMNS)
    if ports:
        out.append(("Error growth of the worst ports during the run", markupsafe.Markup(ports)))
    return out


def html(report: dict[str, Any], comparison: dict[str, Any] | None = None) -> str:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=jinja2.select_autoescape(["html", "j2"]),
        undefined=jinja2.StrictUndefined,
    )
    rails = sorted({p["rail"] for p in report["pairs"]})
    nodes = sorted(
        {p["server"] for p in report["pairs"]} | {p["client"] for p in report["pairs"]},
        key=natural_key,
    )
    matrix = len(nodes) <= MATRIX_MAX_NODES
    heat: dict[int, dict[tuple[str, str], dict[str, Any]]] = {r: {} for r in rails}
    worst_link: dict[tuple[str, int], dict[str, Any]] = {}
    for p in report["pairs"]:
        if matrix:
            heat[p["rail"]][(p["server"], p["client"])] = p
            heat[p["rail"]][(p["client"], p["server"])] = p
        for end in (p["server"], p["client"]):
            cur = worst_link.get((end, p["rail"]))
            if cur is None or (p.get("bw_gbps") or 0) < (cur.get("bw_gbps") or 0):
                worst_link[(end, p["rail"])] = p
    checks = sorted({c for n in report["nodes"].values() for c in n})
    port_rows, ports_left = _port_rows(report)
    link_rows, links_left = _link_rows(nodes, rails, worst_link, matrix)
    # a cluster's every node on the page is a page no one reads: per check, how many of each
    node_counts = (
        {c: Counter(st.get(c, "none") for st in report["nodes"].values()) for c in checks}
        if len(report["nodes"]) > PORT_ROWS_MAX
        else None
    )
    isl_rows, isls_left = _shown(report["isls"], lambda link: svgplots.count(link["errors"]))
    return env.get_template("report.html.j2").render(
        r=report,
        fixes=fix_groups(report["culprits"]),
        stages=report.get("stages") or [],
        pictures=_pictures(report),
        port_rows=port_rows,
        ports_left=ports_left,
        isl_rows=isl_rows,
        isls_left=isls_left,
        link_rows=link_rows,
        links_left=links_left,
        node_counts=node_counts,
        bad_nodes=[n for n, st in report["nodes"].items() if set(st.values()) - {"OK"}],
        # the NCCL section opens on a multi-node culprit or a node's own NCCL test not OK
        nccl_open=any(c["kind"] == "nccl" for c in report["culprits"])
        or any(st.get("nccl-tests", "OK") != "OK" for st in report["nodes"].values()),
        comparison=comparison,
        rails=rails,
        pair_nodes=nodes,
        heat=heat,
        checks=checks,
        matrix=matrix,
        worst_link=worst_link,
        port_columns=PORT_COLUMNS,
        switch_columns=SWITCH_COLUMNS,
        curves=[
            (c["name"], markupsafe.Markup(svgplots.nccl_curve(c)))  # our own SVG, escaped
            for c in report["nccl_curves"]
        ],
        traces=[
            (f"{t['node']} GPU {t['gpu']}", t, markupsafe.Markup(svg_trace(t)))  # numbers only
            for t in report.get("gpu_traces", [])
        ],
    )


def scheduler_of_run(run: RunDir) -> str:
    """The scheduler the run's nodes are in, as its run.json recorded it (none without
    one); DamagedRunDir for a value rackops never writes."""
    from rackops.scheduler.actions import SCHEDULERS

    value = _run_json(run).get("scheduler") or "none"
    if value not in SCHEDULERS:
        raise damaged(
            run.path / "run.json", None, None, f"scheduler is {value!r}, not one of {SCHEDULERS}"
        )
    return str(value)


def actions(report: dict[str, Any], scheduler: str) -> list[list[str]]:
    """Drain/cordon commands for rejected nodes (printed; applied only when asked)."""
    from rackops.scheduler.actions import drain_commands

    return drain_commands(report, scheduler)


def write_reports(
    run: RunDir, old: RunDir | None = None
) -> tuple[dict[str, Any], Verdict, dict[str, Any] | None]:
    """The run's reports; with ``old``, an earlier run of the rack, the comparison too
    (compare.json, and its section in report.html)."""
    from rackops.validate.compare import compare

    earlier: dict[str, Any] | None = None
    if old is not None:  # built first, and its records let go: one run's held at a time
        earlier = build_report(old)
        old.release()
    records = run.records()  # read once; localised once
    verdict = verdict_of(run, records)
    report = report_of(run, records, verdict)
    scheduler = scheduler_of_run(run)
    cmp = None
    if old is not None and earlier is not None:
        cmp = compare(earlier, report, str(old.path), str(run.path))
    # each written as a new file renamed over the old: a planted symlink is never followed
    run.write_json("report.json", report)
    if cmp is not None:
        run.write_json("compare.json", cmp)
    run.write_text("junit.xml", junit(report, records))
    run.write_text("metrics.prom", prometheus(report))
    run.write_text("report.html", html(report, cmp))
    run.write_text(
        "actions.sh",
        "#!/bin/sh\n# Actions for rejected nodes (rackops validate --apply-actions runs them)\n"
        f"# scheduler: {scheduler} (the inventory's rackops_scheduler)\n"
        + "".join(shlex.join(c) + "\n" for c in actions(report, scheduler)),
    )
    return report, verdict, cmp
