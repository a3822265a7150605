"""One training run: optimizer, warmup + cosine schedule, batch augmentation, the loop, evaluation.

The loop is the same on CPU and CUDA. Data moves to the device once; batches are index selections. On CUDA
it runs bf16 autocast and channels_last, and it never syncs per step: losses and hits go into device
buffers that are read once per epoch (and every CHECK_EVERY_CUDA steps for the non-finite check).
"""

from __future__ import annotations

import contextlib
import math
import random
import sys
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from tqdm import tqdm

from coatsearch.data import TensorData
from coatsearch.errors import UserError
from coatsearch.spec import OptimSpec

CLEAN_TRAIN_MAX = 10_000  # the final clean pass over the training set uses at most this many images
CHECK_EVERY_CUDA = 32  # steps between non-finite-loss checks on CUDA (every step on CPU, where it is free)
SHIFT_FRACTION = 8  # random shifts move images by up to size // SHIFT_FRACTION pixels
JITTER = 0.2  # per-image brightness/contrast jitter, in normalized units


class NonFinite(RuntimeError):
    """A loss or metric of a trial is NaN or infinite; the message starts with 'non-finite' and names it."""


class NonFiniteLoss(NonFinite):
    """`what` (the training loss by default) became NaN or infinite at (0-based) `epoch` [, `step`]."""

    def __init__(self, epoch: int, step: int | None, what: str = "training loss"):
        where = f"epoch {epoch}" + (f", step {step}" if step is not None else "")
        super().__init__(f"non-finite {what} at {where}")
        self.epoch, self.step, self.what = epoch, step, what


def check_finite(metrics: Mapping[str, Any]) -> None:
    """Raise NonFinite for the first NaN or infinite number among a trial's metrics (scalars and lists of them)."""
    for key, value in metrics.items():
        for x in value if isinstance(value, list | tuple) else [value]:
            if isinstance(x, int | float) and not isinstance(x, bool) and not math.isfinite(x):
                raise NonFinite(f"non-finite metric {key} = {x}")


def _finite_pair(pair: tuple[float, float], epoch: int, what: str) -> tuple[float, float]:
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
    eval_loss: float | None  # plain cross-entropy on `evaluate`, eval mode; None without it
    eval_acc: float | None
    seconds: float  # training time of the epoch (evaluation excluded)
    images_per_s: float  # training images per second of the epoch


