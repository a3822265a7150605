"""Shared training steps of the scores (subsets, a fresh model, one fit, curves); imported by run functions only.

Data is paired across candidates: the validation images are drawn once per study (subsets.split, seed
subsets.EVAL_SEED, never the trial seed), the test images once per study or, under `test_sampling: per_seed`, once
per trial seed, and the training subset and batch order depend on the trial seed alone, so
every candidate of a seed sees the same images in the same order. Validation images serve every choice (pruning,
stop_at_acc, the objective); test images the verdict measures (`eval_*` keys). Each run records the fingerprints
of all three (subsets.fingerprint).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import torch

from coatsearch.errors import UserError
from coatsearch.models import build
from coatsearch.scores.base import Context, Measured, RunCurve
from coatsearch.training import data as D
from coatsearch.training import listeners, subsets
from coatsearch.training.fit import fit
from coatsearch.training.floor import RECIPE, Floor, linear_floor
from coatsearch.training.history import History
from coatsearch.training.schedule import run_steps, steps_per_epoch, subset_optim
from coatsearch.vocab import specs


def unregularized(optim: specs.OptimSpec) -> specs.OptimSpec:
    """The paper's layout-study recipe: no label smoothing, mixup or augmentation (weight decay kept)."""
    return dataclasses.replace(optim, label_smoothing=0.0, mixup=0.0, randaugment=False)


def splits(ctx: Context, subset: specs.SubsetSpec) -> tuple[D.TensorData, D.TensorData, D.TensorData]:
    """(train subset, test images, validation images) for one score: the subset seeded by the trial's seed,
    validation fixed per study, test fixed per study or per seed (subsets.split)."""
    inp = ctx.inp
    spec = subset.dataset or inp.data
    pool, test = D.load(spec, inp.model.image_size, inp.model.in_chans)
    train = subsets.subset(pool, subset.per_class, subset.classes, seed=inp.seed)
    validation, held = subsets.split(test, spec, subset.classes, seed=inp.seed)
    return train, held, validation


def model(ctx: Context, num_classes: int, no_drop: bool) -> torch.nn.Module:
    """A fresh model for the trial's matched spec with `num_classes` outputs, seeded by the trial's init seed."""
    spec = dataclasses.replace(ctx.inp.model, num_classes=num_classes)
    if no_drop:
        spec = dataclasses.replace(spec, block=dataclasses.replace(spec.block, drop_path=0.0))
    torch.manual_seed(ctx.inp.seed if ctx.inp.init_seed is None else ctx.inp.init_seed)
    return build(spec)


def train(
    ctx: Context,
    phase: str,
    net: torch.nn.Module,
    train_set: D.TensorData,
    held: D.TensorData,
    optim: specs.OptimSpec,
    subset: specs.SubsetSpec,
    augment: bool,
    stop_at_acc: float | None = None,
    levels: tuple[float, ...] | None = None,
    validation: D.TensorData | None = None,
) -> History:
    """Fit one model for the subset's step budget and curve options; each epoch's validation accuracy goes to the
    pruner.

    `held`: the test images, `validation`: the validation images (None: `held` serves both, as in a pilot).
    The run stops at the subset's `stop_at_loss` or at `stop_at_acc` (validation accuracy), whichever comes
    first; `levels`: the train-loss ladder whose crossings get dense curve points (matched-loss runs).
    """
    optim = subset_optim(optim, subset)
    report = ctx.report
    hook = (lambda epoch, stats: report(phase, epoch, stats.val_acc)) if report else None
    run = functools.partial(ctx.fit, phase) if ctx.fit is not None else fit  # the planner's pilot takes the phase
    heard = listeners.for_phase(ctx.listener, phase)  # a tracked trial's curve points, as they are measured
    wired: dict[str, Any] = {"on_point": heard} if heard is not None else {}  # the pilot's fit takes neither
    if ctx.checkpoints is not None:
        wired["checkpoints"] = ctx.checkpoints  # the trial's checkpointing: each long run saves and resumes
    return run(
        net,
        train_set,
        held,
        optim,
        subset.epochs,
        seed=ctx.inp.seed,
        device=ctx.device,
        augment=augment,
        progress=ctx.progress,
        on_epoch=hook,
        eval_every=subset.eval_every,
        runs=ctx.inp.runs,
        max_steps=run_steps(subset, len(train_set), optim.batch_size),
        stop_at_loss=subset.stop_at_loss,
        stop_at_acc=stop_at_acc,
        levels=levels,
        validate=validation,
        **wired,
    )


