"""rackops.rackops.mlnx_qos_drift: where each interface's live ``mlnx_qos -i IF`` output is
not the host's designed QoS (trust, PFC vector, every DSCP→priority entry), read by the
very parser and rule ``rackops validate`` uses (``rackops.checks.host.qos_drift``), so the
roce_host_qos role repairs exactly what validate would name.

    (__mlnx_qos.results | rackops.rackops.mlnx_qos_drift(pfc, dscp2prio)) | length > 0

Input: the results of a command task looped over the interfaces (``item`` the interface,
``stdout`` its mlnx_qos output). Output: one line per difference, naming the interface.
"""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError


def mlnx_qos_drift(results: Any, pfc: Any, dscp2prio: Any) -> list[str]:
    try:
        from rackops.checks.host import qos_drift
        from rackops.parsers import ParseError
        from rackops.parsers.mlnx_qos import parse_mlnx_qos
    except ImportError as exc:
        raise AnsibleFilterError(
            "rackops.rackops.mlnx_qos_drift needs the rackops Python package on the "
            f"controller (pip install rackops): {exc}"
        ) from None
    try:
        vector = [int(f) for f in str(pfc).split(",")]
        design = {int(d): int(p) for d, p in dscp2prio}
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError(
            f"mlnx_qos_drift: the design is not a PFC vector and [dscp, priority] pairs: {exc}"
        ) from None
    if len(vector) != 8:
        raise AnsibleFilterError(f"mlnx_qos_drift: PFC vector {pfc!r} has not 8 flags")
    out = []
    for r in results or []:
        if not isinstance(r, dict) or "stdout" not in r:
            continue  # skipped (not run in this play)
        netdev = str(r.get("item"))
        try:
            parsed = parse_mlnx_qos(str(r["stdout"]))
        except ParseError as exc:
            raise AnsibleFilterError(f"{netdev}: mlnx_qos output unreadable: {exc}") from None
        out += [
            f"{netdev}: {what} {live}, designed {want}"
            for what, live, want in qos_drift(parsed, vector, design)
        ]
    return out


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"mlnx_qos_drift": mlnx_qos_drift}
