"""Transfer (CoAtNet Table 2): pretrain on A, then fine-tune every weight on B with a fresh head."""

from __future__ import annotations

from coatsearch.scores.base import Score, acc


def run(ctx, spec) -> dict:
    """Pretrain, copy the body into a model with B's head, fine-tune; both eval accuracies and curves."""
    from coatsearch.scores import training as T

    pre, fin = spec
    optim = ctx.inp.optim
    train_a, held_a = T.splits(ctx, pre)
    model = T.model(ctx, len(train_a.classes), no_drop=False)
    hist_a = T.train(ctx, "pretrain", model, train_a, held_a, optim, pre.epochs, augment=True)
    train_b, held_b = T.splits(ctx, fin)
    target = T.model(ctx, len(train_b.classes), no_drop=False)
    copy_body(model, target)
    hist_b = T.train(ctx, "transfer", target, train_b, held_b, optim, fin.epochs, augment=True)
    ctx.models["transfer"] = (target, held_b)
    return {
        "transfer.pretrain_acc": hist_a.eval_acc[-1],
        "transfer.finetune_acc": hist_b.eval_acc[-1],
        "transfer.images": len(train_a.y) + len(train_b.y),
        "transfer.seconds": sum(hist_a.seconds) + sum(hist_b.seconds),
        "curves.pretrain": T.curves(hist_a),
        "curves.transfer": T.curves(hist_b),
    }


def copy_body(source, target) -> None:
    """Copy every weight but the classifier (found as the parameters a class count changes)."""
    classifier = target.get_classifier()
    names = {id(p): n for n, p in target.named_parameters()}
    head = {names[id(p)] for p in classifier.parameters()}
    body = {k: v for k, v in source.state_dict().items() if k not in head}
    target.load_state_dict(body, strict=False)


SCORE = Score(
    name="transfer",
    spec=lambda sc: (sc.pretrain, sc.finetune) if sc.pretrain is not None and sc.finetune is not None else None,
    run=run,
    metrics=(
        acc("transfer.pretrain_acc", "pretrain acc (A)"),
        acc("transfer.finetune_acc", "finetune acc (B)", ranked=True),
    ),
    curves=lambda spec: ("pretrain", "transfer"),
    epochs=lambda spec: (spec[0].epochs, spec[1].epochs),
    signal=lambda spec: "transfer",
    headline="transfer.finetune_acc",
    fallback=4,
)