def single(
    ctx: Context,
    name: str,
    subset: specs.SubsetSpec,
    optim: specs.OptimSpec,
    augment: bool,
    min_epochs: int = 0,
    levels: tuple[float, ...] | None = None,
) -> Measured:
    """Train on a subset; final clean train loss/acc, test (`eval_*`) and validation (`val_*`) loss/acc and the
    gap on each, the run's facts and its curve `<name>`; keeps the model (and its test images) for reuse.

    A budget below `min_epochs` epochs of the subset is a UserError; `levels` as in `train`.
    """
    train_set, held, validation = splits(ctx, subset)
    optim = subset_optim(optim, subset)
    per_epoch = steps_per_epoch(len(train_set), optim.batch_size)
    _check_steps(f"{name}: max_steps", run_steps(subset, len(train_set), optim.batch_size), min_epochs * per_epoch)
    net = model(ctx, len(train_set.classes), no_drop=not augment)
    hist = train(ctx, name, net, train_set, held, optim, subset, augment, levels=levels, validation=validation)
    ctx.models[name] = (net, held, validation)
    train_loss, train_acc = hist.clean_train_loss, measured(hist.clean_train_acc, "clean train acc")
    eval_loss, eval_acc = hist.eval_loss[-1], final_eval_acc(hist)  # clean: an eval-mode pass over the train set
    val_acc = final_val_acc(hist)
    floor = _fair_floor(ctx, name, train_set, validation, held, Floor(val_acc, eval_acc, RECIPE))
    scores = {
        f"{name}.train_loss": train_loss,
        f"{name}.train_acc": train_acc,
        f"{name}.eval_loss": eval_loss,
        f"{name}.eval_acc": eval_acc,
        f"{name}.gap": train_acc - eval_acc,
        f"{name}.val_loss": hist.val_loss[-1],
        f"{name}.val_acc": val_acc,
        f"{name}.val_gap": train_acc - val_acc,
    }
    facts = run_facts(name, hist, train_set, held, validation)
    return Measured(scores).merge(facts, floor, Measured(curves={name: curves(hist)}))


def _fair_floor(
    ctx: Context, name: str, train_set: D.TensorData, validation: D.TensorData, held: D.TensorData, recipe: Floor
) -> Measured:
    """For the linear baseline only: `<name>.floor_acc` (test images) and `.val_floor_acc` of the best linear
    classifier on this run's images, chosen on the validation images (training.floor), and `.floor_choice`."""
    if ctx.inp.model.arch != "linear":
        return Measured()
    best, _ = linear_floor(train_set, validation, held, recipe)
    return Measured({f"{name}.floor_acc": best.test_acc, f"{name}.val_floor_acc": best.val_acc,
                     f"{name}.floor_choice": best.choice})  # fmt: skip


def run_facts(
    name: str, hist: History, train_set: D.TensorData, held: D.TensorData, validation: D.TensorData
) -> Measured:
    """What a run records besides its scores: data sizes and fingerprints (train, test = `eval_*`, validation),
    steps, epochs, time, compile mode (and a compile fallback, when one happened), stop."""
    out = {
        f"{name}.images": len(train_set),
        f"{name}.eval_images": len(held),
        f"{name}.val_images": len(validation),
        f"{name}.train_fingerprint": subsets.fingerprint(train_set),
        f"{name}.eval_fingerprint": subsets.fingerprint(held),
        f"{name}.val_fingerprint": subsets.fingerprint(validation),
        f"{name}.steps": hist.steps,
        f"{name}.epochs": round(hist.steps / max(1, hist.steps_per_epoch), 3),
        f"{name}.seconds": sum(hist.seconds),
        f"{name}.compile": hist.compile_mode,
    }
    if hist.stopped is not None:
        out[f"{name}.stopped"] = hist.stopped
    if hist.fallback is not None:  # a compile or capture error the run went on eagerly after
        out[f"{name}.compile_fallback"] = hist.fallback
    return Measured(out)


def curves(hist: History) -> RunCurve:
    """A run's step-level curve plus its per-epoch running means (recorded as `curves.<name>`)."""
    return RunCurve(hist.curve, hist.train_loss, hist.eval_acc, hist.val_acc, hist.seconds)


def measured(value: float | None, what: str) -> float:
    """`value`, which a score's run always measures (it has an eval set and a clean train pass)."""
    if value is None:
        raise RuntimeError(f"{what} was not measured")
    return value


def final_eval_acc(hist: History) -> float:
    """The test-image accuracy after the run's last epoch."""
    return measured(hist.eval_acc[-1], "final eval acc")


def final_val_acc(hist: History) -> float:
    """The validation accuracy after the run's last epoch."""
    return measured(hist.val_acc[-1], "final validation acc")


def _check_steps(what: str, steps: int, least: int) -> None:
    """A UserError when a run's step budget is below `least` steps."""
    if steps < least:
        raise UserError(f"{what}: a budget of {steps} steps is below the least allowed ({least})")
