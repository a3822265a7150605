"""Generalization (CoAtNet §2.2): a small subset, no regularization; final train loss against eval accuracy."""

from __future__ import annotations

from coatsearch.scores.base import Metric, Score, acc, loss


def run(ctx, spec) -> dict:
    """Train unregularized on the subset; train loss/acc, eval loss/acc, gap and the per-epoch curve."""
    from coatsearch.scores import training as T

    return T.single(ctx, "generalization", spec, T.unregularized(ctx.inp.optim), augment=False)


SCORE = Score(
    name="generalization",
    spec=lambda sc: sc.generalization,
    run=run,
    metrics=(
        loss("generalization.train_loss", "gen. train loss"),
        acc("generalization.eval_acc", "gen. eval acc", ranked=True),
        Metric("generalization.gap", "gen. gap (train − eval acc)", "points", 100, 1, "lower", 0.5, ranked=True),
    ),
    curves=lambda spec: ("generalization",),
    epochs=lambda spec: (spec.epochs,),
    signal=lambda spec: "generalization",
    headline="generalization.eval_acc",
    single_run=True,
    fallback=2,
)
