"""Capacity (CoAtNet §2.2): fit abundant data (default: the whole training split), no regularization.

A fixed step budget of at least one epoch (`max_steps`, else `epochs`); the final clean train loss on the probe,
eval accuracy and the curve, from which the report judges whether the ranking held over the last third.
"""

from __future__ import annotations

from coatsearch.scores.base import Context, Guard, Measured, Score, acc, floor, loss
from coatsearch.vocab import specs


def run(ctx: Context, spec: specs.SubsetSpec) -> Measured:
    """Train unregularized on the subset for the step budget (>= 1 epoch); train loss/acc, eval loss/acc, curve."""
    from coatsearch.scores import training as T

    return T.single(ctx, "capacity", spec, T.unregularized(ctx.inp.optim), augment=False, min_epochs=1)


SCORE = Score(
    name="capacity",
    section=specs.SubsetSpec,
    run=run,
    metrics=(
        loss("capacity.train_loss", "cap. train loss", ranked=True),
        acc("capacity.eval_acc", "cap. eval acc", ranked=True),
        loss("capacity.val_loss", "cap. held-out loss"),  # validation images: the regime's no-overfitting check
        floor("capacity"),
    ),
    curves=lambda spec: ("capacity",),
    epochs=lambda spec: (spec.epochs,),
    signal=lambda spec: "capacity",
    headline="capacity.eval_acc",
    single_run=True,
    keeps_model=True,
    fallback=3,
    title="Capacity (largest subset)",
    guards=(Guard("capacity", "capacity.eval_acc", ("capacity",)),),
)
