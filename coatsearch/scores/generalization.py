"""Generalization (CoAtNet §2.2): a small subset, no regularization; the step-level curve of train loss vs eval acc.

The report reads eval accuracy at matched training loss from the curve (papers.measures), which it records as
`generalization.matched_acc`; an optional `stop_at_loss` ends the run at a clean train-loss target (or its cap).
"""

from __future__ import annotations

from coatsearch.scores.base import Context, Guard, Measured, Metric, Score, acc, floor, loss
from coatsearch.vocab import specs


def run(ctx: Context, spec: specs.SubsetSpec) -> Measured:
    """Train unregularized on the subset; train loss/acc, eval loss/acc, gap and the step-level curve.

    The curve is dense where the report's train-loss ladder (`loss_levels`, else specs.DEFAULT_LEVELS) is crossed.
    """
    from coatsearch.scores import training as T

    levels = tuple(spec.loss_levels or specs.DEFAULT_LEVELS)
    return T.single(ctx, "generalization", spec, T.unregularized(ctx.inp.optim), augment=False, levels=levels)


SCORE = Score(
    name="generalization",
    section=specs.SubsetSpec,
    run=run,
    metrics=(
        loss("generalization.train_loss", "gen. train loss"),
        acc("generalization.eval_acc", "gen. eval acc", ranked=True),
        Metric("generalization.gap", "gen. gap (train − eval acc)", "points", 100, 1, "lower", 0.5, ranked=True),
        floor("generalization"),
    ),
    curves=lambda spec: ("generalization",),
    epochs=lambda spec: (spec.epochs,),
    signal=lambda spec: "generalization",
    headline="generalization.eval_acc",
    single_run=True,
    keeps_model=True,
    fallback=2,
    title="Generalization (small subset)",
    guards=(Guard("generalization", "generalization.eval_acc", ("generalization",)),),
    derived=(acc("generalization.matched_acc", "gen. eval acc at matched loss", ranked=True),),  # read off curves
)
