"""Training-length stability (ViT_C paper §4): eval accuracy after each schedule length."""

from __future__ import annotations

import dataclasses
from types import MappingProxyType
from typing import Annotated

from pydantic import Field, Strict

from coatsearch.scores.base import Context, Guard, Measured, RunCurve, Score, acc
from coatsearch.vocab import specs


@specs.spec
class LengthSpec:
    """Training-length stability: the same subset trained for each schedule length."""

    per_class: Annotated[int, Strict(), Field(gt=0, le=specs.PER_CLASS_MAX)] | None  # None = every image of each class
    epochs: Annotated[
        tuple[Annotated[int, Strict(), Field(gt=0, le=specs.EPOCHS_MAX)], ...],
        Field(min_length=2, max_length=specs.LENGTHS_MAX),
    ]  # schedule lengths; the longest is the reference
    classes: tuple[Annotated[int, Strict(), Field(ge=0, lt=specs.CLASSES_MAX)], ...] | None = None


def run(ctx: Context, spec: LengthSpec) -> Measured:
    """Train a fresh model for each schedule length on one subset; eval accuracy per length, a curve per length."""
    from coatsearch.scores import training as T
    from coatsearch.training import subsets

    subset = specs.SubsetSpec(per_class=spec.per_class, epochs=max(spec.epochs), classes=spec.classes)
    train_set, held, validation = T.splits(ctx, subset)
    accs, vals = [], []
    curves: dict[str, RunCurve] = {}  # `length<epochs>` -> that schedule's run
    for epochs in spec.epochs:
        model = T.model(ctx, len(train_set.classes), no_drop=False)
        run = dataclasses.replace(subset, epochs=epochs)
        hist = T.train(ctx, f"length{epochs}", model, train_set, held, ctx.inp.optim, run, augment=True,
                       validation=validation)  # fmt: skip
        accs.append(hist.eval_acc[-1])
        vals.append(hist.val_acc[-1])
        curves[f"length{epochs}"] = T.curves(hist)
    longest = spec.epochs.index(max(spec.epochs))
    metrics = {
        "length.epochs": list(spec.epochs),
        "length.eval_acc": accs,  # test images
        "length.val_acc": vals,  # validation images (for choosing)
        "length.eval_acc_longest": accs[longest],
        "length.val_acc_longest": vals[longest],
        "length.best_epochs": _best_length(spec.epochs, vals),
        "length.eval_fingerprint": subsets.fingerprint(held),
        "length.val_fingerprint": subsets.fingerprint(validation),
    }
    return Measured(metrics, curves)


def _best_length(epochs: tuple[int, ...], val_accs: list) -> int:
    """The schedule length with the highest validation accuracy (the shortest of ties): chosen on validation
    images only, so the test accuracy at it is an unselected reading."""
    return -max(zip(val_accs, (-e for e in epochs), strict=True))[1]


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
    # the schedules, each's test acc, each's validation acc
    roles=MappingProxyType({"epochs": "length.epochs", "accs": "length.eval_acc", "val_accs": "length.val_acc"}),
)
