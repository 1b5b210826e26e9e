"""What the lab benches share: a playbook run against the bench's lab."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / ".venv" / "bin"


def playbook(inv: Path, play: str, *extra: str, forks: int = 16) -> bool:
    """``ansible-playbook -i INV playbooks/PLAY``; False (its output's tail on stderr) if it
    failed."""
    proc = subprocess.run(
        [str(BIN / "ansible-playbook"), "-i", str(inv), f"playbooks/{play}", "-f", str(forks),
         *extra],
        cwd=ROOT, capture_output=True, text=True, timeout=3600, check=False,
    )  # fmt: skip
    if proc.returncode != 0:
        print(proc.stdout[-2000:], file=sys.stderr)
    return proc.returncode == 0
