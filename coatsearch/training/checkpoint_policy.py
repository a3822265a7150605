"""A trial's checkpointing as data: where its checkpoints go and how often (Policy), and its training runs so far
(Trial); no torch here. training.checkpoint saves and restores the runs' state (`checkpoint.saver`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Policy:
    """Where one trial's checkpoints go and how often: every `every` steps of runs of `min_steps` steps or more."""

    folder: Path
    every: int = 500
    min_steps: int = 2000
    on_save: Callable[[Path, int], None] | None = None  # told (folder, step) after each save (Ray's checkpoints)
    root: Path | None = None  # the study folder: each save checks every component below it (fsafe.owned)


@dataclass
class Trial:
    """One trial's checkpointing: its policy, how many training runs started, which resumed (fit, step)."""

    policy: Policy
    fits: int = 0
    resumed: list[dict[str, int]] = field(default_factory=list)

    def next_fit(self, total: int) -> int | None:
        """Count the trial's next training run of `total` steps: its number k (its file is `fit<k>.safetensors`),
        or None when it is shorter than `min_steps` (it saves nothing)."""
        self.fits += 1  # every run counts, so the k-th run is the same one when the trial runs again
        return self.fits if total >= self.policy.min_steps else None
