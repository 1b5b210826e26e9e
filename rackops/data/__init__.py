"""The engine's data, shipped in the wheel: switch and report templates, hardware profiles,
suites, and the playbooks and roles `rackops provision` runs. In a checkout each entry is a
symlink to its top-level directory (templates/, validators/, playbooks/, roles/), so there is
one copy; a built wheel carries the files themselves. Found with importlib.resources, never
by walking up from a source file."""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def path(name: str) -> Path:
    """The directory of one data entry (templates, profiles, suites, playbooks, roles)."""
    found = resources.files(__name__) / name
    p = Path(str(found))
    if not p.is_dir():
        raise FileNotFoundError(f"rackops data {name!r} is missing from this install ({p})")
    return p
