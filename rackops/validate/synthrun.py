"""A synthetic run directory of any size, in the records ``rackops validate`` writes: what
the report's tests and benchmarks read at 1,024 nodes, where no lab runs.

Every node: its node checks, 8 GPUs under load (GEMM and HBM against their floors), 8 cabled
ports with counter deltas; three sampled pair rounds on 8 rails (bandwidth and latency);
the run's peer gates. The figures scatter around healthy values (seeded), and a few faults
of each fix group are planted, so the report has stragglers and culprits to draw and name.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from rackops.findings import Finding, Status, Subject
from rackops.validate.plan import random_matchings

RAILS = 8
GPUS = 8
BW_FLOOR, LAT_CEILING, GEMM_FLOOR, HBM_FLOOR = 360.0, 2.5, 600.0, 1905.0
NODE_TOOLS = ("ibstat", "ofed_info", "nvidia-smi-xml", "nvidia-smi-nvlink", "dcgmi-diag")


def node_name(i: int) -> str:
    return f"node{i + 1:04d}"


def leaf_port(node: str, rail: int) -> tuple[str, str]:
    """Where a node's HCA of a rail is cabled: 32 nodes a leaf, one leaf a rail each (the
    design of rackops.validate.synthscale: node0001..node0032 on leaf group 0)."""
    n = int(node[4:]) - 1
    return f"leaf{rail}-{n // 32}", str(n % 32 + 1)


def _f(
    code: str,
    ok: bool,
    subject: dict[str, Any],
    observed: Any = None,
    expected: Any = None,
    unit: str | None = None,
    message: str = "",
    remediation: str = "",
    action: str | None = None,
) -> dict[str, Any]:
    status = Status.OK if ok else Status.FAIL
    return Finding(
        code,
        status,
        Subject(**subject),
        message or code,
        observed,
        expected,
        unit,
        remediation,
        action=None if ok else action,
    ).as_dict()


def planted(nodes: int) -> list[dict[str, Any]]:
    """The faults a run of ``nodes`` nodes has planted, spread over the rack, each as the
    culprit the report must name (its kind, node, HCA or GPU, and fix group)."""
    k = max(1, nodes // 8)

    def name(i: int) -> str:
        return node_name(i % nodes)

    return [  # slow with every partner on rail 2; port Polling; GEMM low; errors under load
        {"fault": "slow_cable", "kind": "hca", "node": name(5), "hca": "mlx5_2", "gpu": None,
         "action": "cable"},
        {"fault": "dead_hca", "kind": "hca", "node": name(k + 1), "hca": "mlx5_6", "gpu": None,
         "action": "cable"},
        {"fault": "weak_gpu", "kind": "gpu", "node": name(2 * k + 2), "hca": None, "gpu": 3,
         "action": "gpu"},
        {"fault": "noisy_port", "kind": "hca", "node": name(3 * k + 3), "hca": "mlx5_4",
         "gpu": None, "action": "cable"},
    ]  # fmt: skip


def make_run(
    path: Path,
    nodes: int = 1024,
    seed: int = 1,
    faults: bool = True,
    node_tools: tuple[str, ...] = NODE_TOOLS,
) -> Path:
    """Write the run directory at ``path`` (made here) and return it; ``node_tools``: the
    node checks recorded by name only (a caller writing some with their outputs leaves
    those out)."""
    rng = random.Random(seed)
    names = [node_name(i) for i in range(nodes)]
    at = {p["fault"]: p for p in planted(nodes)} if faults else {}
    slow_cable = (at["slow_cable"]["node"], 2) if faults else None
    dead_hca = at["dead_hca"]["node"] if faults else None
    weak_gpu = (at["weak_gpu"]["node"], 3) if faults else None
    noisy_port = (at["noisy_port"]["node"], "mlx5_4") if faults else None
    path.mkdir(parents=True)
    (path / "raw").mkdir()
    lines: list[dict[str, Any]] = []
    for node in names:
        lines += _node(node, rng, node_tools, dead_hca, weak_gpu, noisy_port)
    lines += _pairs(names, rng, slow_cable, dead_hca)
    lines.append(_record("peers", "peers", None, "peer-gate", [], {"limits": _limits(lines)}))
    with (path / "results.jsonl").open("w") as fh:
        fh.writelines(json.dumps(rec) + "\n" for rec in lines)
    (path / "run.json").write_text(
        json.dumps({"inventory": "synthetic", "suite": "acceptance", "started": "synthetic"})
    )
    return path


def _node(
    node: str,
    rng: random.Random,
    node_tools: tuple[str, ...],
    dead_hca: str | None,
    weak_gpu: tuple[str, int] | None,
    noisy_port: tuple[str, str] | None,
) -> list[dict[str, Any]]:
    """One node's records: its checks, its GPUs under load, its ports' counters."""
    lines: list[dict[str, Any]] = []
    for tool in node_tools:
        ok = not (tool == "ibstat" and node == dead_hca)
        finding = _f(
            "HCA-OK" if ok else "HCA-003",
            ok,
            {"node": node}
            if ok
            else dict(zip(("switch", "switch_port"), leaf_port(node, 6), strict=True))
            | {"node": node, "hca": "mlx5_6"},
            message="" if ok else "physical state Polling, expected LinkUp",
            remediation="" if ok else "Polling: no link partner — check the cable",
            action="cable",
        )
        lines.append(_record(f"node/{node}/{tool}", "node", node, tool, [finding]))
    gpu = []
    for g in range(GPUS):
        weak = (node, g) == weak_gpu
        gemm = round(rng.gauss(560 if weak else 730, 6), 1)
        hbm = round(rng.gauss(2530, 20), 1)
        subj = {"node": node, "gpu": g}
        gpu += [
            _f(
                "GEMM-OK" if gemm >= GEMM_FLOOR else "GEMM-002",
                gemm >= GEMM_FLOOR,
                subj,
                gemm,
                GEMM_FLOOR,
                "TFLOPS",
                message=f"FP16 GEMM {gemm:g} TFLOPS, below the floor {GEMM_FLOOR:g}",
                remediation="reseat the GPU; RMA if it recurs",
            ),
            _f("HBM-OK", hbm >= HBM_FLOOR, subj, hbm, HBM_FLOOR, "GB/s"),
        ]
    lines.append(_record(f"node/{node}/dcgmproftester", "node", node, "dcgmproftester", gpu))
    load = [
        f
        for g in range(GPUS)
        for f in (
            _f("LOAD-CLOCK", True, {"node": node, "gpu": g}, 1980.0, None, "MHz"),
            _f(
                "LOAD-POWER",
                True,
                {"node": node, "gpu": g},
                round(rng.gauss(590, 8)),
                None,
                "W",
            ),
        )
    ]
    lines.append(_record(f"node/{node}/gpu-samples", "node", node, "gpu-samples", load))
    ports: dict[str, dict[str, Any]] = {}
    for r in range(RAILS):
        grown = rng.random() < 0.02
        sym = 40 if (node, f"mlx5_{r}") == noisy_port else int(grown)  # noise: 0 or 1
        ports[f"mlx5_{r}"] = {
            "delta": {"symbol_errors": sym, "corrected_bits": rng.randrange(0, 5000)},
            "absolute": {"symbol_errors": sym, "corrected_bits": 0},
            "raw_ber": 1e-9,
            "effective_ber": 1e-15,
            "rx_power_dbm": [round(rng.uniform(-1.5, 1.5), 2)] * 4,
        }
    phy = [
        _f(
            "PHY-OK" if rep["delta"]["symbol_errors"] < 10 else "PHY-002",
            rep["delta"]["symbol_errors"] < 10,
            {"node": node, "hca": dev}
            | dict(zip(("switch", "switch_port"), leaf_port(node, int(dev[5:])), strict=True)),
            remediation="clean or replace the transceiver and the cable",
            action="cable",
        )
        for dev, rep in ports.items()
    ]
    lines.append(
        _record(f"phy/{node}/after", "node", node, "phy", phy, {"ports": ports, "interval_s": 60})
    )
    return lines


def _record(
    rid: str,
    kind: str,
    node: str | None,
    tool: str,
    findings: list[dict[str, Any]],
    meta: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "id": rid,
        "kind": kind,
        "node": node,
        "tool": tool,
        "findings": findings,
        "meta": meta or {},
    }


def _pairs(
    names: list[str], rng: random.Random, slow: tuple[str, int] | None, dead: str | None
) -> list[dict[str, Any]]:
    out = []
    for rnd in random_matchings(names, 3, seed=1):
        for a, b in rnd:
            for r in range(RAILS):
                meta = {
                    "server": a,
                    "client": b,
                    "rail": r,
                    "server_hca": f"mlx5_{r}",
                    "client_hca": f"mlx5_{r}",
                    "server_switch_port": " ".join(leaf_port(a, r)),
                    "client_switch_port": " ".join(leaf_port(b, r)),
                }
                down = dead in (a, b) and r == 6
                bw = round(rng.gauss(392, 1.5), 1)
                if slow and slow[0] in (a, b) and r == slow[1]:
                    bw = round(rng.gauss(170, 3), 1)
                lat = round(rng.gauss(1.95, 0.02), 2)
                subj = {"node": b, "hca": f"mlx5_{r}", "peer": f"{a}/mlx5_{r}"}
                if down:
                    bw = 0.0
                bw_f = _f(
                    "PERF-OK" if bw >= BW_FLOOR else "PERF-001",
                    bw >= BW_FLOOR,
                    subj,
                    bw,
                    BW_FLOOR,
                    "Gb/s",
                )
                lat_f = _f("PERF-OK", lat <= LAT_CEILING, subj, lat, LAT_CEILING, "us")
                out.append(
                    _record(
                        f"pair/{a}-{b}/rail{r}",
                        "pair",
                        b,
                        "perftest",
                        [bw_f],
                        meta | {"bw_gbps": bw},
                    )
                )
                out.append(
                    _record(
                        f"pair/{a}-{b}/rail{r}/lat",
                        "pair",
                        b,
                        "perftest-lat",
                        [lat_f],
                        meta | {"metric": "lat", "lat_us": lat},
                    )
                )
    return out


def _limits(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The peer gates of the figures, as the run's peer stage records them."""
    from rackops.checks.peers import gate_limit
    from rackops.validate.peergate import LOWER_IS_BETTER

    groups: dict[tuple[str, str, str], list[float]] = {}
    for rec in records:
        for f in rec["findings"]:
            if f["status"] == "OK" and isinstance(f.get("observed"), float):
                groups.setdefault((f["code"], f["unit"], rec["tool"]), []).append(f["observed"])
    out = []
    for (code, unit, tool), values in sorted(groups.items()):
        med, mad, limit = gate_limit(values, 4.0, 5.0, unit in LOWER_IS_BETTER)
        out.append(
            {
                "code": code,
                "unit": unit,
                "tool": tool,
                "profile": "",
                "median": med,
                "mad": mad,
                "limit": round(limit, 3),
            }
        )
    return out
