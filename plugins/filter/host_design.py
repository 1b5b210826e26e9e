"""rackops.rackops.host_design: one host's computed design (MTU per interface, RoCE QoS,
tuning) from its variables, for the roles. The design is computed by the rackops Python
package (``rackops.design``), the same code lint, render and validate use, so a role never
re-derives it in Jinja.

    net_mtu_design: >-
      {{ rackops_fabric | rackops.rackops.host_design(rackops_hcas | default([]),
         rackops_host_qos | default({}), rackops_host_tuning | default({}), inventory_hostname) }}
"""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError


def _plain(value: Any) -> Any:
    """Ansible's tagged and lazy containers as plain Python values."""
    if isinstance(value, dict):
        return {_plain(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    return value


def host_design(
    fabric: Any, hcas: Any = None, qos: Any = None, tuning: Any = None, name: str = "host"
) -> dict[str, Any]:
    try:
        from rackops.design import DesignInputError, host_design_from_vars
    except ImportError as exc:
        raise AnsibleFilterError(
            "rackops.rackops.host_design needs the rackops Python package on the controller "
            f"(pip install rackops): {exc}"
        ) from None
    hostvars = {
        "rackops_fabric": _plain(fabric),
        "rackops_hcas": _plain(hcas) if hcas is not None else [],
        "rackops_host_qos": _plain(qos) if qos is not None else {},
        "rackops_host_tuning": _plain(tuning) if tuning is not None else {},
    }
    try:
        return host_design_from_vars(str(name), hostvars)
    except DesignInputError as exc:
        raise AnsibleFilterError(str(exc)) from None


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"host_design": host_design}
