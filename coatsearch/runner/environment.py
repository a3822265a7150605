"""The environment a worker trains in: hardware and library versions, stored with every trial it runs."""

from __future__ import annotations

import os
import platform
import socket
from pathlib import Path
from types import MappingProxyType
from typing import Any

import optuna

from coatsearch.storage import record as R
from coatsearch.version import __version__


def probe(device: Any) -> R.Environment:
    """Hardware and library versions, stored with every trial."""
    import timm
    import torch

    return R.Environment(
        device=str(device),
        host=socket.gethostname(),
        pid=os.getpid(),
        python=platform.python_version(),
        platform=platform.platform(),
        cpu=_cpu_name(),
        cpu_count=os.cpu_count(),
        torch_threads=torch.get_num_threads(),
        gpu=torch.cuda.get_device_name(device) if device.type == "cuda" else None,
        cpu_kernels=torch.backends.cpu.get_cpu_capability(),  # CPUs that dispatch differently round differently
        versions=MappingProxyType(
            {
                "coatsearch": __version__,
                "torch": torch.__version__,
                "timm": timm.__version__,
                "optuna": optuna.__version__,
            }
        ),
    )


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"
