"""Capacity (CoAtNet §2.2): fit the largest subset, no regularization; final train loss and eval accuracy."""

from __future__ import annotations

from coatsearch.scores.base import Score, acc, loss


def run(ctx, spec) -> dict:
    """Train unregularized on the large subset; train loss/acc, eval loss/acc, gap and the per-epoch curve."""
    from coatsearch.scores import training as T

    return T.single(ctx, "capacity", spec, T.unregularized(ctx.inp.optim), augment=False)


SCORE = Score(
    name="capacity",
    spec=lambda sc: sc.capacity,
    run=run,
    metrics=(
        loss("capacity.train_loss", "cap. train loss", ranked=True),
        acc("capacity.eval_acc", "cap. eval acc", ranked=True),
    ),
    curves=lambda spec: ("capacity",),
    epochs=lambda spec: (spec.epochs,),
    signal=lambda spec: "capacity",
    headline="capacity.eval_acc",
    single_run=True,
    fallback=3,
)