@dataclass(frozen=True)
class History:
    """A whole run, one tuple entry per epoch, plus a clean eval-mode pass over the training set at the end.

    `final_train_loss` is that clean pass (plain cross-entropy, no augmentation, no mixup, no label
    smoothing, BatchNorm in eval mode, on up to CLEAN_TRAIN_MAX training images): the "final train loss"
    of CoAtNet's generalization comparison, comparable with the eval loss. The running means of the last
    epoch stay in `train_loss[-1]`.
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


def pick_device(name: str | None) -> torch.device:
    """ "auto"/None: CUDA when available, else CPU; otherwise the named device, if this machine has it."""
    if name in (None, "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(name)
    except (RuntimeError, ValueError) as err:
        raise UserError(f"unknown device {name!r}: {err}") from err
    if dev.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if (dev.index or 0) >= count:
            raise UserError(f"device {name!r} is not available (this machine has {count} CUDA devices)")
    elif dev.type == "mps" and not torch.backends.mps.is_available():
        raise UserError(f"device {name!r} is not available")
    elif dev.type not in ("cpu", "cuda", "mps"):
        raise UserError(f"device {name!r} is not supported (use auto, cpu, cuda or cuda:N)")
    return dev


def param_groups(model: nn.Module, weight_decay: float) -> list[dict]:
    """Two optimizer groups: decayed weights (ndim > 1) and undecayed norms, biases and model.no_weight_decay().

    Frozen parameters (requires_grad False) are left out; empty groups are dropped.
    """
    skip = set(model.no_weight_decay()) if hasattr(model, "no_weight_decay") else set()
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        exempt = p.ndim <= 1 or name in skip or any(name.endswith("." + s) for s in skip)
        (no_decay if exempt else decay).append(p)
    groups = [
        {"params": decay, "weight_decay": weight_decay, "name": "decay"},
        {"params": no_decay, "weight_decay": 0.0, "name": "no_decay"},
    ]
    return [g for g in groups if g["params"]]


def make_optimizer(model: nn.Module, optim: OptimSpec) -> torch.optim.Optimizer:
    """AdamW (betas 0.9/0.999) or SGD (momentum 0.9) over `param_groups`, with fused kernels on CPU/CUDA."""
    groups = param_groups(model, optim.weight_decay)
    kind = next(model.parameters()).device.type
    fast = {"fused": True} if kind in ("cpu", "cuda") else {"foreach": True}
    if optim.optimizer == "adamw":
        return torch.optim.AdamW(groups, lr=optim.lr, betas=(0.9, 0.999), **fast)
    if optim.optimizer == "sgd":
        return torch.optim.SGD(groups, lr=optim.lr, momentum=0.9, **fast)
    raise UserError(f"unknown optimizer {optim.optimizer!r}; known: adamw, sgd")


def lr_at(step: int, total: int, warmup: int, peak: float) -> float:
    """Learning rate of 0-based `step`: linear warmup to `peak` over `warmup` steps, then cosine to 0."""
    if step < warmup:
        return peak * (step + 1) / warmup
    return 0.5 * peak * (1 + math.cos(math.pi * (step - warmup) / max(1, total - warmup)))


def augment_batch(x: torch.Tensor, gen: torch.Generator, hflip: bool = True) -> torch.Tensor:
    """Light batch augmentation: random shift (zero pad + crop), horizontal flip, brightness/contrast.

    All images in one gather; the zero padding is the dataset mean once inputs are normalized.
    """
    b, c, h, w = x.shape
    p, dev = max(1, h // SHIFT_FRACTION), x.device
    xp = F.pad(x, (p, p, p, p)).flatten(2)  # (B, C, (H+2p)(W+2p))
    dy = torch.randint(0, 2 * p + 1, (b, 1, 1), generator=gen, device=dev)
    dx = torch.randint(0, 2 * p + 1, (b, 1, 1), generator=gen, device=dev)
    cols = torch.arange(w, device=dev).view(1, 1, w)
    if hflip:
        flip = torch.rand((b, 1, 1), generator=gen, device=dev) < 0.5
        cols = torch.where(flip, w - 1 - cols, cols)
    rows = dy + torch.arange(h, device=dev).view(1, h, 1)
    idx = (rows * (w + 2 * p) + dx + cols).flatten(1)  # (B, H*W) into the padded image
    out = xp.gather(2, idx[:, None].expand(b, c, h * w)).view(b, c, h, w)
    scale = 1 + JITTER * (2 * torch.rand((b, 1, 1, 1), generator=gen, device=dev) - 1)
    shift = JITTER * (2 * torch.rand((b, 1, 1, 1), generator=gen, device=dev) - 1)
    return out * scale + shift


def _autocast(device: torch.device):
    """bf16 autocast on CUDA; nothing elsewhere."""
    if device.type == "cuda":
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext()


@torch.no_grad()
def _eval_tensors(model: nn.Module, x: torch.Tensor, y: torch.Tensor, batch_size: int) -> tuple[float, float]:
    """(mean cross-entropy, accuracy) of `model` on device tensors, eval mode, one sync at the end."""
    was_training = model.training
    model.eval()
    loss = torch.zeros((), device=x.device)
    hits = torch.zeros((), device=x.device, dtype=torch.int64)
    cl = torch.channels_last if x.device.type == "cuda" else torch.contiguous_format
    with _autocast(x.device):
        for i in range(0, len(y), batch_size):
            logits = model(x[i : i + batch_size].contiguous(memory_format=cl)).float()
            loss += F.cross_entropy(logits, y[i : i + batch_size], reduction="sum")
            hits += (logits.argmax(1) == y[i : i + batch_size]).sum()
    model.train(was_training)
    n = max(1, len(y))
    return loss.item() / n, hits.item() / n


def evaluate(model: nn.Module, data: TensorData, device: torch.device, batch_size: int) -> tuple[float, float]:
    """(mean cross-entropy, accuracy) of `model` on `data`, in eval mode without gradients."""
    return _eval_tensors(model, data.x.to(device), data.y.to(device), batch_size)


class _Run:
    """The state of one `fit` call: model, optimizer, device data, generators, schedule."""

    def __init__(self, model, train, optim, epochs, seed, device, augment):
        self.device, self.optim, self.cuda = device, optim, device.type == "cuda"
        self.cl = torch.channels_last if self.cuda else torch.contiguous_format
        self.model = model.to(device, memory_format=self.cl) if self.cuda else model.to(device)
        self.x, self.y = train.x.to(device).contiguous(memory_format=self.cl), train.y.to(device)
        self.batch = min(optim.batch_size, len(train))
        self.steps = max(1, len(train) // self.batch)  # drop the last partial batch (fixed shapes)
        self.total = epochs * self.steps
        self.warmup = min(self.total, round(optim.warmup_epochs * self.steps))
        self.opt = make_optimizer(model, optim)
        self.shuffle = torch.Generator().manual_seed(seed)
        self.aug_gen = torch.Generator(device=device).manual_seed(seed + 1)
        self.mix_rng = random.Random(seed + 2)
        self.randaug = augment and optim.randaugment
        self.mixup = optim.mixup if augment else 0.0
        self.hflip = train.hflip
        self.run_model, self.compile_pending = self._compile() if optim.compile else (model, False)
        self.losses = torch.zeros(self.steps, device=device)
        self.hits = torch.zeros(self.steps, device=device, dtype=torch.int64)

    def _compile(self) -> tuple[nn.Module, bool]:
        """torch.compile the model; (eager model, False) with a warning when that fails."""
        try:
            return torch.compile(self.model), True
        except Exception as err:
            warnings.warn(f"torch.compile failed, training eagerly: {err}", stacklevel=4)
            return self.model, False

    def _loss(self, xb: torch.Tensor, yb: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(loss, logits) of one batch with mixup / label smoothing as configured, backward done."""
        lam = self.mix_rng.betavariate(self.mixup, self.mixup) if self.mixup > 0 else 1.0
        if lam < 1.0:
            xb = lam * xb + (1 - lam) * xb.flip(0)
        with _autocast(self.device):
            logits = self.run_model(xb).float()
        ls = self.optim.label_smoothing
        loss = F.cross_entropy(logits, yb, label_smoothing=ls)
        if lam < 1.0:
            loss = lam * loss + (1 - lam) * F.cross_entropy(logits, yb.flip(0), label_smoothing=ls)
        loss.backward()
        return loss, logits

    def _first_compiled(self, xb: torch.Tensor, yb: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The first step under torch.compile, falling back to eager (with a warning) if compiling fails."""
        self.compile_pending = False
        try:
            return self._loss(xb, yb)
        except torch.OutOfMemoryError:
            raise
        except Exception as err:
            warnings.warn(f"torch.compile failed, training eagerly: {type(err).__name__}: {err}", stacklevel=4)
            self.run_model = self.model
            self.opt.zero_grad(set_to_none=True)
            return self._loss(xb, yb)

    def step(self, i: int, idx: torch.Tensor, global_step: int) -> None:
        """One optimizer step on the images `idx`; loss and hits go to the device buffers."""
        xb, yb = self.x[idx], self.y[idx]
        if self.randaug:
            xb = augment_batch(xb, self.aug_gen, self.hflip)
        xb = xb.contiguous(memory_format=self.cl)
        lr = lr_at(global_step, self.total, self.warmup, self.optim.lr)
        for g in self.opt.param_groups:
            g["lr"] = lr
        loss, logits = self._first_compiled(xb, yb) if self.compile_pending else self._loss(xb, yb)
        if self.optim.grad_clip > 0:
            nn.utils.clip_grad_norm_(self.model.parameters(), self.optim.grad_clip, foreach=True)
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        self.losses[i] = loss.detach()
        self.hits[i] = (logits.detach().argmax(1) == yb).sum()

    def check(self, epoch: int, lo: int, hi: int) -> None:
        """Raise NonFiniteLoss for the first non-finite loss among steps lo..hi-1 of this epoch."""
        bad = ~torch.isfinite(self.losses[lo:hi])
        if bad.any():
            raise NonFiniteLoss(epoch, lo + int(bad.nonzero()[0, 0]))

    def epoch(self, e: int, bar: tqdm) -> tuple[float, float, float]:
        """Train one epoch; (running loss, running accuracy, seconds)."""
        self.model.train()
        start, every, checked = time.perf_counter(), CHECK_EVERY_CUDA if self.cuda else 1, 0
        perm = torch.randperm(len(self.y), generator=self.shuffle).to(self.device, non_blocking=True)
        for i in range(self.steps):
            self.step(i, perm[i * self.batch : (i + 1) * self.batch], e * self.steps + i)
            if (i + 1) % every == 0:
                self.check(e, checked, i + 1)
                checked = i + 1
            bar.update()
        self.check(e, checked, self.steps)
        loss, hits = self.losses.mean().item(), self.hits.sum().item()  # the epoch's one sync
        return loss, hits / (self.steps * self.batch), time.perf_counter() - start


def fit(
    model: nn.Module,
    train: TensorData,
    evaluate: TensorData | None,
    optim: OptimSpec,
    epochs: int,
    *,
    seed: int,
    device: torch.device,
    augment: bool = True,
    progress: bool = False,
    on_epoch: Callable[[int, EpochStats], None] | None = None,
    measure_train: bool = True,
) -> History:
    """Train `model` in place on `train` for `epochs` epochs; evaluate on `evaluate` after each epoch.

    `augment` gates the data-side regularizers (OptimSpec.randaugment and mixup); label smoothing and
    grad clipping follow the OptimSpec alone. Seeds torch's global RNG with `seed` (dropout, drop path),
    so the same model, data and seed give bit-identical metrics on CPU. The last partial batch of each
    epoch is dropped. `on_epoch(epoch, stats)` runs after each epoch (0-based) and may raise to stop the
    run (e.g. pruning). `measure_train=False` skips the final clean pass over the training set.
    """
    if len(train) == 0:
        raise UserError("empty training set")
    torch.manual_seed(seed)
    run = _Run(model, train, optim, epochs, seed, device, augment)
    ex, ey = (evaluate.x.to(device), evaluate.y.to(device)) if evaluate is not None else (None, None)
    eval_batch = 2 * run.batch
    rows: list[EpochStats] = []
    with tqdm(total=run.total, disable=not progress, file=sys.stderr, leave=False, desc="fit") as bar:
        for e in range(epochs):
            bar.set_description(f"epoch {e + 1}/{epochs}")
            loss, acc, secs = run.epoch(e, bar)
            ev = (
                _finite_pair(_eval_tensors(run.run_model, ex, ey, eval_batch), e, "eval")
                if ex is not None
                else (None, None)
            )
            stats = EpochStats(loss, acc, ev[0], ev[1], secs, run.steps * run.batch / secs)
            rows.append(stats)
            bar.set_postfix(
                loss=f"{loss:.4f}", acc=f"{acc:.3f}", **({"eval": f"{ev[1]:.3f}"} if ev[1] is not None else {})
            )
            if on_epoch is not None:
                on_epoch(e, stats)
    clean = (None, None)
    if measure_train:
        keep = torch.linspace(0, len(run.y) - 1, min(len(run.y), CLEAN_TRAIN_MAX), device=device).long()
        clean = _finite_pair(
            _eval_tensors(run.run_model, run.x[keep], run.y[keep], eval_batch), epochs - 1, "clean train pass"
        )
    cols = [tuple(getattr(r, f) for r in rows) for f in EpochStats.__dataclass_fields__]
    return History(*cols, clean[0], clean[1], run.total, run.run_model is not run.model)
