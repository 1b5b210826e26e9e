"""From results to culprits: which node, GPU, HCA, cable, switch port or leaf to fix.

Rules, in order (each pair failure is explained once):

1. A FAIL from a node's own checks is a culprit at the most specific subject it names
   (GPU, else HCA and its switch port, else the node). ERRORs on a node that already has a
   culprit are evidence for it, not separate verdicts.
2. Pair results touching an unreachable node, a node culprit, or the culprit HCA of that
   rail are set aside as explained.
   The switches' own counters and the InfiniBand sweep: a host port's errors are that HCA's;
   both ends of one inter-switch link are one ``isl`` culprit; the subnet manager (``sm``)
   and a failed ibdiagnet stage (``fabric``) are culprits on no node.
3. On a rail where every link fails (three nodes or more), the leaf is the culprit.
   A cable that is not where the cabling map says (a swap, a cable on another rail's
   leaf, another port) is one culprit for the whole mistake, and every pair result through
   a miswired port is set aside as untrustworthy: it measured some other path.
4. A node whose links fail with most partners on most rails is the node.
5. An HCA whose links fail with at least two partners, half or more of those it was tested
   with, is that HCA: its cable and switch port (from the cabling map).
6. A failure left with a single partner is the link between the two; re-test both ends
   against known-good partners (``--pairing suspects``) to tell which end.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any

from rackops.checks.nvlcascade import follows_finding

# a culprit's fix group (the report's first screen groups by it) where no finding says
# another: the one its kind needs (a link's end is unknown until re-tested)
KIND_ACTION = {
    "gpu": "gpu",
    "hca": "hca",
    "cabling": "cable",
    "isl": "cable",
    "link": "rerun",
    "leaf": "switch",
    "sm": "switch",
    "fabric": "switch",
    "nvldomain": "switch",  # a domain's partition is set on its NVLink switch trays
}


@dataclass
class Culprit:
    kind: str  # gpu | hca | node | leaf | link | nccl | cabling | fleet | isl | sm | fabric
    node: str | None
    message: str
    remediation: str
    gpu: int | None = None
    hca: str | None = None
    switch: str | None = None
    switch_port: str | None = None
    peer: str | None = None
    evidence: list[dict[str, Any]] = field(default_factory=list)
    action: str | None = None  # what its first finding says is to be done, else its kind's

    @property
    def where(self) -> str:
        parts = [self.node or ""]
        if self.gpu is not None:
            parts.append(f"GPU {self.gpu}")
        if self.hca:
            parts.append(self.hca)
        if self.switch:
            parts.append(f"[{self.switch} {self.switch_port or ''}]".replace(" ]", "]"))
        if self.peer:
            parts.append(f"↔ {self.peer}")
        # a culprit on no node and no port: what of the fabric or rack it is
        whole = {
            "sm": "subnet manager",
            "fabric": "fabric",
            "fleet": "rack",
            "nvldomain": "NVLink domain",
        }.get(self.kind, "")
        return " ".join(p for p in parts if p) or whole

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["where"] = self.where
        out["action"] = self.action or KIND_ACTION.get(self.kind, "node")
        return out


@dataclass
class Verdict:
    culprits: list[Culprit]
    errors: list[dict[str, Any]]
    warnings: list[dict[str, Any]]

    @property
    def exit_code(self) -> int:
        if self.culprits:
            return 2
        if self.errors:
            return 3
        return 1 if self.warnings else 0

    @property
    def label(self) -> str:
        return {0: "ACCEPTED", 1: "ACCEPTED with warnings", 2: "REJECTED", 3: "UNDECIDED"}[
            self.exit_code
        ]


def _fails(rec: dict[str, Any], status: str = "FAIL") -> list[dict[str, Any]]:
    return [f for f in rec["findings"] if f["status"] == status]


Key = tuple[Any, ...]
Link = tuple[dict[str, Any], str, dict[str, Any]]  # (pair meta, FAIL/OK, the record)


def localise(records: list[dict[str, Any]]) -> Verdict:
    """Every record's findings, explained once each: the rules of the module docstring, in
    their order, each a method of :class:`_Rules` for one kind of record."""
    r = _Rules(records)
    r.node_checks()
    r.fold_domains()
    r.fold_cascades()
    r.switch_ports()
    r.fabric()
    r.cabling()
    r.peer_warnings()
    r.route_errors()
    r.pairs()
    r.nccl()
    return r.verdict()


class _Rules:
    def __init__(self, records: list[dict[str, Any]]) -> None:
        self.records = records
        self.culprits: dict[Key, Culprit] = {}
        self.errors: list[dict[str, Any]] = []
        self.warnings: list[dict[str, Any]] = []
        self.unreachable = {r["node"] for r in records if r["kind"] == "unreachable"}
        self.miswired: dict[tuple[str, str], Culprit] = {}
        self.explained: set[str] = set()
        # a pair test that could not run leaves its ends tested with one partner less
        self.errored: dict[tuple[str, int], list[str]] = defaultdict(list)

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [r for r in self.records if r["kind"] == kind]

    def _warn(self, rec: dict[str, Any]) -> None:
        self.warnings += [{"step": rec["id"], **f} for f in _fails(rec, "WARN")]

    # 1. a FAIL from a node's own checks: the most specific subject it names
    def node_checks(self) -> None:
        for rec in self.of_kind("node") + self.of_kind("fleet") + self.of_kind("nvldomain"):
            for f in _fails(rec):
                s = f["subject"]
                key: Key
                if s.get("node") is None:  # a split with no majority: the rack's, the domain's
                    key = (rec["kind"], f["code"], f["message"])
                    self.culprits[key] = Culprit(
                        rec["kind"],
                        None,
                        f["message"],
                        f.get("remediation") or "",
                        action=f.get("action"),
                    )
                    self.culprits[key].evidence.append({"step": rec["id"], **f})
                    continue
                if s.get("gpu") is not None:
                    key = (s["node"], "gpu", s["gpu"])
                    kind = "gpu"
                elif s.get("hca"):
                    key, kind = (s["node"], "hca", s["hca"]), "hca"
                else:
                    key, kind = (s["node"], "node"), "node"
                c = self.culprits.get(key)
                if c is None:
                    c = self.culprits[key] = Culprit(
                        kind,
                        s["node"],
                        f["message"],
                        f.get("remediation") or "",
                        gpu=s.get("gpu"),
                        hca=s.get("hca"),
                        switch=s.get("switch"),
                        switch_port=s.get("switch_port"),
                        action=f.get("action"),
                    )
                c.evidence.append({"step": rec["id"], **f})
            self._warn(rec)

    # 1. (cont.) a multi-node NVLink domain whose fabric gave no GPU a partition is one
    # fault, the domain's: its GPUs' own "not joined / no partition" are its evidence
    FOLDED = frozenset({"GPU-009", "GPU-011", "NVL-004"})

    def fold_domains(self) -> None:
        for rec in self.of_kind("nvldomain"):
            for f in _fails(rec):  # a tray none of whose GPUs joined: that tray, one culprit
                tray = f["subject"].get("node")
                whole = self.culprits.get((tray, "node"))
                if f["code"] != "NVL-008" or whole is None:
                    continue
                whole.message, whole.action = f["message"], f.get("action")
                whole.remediation = f.get("remediation") or ""
                for key in [k for k in self.culprits if k[0] == tray and k[1] == "gpu"]:
                    if all(e.get("code") in self.FOLDED for e in self.culprits[key].evidence):
                        whole.evidence += self.culprits.pop(key).evidence
            if not any(f["code"] == "NVL-007" for f in _fails(rec)):
                continue
            trays = ((rec.get("meta") or {}).get("domain") or {}).get("trays") or {}
            whole = next(
                (c for k, c in self.culprits.items() if k[0] == "nvldomain" and k[1] == "NVL-007"),
                None,
            )
            if whole is None or not isinstance(trays, dict):
                continue
            for key in [k for k in self.culprits if k[0] in trays and k[1] == "gpu"]:
                c = self.culprits[key]
                if all(e.get("code") in self.FOLDED for e in c.evidence):
                    whole.evidence += self.culprits.pop(key).evidence

    # 1. (cont.) one NVLink link failed and the GPUs sharing its fabric followed: their
    # NVLink Xids are evidence of the link the first fatal Xid named (checks/nvlcascade.py).
    # First links on several trays (kernel clocks that are not one clock) each stand; a
    # follower is folded into its own tray's first link, else into the first one named.
    def fold_cascades(self) -> None:
        for rec in self.of_kind("nvldomain"):
            view = (rec.get("meta") or {}).get("cascade")
            if not isinstance(view, dict) or not view.get("origins"):
                continue
            origins: dict[str, Culprit] = {}  # tray -> its first link's culprit
            for f in _fails(rec):
                if f["code"] != "NVX-001":
                    continue
                s = f["subject"]
                key = (s.get("node"), "gpu", s.get("gpu"))
                c = self.culprits.get(key) or self.culprits.get((s.get("node"), "node"))
                if c is None:
                    continue
                c.message, c.action = f["message"], "cable"
                c.remediation = f.get("remediation") or ""
                origins.setdefault(str(s.get("node")), c)
            if not origins:
                continue
            first = origins[min(origins)]
            trays = set(view.get("trays") or ())
            mine = {id(c) for c in origins.values()}
            for key in [k for k in self.culprits if k[0] in trays and k[1] == "gpu"]:
                c = self.culprits[key]
                if id(c) in mine:
                    continue
                if c.evidence and all(
                    follows_finding(e.get("code"), e.get("message")) for e in c.evidence
                ):
                    into = origins.get(str(key[0]), first)
                    into.evidence += self.culprits.pop(key).evidence
            kept = []
            for w in self.warnings:
                s = w.get("subject") or {}
                if (
                    s.get("node") in trays
                    and s.get("gpu") is not None
                    and follows_finding(w.get("code"), w.get("message"))
                ):
                    origins.get(str(s.get("node")), first).evidence.append(w)
                else:
                    kept.append(w)
            self.warnings = kept

    # 1a. a switch's own counters: a host port's errors are that HCA's cable (merged with its
    # host-side finding); both ends of one inter-switch link are one culprit, the ISL
    def switch_ports(self) -> None:
        for rec in self.of_kind("switch"):
            for f in _fails(rec):
                s = f["subject"]
                key: Key
                if s.get("node") and s.get("hca"):
                    key = (s["node"], "hca", s["hca"])
                    kind, peer = "hca", None
                else:
                    here = f"{s.get('switch')} port {s.get('switch_port')}"
                    key = ("isl", *sorted((here, s.get("peer") or "")))
                    kind, peer = "isl", s.get("peer")
                c = self.culprits.get(key)
                if c is None:
                    c = self.culprits[key] = Culprit(
                        kind,
                        s.get("node"),
                        f["message"],
                        f.get("remediation") or "",
                        hca=s.get("hca"),
                        switch=s.get("switch"),
                        switch_port=s.get("switch_port"),
                        peer=peer,
                        action=f.get("action"),
                    )
                c.evidence.append({"step": rec["id"], **f})
            self._warn(rec)

    # 1a'. the InfiniBand fabric as a whole (the sweep): the subnet manager, a stage of
    # ibdiagnet's — one culprit per problem, on no node
    def fabric(self) -> None:
        for rec in self.of_kind("fabric"):
            for f in _fails(rec):
                kind = "sm" if f["code"] == "IBF-SM" else "fabric"
                c = self.culprits.setdefault(
                    (kind, f["code"], f["message"]),
                    Culprit(
                        kind, None, f["message"], f.get("remediation") or "", action=f.get("action")
                    ),
                )
                c.evidence.append({"step": rec["id"], **f})
            self._warn(rec)

    # 1b. cabling: one culprit per mistake; its ports' pair results are untrustworthy
    def cabling(self) -> None:
        for rec in self.of_kind("cabling"):
            for f in _fails(rec):
                s = f["subject"]
                ends = (f.get("observed") or {}).get("ends", [])
                c = Culprit(
                    "cabling",
                    s["node"],
                    f["message"],
                    f.get("remediation") or "",
                    hca=s.get("hca"),
                    switch=s.get("switch"),
                    switch_port=s.get("switch_port"),
                    peer=ends[1] if len(ends) > 1 else None,
                    action=f.get("action"),
                )
                c.evidence.append({"step": rec["id"], **f})
                self.culprits[("cabling", s["node"], s.get("hca"))] = c
                hcas = (f.get("observed") or {}).get("hcas", [[s["node"], s.get("hca")]])
                for node, hca in hcas:
                    self.miswired[(node, hca)] = c
            self._warn(rec)

    def peer_warnings(self) -> None:
        for rec in self.of_kind("peers"):
            self._warn(rec)

    def through_miswired(self, rec: dict[str, Any]) -> Culprit | None:
        m = rec.get("meta", {})
        for end in ("server", "client"):
            c = self.miswired.get((m.get(end), m.get(f"{end}_hca")))
            if c is not None:
                return c
        return None

    # 2. ERRORs: evidence for a culprit they touch, set aside when explained, else errors
    def route_errors(self) -> None:
        node_culprits = {
            k[0]
            for k in self.culprits
            if k[0] not in ("cabling", "fleet", "nvldomain", "isl", "sm", "fabric")
        }
        bad_hca = {(k[0], k[2]) for k in self.culprits if k[1] == "hca"}
        for rec in self.records:
            for f in _fails(rec, "ERROR"):
                node = rec.get("node")
                m = rec.get("meta", {})
                ends = [
                    (m.get("server"), m.get("server_hca")),
                    (m.get("client"), m.get("client_hca")),
                ]
                blamed = next((e for e in ends if e in bad_hca), None)
                wired = self.through_miswired(rec) if rec["kind"] == "pair" else None
                if wired is not None:
                    wired.evidence.append({"step": rec["id"], "untrustworthy": True, **f})
                elif rec["kind"] in ("node", "snapshot") and node in node_culprits:
                    first = next(c for k, c in self.culprits.items() if k[0] == node)
                    first.evidence.append({"step": rec["id"], **f})
                elif rec["kind"] == "pair" and blamed is not None:
                    key = (blamed[0], "hca", blamed[1])
                    self.culprits[key].evidence.append({"step": rec["id"], **f})
                elif rec["kind"] == "pair" and (
                    {m.get("server"), m.get("client")} & self.unreachable
                ):
                    continue  # explained by the unreachable node
                else:
                    self.errors.append({"step": rec["id"], **f})

    def pair_links(self) -> list[Link]:
        """The pair results not explained by node-level culprits or miswiring."""
        whole_nodes = {k[0] for k in self.culprits if k[1] == "node"} | self.unreachable
        bad_hca = {(k[0], k[2]) for k in self.culprits if k[1] == "hca"}
        links: list[Link] = []
        for rec in self.of_kind("pair"):
            m = rec["meta"]
            if {m["server"], m["client"]} & whole_nodes:
                continue
            if (m["server"], m["server_hca"]) in bad_hca or (
                m["client"],
                m["client_hca"],
            ) in bad_hca:
                continue
            wired = self.through_miswired(rec)
            if wired is not None:  # measured through a miswired port: says nothing of the HCA
                wired.evidence.append({**_pair_evidence(rec), "untrustworthy": True})
                continue
            status = "FAIL" if _fails(rec) else ("ERROR" if _fails(rec, "ERROR") else "OK")
            if status == "ERROR":  # already in errors; its ends are tested with one less
                self.errored[(m["server"], m["rail"])].append(m["client"])
                self.errored[(m["client"], m["rail"])].append(m["server"])
                continue
            links.append((m, status, rec))
        return links

    def pairs(self) -> None:
        # Bandwidth and latency are judged each among their own kind of test: a link that
        # fails both is one link, and a leaf or node that is slow is not hidden by passing
        # latency tests.
        all_links = self.pair_links()
        for metric in sorted({_metric(rec) for _m, _s, rec in all_links}):
            links = [x for x in all_links if _metric(x[2]) == metric]
            per_end: dict[tuple[str, int], list[tuple[str, bool, dict[str, Any]]]]
            per_end = defaultdict(list)
            for m, status, rec in links:
                is_fail = status == "FAIL"
                per_end[(m["server"], m["rail"])].append((m["client"], is_fail, rec))
                per_end[(m["client"], m["rail"])].append((m["server"], is_fail, rec))
            self.leaf_rule(links, per_end)
            self.node_rule(per_end)
            self.hca_rule(per_end)
            self.shared_end_rule(links)
        self.single_links(all_links)
        for _m, _status, rec in all_links:
            self._warn(rec)

    # 3. leaf: every link on a rail fails
    def leaf_rule(self, links: list[Link], per_end: dict[tuple[str, int], list[Any]]) -> None:
        by_rail: dict[int, list[tuple[bool, dict[str, Any]]]] = defaultdict(list)
        for m, status, rec in links:
            by_rail[m["rail"]].append((status == "FAIL", rec))
        for rail, rail_links in by_rail.items():
            nodes = {e[0] for e in per_end if e[1] == rail}
            if len(nodes) >= 3 and rail_links and all(f for f, _ in rail_links):
                leaf = rail_links[0][1]["meta"]["client_switch_port"].split()[0]
                c = Culprit(
                    "leaf",
                    None,
                    f"every link on rail {rail} fails: the leaf {leaf} is the common element",
                    f"check {leaf}: port speeds, QoS/PFC config, buffer drops, uplinks",
                    switch=leaf,
                )
                c.evidence = [_pair_evidence(r) for _, r in rail_links]
                self.culprits.setdefault(("leaf", rail), c)
                self.explained |= {r["id"] for _, r in rail_links}

    # 4. node failing with most partners on most rails
    def node_rule(self, per_end: dict[tuple[str, int], list[Any]]) -> None:
        rails = sorted({e[1] for e in per_end})
        for node in sorted({e[0] for e in per_end}):
            bad_rails = [
                r for r in rails if _mostly_failing(per_end.get((node, r), []), self.explained)
            ]
            if rails and len(bad_rails) > len(rails) / 2:
                node_fails = [x for r in rails for x in per_end.get((node, r), []) if x[1]]
                c = Culprit(
                    "node",
                    node,
                    f"{node} is slow with most partners on {len(bad_rails)} of {len(rails)} rails",
                    "the node itself (PCIe, NUMA, firmware, CPU "
                    "frequency): check lspci link status, mlnx_tune, BIOS settings",
                )
                c.evidence = [_pair_evidence(rec) for _, _, rec in node_fails]
                self.culprits.setdefault((node, "node"), c)
                self.explained |= {rec["id"] for _, _, rec in node_fails}

    # 5. HCA/cable failing with at least two partners, half or more of them
    def hca_rule(self, per_end: dict[tuple[str, int], list[Any]]) -> None:
        for (node, rail), items in sorted(per_end.items()):
            live_all = [x for x in items if x[2]["id"] not in self.explained]
            for metric in sorted({_metric(x[2]) for x in live_all if x[1]}):
                live = [x for x in live_all if _metric(x[2]) == metric]
                failed = [x for x in live if x[1]]
                if len({x[0] for x in failed}) < 2 or len(failed) * 2 < len(live):
                    continue
                m = failed[0][2]["meta"]
                side = "server" if m["server"] == node else "client"
                sw, port = m[f"{side}_switch_port"].split(maxsplit=1)
                hca = m[f"{side}_hca"]
                partners = ", ".join(sorted({x[0] for x in failed}))
                what, fix, action = _symptom([x[2] for x in failed])
                c = self.culprits.get((node, "hca", hca)) or Culprit(
                    "hca",
                    node,
                    f"{node}/{hca} (rail {rail}) {what} in {len(failed)} of {len(live)} tests "
                    f"with {len({x[0] for x in live})} partners ({partners})",
                    fix,
                    hca=hca,
                    switch=sw,
                    switch_port=port,
                    action=action,
                )
                c.evidence += [_pair_evidence(x[2]) for x in failed]
                self.culprits[(node, "hca", hca)] = c
                self.explained |= {x[2]["id"] for x in failed}

    # 5b. one end shared by several failing links (slow only with some partners): that end
    def shared_end_rule(self, links: list[Link]) -> None:
        open_fails = {
            rec["id"]: rec
            for _m, status, rec in links
            if status == "FAIL" and rec["id"] not in self.explained
        }
        ends = {
            i: ((r["meta"]["server"], r["meta"]["rail"]), (r["meta"]["client"], r["meta"]["rail"]))
            for i, r in open_fails.items()
        }
        for (node, rail), ids in shared_ends(ends)[0]:
            recs = [open_fails[i] for i in ids]
            m = recs[0]["meta"]
            side = "server" if m["server"] == node else "client"
            sw, port = m[f"{side}_switch_port"].split(maxsplit=1)
            hca = m[f"{side}_hca"]
            others = sorted(
                {r["meta"]["client" if r["meta"]["server"] == node else "server"] for r in recs}
            )
            what, fix, action = _symptom(recs)
            c = Culprit(
                "hca",
                node,
                f"{node}/{hca} (rail {rail}) is the common end of "
                f"{len(recs)} failing links (with {', '.join(others)}); its partners pass "
                f"with others" + ("" if what == "is slow" else f"; it {what}"),
                fix,
                hca=hca,
                switch=sw,
                switch_port=port,
                action=action,
            )
            c.evidence = [_pair_evidence(r) for r in recs]
            self.culprits.setdefault((node, "hca", hca), c)
            self.explained |= {r["id"] for r in recs}

    # 6. what is left: single links, judged once every metric has had its say
    def single_links(self, all_links: list[Link]) -> None:
        for m, status, rec in all_links:
            if status != "FAIL" or rec["id"] in self.explained:
                continue
            ends = [(m["server"], m["server_hca"]), (m["client"], m["client_hca"])]
            owner = next(
                (self.culprits[(n, "hca", h)] for n, h in ends if (n, "hca", h) in self.culprits),
                None,
            )
            if owner is not None:  # an end already blamed (by the other metric): its evidence
                owner.evidence.append(_pair_evidence(rec))
                continue
            # the partners an end lost a test with, other than this link's own other end
            # (its own errored test of the other metric says nothing of other partners)
            ends_here = {m["server"], m["client"]}
            lost = {
                n: [p for p in self.errored.get((n, m["rail"]), []) if p not in ends_here]
                for n, _ in ends
            }
            gaps = {n: p for n, p in lost.items() if p}
            if gaps:  # an end lost a test: one failing partner may be all it had left
                self.errors.append(_suspect(rec, gaps))
                continue
            c = _link_culprit(m)
            c.evidence = [_pair_evidence(rec)]
            # a link failing bandwidth and latency is one link
            key = ("link", *sorted((m["server"], m["client"])), m["rail"])
            if key in self.culprits:
                self.culprits[key].evidence += c.evidence
            else:
                self.culprits[key] = c

    # multi-node NCCL
    def nccl(self) -> None:
        for rec in self.of_kind("nccl"):
            fails = _fails(rec)
            if fails:
                self.culprits[("nccl", rec["id"])] = Culprit(
                    "nccl",
                    rec.get("node"),
                    fails[0]["message"],
                    fails[0].get("remediation") or "",
                    evidence=[{"step": rec["id"], **f} for f in fails],
                    action=fails[0].get("action"),
                )
            self._warn(rec)

    def verdict(self) -> Verdict:
        # A stable order, whatever order the steps finished in (a resumed run reports the same).
        def order(c: Culprit) -> tuple[str, str, int, str, str]:
            return (c.node or "", c.kind, -1 if c.gpu is None else c.gpu, c.hca or "", c.message)

        def by_step(f: dict[str, Any]) -> tuple[str, str, str]:
            return (f.get("subject", {}).get("node") or "", f["code"], f["step"])

        return Verdict(
            sorted(self.culprits.values(), key=order),
            sorted(self.errors, key=by_step),
            sorted(self.warnings, key=by_step),
        )


CABLE_FIX = (
    "reseat or replace the cable/transceiver of this HCA and check the switch port; then re-test"
)
LATENCY_FIX = (
    "latency through this port is high with every partner: check its switch port (buffers, "
    "QoS/ECN marking, a congested or mis-routed path), the HCA's firmware and its NUMA "
    "placement; then re-test"
)
JUMBO_FIX = (
    "a hop drops jumbo frames: set the switch port MTU >= host MTU + 18 (C-22) and the "
    "host interface MTU to the design's (C-23, role net_mtu); then re-test"
)


def _symptom(recs: list[dict[str, Any]]) -> tuple[str, str, str]:
    """What the failing links have in common: only the jumbo ping failed, or bandwidth;
    its fix, and that fix's group."""
    codes = {f["code"] for r in recs for f in _fails(r)}
    if codes == {"C-25"}:
        return "drops jumbo frames (C-25)", JUMBO_FIX, "switch"
    if codes == {"PERF-002"}:
        worst_us = max(
            (r["meta"].get("lat_us") or 0 for r in recs if r["meta"].get("lat_us") is not None),
            default=0,
        )
        return f"has high latency (up to {worst_us:.2f} us)", LATENCY_FIX, "switch"
    return "is slow", CABLE_FIX, "cable"


