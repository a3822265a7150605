"""Step-level learning curves on fixed data: when a run is measured, what a point holds, when a run may stop.

A point is measured in eval mode without augmentation, at step 0 (initialization) and every `eval_every`
optimizer steps, always including the last: plain cross-entropy and accuracy on a fixed probe of the
training subset (the "training loss" of CoAtNet's generalization definition), on the study's fixed test images
and on its validation images (subsets.split). Measuring never draws from a random generator, so a run's trajectory
is the same with or without it.

Matched-loss runs (a train-loss ladder given) also measure dense points where the ladder is crossed: a point
whenever the running mean of the last DENSE_WINDOW batch losses (free: the loop has them) has fallen by
DENSE_RATIO since the previous point, from DENSE_RATIO^2 above the top rung until a point measures below
DENSE_RATIO under the rung below the lowest.
Two measured points close in loss then bracket every reading (papers.measures.crossing censors the others).
Each point also records its lr phase: the lr of the step just taken over the peak lr (0 at step 0).
"""

from __future__ import annotations

import contextlib
import math
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import NamedTuple, Protocol

import torch
import torch.nn.functional as F
from torch import nn

from coatsearch.errors import UserError
from coatsearch.training.data import TensorData
from coatsearch.training.point import Point
from coatsearch.training.schedule import DENSE_RATIO, DENSE_WINDOW
from coatsearch.training.subsets import probe_index
from coatsearch.vocab.specs import rung_below

EVAL_BATCH_CUDA = 2048  # images per evaluation batch on CUDA (the models are small: the largest batch is fastest)


@dataclass(frozen=True)
class Evaluation:
    """The (loss, acc) pairs on the test images and on the validation images at one step; None without them."""

    test: LossAcc | None = None
    val: LossAcc | None = None  # the test pair again when the run has no validation images apart

    @property
    def test_loss(self) -> float | None:
        """Cross-entropy on the test images (nats)."""
        return self.test.loss if self.test else None

    @property
    def test_acc(self) -> float | None:
        """Accuracy on the test images (a fraction)."""
        return self.test.acc if self.test else None

    @property
    def val_loss(self) -> float | None:
        """Cross-entropy on the validation images (nats)."""
        return self.val.loss if self.val else None

    @property
    def val_acc(self) -> float | None:
        """Accuracy on the validation images (a fraction)."""
        return self.val.acc if self.val else None


class Dense:
    """When a matched-loss run measures a point between the regular ones (see the module docstring).

    The batch-loss estimate (train mode, before each step) sits off the probe's eval-mode loss, so only its
    ratio to the estimate at the previous point is trusted; whether the run is still above the ladder's
    bottom is read from the probe loss measured there.
    """

    def __init__(self, levels: Sequence[float]):
        self.top, self.bottom = max(levels) * DENSE_RATIO**2, rung_below(levels) / DENSE_RATIO
        self.window: deque[float] = deque(maxlen=DENSE_WINDOW)
        self.last = math.inf  # the estimate at the previous point
        self.probe = math.inf  # the probe loss measured there

    @property
    def estimate(self) -> float:
        """Running mean of the last DENSE_WINDOW batch losses; inf until the window is full."""
        return sum(self.window) / len(self.window) if len(self.window) == DENSE_WINDOW else math.inf

    def due(self, losses: Sequence[float]) -> bool:
        """Feed the batch losses since the last call; True when a dense point is due now."""
        self.window.extend(losses)
        est = self.estimate
        return est <= self.top and self.probe > self.bottom and est * DENSE_RATIO <= self.last

    def taken(self, probe_loss: float) -> None:
        """A point (dense or regular) measured `probe_loss`: the next waits for a further DENSE_RATIO fall."""
        self.last, self.probe = self.estimate, probe_loss


