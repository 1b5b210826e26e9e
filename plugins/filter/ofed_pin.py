"""rackops.rackops.ofed_pin: whether ``ofed_info -s`` output is the pinned OFED, by the very
rule ``rackops validate`` holds the node to (``rackops.checks.host.check_ofed``: the version
equals the pin, or the pin names it with trailing fields left out), so the ofed role never
passes a node that validate then FAILs.

    that: (__ofed_info.stdout | rackops.rackops.ofed_pin(ofed_version)).ok
"""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError


def ofed_pin(output: Any, pinned: Any) -> dict[str, Any]:
    try:
        from rackops.checks.host import check_ofed
        from rackops.findings import Status
        from rackops.parsers import ParseError
        from rackops.parsers.ofed_info import parse_ofed_info
    except ImportError as exc:
        raise AnsibleFilterError(
            "rackops.rackops.ofed_pin needs the rackops Python package on the controller "
            f"(pip install rackops): {exc}"
        ) from None
    text, pin = str(output or ""), str(pinned)
    try:
        parsed = parse_ofed_info(text)
    except ParseError as exc:
        return {"ok": False, "installed": None, "message": f"ofed_info -s: {exc}; pinned {pin}"}
    (finding,) = check_ofed(parsed, pin)
    return {
        "ok": finding.status is Status.OK,
        "installed": parsed.version,
        "message": finding.message,
    }


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"ofed_pin": ofed_pin}