End = tuple[str, int]  # a link's end: (node, rail)


def shared_ends(links: dict[str, tuple[End, End]]) -> tuple[list[tuple[End, list[str]]], list[str]]:
    """The ends shared by several of these links (failing, or stragglers), most shared
    first: each takes its links, and what is left is links alone. The rule every finding
    about a link goes through, so one slow HCA is named once and its partners never."""
    left = dict(links)
    groups: list[tuple[End, list[str]]] = []
    while left:
        count: dict[End, list[str]] = defaultdict(list)
        for i, (a, b) in left.items():
            count[a].append(i)
            count[b].append(i)
        end, ids = max(count.items(), key=lambda kv: (len(kv[1]), kv[0]))
        if len(ids) < 2:
            break
        groups.append((end, ids))
        for i in ids:
            del left[i]
    return groups, list(left)


def _link_culprit(m: dict[str, Any]) -> Culprit:
    return Culprit(
        "link",
        m["client"],
        f"{m['client']}/{m['client_hca']} ↔ {m['server']}/"
        f"{m['server_hca']} (rail {m['rail']}) fails, both ends pass with "
        f"other partners",
        "re-test both ends against known-good partners "
        "(rackops validate --pairing suspects) to tell which cable",
        hca=m["client_hca"],
        switch=m["client_switch_port"].split()[0],
        switch_port=m["client_switch_port"].split(maxsplit=1)[1],
        peer=f"{m['server']}/{m['server_hca']} [{m['server_switch_port']}]",
    )


