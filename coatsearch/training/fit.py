"""One training run: optimizer, warmup + cosine schedule, the loop, evaluation (History: training.history).

The loop is the same on CPU and CUDA. Data moves to the device once; batches are index selections. Models
and batches are channels_last on CPU and CUDA (on CPU, oneDNN's convolutions, depthwise ones above all, run
about 1.3x faster so). On CUDA it trains under bf16 autocast with cudnn.benchmark (shapes are fixed), the whole
step captured as one CUDA graph unless `compile` is false (training.capture), and it syncs per step only where
the CPU reads per step too: losses and hits go into device buffers that are read once per epoch, at curve points,
every CHECK_EVERY_CUDA steps (non-finite check) and, while a run's dense points can fall due, every step, so
dense points land on the same step on both devices. Measuring is fp32 on every device (curves.eval_tensors).

A compile or capture error at any step, or in a compiled evaluation, does not fail the run: it goes on eagerly
from where it was, with a warning, and the History records the fallback.
"""

from __future__ import annotations

import math
import random
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from tqdm import tqdm

from coatsearch.errors import UserError
from coatsearch.training import capture, checkpoint, checkpoint_policy
from coatsearch.training.augment import augment_apply, augment_batch, augment_draws
from coatsearch.training.curves import Evaluation, LossAcc, Meter, Stop, autocast, channels_last, eval_tensors
from coatsearch.training.data import TensorData
from coatsearch.training.devices import parse_device, pick_device  # noqa: F401 - their home was here
from coatsearch.training.history import EpochStats, History, NonFiniteLoss, finite_pair
from coatsearch.training.point import Curve, Point
from coatsearch.training.schedule import curve_steps, steps_per_epoch
from coatsearch.training.subsets import PROBE_MAX
from coatsearch.training.tuning import AutoCompile, compile_model, uncompile
from coatsearch.vocab.specs import OptimSpec

_WARMUP_MAX = 0.2  # warmup never takes more than this share of a run's steps (a one-epoch run still decays)
_CLEAN_TRAIN_MAX = 10_000  # the final clean pass over the training set uses at most this many images
CHECK_EVERY_CUDA = 32  # steps between non-finite-loss checks on CUDA (every step on CPU, where it is free)


def param_groups(model: nn.Module, weight_decay: float) -> list[dict]:
    """Two optimizer groups: decayed weights (ndim > 1) and undecayed norms, biases and model.no_weight_decay().

    Frozen parameters (requires_grad False) are left out; empty groups are dropped.
    """
    skip = set(model.no_weight_decay()) if hasattr(model, "no_weight_decay") else set()  # type: ignore[operator]  # timm's method
    decay: list[nn.Parameter] = []
    no_decay: list[nn.Parameter] = []
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


def make_optimizer(
    model: nn.Module, optim: OptimSpec, lr: torch.Tensor | None = None, capturable: bool = False
) -> torch.optim.Optimizer:
    """AdamW (betas 0.9/0.999) or SGD (momentum 0.9) over `param_groups`, with fused kernels on CPU/CUDA.

    `lr`: a 0-d tensor every group reads (a captured step's input), else optim.lr; `capturable`: AdamW keeps its
    step count on the device (CUDA-graph capture; SGD has none)."""
    groups = param_groups(model, optim.weight_decay)
    kind = next(model.parameters()).device.type
    fast: dict[str, Any] = {"fused": True} if kind in ("cpu", "cuda") else {"foreach": True}
    rate: float | torch.Tensor = optim.lr if lr is None else lr
    if optim.optimizer == "adamw":
        opt: torch.optim.Optimizer = torch.optim.AdamW(
            groups, lr=rate, betas=(0.9, 0.999), **fast, **({"capturable": True} if capturable else {})
        )
    elif optim.optimizer == "sgd":
        opt = torch.optim.SGD(groups, lr=rate, momentum=0.9, **fast)
    else:
        raise UserError(f"unknown optimizer {optim.optimizer!r}; known: adamw, sgd")
    if lr is not None:
        for g in opt.param_groups:
            g["lr"] = lr  # one tensor for every group
    return opt


