"""Shared training steps of the scores (subsets, a fresh model, one fit, curves); imported by run functions only."""

from __future__ import annotations

import dataclasses

import torch

from coatsearch import data as D
from coatsearch import spec as S
from coatsearch.models import build
from coatsearch.scores.base import Context
from coatsearch.train import History, fit


def unregularized(optim: S.OptimSpec) -> S.OptimSpec:
    """The paper's layout-study recipe: no label smoothing, mixup or augmentation (weight decay kept)."""
    return dataclasses.replace(optim, label_smoothing=0.0, mixup=0.0, randaugment=False)


def splits(ctx: Context, subset: S.SubsetSpec):
    """(train subset, eval subset) for one score, deterministic in the trial's seed."""
    inp = ctx.inp
    spec = subset.dataset or inp.data
    pool, test = D.load(spec, inp.model.image_size, inp.model.in_chans)
    train = D.subset(pool, subset.per_class, subset.classes, seed=inp.seed)
    held = D.eval_subset(test, spec.eval_size, subset.classes, seed=inp.seed)
    return train, held


def model(ctx: Context, num_classes: int, no_drop: bool) -> torch.nn.Module:
    """A fresh model for the trial's matched spec with `num_classes` outputs, seeded by the trial's seed."""
    spec = dataclasses.replace(ctx.inp.model, num_classes=num_classes)
    if no_drop:
        spec = dataclasses.replace(spec, block=dataclasses.replace(spec.block, drop_path=0.0))
    torch.manual_seed(ctx.inp.seed)
    return build(spec)


def train(ctx: Context, phase: str, net, train_set, held, optim, epochs: int, augment: bool) -> History:
    """Fit one model, sending each epoch's eval accuracy to the pruner callback as `phase`."""
    report = ctx.report
    hook = (lambda epoch, stats: report(phase, epoch, stats.eval_acc)) if report else None
    return fit(
        net,
        train_set,
        held,
        optim,
        epochs,
        seed=ctx.inp.seed,
        device=ctx.device,
        augment=augment,
        progress=ctx.progress,
        on_epoch=hook,
    )


def single(ctx: Context, name: str, subset: S.SubsetSpec, optim: S.OptimSpec, augment: bool) -> dict:
    """Train on a subset; final clean train loss/acc, eval loss/acc and the gap; keeps the model for reuse."""
    train_set, held = splits(ctx, subset)
    net = model(ctx, len(train_set.classes), no_drop=not augment)
    hist = train(ctx, name, net, train_set, held, optim, subset.epochs, augment)
    ctx.models[name] = (net, held)
    train_loss, train_acc = hist.clean_train_loss, hist.clean_train_acc  # eval-mode pass over the train set
    eval_loss, eval_acc = hist.eval_loss[-1], hist.eval_acc[-1]
    return {
        f"{name}.train_loss": train_loss,
        f"{name}.train_acc": train_acc,
        f"{name}.eval_loss": eval_loss,
        f"{name}.eval_acc": eval_acc,
        f"{name}.gap": train_acc - eval_acc,
        f"{name}.images": len(train_set.y),
        f"{name}.epochs": subset.epochs,
        f"{name}.seconds": sum(hist.seconds),
        f"curves.{name}": curves(hist),
    }


def curves(hist: History) -> dict:
    """A run's per-epoch lists, as stored under `curves.<name>`."""
    return {
        "train_loss": list(hist.train_loss),
        "train_acc": list(hist.train_acc),
        "eval_loss": list(hist.eval_loss),
        "eval_acc": list(hist.eval_acc),
        "seconds": list(hist.seconds),
    }
