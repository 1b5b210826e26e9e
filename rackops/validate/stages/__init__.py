"""The stages of a run, one module each over one shared state (``base.StageBase``):
``nodes`` (per-node checks), ``pairs`` (RDMA pair rounds), ``nccl`` (multi-node NCCL);
the physical layer's cabling and port snapshots are ``rackops.validate.physical``.
``rackops.validate.runner.Runner`` is all of them, run in order."""
