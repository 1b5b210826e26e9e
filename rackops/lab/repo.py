"""Stand-in vendor repository: small .deb packages with the real names and versions.

Installing one puts the matching hwsim programs in place (``infiniband-diags`` →
``ibstat``, ``nvidia-utils-<br>-server`` → ``nvidia-smi``, …), so install roles run
for real against apt and validation finds what was installed. Built with
``dpkg-deb`` and indexed with ``dpkg-scanpackages``; targets read it as a flat
``file:`` repository mounted read-only (they have no other apt source).
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from rackops.errors import RackopsError
from rackops.inventory.model import Versions
from rackops.tools import package_binaries

HWSIM = Path(__file__).with_name("hwsim")  # the package, copied whole to HWSIM_DIR/hwsim
HWSIM_DIR = "/usr/lib/rackops-hwsim"
# how a wrapper (and a postinst) runs one simulated tool
HWSIM_RUN = f"env PYTHONPATH={HWSIM_DIR} python3 -m hwsim"
# The simulated /sys and /proc of the HCAs, NUMA nodes and IRQs (rackops_hw_root in the lab)
HW_ROOT = "/var/lib/rackops-hwsim/root"


def _divert(tools: tuple[str, ...]) -> str:
    """postinst lines that divert each OS program (to <path>.distrib where dpkg has it:
    /bin or /usr/bin) and put the package's wrapper in its place."""
    return "\n".join(
        f'for d in /bin/{t} /usr/bin/{t}; do if dpkg-query -S "$d" >/dev/null 2>&1; then '
        f'dpkg-divert --package rackops-hwsim --add --rename --divert "$d.distrib" "$d"; '
        f"fi; done\nln -sf {HWSIM_DIR}/bin/{t} /usr/bin/{t}"
        for t in tools
    )


@dataclass(frozen=True)
class Package:
    name: str
    version: str
    tools: tuple[str, ...] = ()
    depends: tuple[str, ...] = ()
    description: str = ""
    units: tuple[tuple[str, str], ...] = ()  # (unit name, daemon binary it runs)
    postinst: str = ""
    sbin: bool = False  # tools go to /usr/sbin (ethtool) instead of /usr/bin
    divert: bool = False  # tools replace the OS's own (dpkg-divert), from HWSIM_DIR/bin


