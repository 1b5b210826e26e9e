"""``host-facts``: rackops' read-back of the node facts no vendor tool prints in one place,
printed by :data:`SCRIPT` (POSIX sh, run as ``sh -c SCRIPT host-facts HW_ROOT DEV...``;
HW_ROOT is empty on real hosts)::

    # rackops host-facts 1
    kernel 6.8.0-48-generic
    os ubuntu 24.04
    hca mlx5_0 0000:1a:00.0 0
    pkg nvidia-fabricmanager-580 580.95.05-1
    pkg libnccl2 2.27.7-1+cuda13.0
    end

``hca DEV BDF NUMA``: the PCI function behind each cabled HCA (``/sys/class/infiniband/
DEV/device``) and its NUMA node, ``-`` where sysfs does not say. ``pkg NAME VERSION``: the
installed packages whose versions a fleet must share (fabric manager, NCCL, DCGM, OFED,
driver), from dpkg or rpm. Without the closing ``end`` the output was cut off: ParseError.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from rackops.parsers._common import MAX_COUNT, ParseError

SCRIPT = r"""r=$1; shift
echo "# rackops host-facts 1"
echo "kernel $(uname -r)"
( . /etc/os-release 2>/dev/null; echo "os ${ID:--} ${VERSION_ID:--}" )
for dev in "$@"; do
  d=$r/sys/class/infiniband/$dev/device
  b=$(readlink -f "$d" 2>/dev/null); b=${b##*/}
  echo "hca $dev ${b:--} $(cat "$d/numa_node" 2>/dev/null || echo -)"
done
set -f  # the package patterns below are dpkg's and rpm's, never file names here
pk='nvidia-fabricmanager* libnccl2 libnccl datacenter-gpu-manager* doca-ofed
  mlnx-ofed-kernel-utils nvidia-driver-* cuda-driver*'
if command -v dpkg-query >/dev/null 2>&1; then
  dpkg-query -W -f '${db:Status-Abbrev} ${Package} ${Version}\n' $pk 2>/dev/null |
    while read -r st name ver; do [ "$st" = ii ] && echo "pkg $name $ver"; done
elif command -v rpm >/dev/null 2>&1; then
  rpm -qa --qf 'pkg %{NAME} %{VERSION}-%{RELEASE}\n' $pk 2>/dev/null
fi
echo end
"""

_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:+~-]{0,127}")
_BDF = re.compile(r"[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]")


@dataclass(frozen=True)
class HcaPci:
    bdf: str | None  # 0000:1a:00.0; None: sysfs has no device link
    numa: int | None


@dataclass(frozen=True)
class HostFacts:
    kernel: str | None
    os: str | None
    hcas: dict[str, HcaPci] = field(default_factory=dict)
    packages: dict[str, str] = field(default_factory=dict)


def _word(text: str, what: str, n: int) -> str:
    if not _WORD.fullmatch(text):
        raise ParseError(f"line {n}: {what} {text[:40]!r} is not a name rackops reads")
    return text


def _hca(parts: list[str], n: int) -> tuple[str, HcaPci]:
    if len(parts) != 4:
        raise ParseError(f"line {n}: expected 'hca DEV BDF NUMA', found {' '.join(parts)[:80]!r}")
    dev = _word(parts[1], "HCA", n)
    bdf = None if parts[2] == "-" else parts[2].lower()
    if bdf is not None and not _BDF.fullmatch(bdf):
        raise ParseError(f"line {n}: {parts[2][:40]!r} is not a PCI address")
    numa = None if parts[3] in ("-", "-1") else parts[3]
    if numa is not None and not (numa.isdigit() and int(numa) < 4096):
        raise ParseError(f"line {n}: NUMA node {numa[:20]!r} is not a number")
    return dev, HcaPci(bdf[-12:] if bdf else None, int(numa) if numa is not None else None)


def parse_host_facts(text: str) -> HostFacts:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if not lines or not lines[0].startswith("# rackops host-facts"):
        raise ParseError("not rackops host-facts output (no '# rackops host-facts' header)")
    if lines[-1] != "end":
        raise ParseError("host-facts output has no closing 'end' line: cut off")
    kernel = os_name = None
    hcas: dict[str, HcaPci] = {}
    packages: dict[str, str] = {}
    if len(lines) > MAX_COUNT:
        raise ParseError(f"{len(lines)} lines: more than {MAX_COUNT}")
    for n, line in enumerate(lines[1:-1], 2):
        key, _, rest = line.partition(" ")
        if key == "kernel":
            kernel = _word(rest, "kernel", n)
        elif key == "os":
            os_name = " ".join(w if w == "-" else _word(w, "os", n) for w in rest.split())
        elif key == "hca":
            dev, pci = _hca(line.split(), n)
            hcas[dev] = pci
        elif key == "pkg":
            parts = rest.split()
            if len(parts) != 2:
                raise ParseError(f"line {n}: expected 'pkg NAME VERSION', found {line[:80]!r}")
            packages[_word(parts[0], "package", n)] = _word(parts[1], "version", n)
        else:
            raise ParseError(f"line {n}: unknown host-facts line {line[:60]!r}")
    return HostFacts(kernel, os_name, hcas, packages)
