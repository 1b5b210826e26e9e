"""Container engine plumbing for the lab: podman (default) or docker, one CLI call each.

podman needs two project-local settings on hosts like the CI machine (runc instead of
crun on a hybrid cgroup layout; ulimits at or below the host's hard limits) and keeps
its images under the lab directory; both files are written by :func:`Engine.configure`.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rackops.errors import RackopsError

LABEL = "io.rackops.lab"


class LabError(RackopsError):
    """The lab could not be brought up, inspected or torn down."""


@dataclass
class Engine:
    name: str  # "podman" | "docker"
    workdir: Path
    env: dict[str, str] = field(default_factory=dict)

    def configure(self) -> None:
        if shutil.which(self.name) is None:
            hint = "apt-get install podman runc" if self.name == "podman" else "install docker"
            raise LabError(f"{self.name} not found on PATH: {hint}")
        if self.name != "podman":
            return
        conf = self.workdir / "containers.conf"
        conf.write_text(
            "# written by rackops lab: runc (crun refuses hybrid cgroups), ulimits within\n"
            "# the host's hard limits (root may lack CAP_SYS_RESOURCE)\n"
            "[containers]\n"
            'default_ulimits = ["nofile=20000:20000", "nproc=20000:20000"]\n'
            "[engine]\n"
            'runtime = "runc"\n'
            "[network]\n"
            'network_backend = "netavark"\n'
        )
        storage = self.workdir / "storage.conf"
        storage.write_text(
            "[storage]\n"
            'driver = "overlay"\n'
            f'graphroot = "{self.workdir / "storage"}"\n'
            f'runroot = "{self.workdir / "runroot"}"\n'
        )
        self.env = {"CONTAINERS_CONF": str(conf), "CONTAINERS_STORAGE_CONF": str(storage)}

    def run(
        self,
        args: Sequence[str],
        *,
        check: bool = True,
        input_bytes: bytes | None = None,
        timeout: float = 600,
    ) -> subprocess.CompletedProcess[str]:
        cmd = [self.name, *args]
        try:
            proc = subprocess.run(
                cmd,
                env={**os.environ, **self.env},
                input=input_bytes.decode("latin-1") if input_bytes is not None else None,
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise LabError(f"{' '.join(cmd[:3])} … did not finish in {timeout:g} s") from exc
        if check and proc.returncode != 0:
            msg = (proc.stderr or proc.stdout).strip().splitlines()
            raise LabError(
                f"{' '.join(cmd[:4])} … failed ({proc.returncode}): "
                f"{msg[-1] if msg else 'no output'}"
            )
        return proc

    def image_exists(self, image: str) -> bool:
        if self.name == "podman":
            return self.run(["image", "exists", image], check=False).returncode == 0
        return self.run(["image", "inspect", image], check=False).returncode == 0

    def import_rootfs(self, tarball: Path, image: str) -> None:
        with tarball.open("rb") as fh:
            proc = subprocess.run(
                [self.name, "import", "-", image],
                stdin=fh,
                env={**os.environ, **self.env},
                capture_output=True,
                text=True,
                check=False,
            )
        if proc.returncode != 0:
            raise LabError(f"{self.name} import failed: {proc.stderr.strip()[-300:]}")

    def containers(self, lab: str) -> list[str]:
        proc = self.run(
            ["ps", "-a", "--filter", f"label={LABEL}={lab}", "--format", "{{.Names}}"], check=False
        )
        return [n for n in proc.stdout.split() if n]

    def networks(self, prefix: str) -> list[str]:
        proc = self.run(["network", "ls", "--format", "{{.Name}}"], check=False)
        return [n for n in proc.stdout.split() if n.startswith(prefix)]


def wait_ssh(port: int, deadline: float, host: str = "127.0.0.1") -> bool:
    """Whether an SSH server answers (its banner) on host:port before ``deadline``."""
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, port), timeout=1) as s:
                s.settimeout(1)
                if s.recv(4).startswith(b"SSH"):
                    return True
        except OSError:
            pass
        time.sleep(0.1)
    return False