def packages(versions: Versions) -> list[Package]:
    """The package set for the pinned versions, plus one older driver branch to upgrade from.
    Which programs each package holds is the tool registry's (``Binary.package``); the
    daemons (fabric manager, persistenced) are services, not tools rackops reads."""
    ofed = versions.ofed
    rdma = f"2507mlnx{ofed.replace('-', '.').replace('.', '')[:8]}-1"
    out = [
        Package(
            "rackops-hwsim",
            "1.0",
            package_binaries("util-linux"),
            description="simulated GPU and RDMA hardware for the lab",
            # the kernel log: every target shares this machine's one kernel, so its real
            # ring buffer is nobody's node; dmesg is diverted to the simulated one, as a
            # vendor package diverts a program it replaces (dpkg-divert)
            postinst=_divert(package_binaries("util-linux")),
            divert=True,
        ),
        Package(
            "infiniband-diags",
            rdma,
            package_binaries("infiniband-diags"),
            ("rackops-hwsim",),
            "InfiniBand diagnostic programs",
        ),
        Package(
            "ibutils2",
            f"2.1.1-0.{ofed.split('-')[-1]}",
            package_binaries("ibutils2"),
            ("rackops-hwsim",),
            "InfiniBand fabric diagnostic utilities (ibdiagnet)",
        ),
        Package(
            "ibverbs-utils",
            rdma,
            package_binaries("ibverbs-utils"),
            ("rackops-hwsim",),
            "examples for the libibverbs library",
        ),
        Package(
            "perftest",
            f"25.07.0-0.{ofed.split('-')[-1]}",
            package_binaries("perftest"),
            ("rackops-hwsim",),
            "InfiniBand verbs performance tests",
        ),
        Package(
            "mlnx-tools",
            f"{ofed.split('-')[0]}.0-1",
            package_binaries("mlnx-tools"),
            ("rackops-hwsim",),
            "Mellanox userland tools and scripts",
        ),
        Package(
            "mlnx-ethtool",
            "6.9-1.2507097",
            package_binaries("mlnx-ethtool"),
            ("rackops-hwsim",),
            "ethtool with the mlx5 counters and module EEPROM decode",
            sbin=True,
        ),
        Package(
            "mft",
            "4.33.0-169",
            package_binaries("mft"),
            ("rackops-hwsim",),
            "NVIDIA firmware tools (mlxlink: link, BER and module diagnostics)",
        ),
        Package(
            "mlnx-ofed-kernel-utils",
            ofed,
            package_binaries("mlnx-ofed-kernel-utils"),
            ("rackops-hwsim",),
            "userspace tools to restart and tune mlx5 and OFED",
            # the driver's sysfs (ECN, NUMA, MSI-X IRQs) appears with the simulated HCAs
            postinst=f"{HWSIM_RUN} hw-tree {HW_ROOT}",
        ),
        Package(
            "doca-ofed",
            ofed,
            (),
            (
                "infiniband-diags",
                "ibutils2",
                "ibverbs-utils",
                "perftest",
                "mlnx-tools",
                "mlnx-ethtool",
                "mft",
                f"mlnx-ofed-kernel-utils (= {ofed})",
            ),
            "DOCA-OFED meta package",
        ),
        Package(
            f"datacenter-gpu-manager-{versions.dcgm.split('.')[0]}-cuda13",
            f"1:{versions.dcgm}-1",
            package_binaries("datacenter-gpu-manager"),
            ("rackops-hwsim",),
            "NVIDIA Datacenter GPU Manager",
            (("nvidia-dcgm.service", "nv-hostengine"),),
        ),
        Package(  # the OS's packages, whose programs read the (simulated) PCIe and SMBIOS
            "pciutils",
            "1:3.13.0-2",
            package_binaries("pciutils"),
            ("rackops-hwsim",),
            "PCI utilities",
        ),
        Package(
            "dmidecode",
            "3.6-1",
            package_binaries("dmidecode"),
            ("rackops-hwsim",),
            "SMBIOS/DMI table decoder",
            sbin=True,
        ),
        Package(
            "nccl-tests",
            "2.17.6-1",
            package_binaries("nccl-tests"),
            ("rackops-hwsim",),
            "NCCL tests",
        ),
        Package(
            "nvidia-container-toolkit",
            "1.17.8-1",
            package_binaries("nvidia-container-toolkit"),
            ("rackops-hwsim",),
            "NVIDIA Container toolkit",
        ),
    ]
    drivers = [versions.driver]
    older = {"580": "570.172.08", "570": "550.163.01"}.get(versions.branch)
    if older:
        drivers.append(older)
    for drv in drivers:
        br = drv.split(".")[0]
        v = f"{drv}-0ubuntu1"
        out += [
            Package(
                f"nvidia-utils-{br}-server",
                v,
                package_binaries("nvidia-utils"),
                ("rackops-hwsim",),
                "NVIDIA Server Driver support binaries",
            ),
            Package(
                f"nvidia-driver-{br}-server-open",
                v,
                (),
                (f"nvidia-utils-{br}-server (= {v})",),
                "NVIDIA driver (open kernel modules)",
            ),
            Package(
                f"nvidia-driver-{br}-server",
                v,
                (),
                (f"nvidia-utils-{br}-server (= {v})",),
                "NVIDIA driver (proprietary kernel modules)",
            ),
            Package(  # a GB200/GB300 tray's IMEX (NVIDIA's CUDA repository: nvidia-imex-<branch>)
                f"nvidia-imex-{br}",
                v,
                (*package_binaries("nvidia-imex"), "nvidia-imex"),
                ("rackops-hwsim",),
                "NVIDIA IMEX: memory export across a multi-node NVLink domain",
                (("nvidia-imex.service", "nvidia-imex"),),
                postinst=f"{HWSIM_RUN} imex-tree {HW_ROOT}",
            ),
            Package(
                f"nvidia-fabricmanager-{br}",
                v,
                ("nv-fabricmanager",),
                (f"nvidia-utils-{br}-server (= {v})",),
                "Fabric Manager for NVSwitch",
                (("nvidia-fabricmanager.service", "nv-fabricmanager"),),
            ),
            Package(
                f"nvidia-compute-utils-{br}-server",
                v,
                ("nvidia-persistenced",),
                (f"nvidia-utils-{br}-server (= {v})",),
                "NVIDIA compute utilities",
                (("nvidia-persistenced.service", "nvidia-persistenced"),),
            ),
        ]
    return out


DAEMONS = ("nv-fabricmanager", "nvidia-persistenced", "nv-hostengine", "nvidia-imex")


def _wrapper(tool: str) -> str:
    if tool in DAEMONS:
        return f"#!/bin/sh\n# rackops lab stand-in: {tool} daemon\nexec sleep infinity\n"
    return f'#!/bin/sh\n# rackops lab stand-in: simulated hardware\nexec {HWSIM_RUN} {tool} "$@"\n'


