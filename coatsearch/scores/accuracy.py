"""Accuracy under the space's full training recipe (augmentation, label smoothing, mixup as configured)."""

from __future__ import annotations

from coatsearch.scores.base import Context, Guard, Measured, Score, acc, floor, loss
from coatsearch.vocab import specs


def run(ctx: Context, spec: specs.SubsetSpec) -> Measured:
    """Train with the full recipe on the subset; train loss/acc, eval loss/acc, gap and the per-epoch curve."""
    from coatsearch.scores import training as T

    return T.single(ctx, "accuracy", spec, ctx.inp.optim, augment=True)


SCORE = Score(
    name="accuracy",
    section=specs.SubsetSpec,
    run=run,
    metrics=(
        loss("accuracy.train_loss", "recipe train loss"),
        acc("accuracy.eval_acc", "recipe eval acc", ranked=True),
        floor("accuracy"),
    ),
    curves=lambda spec: ("accuracy",),
    epochs=lambda spec: (spec.epochs,),
    signal=lambda spec: "accuracy",
    headline="accuracy.eval_acc",
    single_run=True,
    keeps_model=True,
    fallback=1,
    title="Full recipe",
    guards=(Guard("accuracy", "accuracy.eval_acc", ("accuracy",)),),
)
