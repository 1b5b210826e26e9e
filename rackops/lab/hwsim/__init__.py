"""hwsim: the GPU and RDMA hardware of a lab target, simulated in the tools' real formats.

Installed in lab targets as the package /usr/lib/rackops-hwsim/hwsim, with one wrapper per
tool (/usr/bin/ibstat → ``PYTHONPATH=/usr/lib/rackops-hwsim python3 -m hwsim ibstat "$@"``)
put in place by the stand-in vendor packages. Standard library only (it runs on the
target's python3, 3.9+).

One module per tool family over one simulated-hardware state:

* ``node``: the scenario (``/etc/rackops-hwsim/scenario.json`` or
  ``$RACKOPS_HWSIM_SCENARIO``), the node (``$RACKOPS_HWSIM_NODE`` or the hostname), its
  hardware facts and faults; fault gates and garbling shared by every tool;
* ``counters``: port counters that grow with the traffic perftest moves (and errors where
  the scenario injects them), kept in the state directory;
* ``rdma`` (ibstat, ibstatus, ibv_devinfo, show_gids, ofed_info, mlnx_qos), ``perftest``,
  ``nccl``, ``dcgm``, ``smi`` (nvidia-smi), ``ctk`` (nvidia-ctk);
* ``phy`` (perfquery, ethtool -S / -m, mlxlink) and ``fabric`` (iblinkinfo, ibnetdiscover);
* ``tree``: the simulated sysfs and procfs laid out at install.
"""