def build_repo(dest: Path, versions: Versions) -> list[Package]:
    """Build every package into ``dest`` and index it; idempotent."""
    for tool in ("dpkg-deb", "dpkg-scanpackages"):
        if shutil.which(tool) is None:
            raise RackopsError(f"{tool} not found: install dpkg-dev (apt-get install dpkg-dev)")
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    work = dest / ".build"
    pkgs = packages(versions)
    for pkg in pkgs:
        root = work / f"{pkg.name}_{pkg.version}"
        (root / "DEBIAN").mkdir(parents=True)
        control = [
            f"Package: {pkg.name}",
            f"Version: {pkg.version}",
            "Architecture: all",
            "Maintainer: rackops lab <lab@rackops.invalid>",
            "Section: misc",
            "Priority: optional",
        ]
        if pkg.depends:
            control.append("Depends: " + ", ".join(pkg.depends))
        control.append(f"Description: {pkg.description or pkg.name} (rackops lab stand-in)")
        (root / "DEBIAN" / "control").write_text("\n".join(control) + "\n")
        if pkg.postinst:
            script = root / "DEBIAN" / "postinst"
            script.write_text(f"#!/bin/sh\nset -e\n{pkg.postinst}\n")
            script.chmod(0o755)
        if pkg.name == "rackops-hwsim":
            target = root / HWSIM_DIR.lstrip("/")
            target.mkdir(parents=True)
            shutil.copytree(HWSIM, target / "hwsim", ignore=shutil.ignore_patterns("__pycache__"))

        for unit, daemon in pkg.units:
            d = root / "lib" / "systemd" / "system"
            d.mkdir(parents=True, exist_ok=True)
            (d / unit).write_text(
                f"[Unit]\nDescription={daemon} (rackops lab stand-in)\n\n"
                f"[Service]\nExecStart=/usr/bin/{daemon}\n\n"
                "[Install]\nWantedBy=multi-user.target\n"
            )
        for tool in pkg.tools:
            b = root / "usr" / ("sbin" if pkg.sbin else "bin")
            if pkg.divert:
                b = root / HWSIM_DIR.lstrip("/") / "bin"
            b.mkdir(parents=True, exist_ok=True)
            (b / tool).write_text(_wrapper(tool))
            (b / tool).chmod(0o755)
        subprocess.run(
            [
                "dpkg-deb",
                "--build",
                "--root-owner-group",
                "-Zgzip",
                str(root),
                str(dest / f"{pkg.name}_{pkg.version.replace(':', '%3a')}_all.deb"),
            ],
            check=True,
            capture_output=True,
        )
    shutil.rmtree(work)
    index = subprocess.run(
        ["dpkg-scanpackages", "--multiversion", "."],
        cwd=dest,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    (dest / "Packages").write_text(index)
    sign_repo(dest, dest.parent / "gnupg")
    return pkgs


KEYRING = "rackops-lab-archive-keyring.gpg"  # in the repository, as vendors publish theirs
TARGET_REPO = "/srv/rackops-repo"  # where targets see the repository (read-only)
# the one apt source line every lab target gets (podman image, nspawn base)
APT_SOURCE = f"deb [signed-by={TARGET_REPO}/{KEYRING}] file:{TARGET_REPO} ./"
KEY_UID = "rackops lab stand-in repository <lab@rackops.invalid>"


def _gpg(home: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        ["gpg", "--batch", "--yes", "--homedir", str(home), "--pinentry-mode", "loopback",
         "--passphrase", "", *args],
        input=stdin, capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    if proc.returncode != 0:
        raise RackopsError(f"gpg {args[0]} failed: {proc.stderr.strip()[-300:]}")
    return proc


def sign_repo(dest: Path, home: Path) -> None:
    """A Release file over Packages, signed (InRelease and Release.gpg) with the lab's own
    key, and that key's public keyring beside it: targets use the repository with
    `signed-by=` exactly as they would a vendor's, and apt verifies every index it reads.
    The key is made once per lab directory and never leaves it."""
    import hashlib
    from email.utils import formatdate

    if shutil.which("gpg") is None:
        raise RackopsError("gpg not found: install gnupg (apt-get install gnupg)")
    home.mkdir(mode=0o700, exist_ok=True)
    if not _gpg(home, "--list-secret-keys", "--with-colons").stdout.strip():
        _gpg(home, "--quick-generate-key", KEY_UID, "rsa3072", "sign", "never")
    data = (dest / "Packages").read_bytes()
    release = "\n".join(
        [
            "Origin: rackops-lab",
            "Label: rackops lab stand-in vendor repository",
            "Suite: stable",
            "Codename: rackops-lab",
            f"Date: {formatdate(usegmt=True)}",
            "Architectures: all amd64 arm64",
            "SHA256:",
            f" {hashlib.sha256(data).hexdigest()} {len(data)} Packages",
            "",
        ]
    )
    (dest / "Release").write_text(release)
    _gpg(home, "--clearsign", "-o", str(dest / "InRelease"), str(dest / "Release"))
    _gpg(home, "--detach-sign", "-o", str(dest / "Release.gpg"), str(dest / "Release"))
    _gpg(home, "--export", "-o", str(dest / KEYRING), KEY_UID)
