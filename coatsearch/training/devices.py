"""The device check: a device name parsed (any machine) or checked against this machine's devices."""

from __future__ import annotations

import torch

from coatsearch.errors import UserError


def parse_device(name: str) -> torch.device:
    """The device `name` (cpu, cuda, cuda:N, mps) names, not checked against this machine (a Ray driver without a
    GPU sends trials to nodes with one); a UserError for anything else."""
    try:
        dev = torch.device(name)
    except (RuntimeError, ValueError, TypeError) as err:
        raise UserError(f"unknown device {name!r}: {err}") from None
    if dev.type not in ("cpu", "cuda", "mps"):
        raise UserError(f"device {name!r} is not supported (use auto, cpu, cuda or cuda:N)")
    return dev


def pick_device(name: str | None) -> torch.device:
    """ "auto"/None: CUDA when available, else CPU; otherwise the named device, if this machine has it.

    The one device check (`--device`, `device=` of the API, `load_weights`): anything else is a one-line UserError
    naming the devices this machine has.
    """
    if name in (None, "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0  # no driver: 0, never an error
    except RuntimeError:
        count = 0
    mps = torch.backends.mps.is_available()
    here = (
        "auto, cpu"
        + (", cuda" + "".join(f", cuda:{i}" for i in range(count)) if count else "")
        + (", mps" if mps else "")
    )
    if not isinstance(name, str):
        raise UserError(f"device: {name!r} is not allowed; allowed here: {here}")
    try:
        dev = torch.device(name)
    except (RuntimeError, ValueError):
        raise UserError(f"device {name!r} is unknown; allowed here: {here}") from None
    if dev.type == "cuda" and (dev.index or 0) >= count:
        raise UserError(
            f"device {name!r} is not available (this machine has {count} CUDA devices); allowed here: {here}"
        )
    if (dev.type == "mps" and not mps) or dev.type not in ("cpu", "cuda", "mps"):
        raise UserError(f"device {name!r} is not available; allowed here: {here}")
    return dev