def lr_at(step: int, total: int, warmup: int, peak: float) -> float:
    """Learning rate of 0-based `step`: linear warmup to `peak` over `warmup` steps, then cosine to 0."""
    if step < warmup:
        return peak * (step + 1) / warmup
    return 0.5 * peak * (1 + math.cos(math.pi * (step - warmup) / max(1, total - warmup)))


def evaluate(model: nn.Module, data: TensorData, device: torch.device, batch_size: int) -> LossAcc:
    """(mean cross-entropy, accuracy) of `model` on `data`, in eval mode without gradients."""
    return eval_tensors(model, data.x.to(device), data.y.to(device), batch_size)


def _warn_fallback(mode: str, where: str, err: Exception) -> str:
    """Warn that a run in `mode` goes on eagerly after `err` at `where`; the line a History records."""
    what = {"captured": "CUDA-graph capture", "compiled+captured": "torch.compile or CUDA-graph capture"}
    text = f"{type(err).__name__}: {err}"
    warnings.warn(f"{what.get(mode, 'torch.compile')} failed at {where}, training eagerly: {text}", stacklevel=4)
    return f"{mode} -> eager at {where}: {text[:300]}"


class _Guarded(nn.Module):
    """What a run measures with: its compiled model, or the eager one after a compile error there (recorded)."""

    def __init__(self, run: _Run):
        super().__init__()
        self.net = run.net  # a submodule: eval() and train() reach it
        object.__setattr__(self, "run", run)  # not a submodule

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        run: _Run = self.__dict__["run"]
        if run.mode in ("eager", "captured"):  # captured: the step is a graph, the model is eager
            return run.net(x)
        try:
            return run.run_model(x)
        except torch.OutOfMemoryError:
            raise
        except Exception as err:  # noqa: BLE001 - any compile error: measure eagerly
            run.fall_back(err, None)
            return run.net(x)


