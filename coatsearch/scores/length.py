"""Training-length stability (ViT_C paper §4): eval accuracy after each schedule length."""

from __future__ import annotations

import dataclasses
from types import MappingProxyType
from typing import Annotated

from pydantic import Field, Strict

from coatsearch import spec as S
from coatsearch.scores.base import Context, Guard, Score, acc


@S.spec
class LengthSpec:
    """Training-length stability: the same subset trained for each schedule length."""

    per_class: Annotated[int, Strict(), Field(gt=0, le=S.PER_CLASS_MAX)] | None  # None = every image of each class
    epochs: Annotated[
        tuple[Annotated[int, Strict(), Field(gt=0, le=S.EPOCHS_MAX)], ...],
        Field(min_length=2, max_length=S.LENGTHS_MAX),
    ]  # schedule lengths; the longest is the reference
    classes: tuple[Annotated[int, Strict(), Field(ge=0, lt=S.CLASSES_MAX)], ...] | None = None


def run(ctx: Context, spec: LengthSpec) -> dict:
    """Train a fresh model for each schedule length on one subset; eval accuracy per length."""
    from coatsearch.scores import training as T

    subset = S.SubsetSpec(per_class=spec.per_class, epochs=max(spec.epochs), classes=spec.classes)
    train_set, held = T.splits(ctx, subset)
    out: dict = {"length.epochs": list(spec.epochs)}
    accs = []
    for epochs in spec.epochs:
        model = T.model(ctx, len(train_set.classes), no_drop=False)
        run = dataclasses.replace(subset, epochs=epochs)
        hist = T.train(ctx, f"length{epochs}", model, train_set, held, ctx.inp.optim, run, augment=True)
        accs.append(hist.eval_acc[-1])
        out[f"curves.length{epochs}"] = T.curves(hist)
    out["length.eval_acc"] = accs
    out["length.eval_acc_longest"] = accs[spec.epochs.index(max(spec.epochs))]
    return out


SCORE = Score(
    name="length",
    section=LengthSpec,
    run=run,
    metrics=(acc("length.eval_acc_longest", "eval acc, longest schedule", table=False),),
    curves=lambda spec: tuple(f"length{e}" for e in spec.epochs),
    epochs=lambda spec: tuple(spec.epochs),
    headline="length.eval_acc_longest",
    fallback=5,
    guards=(Guard("length", "length.eval_acc_longest", ("length",)),),
    roles=MappingProxyType({"epochs": "length.epochs", "accs": "length.eval_acc"}),  # the schedules, each's eval acc
)