@dataclass(frozen=True)
class Stop:
    """Early-stop targets, checked at each point: probe train loss <= loss, or validation accuracy >= acc."""

    loss: float | None = None  # nats
    acc: float | None = None  # fraction

    def __post_init__(self) -> None:
        if self.loss is not None and not self.loss > 0:
            raise UserError(f"stop_at_loss must be > 0 nats, got {self.loss}")
        if self.acc is not None and not 0 < self.acc <= 1:
            raise UserError(f"stop_at_acc must be in (0, 1], got {self.acc}")

    @property
    def active(self) -> bool:
        """Whether any target is set."""
        return self.loss is not None or self.acc is not None

    def reached(self, p: Point) -> bool:
        """Whether point `p` meets a target."""
        if self.loss is not None and p.train_loss <= self.loss:
            return True
        return self.acc is not None and p.val_acc is not None and p.val_acc >= self.acc


def autocast(device: torch.device) -> AbstractContextManager[object]:
    """bf16 autocast on CUDA; nothing elsewhere."""
    if device.type == "cuda":
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext()


@contextlib.contextmanager
def full_precision(device: torch.device) -> Iterator[None]:
    """fp32 without TF32 (what measuring runs in): on CUDA cuDNN's convolutions and cuBLAS's matmuls may otherwise
    round fp32 inputs to TF32 (10-bit mantissa); restored on exit. Nothing to do elsewhere."""
    if device.type != "cuda":
        yield
        return
    back = torch.backends
    if hasattr(back.cudnn, "conv") and hasattr(back.cuda.matmul, "fp32_precision"):  # torch >= 2.9: the new API only
        saved = (back.cudnn.conv.fp32_precision, back.cuda.matmul.fp32_precision)
        back.cudnn.conv.fp32_precision, back.cuda.matmul.fp32_precision = "ieee", "ieee"
        try:
            yield
        finally:
            back.cudnn.conv.fp32_precision, back.cuda.matmul.fp32_precision = saved
        return
    old = (back.cudnn.allow_tf32, back.cuda.matmul.allow_tf32)
    back.cudnn.allow_tf32 = back.cuda.matmul.allow_tf32 = False
    try:
        yield
    finally:
        back.cudnn.allow_tf32, back.cuda.matmul.allow_tf32 = old


def channels_last(device: torch.device) -> torch.memory_format:
    """The memory format models and batches use: channels_last on CPU and CUDA (faster convolutions there)."""
    return torch.channels_last if device.type in ("cpu", "cuda") else torch.contiguous_format


def eval_batch(device: torch.device, train_batch: int) -> int:
    """Images per evaluation batch: twice the training batch on CPU, EVAL_BATCH_CUDA (at least that) on CUDA.

    On one CPU thread (C-C-T-T and C-C-C-C of paper_layouts, eval mode, contiguous or channels_last, no_grad
    or inference_mode; shared machine) batches of 256 ran 370-620 img/s, 1,000 ran 160-330 and 2,000
    120-290: larger batches fall out of cache, so the CPU keeps the small batch.
    """
    return max(2 * train_batch, EVAL_BATCH_CUDA) if device.type == "cuda" else 2 * train_batch


class LossAcc(NamedTuple):
    """A model's mean cross-entropy and accuracy (a fraction) on a set of images."""

    loss: float
    acc: float


def _pair(loss: float | None, acc: float | None) -> LossAcc | None:
    """A measured (loss, acc) pair; None where the point has none."""
    return None if loss is None or acc is None else LossAcc(loss, acc)


@torch.inference_mode()
def eval_tensors(model: nn.Module, x: torch.Tensor, y: torch.Tensor, batch_size: int, pad: bool = False) -> LossAcc:
    """(mean cross-entropy, accuracy) of `model` on device tensors: eval mode, inference_mode, channels_last
    batches, fp32 on every device (no autocast, no TF32: `full_precision`), one sync at the end.

    fp32 because a bf16 logit of 10-20 is rounded to 0.06-0.125, about 0.03 nats an image at the ladder's 0.1-nat
    rungs: measured points mean the same on CPU and CUDA, while training runs bf16 autocast on CUDA.

    `pad`: every batch has `batch_size` rows, the last one filled with zero images that are not counted, so a
    compiled model sees one input shape (each new shape is a recompile of every compiled region; in eval mode
    rows do not interact, so the counted rows are unchanged).
    """
    was_training = model.training
    model.eval()
    loss = torch.zeros((), device=x.device)
    hits = torch.zeros((), device=x.device, dtype=torch.int64)
    cl = channels_last(x.device)
    with full_precision(x.device):
        for i in range(0, len(y), batch_size):
            xb, yb = x[i : i + batch_size], y[i : i + batch_size]
            if pad and len(yb) < batch_size:
                xb = torch.cat([xb, xb.new_zeros((batch_size - len(yb), *xb.shape[1:]))])
            logits = model(xb.contiguous(memory_format=cl)).float()[: len(yb)]
            loss += F.cross_entropy(logits, yb, reduction="sum")
            hits += (logits.argmax(1) == yb).sum()
    model.train(was_training)
    n = max(1, len(y))
    return LossAcc(loss.item() / n, hits.item() / n)