class _Run:
    """The state of one `fit` call: model, optimizer, device data, generators, schedule (what a checkpoint reads of
    it is `checkpoint_check.RunState`)."""

    def __init__(
        self,
        model: nn.Module,
        train: TensorData,
        optim: OptimSpec,
        total: int,
        seed: int,
        device: torch.device,
        augment: bool,
        runs: int = 1,
        checkpoints: checkpoint_policy.Trial | None = None,
    ):
        self.device, self.optim, self.cuda = device, optim, device.type == "cuda"
        self.cl = channels_last(device)
        self.model = model.to(device, memory_format=self.cl)  # type: ignore[call-overload]  # not in torch's overloads
        self.x, self.y = train.x.to(device).contiguous(memory_format=self.cl), train.y.to(device)
        self.batch = min(optim.batch_size, len(train))
        self.steps = steps_per_epoch(len(train), optim.batch_size)
        self.total = total
        self.warmup = min(round(_WARMUP_MAX * self.total), round(optim.warmup_epochs * self.steps))
        self.shuffle = torch.Generator().manual_seed(seed)
        self.aug_gen = torch.Generator(device=device).manual_seed(seed + 1)
        self.mix_rng = random.Random(seed + 2)
        self.randaug = augment and optim.randaugment
        self.mixup = optim.mixup if augment else 0.0
        self.hflip = train.hflip
        self.mode = "eager"
        self.fallback: str | None = None  # what a compile or capture error made the run do (History.fallback)
        self.slot = self._slot(capture.mode_for(device, optim.compile, total))
        self.net = self.slot.net if self.slot is not None else self.model  # the module that trains
        self.opt = self.slot.opt if self.slot is not None else make_optimizer(self.model, optim)
        self.run_model: nn.Module = self.slot.run_model if self.slot is not None else self.model
        self.guard = _Guarded(self)
        auto = optim.compile == "auto" and self.slot is None and not self.cuda  # CUDA's auto is capture
        self.auto = AutoCompile(model, device, total, runs) if auto else None
        self.compile_pending = optim.compile is True and self.slot is None and self.fallback is None
        if self.cuda:
            torch.backends.cudnn.benchmark = True  # fixed shapes: each is benchmarked once
        self.losses = torch.zeros(self.steps, device=device)
        self.hits = torch.zeros(self.steps, device=device, dtype=torch.int64)
        # None: this run saves nothing
        self.saver = checkpoint.saver(checkpoints, total) if checkpoints is not None else None
        self.epoch_shuffle = self.shuffle.get_state()  # the batch order's generator as the epoch began

    def _slot(self, mode: str | None) -> capture.Slot | None:
        """The run's captured-step slot when `mode` captures; None (eager, the error recorded) when making it fails."""
        if mode is None:
            return None
        o = self.optim
        recipe = capture.Recipe(self.batch, float(o.label_smoothing), float(o.grad_clip), self.mixup > 0,
                                self.randaug, self.hflip, (o.optimizer, float(o.weight_decay)))  # fmt: skip

        def make_opt(net: nn.Module, lr: torch.Tensor) -> torch.optim.Optimizer:
            return make_optimizer(net, o, lr, capturable=self.cuda)

        try:
            slot = capture.slot_for(self.model, recipe, self.x, self.y, mode, make_opt, augment_draws, augment_apply)
        except torch.OutOfMemoryError:
            raise
        except Exception as err:  # noqa: BLE001 - recorded; the run trains eagerly
            self.fallback = _warn_fallback(mode, "step 0", err)
            return None
        self.mode = mode
        return slot

    def lr_phase(self, step: int) -> float:
        """The lr of the step that ended after `step` steps over the peak lr (0 at step 0 or with a zero peak)."""
        if step < 1 or self.optim.lr <= 0:
            return 0.0
        return lr_at(step - 1, self.total, self.warmup, self.optim.lr) / self.optim.lr

    @property
    def eval_model(self) -> nn.Module:
        """The model to measure with: the one that trains (compiled once its first compiled step ran)."""
        return self.net if self.compile_pending else self.guard

    def fall_back(self, err: Exception, step: int | None) -> None:
        """Go on eagerly after a compile or capture error at `step` (None: in a measurement); warn and record it."""
        told = _warn_fallback(self.mode, f"step {step}" if step is not None else "evaluation", err)
        self.fallback = self.fallback or told
        if self.slot is not None:
            capture.drop(self.slot)  # its model and optimizer go on training eagerly
            self.slot = None
        uncompile(self.net)
        self.run_model, self.mode, self.compile_pending = self.net, "eager", False
        self.opt.zero_grad(set_to_none=True)

    def close(self) -> None:
        """The run is over: the caller's model gets the trained weights, eager (a later fit decides again)."""
        if self.net is not self.model:
            self.model.load_state_dict(self.net.state_dict())
        uncompile(self.model)

    def _loss(self, xb: torch.Tensor, yb: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(loss, logits) of one batch with mixup / label smoothing as configured, backward done."""
        lam = self.mix_rng.betavariate(self.mixup, self.mixup) if self.mixup > 0 else 1.0
        if lam < 1.0:
            xb = lam * xb + (1 - lam) * xb.flip(0)
        with autocast(self.device):
            logits = self.run_model(xb).float()
        ls = self.optim.label_smoothing
        loss = F.cross_entropy(logits, yb, label_smoothing=ls)
        if lam < 1.0:
            loss = lam * loss + (1 - lam) * F.cross_entropy(logits, yb.flip(0), label_smoothing=ls)
        loss.backward()
        return loss, logits

    def _compiled_loss(self, xb: torch.Tensor, yb: torch.Tensor, step: int) -> tuple[torch.Tensor, torch.Tensor]:
        """`_loss`, compiling first when due (speed.compile_model); a compile error at any step falls back."""
        try:
            if self.compile_pending:
                self.compile_pending, started = False, time.perf_counter()
                self.mode = "compiled"  # until compile_model says how
                self.run_model, self.mode = compile_model(self.net, self.device)
                out = self._loss(xb, yb)
                if self.auto is not None:
                    self.auto.compiled(time.perf_counter() - started)
                return out
            return self._loss(xb, yb)
        except torch.OutOfMemoryError:
            raise
        except Exception as err:
            if self.mode == "eager":
                raise
            self.fall_back(err, step)
            return self._loss(xb, yb)

    def step(self, i: int, idx: torch.Tensor, global_step: int) -> None:
        """One optimizer step on the images `idx`; loss and hits go to the device buffers."""
        lr = lr_at(global_step, self.total, self.warmup, self.optim.lr)
        if self.slot is not None:
            try:
                lam = self.mix_rng.betavariate(self.mixup, self.mixup) if self.mixup > 0 else 1.0
                gen = self.aug_gen if self.randaug else None
                self.losses[i], self.hits[i] = self.slot.step(self.x, self.y, idx, gen, lr, lam)
                return
            except torch.OutOfMemoryError:
                raise
            except Exception as err:  # noqa: BLE001 - recorded; this step is taken again eagerly
                self.fall_back(err, global_step)
        started = self.auto.tick() if self.auto is not None else 0.0
        xb, yb = self.x[idx], self.y[idx]
        if self.randaug:
            xb = augment_batch(xb, self.aug_gen, self.hflip)
        xb = xb.contiguous(memory_format=self.cl)
        for g in self.opt.param_groups:
            g["lr"] = lr
        loss, logits = self._compiled_loss(xb, yb, global_step)
        if self.optim.grad_clip > 0:
            nn.utils.clip_grad_norm_(self.net.parameters(), self.optim.grad_clip, foreach=True)
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        self.losses[i] = loss.detach()
        self.hits[i] = (logits.detach().argmax(1) == yb).sum()
        if self.auto is not None and self.auto.after_step(started):  # compile: auto decided to compile
            self.compile_pending = True

    def check(self, epoch: int, lo: int, hi: int) -> None:
        """Raise NonFiniteLoss for the first non-finite loss among steps lo..hi-1 of this epoch."""
        bad = ~torch.isfinite(self.losses[lo:hi])
        if bad.any():
            raise NonFiniteLoss(epoch, lo + int(bad.nonzero()[0, 0]))

    def read_every(self, meter: Meter) -> int:
        """Steps between reads of the batch losses: 1 on CPU, and on CUDA while a dense point can fall due (so it
        falls on the CPU's step); CHECK_EVERY_CUDA otherwise."""
        if not self.cuda:
            return 1
        dense = meter.dense
        return 1 if dense is not None and dense.probe > dense.bottom else CHECK_EVERY_CUDA

    def epoch(
        self, e: int, n: int, bar: tqdm, points: frozenset[int], meter: Meter, first: int = 0
    ) -> tuple[float, float, float, int]:
        """Train steps `first`..n-1 of epoch e (`first` > 0: a resumed run's); `meter(step)` after each curve step
        (regular or dense) may stop it; the saver (training.checkpoint) saves the run's state when due.

        Returns (running loss, running accuracy, training seconds, steps done); curve points are not timed.
        """
        self.net.train()
        start, checked, paused, done = time.perf_counter(), first, 0.0, n
        self.epoch_shuffle = self.shuffle.get_state()
        perm = torch.randperm(len(self.y), generator=self.shuffle).to(self.device, non_blocking=True)
        for i in range(first, n):
            self.step(i, perm[i * self.batch : (i + 1) * self.batch], e * self.steps + i)
            due = False
            if i + 1 - checked >= self.read_every(meter):
                self.check(e, checked, i + 1)
                due = meter.feed(self.losses[checked : i + 1])
                checked = i + 1
            bar.update()
            if due or e * self.steps + i + 1 in points:
                self.check(e, checked, i + 1)
                if checked < i + 1:
                    meter.feed(self.losses[checked : i + 1])
                checked, t = i + 1, time.perf_counter()
                stop = meter(e * self.steps + i + 1)
                paused += time.perf_counter() - t
                if stop:
                    done = i + 1
                    break
            if self.saver is not None and checked == i + 1:  # the losses so far are read: a checkpoint may fall due
                paused += self.saver.tick(self, meter, e, i + 1)
        self.check(e, checked, done)
        loss, hits = self.losses[:done].mean().item(), self.hits[:done].sum().item()  # the epoch's one sync
        return loss, hits / (done * self.batch), time.perf_counter() - start - paused, done


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
    eval_every: int | None = None,
    probe: int = PROBE_MAX,
    max_steps: int | None = None,
    stop_at_loss: float | None = None,
    stop_at_acc: float | None = None,
    on_point: Callable[[int, Point], None] | None = None,
    runs: int = 1,
    levels: tuple[float, ...] | None = None,
    validate: TensorData | None = None,
    checkpoints: checkpoint_policy.Trial | None = None,
) -> History:
    """Train `model` in place on `train` for `epochs` epochs (or `max_steps` steps); evaluate after each epoch.

    `augment` gates the data-side regularizers (OptimSpec.randaugment and mixup); label smoothing and
    grad clipping follow the OptimSpec alone. Seeds torch's global RNG with `seed` (dropout, drop path),
    so the same model, data and seed give bit-identical metrics on CPU; the batch order depends on the
    seed and the subset size only. The last partial batch of each epoch is dropped. `on_epoch(epoch, stats)`
    runs after each epoch (0-based) and may raise to stop the run (e.g. pruning). `measure_train=False`
    skips the final clean pass over the training set.

    Curve points (`coatsearch.training.curves`) are measured at step 0, every `eval_every` steps (None: about 10 per
    run; 0: none) and at the last step, on a fixed class-balanced probe of `probe` training images
    (subsets.probe_index), on `evaluate` (the test images) and on `validate` (the validation images; None:
    `evaluate` serves as both); `on_point(step, point)` sees each one. `on_epoch` and `stop_at_acc` read the
    validation images, never the test images. `max_steps` replaces the
    `epochs` schedule by a step budget (the cosine ends there). With `stop_at_loss` (probe train loss, nats)
    or `stop_at_acc` (validation accuracy) the run ends at the first point that reaches a target, else at the
    budget; `History.stopped` says which. `runs`: how many runs of this architecture the study plans in all
    (seeds x scores), which `compile: auto` weighs its compile against (tuning.AutoCompile). `levels`: a
    train-loss ladder (nats) whose crossings get dense points (training.curves.Dense); each point records its lr phase.
    `checkpoints`: the trial's checkpointing (training.checkpoint_policy.Trial), whose saver
    (training.checkpoint.saver) saves this run's state every N steps and restores it when the trial runs again;
    None: no checkpoints.
    """
    if len(train) == 0:
        raise UserError("empty training set")
    if max_steps is not None and max_steps < 1:
        raise UserError(f"max_steps must be >= 1, got {max_steps}")
    stop = Stop(stop_at_loss, stop_at_acc)
    if stop.acc is not None and evaluate is None:
        raise UserError("stop_at_acc needs evaluation data")
    torch.manual_seed(seed)
    total = max_steps if max_steps is not None else epochs * steps_per_epoch(len(train), optim.batch_size)
    run = _Run(model, train, optim, total, seed, device, augment, runs, checkpoints)
    points = curve_steps(run.total, eval_every)
    if stop.active and not points:
        raise UserError("stop_at_loss / stop_at_acc need curve points (eval_every > 0)")
    meter = Meter(run, evaluate, probe, stop, on_point, levels if points else None, validate)
    parts = (optim, seed, run.total, augment, eval_every, probe, stop, levels)  # what a checkpoint must share
    at = checkpoint.resume(run.saver, run, meter, parts, EpochStats)
    if 0 in points and at is None:
        meter(0)
    rows = _epochs(run, meter, points, progress, on_epoch, at)
    taken = meter.points[-1].step if meter.reached else run.total
    clean: tuple[float | None, float | None] = (None, None)
    if measure_train:
        last = meter.points[-1] if meter.points else None
        if last is not None and last.step == taken:  # the probe was measured after the last step
            pair = (last.train_loss, last.train_acc)
        else:
            keep = torch.linspace(0, len(run.y) - 1, min(len(run.y), _CLEAN_TRAIN_MAX), device=device).long()
            pair = eval_tensors(run.eval_model, run.x[keep], run.y[keep], meter.batch, meter.padded)
        clean = finite_pair(pair, len(rows) - 1, "clean train pass")
    cols = {f: tuple(getattr(r, f) for r in rows) for f in EpochStats.__dataclass_fields__}  # History's names
    stopped = ("target" if meter.reached else "cap") if stop.active else None
    curve = Curve.of(meter.points, len(meter.py) if meter.points else 0)
    run.close()  # the caller's model gets the trained weights, eager
    compiled = run.mode not in ("eager", "captured")
    return History(**cols, clean_train_loss=clean[0], clean_train_acc=clean[1], steps=taken, compiled=compiled,
                   curve=curve, stopped=stopped, steps_per_epoch=run.steps, compile_mode=run.mode,
                   fallback=run.fallback)  # fmt: skip


def _epochs(
    run: _Run,
    meter: Meter,
    points: frozenset[int],
    progress: bool,
    on_epoch: Callable[[int, EpochStats], None] | None,
    at: tuple[int, int] | None = None,
) -> list[EpochStats]:
    """The training loop over epochs until the step budget or a stop target; one EpochStats per epoch; from
    checkpoint position `at` (epoch, steps done in it) when resumed, its epochs' rows heard again by `on_epoch`."""
    rows: list[EpochStats] = run.saver.rows if run.saver is not None else []  # a checkpoint saves the rows so far
    for e, stats in enumerate(rows if on_epoch is not None else []):
        on_epoch(e, stats)  # type: ignore[misc]  # not None here
    first_epoch, first = at or (0, 0)
    epochs = math.ceil(run.total / run.steps)
    done_before = min(first_epoch * run.steps + first, run.total)  # a resumed run's bar counts its steps so far
    bar_off = None if progress else True  # None: tqdm draws only on a terminal, never into a redirected log
    with tqdm(total=run.total, initial=done_before, disable=bar_off, file=sys.stderr, leave=False, desc="fit") as bar:
        for e in range(first_epoch, epochs):
            bar.set_description(f"epoch {e + 1}/{epochs}")
            n = min(run.steps, run.total - e * run.steps)
            loss, acc, secs, done = run.epoch(e, n, bar, points, meter, first if e == first_epoch else 0)
            listened = on_epoch is not None or e == epochs - 1 or meter.reached
            ev = meter.eval_at(e * run.steps + done) if listened else Evaluation()
            if ev.test is not None and ev.val is not None:
                finite_pair(ev.test, e, "eval")
                finite_pair(ev.val, e, "validation")
            rate = done * run.batch / max(secs, 1e-9)
            stats = EpochStats(loss, acc, ev.test_loss, ev.test_acc, secs, rate, ev.val_loss, ev.val_acc)
            rows.append(stats)
            postfix = {"eval": f"{ev.test_acc:.3f}"} if ev.test_acc is not None else {}
            bar.set_postfix(loss=f"{loss:.4f}", acc=f"{acc:.3f}", **postfix)
            if on_epoch is not None:
                on_epoch(e, stats)
            if meter.reached:
                break
    return rows
