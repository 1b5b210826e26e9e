"""What talks to the schedulers a rack runs under: Slurm (node states, allocation, drain,
resume) and Kubernetes (cordon, taint, uncordon). The launchers in ``rackops.validate``
run commands; this package decides what a scheduler is told about a node.
"""