class _Measured(Protocol):
    """What a Meter reads of a training run: the model to evaluate, its device tensors, batch and device."""

    @property
    def eval_model(self) -> nn.Module: ...

    x: torch.Tensor
    y: torch.Tensor
    batch: int
    device: torch.device
    mode: str  # "eager" until the run's model is compiled (speed.compile_model's modes after)

    def lr_phase(self, step: int) -> float: ...


class Meter:
    """Measures the curve points of a training run (anything with eval_model, x, y, batch, device)."""

    def __init__(
        self,
        run: _Measured,
        evaluate: TensorData | None,
        probe: int,
        stop: Stop,
        on_point: Callable[[int, Point], None] | None,
        levels: Sequence[float] | None = None,
        validate: TensorData | None = None,
    ):
        """`evaluate`: the test images; `validate`: the validation images (None: `evaluate` serves as both)."""
        self.run, self.stop, self.on_point = run, stop, on_point
        self.dense = Dense(levels) if levels else None
        self.batch = eval_batch(run.device, run.batch)
        keep = probe_index(run.y.cpu(), probe).to(run.device)
        self.px, self.py = run.x[keep], run.y[keep]
        self.ex: torch.Tensor | None = None
        self.ey: torch.Tensor | None = None
        if evaluate is not None:
            self.ex, self.ey = evaluate.x.to(run.device), evaluate.y.to(run.device)
        self.vx: torch.Tensor | None = None
        self.vy: torch.Tensor | None = None
        if validate is not None:
            self.vx, self.vy = validate.x.to(run.device), validate.y.to(run.device)
        self.points: list[Point] = []
        self.reached = False

    @property
    def padded(self) -> bool:
        """Whether evaluation batches are padded to one shape: once the run's model is compiled."""
        return self.run.mode != "eager"

    def evaluate(self) -> Evaluation:
        """The test and validation pairs now: all None without an eval set; the validation pair repeats the test
        pair when the run has no validation images apart."""
        if self.ex is None or self.ey is None:
            return Evaluation()
        test = eval_tensors(self.run.eval_model, self.ex, self.ey, self.batch, self.padded)
        if self.vx is None or self.vy is None:
            return Evaluation(test, test)
        return Evaluation(test, eval_tensors(self.run.eval_model, self.vx, self.vy, self.batch, self.padded))

    def eval_at(self, step: int) -> Evaluation:
        """`evaluate` after `step` steps, reusing the curve point measured there if any."""
        last = self.points[-1] if self.points else None
        if last and last.step == step:
            return Evaluation(_pair(last.eval_loss, last.eval_acc), _pair(last.val_loss, last.val_acc))
        return self.evaluate()

    def feed(self, losses: torch.Tensor) -> bool:
        """Batch losses since the last call (one sync on CUDA); True when a dense point is due."""
        return self.dense is not None and self.dense.due(losses.tolist())

    def __call__(self, step: int) -> bool:
        """Measure a point after `step` steps; True when a stop target is reached (never at step 0)."""
        probe = eval_tensors(self.run.eval_model, self.px, self.py, self.batch, self.padded)
        ev = self.evaluate()
        p = Point(step, *probe, ev.test_loss, ev.test_acc, self.run.lr_phase(step), ev.val_loss, ev.val_acc)
        self.points.append(p)
        if self.dense is not None:
            self.dense.taken(p.train_loss)
        if self.on_point is not None:
            self.on_point(step, p)
        self.reached = step > 0 and self.stop.reached(p)
        return self.reached
