"""One curve point: what a training run measures after a number of optimizer steps; no torch here.

training.curves measures it, a listener (training.listeners) hears it and a checkpoint saves it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Point:
    """One measurement after `step` optimizer steps."""

    step: int
    train_loss: float  # clean cross-entropy on the probe of the training subset (nats)
    train_acc: float
    eval_loss: float | None  # on the fixed eval set (the test images); None without one
    eval_acc: float | None
    lr_phase: float = 0.0  # lr of the step just taken / peak lr (0 at step 0)
    val_loss: float | None = None  # on the validation images (the eval set itself when the run has none apart)
    val_acc: float | None = None
