"""Per-GPU compute and memory figures (dcgmproftester -t 1004 / -t 1005): each GPU's steady
figure against the profile's floor; a healthy GPU's figure is an OK finding with its unit,
so the peer gate compares it with every other GPU of the rack."""

from __future__ import annotations

from typing import Any

from rackops.findings import Finding, Status, Subject

# test id -> (code, what, unit, the profile's floor key, how the figure is scaled)
TESTS = {
    1004: ("GEMM", "FP16 GEMM", "TFLOPS", "gemm_tflops_min", 1e-3),  # gflops -> TFLOPS
    1005: ("HBM", "memory bandwidth", "GB/s", "hbm_gbs_min", 1.0),  # 10^9 B/s read+write
}


def check_proftester(
    parsed: Any, test: int, node: str | None, gpus: int, limits: Any = None
) -> list[Finding]:
    """``parsed``: a ``ProfTester``; ``gpus``: how many GPUs the node should have; ``limits``:
    the profile's ``load`` section (None: no floor, the peer gate only)."""
    code, what, unit, key, scale = TESTS[test]
    subj = Subject(node=node)
    if not parsed.complete:
        return [
            Finding(
                f"{code}-000",
                Status.ERROR,
                subj,
                f"dcgmproftester -t {test} output is not whole: {'; '.join(parsed.errors[:3])}",
                remediation="check DCGM and the CUDA driver on the node (dcgmi discovery -l); "
                "rerun",
            )
        ]
    out = []
    floor = getattr(limits, key, None) if limits is not None else None
    seen = set(parsed.gpus(test))
    for g in range(gpus):
        gsubj = Subject(node=node, gpu=g, bus_id=parsed.bus_ids.get(g))
        raw = parsed.figure(test, g) if g in seen else None
        if raw is None:
            out.append(  # a WARN: a GPU the driver does not list is the inventory's FAIL
                Finding(
                    f"{code}-001",
                    Status.WARN,
                    gsubj,
                    f"no {what} reading for GPU {g} (dcgmproftester -t {test} ran no worker on it)",
                    remediation="check the GPU is visible to CUDA (nvidia-smi, dcgmi discovery "
                    "-l) and not held by another process",
                )
            )
            continue
        value = round(raw * scale, 1)
        n = len(parsed.values(test, g))
        if floor is not None and value < floor:
            out.append(
                Finding(
                    f"{code}-002",
                    Status.FAIL,
                    gsubj,
                    f"{what} {value:g} {unit} (median of the last half of {n} readings), below "
                    f"the {floor:g} {unit} floor",
                    value,
                    floor,
                    unit,
                    "check the GPU's clocks and throttle reasons under load (cooling, power), "
                    "its PCIe/NVLink errors and ECC; reseat or RMA if it stays low",
                )
            )
            continue
        out.append(
            Finding(
                f"{code}-OK",
                Status.OK,
                gsubj,
                f"{what} {value:g} {unit} (median of the last half of {n} readings)",
                value,
                floor,
                unit,
            )
        )
    return out
