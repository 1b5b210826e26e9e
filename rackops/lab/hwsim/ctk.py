"""nvidia-ctk: the container toolkit's runtime configuration."""

from __future__ import annotations

import os
import sys


def nvidia_ctk(node, args):
    if "--version" in args or "-v" in args:
        sys.stdout.write("NVIDIA Container Toolkit CLI version 1.17.8\ncommit: rackops-lab\n")
        return 0
    if args[:2] == ["runtime", "configure"]:
        runtime = next((a.split("=", 1)[1] for a in args if a.startswith("--runtime=")), "docker")
        default = {
            "containerd": "/etc/containerd/conf.d/99-nvidia.toml",
            "crio": "/etc/crio/crio.conf.d/99-nvidia.toml",
        }.get(runtime, "/etc/docker/daemon.json")
        path = next(
            (a.split("=", 1)[1] for a in args if a.startswith(("--drop-in-config=", "--config="))),
            default,
        )
        name = next(
            (a.split("=", 1)[1] for a in args if a.startswith("--nvidia-runtime-name=")), "nvidia"
        )
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(
                '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.%s]\n'
                '  runtime_type = "io.containerd.runc.v2"\n'
                '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.%s.options]\n'
                '  BinaryName = "/usr/bin/nvidia-container-runtime"\n' % (name, name)
            )
        sys.stderr.write("INFO[0000] Wrote updated config to %s\n" % path)
        return 0
    if args[:2] == ["cdi", "generate"]:
        path = next((a.split("=", 1)[1] for a in args if a.startswith("--output=")), None)
        text = "cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n" + "".join(
            '- name: "%d"\n' % g for g in node.gpus()
        )
        if path:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text)
        else:
            sys.stdout.write(text)
        return 0
    sys.stderr.write("nvidia-ctk: unsupported command in the lab: %s\n" % " ".join(args))
    return 1
