"""``host-tuning``: rackops' read-back of the host tuning the roles set (config.md §2.4,
§3-§5), printed by :data:`SCRIPT` (POSIX sh, run over SSH as
``sh -c SCRIPT host-tuning HW_ROOT NETDEV...``; HW_ROOT is empty on real hosts)::

    # rackops host-tuning 1
    mtu enp24s0np0 9000
    sys enp24s0np0 ecn/roce_np/enable/3 1
    sys enp24s0np0 ecn/roce_np/cnp_dscp 48
    sys enp24s0np0 device/numa_node 0
    sys enp24s0np0 device/local_cpulist 0-15
    irq enp24s0np0 101 0
    hugepages node0 1048576 2
    hugepages total 1048576 4
    irqbalance inactive
    end

A missing interface reads ``mtu <if> -``; a file the driver does not have is simply
absent (the checks say what they could not verify). Without the closing ``end`` line the
output was cut off: ParseError, never a partial result that looks whole.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rackops.parsers._common import MAX_COUNT, ParseError

SCRIPT = r"""r=$1; shift
echo "# rackops host-tuning 1"
for nd in "$@"; do
  echo "mtu $nd $(cat /sys/class/net/$nd/mtu 2>/dev/null || echo -)"
  d=$r/sys/class/net/$nd
  # the PCI function: the netdev's device, or its parent where that is a virtio device
  p=$d/device; [ -d "$p/msi_irqs" ] || [ ! -d "$p/../msi_irqs" ] || p=$p/..
  for f in "$d"/ecn/roce_np/enable/* "$d"/ecn/roce_rp/enable/* "$d"/ecn/roce_np/cnp_dscp \
      "$d"/ecn/roce_np/cnp_802p_prio; do
    [ -r "$f" ] && echo "sys $nd ${f#$d/} $(cat "$f")"
  done
  for f in numa_node local_cpulist; do
    [ -r "$p/$f" ] && echo "sys $nd device/$f $(cat "$p/$f")"
  done
  if [ -d "$p/msi_irqs" ]; then
    for irq in $(ls "$p/msi_irqs" | sort -n); do
      echo "irq $nd $irq $(cat "$r/proc/irq/$irq/smp_affinity_list" 2>/dev/null || echo -)"
    done
  fi
done
for h in "$r"/sys/devices/system/node/node*/hugepages/hugepages-*kB/nr_hugepages; do
  [ -r "$h" ] || continue
  n=${h#"$r"/sys/devices/system/node/}; n=${n%%/*}
  s=${h%kB/nr_hugepages}; s=${s##*hugepages-}
  echo "hugepages $n $s $(cat "$h")"
done
for h in "$r"/sys/kernel/mm/hugepages/hugepages-*kB/nr_hugepages; do
  [ -r "$h" ] || continue
  s=${h%kB/nr_hugepages}; s=${s##*hugepages-}
  echo "hugepages total $s $(cat "$h")"
done
echo "irqbalance $(systemctl is-active irqbalance 2>/dev/null | head -n1)"
echo end
"""


@dataclass(frozen=True)
class Netdev:
    name: str
    mtu: int | None  # None: the interface does not exist
    sysfs: dict[str, str] = field(default_factory=dict)  # ecn/..., device/... -> value
    irqs: dict[int, str] = field(default_factory=dict)  # MSI-X IRQ -> smp_affinity_list

    @property
    def ecn(self) -> bool:
        return any(k.startswith("ecn/") for k in self.sysfs)


@dataclass(frozen=True)
class HostTuning:
    netdevs: dict[str, Netdev]
    hugepages: dict[str, dict[int, int]]  # "node0" | "total" -> page size kB -> pages
    irqbalance: str | None  # active | inactive | failed | ... ; None: no systemd


def _int(text: str, line: str) -> int:
    try:
        return int(text)
    except ValueError as exc:
        raise ParseError(f"expected an integer in {line!r}") from exc


def parse_host_tuning(text: str) -> HostTuning:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if not lines or not lines[0].startswith("# rackops host-tuning"):
        raise ParseError("not a rackops host-tuning read-back (no '# rackops host-tuning' header)")
    if lines[-1] != "end":
        raise ParseError("cut off: no closing 'end' line")
    mtus: dict[str, int | None] = {}
    sysfs: dict[str, dict[str, str]] = {}
    irqs: dict[str, dict[int, str]] = {}
    pages: dict[str, dict[int, int]] = {}
    irqbalance: str | None = None
    for line in lines[1:-1]:
        kind, _, rest = line.partition(" ")
        parts = rest.split()
        if kind == "mtu" and len(parts) == 2:
            mtus[parts[0]] = None if parts[1] == "-" else _int(parts[1], line)
        elif kind == "sys" and len(parts) >= 2:
            sysfs.setdefault(parts[0], {})[parts[1]] = " ".join(parts[2:])
        elif kind == "irq" and len(parts) == 3:
            irqs.setdefault(parts[0], {})[_int(parts[1], line)] = parts[2]
        elif kind == "hugepages" and len(parts) == 3:
            pages.setdefault(parts[0], {})[_int(parts[1], line)] = _int(parts[2], line)
        elif kind == "irqbalance":
            irqbalance = rest.strip() or None
        else:
            raise ParseError(f"unexpected line {line!r}")
    netdevs = {nd: Netdev(nd, mtu, sysfs.get(nd, {}), irqs.get(nd, {})) for nd, mtu in mtus.items()}
    return HostTuning(netdevs, pages, irqbalance)


def cpus(cpulist: str) -> set[int]:
    """``0-3,8`` → {0, 1, 2, 3, 8}; ParseError on anything else."""
    out: set[int] = set()
    for part in cpulist.strip().split(","):
        lo, _, hi = part.partition("-")
        try:
            a, b = int(lo), int(hi or lo)
        except ValueError as exc:
            raise ParseError(f"not a CPU list: {cpulist!r}") from exc
        if not 0 <= a <= b <= MAX_COUNT or len(out) + b - a > MAX_COUNT:
            raise ParseError(f"not a CPU list within 0..{MAX_COUNT} (MAX_COUNT): {cpulist[:80]!r}")
        out.update(range(a, b + 1))
    return out
