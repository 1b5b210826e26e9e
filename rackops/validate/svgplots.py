"""The report's pictures, drawn here as inline SVG (no script, no font, no external file):
per-rail distributions of link bandwidth and latency with the floor and the peer gate,
NCCL bus bandwidth against message size, the worst ports' error growth. Every text in
them is escaped; every number is formatted here.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any
from xml.sax.saxutils import escape

from rackops.names import natural_key

BINS = 48
LABELS_PER_RAIL = 3  # outliers named on the picture; the tables name every one
ROW_H, WIDTH, LEFT, RIGHT = 34, 720, 64, 16


def _esc(value: object) -> str:
    return escape(str(value), {'"': "&quot;"})


def rail_distribution(
    pairs: list[dict[str, Any]],
    key: str,
    unit: str,
    floor: float | None,
    gate: float | None,
    lower_is_better: bool,
    status_key: str = "status",
) -> str:
    """One row per rail: a histogram of the links' ``key`` values, the floor (red) and the
    peer gate (amber) across all rows, and the worst links on the wrong side of either line
    labelled by their two ends (judged by ``status_key``: the status of this figure)."""
    by_rail: dict[int, list[tuple[float, dict[str, Any]]]] = defaultdict(list)
    for p in pairs:
        v = p.get(key)
        if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v):
            by_rail[int(p["rail"])].append((float(v), p))
    if not by_rail:
        return ""
    lines = [x for x in (floor, gate) if x is not None and math.isfinite(x)]
    axis = _axis(sorted(v for rows in by_rail.values() for v, _ in rows), lines)
    if axis is None:
        return ""
    lo, hi = axis
    plot_w = WIDTH - LEFT - RIGHT
    rails = sorted(by_rail)
    height = ROW_H * len(rails) + 36

    def x_of(v: float) -> float:
        return LEFT + (v - lo) / (hi - lo) * plot_w

    out = [
        f'<svg class="dist" viewBox="0 0 {WIDTH} {height}" width="100%" role="img" '
        f'style="max-width:{WIDTH}px" aria-label="{_esc(key)} per rail">'
    ]

    def worse(v: float, line: float) -> bool:
        return v > line if lower_is_better else v < line

    for i, rail in enumerate(rails):
        top = 8 + i * ROW_H
        counts = [0] * BINS
        for v, _ in by_rail[rail]:
            counts[_bin(v, lo, hi)] += 1
        peak = max(counts)
        out.append(f'<text x="4" y="{top + ROW_H / 2 + 4:.0f}" font-size="11">rail {rail}</text>')
        bar_w = plot_w / BINS
        for b, n in enumerate(counts):
            if n:
                h = max(1.5, (ROW_H - 10) * n / peak)
                out.append(
                    f'<rect x="{LEFT + b * bar_w:.1f}" y="{top + ROW_H - 6 - h:.1f}" '
                    f'width="{bar_w - 1:.1f}" height="{h:.1f}" fill="#93c5fd"><title>{n} '
                    f"links</title></rect>"
                )
        bad = sorted(
            (
                (v, p)
                for v, p in by_rail[rail]
                if any(worse(v, line) for line in lines)
                or p.get(status_key, "OK") not in ("OK", None)
            ),
            key=lambda vp: -vp[0] if lower_is_better else vp[0],
        )
        for j, (v, p) in enumerate(bad[:LABELS_PER_RAIL]):
            x = min(max(x_of(v), LEFT), WIDTH - RIGHT)  # off the axis: at its edge
            name = f"{p['client']}/{p.get('client_hca', '')} ↔ {p['server']}"
            anchor = "start" if x < LEFT + plot_w / 2 else "end"
            dx = 5 if anchor == "start" else -5
            out.append(
                f'<circle cx="{x:.1f}" cy="{top + ROW_H - 8:.1f}" r="3" fill="#dc2626"/>'
                f'<text class="outlier" x="{x + dx:.1f}" y="{top + 9 + j * 9:.1f}" '
                f'font-size="9" text-anchor="{anchor}" fill="#991b1b">{_esc(name)} '
                f"{v:g}</text>"
            )
        if len(bad) > LABELS_PER_RAIL:
            out.append(
                f'<text x="{WIDTH - RIGHT}" y="{top + ROW_H - 2}" font-size="9" '
                f'text-anchor="end">+{len(bad) - LABELS_PER_RAIL} more in the table</text>'
            )
    bottom = 8 + len(rails) * ROW_H
    limit = "ceiling" if lower_is_better else "floor"
    for line, colour, what in ((floor, "#dc2626", limit), (gate, "#d97706", "peer gate")):
        if line is None or not math.isfinite(line):
            continue
        x = x_of(line)
        out.append(
            f'<line x1="{x:.1f}" x2="{x:.1f}" y1="4" y2="{bottom}" stroke="{colour}" '
            f'stroke-dasharray="4"/><text x="{x:.1f}" y="{bottom + 12}" font-size="10" '
            f'text-anchor="middle" fill="{colour}">{what} {line:g}</text>'
        )
    out.append(
        f'<text x="{LEFT}" y="{height - 4}" font-size="10">{lo:.4g} {_esc(unit)}</text>'
        f'<text x="{WIDTH - RIGHT}" y="{height - 4}" font-size="10" text-anchor="end">'
        f"{hi:.4g} {_esc(unit)}</text></svg>"
    )
    return "".join(out)


def _bin(v: float, lo: float, hi: float) -> int:
    """The histogram bin of ``v``: one past the axis (1.7e308 Gb/s from a garbled output,
    where the arithmetic overflows) is in the edge bin."""
    b = (v - lo) / (hi - lo) * BINS
    if not math.isfinite(b):
        return 0 if v < lo else BINS - 1
    return max(0, min(BINS - 1, int(b)))


def _axis(values: list[float], lines: list[float]) -> tuple[float, float] | None:
    """The axis spans the lines and the bulk (1st to 99th percentile), so the shape of a
    healthy rail shows; a link beyond it is drawn at the edge, its value in its label.
    None for figures at the ends of the float range, where no axis can be drawn."""
    bulk = values[len(values) // 100 : len(values) - len(values) // 100] or values
    lo, hi = min(bulk + lines), max(bulk + lines)
    span = (hi - lo) or abs(hi) or 1.0
    lo, hi = lo - span * 0.08, hi + span * 0.08
    return (lo, hi) if math.isfinite(hi - lo) else None


def nccl_curve(curve: dict[str, Any]) -> str:
    """Bus bandwidth against message size (log scale), with the floor."""
    pts = [(b, v) for b, v in curve["points"] if b > 0]
    if not pts:
        return ""
    w, h, pad = 420, 180, 30
    xs = [math.log2(b) for b, _ in pts]
    top = max([v for _, v in pts] + [curve["floor_gbs"] or 0]) * 1.1 or 1
    x0, x1 = min(xs), max(xs) if max(xs) > min(xs) else min(xs) + 1

    def px(b: float, v: float) -> tuple[float, float]:
        return (
            pad + (math.log2(b) - x0) / (x1 - x0) * (w - 2 * pad),
            h - pad - v / top * (h - 2 * pad),
        )

    line = " ".join(f"{x:.1f},{y:.1f}" for x, y in (px(b, v) for b, v in pts))
    svg = [
        f'<svg viewBox="0 0 {w} {h}" width="100%" style="max-width:{w}px" role="img" '
        f'aria-label="busbw vs size">',
        f'<polyline fill="none" stroke="#2563eb" stroke-width="2" points="{line}"/>',
    ]
    if curve["floor_gbs"]:
        y = px(pts[0][0], curve["floor_gbs"])[1]
        svg.append(
            f'<line x1="{pad}" x2="{w - pad}" y1="{y:.1f}" y2="{y:.1f}" '
            f'stroke="#dc2626" stroke-dasharray="4"/><text x="{w - pad}" y="{y - 4:.1f}" '
            f'text-anchor="end" font-size="10">floor {curve["floor_gbs"]} GB/s</text>'
        )
    svg.append(
        f'<text x="{pad}" y="{h - 8}" font-size="10">{pts[0][0]} B</text>'
        f'<text x="{w - pad}" y="{h - 8}" font-size="10" text-anchor="end">'
        f"{pts[-1][0]} B</text></svg>"
    )
    return "".join(svg)


def count(value: object) -> int:
    """A counter's growth as a count: a number, whole and not negative (0 otherwise)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return 0
    return max(0, int(value))