def _suspect(rec: dict[str, Any], gaps: dict[str, list[str]]) -> dict[str, Any]:
    """A failing link whose ends are not fully tested (a pair test of theirs could not run):
    suspected, not blamed. It leaves the verdict undecided rather than naming a culprit."""
    m = rec["meta"]
    lost = "; ".join(
        f"{n}'s test with {', '.join(sorted(p))} could not run" for n, p in gaps.items()
    )
    return {
        "step": rec["id"],
        "code": "PAIR-SUSPECT",
        "status": "ERROR",
        "subject": {
            "node": m["client"],
            "hca": m["client_hca"],
            "peer": f"{m['server']}/{m['server_hca']}",
        },
        "message": (
            f"{m['client']}/{m['client_hca']} ↔ {m['server']}/{m['server_hca']} "
            f"(rail {m['rail']}) fails and {lost}: which end is at fault is not known"
        ),
        "remediation": "suspected, re-test: rackops validate --pairing suspects --suspects "
        + ",".join(sorted({m["server"], m["client"]})),
        "evidence": [_pair_evidence(rec)],
    }


def _metric(rec: dict[str, Any]) -> str:
    return str(rec["meta"].get("metric") or "bw")


def _mostly_failing(items: list[tuple[str, bool, dict[str, Any]]], explained: set[str]) -> bool:
    live = [x for x in items if x[2]["id"] not in explained]
    failed = [x for x in live if x[1]]
    return len(live) >= 2 and len(failed) * 2 > len(live)


def _pair_evidence(rec: dict[str, Any]) -> dict[str, Any]:
    m = rec["meta"]
    return {
        "step": rec["id"],
        "server": f"{m['server']}/{m['server_hca']}",
        "client": f"{m['client']}/{m['client_hca']}",
        "rail": m["rail"],
        "bw_gbps": m.get("bw_gbps"),
        "lat_us": m.get("lat_us"),
        "status": next((f["status"] for f in rec["findings"] if f["status"] != "OK"), "OK"),
    }


def failing_nodes(records: list[dict[str, Any]]) -> set[str]:
    """Nodes to leave out of multi-node NCCL: anything already blamed or unreachable."""
    v = localise(records)
    out = {c.node for c in v.culprits if c.node and c.kind in ("node", "gpu", "hca", "cabling")}
    out |= {r["node"] for r in records if r["kind"] == "unreachable"}
    out |= {e["subject"]["node"] for e in v.errors if e.get("subject", {}).get("node")}
    return {n for n in out if n}
