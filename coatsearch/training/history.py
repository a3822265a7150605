"""What one training run returns and how it fails: per-epoch stats, the History, non-finite loss and metric checks."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from coatsearch.training.point import Curve


class NonFinite(RuntimeError):
    """A loss or metric of a trial is NaN or infinite; the message starts with 'non-finite' and names it."""


class NonFiniteLoss(NonFinite):
    """`what` (the training loss by default) became NaN or infinite at (0-based) `epoch` [, `step`]."""

    def __init__(self, epoch: int, step: int | None, what: str = "loss"):
        where = f"epoch {epoch}" + (f", step {step}" if step is not None else "")
        super().__init__(f"non-finite {what} at {where}")
        self.epoch, self.step, self.what = epoch, step, what

    def __reduce__(self) -> tuple:
        return type(self), (self.epoch, self.step, self.what)  # it crosses process boundaries (spawned pilots)


def check_finite(metrics: Mapping[str, Any]) -> None:
    """Raise NonFinite for the first NaN or infinite number among a trial's metrics (scalars and lists of them)."""
    for key, value in metrics.items():
        for x in value if isinstance(value, list | tuple) else [value]:
            if isinstance(x, int | float) and not isinstance(x, bool) and not math.isfinite(x):
                raise NonFinite(f"non-finite metric {key} = {x}")


def finite_pair(pair: tuple[float, float], epoch: int, what: str) -> tuple[float, float]:
    """(loss, accuracy) unchanged if both are finite; NonFiniteLoss naming `what` otherwise."""
    for value, kind in zip(pair, ("loss", "accuracy"), strict=True):
        if not math.isfinite(value):
            raise NonFiniteLoss(epoch, None, f"{what} {kind} ({value})")
    return pair


@dataclass(frozen=True)
class EpochStats:
    """One epoch: running means over its (augmented) batches, then evaluation on the held-out data."""

    train_loss: float  # mean of the optimized loss (with mixup / label smoothing) over the epoch's batches
    train_acc: float  # fraction of the epoch's batch images whose argmax is the true label
    eval_loss: float | None  # plain cross-entropy on `evaluate` (the test images), eval mode; None without it
    eval_acc: float | None
    seconds: float  # training time of the epoch (evaluation and curve points excluded)
    images_per_s: float  # training images per second of the epoch
    val_loss: float | None = None  # on `validate` (what pruning reads); `evaluate`'s values when fit got none
    val_acc: float | None = None


@dataclass(frozen=True)
class History:
    """A whole run: one tuple entry per epoch, a step-level `curve`, and a clean pass over the training set.

    The last epoch is partial when a `max_steps` budget or an early stop ends the run inside it.

    `final_train_loss` is that clean pass (plain cross-entropy, no augmentation, no mixup, no label
    smoothing, BatchNorm in eval mode): the "final train loss" of CoAtNet's generalization comparison,
    comparable with the eval loss. It is the curve's last point (the fixed probe of up to PROBE_MAX
    training images, measured after the last step), or a pass over up to CLEAN_TRAIN_MAX training images
    when the run has no curve. The running means of the last epoch stay in `train_loss[-1]`.

    An epoch's eval loss and accuracy are measured when `on_epoch` listens (a pruner) and after the last
    epoch; otherwise they are None (the curve holds the measurements).
    """

    train_loss: tuple[float, ...]
    train_acc: tuple[float, ...]
    eval_loss: tuple[float | None, ...]
    eval_acc: tuple[float | None, ...]
    seconds: tuple[float, ...]
    images_per_s: tuple[float, ...]
    clean_train_loss: float | None  # None when fit ran with measure_train=False
    clean_train_acc: float | None
    steps: int  # optimizer steps taken
    compiled: bool  # whether the model ran under torch.compile
    curve: Curve = Curve()  # step-level points on the fixed probe and eval set (see coatsearch.training.curves)
    stopped: str | None = None  # with a stop target: "target" (reached) or "cap" (the step budget ran out)
    steps_per_epoch: int = 0
    compile_mode: str = "eager"  # how the run ended up running: eager, regional, compiled, captured, compiled+captured
    val_loss: tuple[float | None, ...] = ()  # per epoch, on the validation images (when eval_loss is measured)
    val_acc: tuple[float | None, ...] = ()
    fallback: str | None = None  # a compile or capture error the run went on eagerly after: mode, step, error

    @property
    def final_train_loss(self) -> float | None:
        """Clean eval-mode cross-entropy on the training set after the last epoch."""
        return self.clean_train_loss

    @property
    def final_train_acc(self) -> float | None:
        """Clean eval-mode accuracy on the training set after the last epoch."""
        return self.clean_train_acc

    @property
    def final_eval_loss(self) -> float | None:
        """Eval loss after the last epoch (None without evaluation data)."""
        return self.eval_loss[-1] if self.eval_loss else None

    @property
    def final_eval_acc(self) -> float | None:
        """Eval accuracy after the last epoch (None without evaluation data)."""
        return self.eval_acc[-1] if self.eval_acc else None

    @property
    def total_seconds(self) -> float:
        """Training time over all epochs (evaluation excluded)."""
        return sum(self.seconds)