def port_growth(ports: list[dict[str, Any]], columns: tuple[str, ...], top: int = 10) -> str:
    """The ports whose error counters grew most during the run (corrected bits aside: FEC
    corrects them by design), one bar each, stacked by counter."""
    counted = [c for c in columns if c != "corrected_bits"]
    grown = [(sum(count(p["delta"].get(c)) for c in counted), p) for p in ports]
    grown = [(t, p) for t, p in grown if t > 0]
    grown.sort(key=lambda tp: (-tp[0], tp[1]["node"], tp[1]["hca"]))
    grown = grown[:top]
    if not grown:
        return ""
    colours = ("#dc2626", "#ea580c", "#d97706", "#65a30d", "#0891b2", "#7c3aed", "#db2777")
    peak = max(t for t, _ in grown)
    bar_h, left, w = 18, 150, 640
    out = [
        f'<svg class="ports" viewBox="0 0 {w} {bar_h * len(grown) + 24}" width="100%" '
        f'style="max-width:{w}px" role="img" aria-label="error growth of the worst ports">'
    ]
    for i, (total, p) in enumerate(grown):
        y = 4 + i * bar_h
        out.append(
            f'<text x="{left - 6}" y="{y + 12}" font-size="10" text-anchor="end">'
            f"{_esc(p['node'])} {_esc(p['hca'])}</text>"
        )
        x = float(left)
        for j, c in enumerate(counted):
            n = count(p["delta"].get(c))
            if n:
                bw = max(1.0, (w - left - 70) * n / peak)
                out.append(
                    f'<rect x="{x:.1f}" y="{y + 2}" width="{bw:.1f}" height="{bar_h - 5}" '
                    f'fill="{colours[j % len(colours)]}"><title>{_esc(c)} +{n}</title></rect>'
                )
                x += bw
        out.append(f'<text x="{x + 4:.1f}" y="{y + 12}" font-size="10">+{total}</text>')
    legend = " · ".join(
        f'<tspan fill="{colours[j % len(colours)]}">{_esc(c)}</tspan>'
        for j, c in enumerate(counted)
    )
    out.append(f'<text x="{left}" y="{bar_h * len(grown) + 18}" font-size="10">{legend}</text>')
    out.append("</svg>")
    return "".join(out)


