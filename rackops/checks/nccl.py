"""nccl-tests gates: sanity first (complete, #wrong 0, no failure lines), then busbw at
the pinned sizes — never the sweep average."""

from __future__ import annotations

from collections.abc import Sequence

from rackops.findings import Finding, Status, Subject
from rackops.parsers.nccl_tests import NcclTests
from rackops.profiles import Profile


def check_nccl(
    parsed: NcclTests,
    profile: Profile,
    *,
    node: str | None = None,
    gate_sizes_bytes: Sequence[int] | None = None,
    multi_node: bool | None = None,
) -> list[Finding]:
    hosts = sorted({r.host for r in parsed.ranks})
    subj = Subject(node=node or (",".join(hosts) if hosts else None))
    if parsed.errors:
        return [
            Finding(
                "NCCL-000",
                Status.ERROR if not parsed.rows else Status.FAIL,
                subj,
                f"{parsed.collective or 'nccl-tests'} failed: " + " | ".join(parsed.errors[:3]),
                remediation="read the NCCL WARN line: a network error names the peer "
                "and GID; rerun with NCCL_DEBUG=INFO",
            )
        ]
    if not parsed.complete:
        return [
            Finding(
                "NCCL-000",
                Status.ERROR,
                subj,
                "nccl-tests output is incomplete: "
                + ("; ".join(parsed.cut) or "no summary or 'concluded' line"),
                remediation="the run was cut short: check the job's time limit and rerun",
            )
        ]
    out: list[Finding] = []
    wrong = [
        (r.bytes, p.wrong)
        for r in parsed.rows
        for p in (r.out_of_place, r.in_place)
        if p is not None and p.wrong
    ]
    if wrong or (parsed.out_of_bounds or 0) > 0:
        where = ", ".join(f"{b} B: {w}" for b, w in wrong) or "see summary"
        out.append(
            Finding(
                "NCCL-001",
                Status.FAIL,
                subj,
                f"wrong results ({where}); out of bounds {parsed.out_of_bounds}",
                parsed.out_of_bounds,
                0,
                "values",
                "data corruption: run dcgmi diag -r 3 on every node of the run",
            )
        )
        return out
    if multi_node is None:
        multi_node = len(hosts) > 1
    if not multi_node and len(parsed.ranks) == 1 and profile.gpu.count > 1:
        return [
            Finding(
                "NCCL-003",
                Status.FAIL,
                subj,
                f"{parsed.collective or 'the collective'} ran on 1 GPU of the "
                f"{profile.gpu.count} profile {profile.name} has: a single-node run uses "
                "every GPU (-g N), or a GPU is not visible to CUDA",
                1,
                profile.gpu.count,
                "GPUs",
                "run it with -g set to the node's GPU count; if it was, check nvidia-smi "
                "and CUDA_VISIBLE_DEVICES",
            )
        ]
    if not multi_node and len(parsed.ranks) == 1:
        # one rank (-g 1) on a one-GPU node: the collective moves no data between GPUs,
        # busbw is 0 by definition; it shows NCCL and CUDA ran and the results are right
        return [
            Finding(
                "NCCL-1GPU",
                Status.OK,
                subj,
                f"one GPU: {parsed.collective or 'the collective'} ran for correctness only "
                f"(no wrong value at {len(parsed.rows)} sizes); its bus bandwidth is 0 by "
                "definition with one rank, so it is not gated",
            )
        ]
    floor = (
        profile.thresholds.nccl_multi_node_busbw_gbs_min
        if multi_node
        else profile.thresholds.nccl_single_node_busbw_gbs_min
    )
    sizes = list(gate_sizes_bytes or [max(r.bytes for r in parsed.rows)])
    mode = "multi" if multi_node else "single"
    return out + [_gate(parsed, size, floor, mode, subj) for size in sizes]


def _gate(parsed: NcclTests, size: int, floor: float, mode: str, subj: Subject) -> Finding:
    """busbw at one pinned size (the worse of out-of-place and in-place) against the floor."""
    row = parsed.row_at(size)
    if row is None:
        have = ", ".join(str(r.bytes) for r in parsed.rows)
        return Finding(
            "NCCL-000",
            Status.ERROR,
            subj,
            f"no result at the pinned size {size} B (have {have})",
            None,
            size,
            "bytes",
            f"run with -b {size} -e {size} or wider",
        )
    busbw = min(p.busbw_gbs for p in (row.out_of_place, row.in_place) if p is not None)
    if busbw < floor:
        return Finding(
            "NCCL-002",
            Status.FAIL,
            subj,
            f"busbw {busbw:.2f} GB/s at {size} B < floor {floor:g} GB/s ({mode}-node)",
            busbw,
            floor,
            "GB/s",
            "multi-node: localise with pairwise ib_write_bw; single node: "
            "check NVLink (nvidia-smi nvlink -s) and fabric manager",
        )
    return Finding(
        "NCCL-OK", Status.OK, subj, f"busbw {busbw:.2f} GB/s at {size} B", busbw, floor, "GB/s"
    )
