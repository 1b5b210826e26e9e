"""What the lab changes on the machine outside its containers, and how ``down`` undoes it.

Rootful netavark leaves behind, after its last network is removed: its iptables chains
and jump rules, ``net.ipv4.ip_forward=1`` and the ``/run/netns`` bind mount. ``up``
records the state before it starts; ``down`` removes exactly what was not there.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
from pathlib import Path

TABLES = ("filter", "nat")
FORWARD = Path("/proc/sys/net/ipv4/ip_forward")


def _rules(table: str) -> list[str]:
    if shutil.which("iptables") is None:
        return []
    proc = subprocess.run(
        ["iptables", "-w", "-t", table, "-S"], capture_output=True, text=True, check=False
    )
    return proc.stdout.splitlines() if proc.returncode == 0 else []


def _netns_mounted() -> bool:
    try:
        return any(
            line.split()[4] == "/run/netns"
            for line in Path("/proc/self/mountinfo").read_text().splitlines()
        )
    except OSError:
        return False


def snapshot(path: Path) -> None:
    if path.exists():  # the first snapshot is the machine as it was
        return
    data = {
        "rules": {t: _rules(t) for t in TABLES},
        "ip_forward": FORWARD.read_text().strip() if FORWARD.exists() else None,
        "netns_mounted": _netns_mounted(),
    }
    path.write_text(json.dumps(data, indent=1))


def restore(path: Path) -> list[str]:
    """Undo what the lab's networking added; returns what it undid."""
    if not path.exists():
        return []
    before = json.loads(path.read_text())
    undone = []
    for table in TABLES:
        old = set(before["rules"].get(table, []))
        now = _rules(table)
        for rule in now:
            if rule.startswith("-A ") and rule not in old and "NETAVARK" in rule:
                subprocess.run(
                    ["iptables", "-w", "-t", table, "-D", *shlex.split(rule)[1:]],
                    capture_output=True,
                    check=False,
                )
                undone.append(f"{table}: {rule}")
        for rule in now:
            if rule.startswith("-N ") and rule not in old and "NETAVARK" in rule:
                chain = rule.split()[1]
                subprocess.run(
                    ["iptables", "-w", "-t", table, "-F", chain], capture_output=True, check=False
                )
                subprocess.run(
                    ["iptables", "-w", "-t", table, "-X", chain], capture_output=True, check=False
                )
                undone.append(f"{table}: chain {chain}")
    fwd = before.get("ip_forward")
    if fwd is not None and FORWARD.exists() and FORWARD.read_text().strip() != fwd:
        FORWARD.write_text(fwd + "\n")
        undone.append(f"net.ipv4.ip_forward={fwd}")
    if not before.get("netns_mounted") and _netns_mounted():
        left = list(Path("/run/netns").iterdir()) if Path("/run/netns").is_dir() else []
        if not left:
            subprocess.run(["umount", "/run/netns"], capture_output=True, check=False)
            undone.append("umount /run/netns")
    path.unlink()
    return undone