LEAVES_PER_ROW = 16
NAMED_PER_LEAF = 3


def fabric(report: dict[str, Any]) -> str:
    """The rack's fabric as rackops saw it: one row per rail, its leaves (and the spine
    above them where leaf–spine links were read); a leaf, spine or link named to fix in
    red, and under each leaf the cables named on it (node, HCA, switch port)."""
    rail_of: dict[str, int] = {}
    for p in report.get("pairs") or []:
        for end in ("server_switch_port", "client_switch_port"):
            sw = str(p.get(end) or "").split(" ")[0]
            if sw:
                rail_of.setdefault(sw, int(p["rail"]))
    if not rail_of:
        return ""
    named: dict[str, list[str]] = defaultdict(list)
    red_switches: set[str] = set()
    for c in report.get("culprits") or []:
        sw = c.get("switch")
        if not sw:
            continue
        if c.get("kind") in ("leaf", "isl"):
            red_switches.add(str(sw))
        if c.get("node"):
            named[str(sw)].append(
                f"{c['node']} {c.get('hca') or ''} → {c.get('switch_port') or ''}"
            )
    spines: dict[str, str] = {}  # leaf -> its spine, from the leaf–spine links read
    red_links: set[str] = set()
    for link in report.get("isls") or []:
        leaf, spine = str(link["leaf"]).split(" ")[0], str(link["spine"]).split(" ")[0]
        spines[leaf] = spine
        if link.get("status") != "OK":
            red_links.add(leaf)
    rails = sorted(set(rail_of.values()))
    by_rail = {
        r: sorted((s for s, rr in rail_of.items() if rr == r), key=natural_key) for r in rails
    }
    box_w, box_h, gap, label_h = 70, 22, 8, 11
    row_h = box_h + (60 if spines else 16) + label_h * NAMED_PER_LEAF + 6
    rows = [(r, chunk) for r in rails for chunk in _chunks(by_rail[r], LEAVES_PER_ROW)]
    width = 60 + LEAVES_PER_ROW * (box_w + gap)
    out = [
        f'<svg class="fabric" viewBox="0 0 {width} {len(rows) * row_h + 10}" width="100%" '
        f'style="max-width:{width}px" role="img" aria-label="the fabric: leaves per rail">'
    ]
    for i, (rail, leaves) in enumerate(rows):
        top = 6 + i * row_h
        leaf_y = top + (44 if spines else 0)
        out.append(f'<text x="4" y="{leaf_y + 15}" font-size="11">rail {rail}</text>')
        drawn_spines: dict[str, float] = {}
        for j, leaf in enumerate(leaves):
            x = 60 + j * (box_w + gap)
            up = spines.get(leaf)
            if up:
                if up not in drawn_spines:
                    drawn_spines[up] = x
                    out.append(_box(x, top, box_w, box_h, up, up in red_switches))
                bad = leaf in red_links
                sx = drawn_spines[up] + box_w / 2
                out.append(
                    f'<line x1="{x + box_w / 2:.0f}" y1="{leaf_y}" x2="{sx:.0f}" '
                    f'y2="{top + box_h}" stroke="{"#dc2626" if bad else "#9ca3af"}" '
                    f'stroke-width="{2 if bad else 1}"/>'
                )
            red = leaf in red_switches or bool(named.get(leaf))
            out.append(_box(x, leaf_y, box_w, box_h, leaf, red))
            cables = named.get(leaf, [])
            for k, text in enumerate(cables[:NAMED_PER_LEAF]):
                out.append(
                    f'<text class="named" x="{x}" y="{leaf_y + box_h + label_h * (k + 1)}" '
                    f'font-size="8" fill="#991b1b">{_esc(text)}</text>'
                )
            if len(cables) > NAMED_PER_LEAF:
                out.append(
                    f'<text x="{x + box_w}" y="{leaf_y + box_h + label_h * NAMED_PER_LEAF}" '
                    f'font-size="8" text-anchor="end">+{len(cables) - NAMED_PER_LEAF}</text>'
                )
    out.append("</svg>")
    return "".join(out)


def _box(x: float, y: float, w: float, h: float, name: str, red: bool) -> str:
    fill, stroke = ("#fecaca", "#dc2626") if red else ("#f3f4f6", "#9ca3af")
    short = name if len(name) <= 11 else name[:10] + "…"
    return (
        f'<rect x="{x}" y="{y}" width="{w}" height="{h}" rx="3" fill="{fill}" '
        f'stroke="{stroke}"><title>{_esc(name)}</title></rect><text x="{x + w / 2}" '
        f'y="{y + 15}" font-size="10" text-anchor="middle">{_esc(short)}</text>'
    )


def _chunks(items: list[str], n: int) -> list[list[str]]:
    return [items[i : i + n] for i in range(0, len(items), n)] or [[]]
