"""One trial's measurements, as the papers define them: generalization, capacity, transfer, training length."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import torch

from coatsearch import data as D
from coatsearch import spec as S
from coatsearch.models import build
from coatsearch.train import History, fit

Report = Callable[[str, int, float], None]  # (score name, epoch, eval accuracy), e.g. for a pruner


@dataclasses.dataclass(frozen=True)
class TrialInput:
    """Everything one trial trains with: the matched model, its optimizer, the data and what to score."""

    model: S.ModelSpec
    optim: S.OptimSpec
    data: S.DataSpec
    scores: S.ScoresSpec
    seed: int


def measure(inp: TrialInput, device: torch.device, progress: bool = False, report: Report | None = None) -> dict:
    """Run every score the space enables; return flat scalar metrics plus `curves.<score>` dicts."""
    out: dict = {}
    sc = inp.scores
    plain = _unregularized(inp.optim)
    if sc.generalization is not None:
        out.update(_single("generalization", inp, sc.generalization, plain, device, progress, report))
    if sc.capacity is not None:
        out.update(_single("capacity", inp, sc.capacity, plain, device, progress, report))
    if sc.accuracy is not None:
        out.update(_single("accuracy", inp, sc.accuracy, inp.optim, device, progress, report, augment=True))
    if sc.pretrain is not None and sc.finetune is not None:
        out.update(_transfer(inp, device, progress, report))
    if sc.length is not None:
        out.update(_length(inp, sc.length, device, progress, report))
    return out


def _unregularized(optim: S.OptimSpec) -> S.OptimSpec:
    """The paper's layout-study recipe: no label smoothing, mixup or augmentation (weight decay kept)."""
    return dataclasses.replace(optim, label_smoothing=0.0, mixup=0.0, randaugment=False)


def _splits(inp: TrialInput, subset: S.SubsetSpec):
    """(train subset, eval subset) for one score, deterministic in the trial's seed."""
    spec = subset.dataset or inp.data
    pool, test = D.load(spec, inp.model.image_size, inp.model.in_chans)
    train = D.subset(pool, subset.per_class, subset.classes, seed=inp.seed)
    held = D.eval_subset(test, spec.eval_size, subset.classes, seed=inp.seed)
    return train, held


def _model(inp: TrialInput, num_classes: int, no_drop: bool) -> torch.nn.Module:
    spec = dataclasses.replace(inp.model, num_classes=num_classes)
    if no_drop:
        spec = dataclasses.replace(spec, block=dataclasses.replace(spec.block, drop_path=0.0))
    torch.manual_seed(inp.seed)
    return build(spec)


def _fit(name, model, train, held, optim, epochs, inp, device, progress, report, augment) -> History:
    hook = (lambda epoch, stats: report(name, epoch, stats.eval_acc)) if report else None
    return fit(
        model,
        train,
        held,
        optim,
        epochs,
        seed=inp.seed,
        device=device,
        augment=augment,
        progress=progress,
        on_epoch=hook,
    )


def _single(name: str, inp, subset: S.SubsetSpec, optim, device, progress, report, augment=False) -> dict:
    """Train on a subset (by default unregularized); final clean train loss/acc, eval loss/acc and the gap."""
    train, held = _splits(inp, subset)
    model = _model(inp, len(train.classes), no_drop=not augment)
    hist = _fit(name, model, train, held, optim, subset.epochs, inp, device, progress, report, augment=augment)
    train_loss, train_acc = hist.clean_train_loss, hist.clean_train_acc  # eval-mode pass over the train set
    eval_loss, eval_acc = hist.eval_loss[-1], hist.eval_acc[-1]
    return {
        f"{name}.train_loss": train_loss,
        f"{name}.train_acc": train_acc,
        f"{name}.eval_loss": eval_loss,
        f"{name}.eval_acc": eval_acc,
        f"{name}.gap": train_acc - eval_acc,
        f"{name}.images": len(train.y),
        f"{name}.epochs": subset.epochs,
        f"{name}.seconds": sum(hist.seconds),
        f"curves.{name}": _curves(hist),
    }


def _transfer(inp: TrialInput, device, progress, report) -> dict:
    """Pretrain on A, then fine-tune every weight on B with a fresh head (CoAtNet Table 2)."""
    pre, fin = inp.scores.pretrain, inp.scores.finetune
    train_a, held_a = _splits(inp, pre)
    model = _model(inp, len(train_a.classes), no_drop=False)
    hist_a = _fit("pretrain", model, train_a, held_a, inp.optim, pre.epochs, inp, device, progress, report, True)
    train_b, held_b = _splits(inp, fin)
    target = _model(inp, len(train_b.classes), no_drop=False)
    _copy_body(model, target)
    hist_b = _fit("transfer", target, train_b, held_b, inp.optim, fin.epochs, inp, device, progress, report, True)
    return {
        "transfer.pretrain_acc": hist_a.eval_acc[-1],
        "transfer.finetune_acc": hist_b.eval_acc[-1],
        "transfer.images": len(train_a.y) + len(train_b.y),
        "transfer.seconds": sum(hist_a.seconds) + sum(hist_b.seconds),
        "curves.pretrain": _curves(hist_a),
        "curves.transfer": _curves(hist_b),
    }


def _copy_body(source: torch.nn.Module, target: torch.nn.Module) -> None:
    """Copy every weight but the classifier (found as the parameters a class count changes)."""
    head = _head_keys(target)
    body = {k: v for k, v in source.state_dict().items() if k not in head}
    target.load_state_dict(body, strict=False)


def _head_keys(model: torch.nn.Module) -> set[str]:
    classifier = model.get_classifier()
    names = {id(p): n for n, p in model.named_parameters()}
    return {names[id(p)] for p in classifier.parameters()}


def _length(inp: TrialInput, length: S.LengthSpec, device, progress, report) -> dict:
    """Training-length stability: eval accuracy after each schedule length (ViT_C paper §4)."""
    subset = S.SubsetSpec(per_class=length.per_class, epochs=max(length.epochs), classes=length.classes)
    train, held = _splits(inp, subset)
    out: dict = {"length.epochs": list(length.epochs)}
    accs = []
    for epochs in length.epochs:
        model = _model(inp, len(train.classes), no_drop=False)
        hist = _fit(f"length{epochs}", model, train, held, inp.optim, epochs, inp, device, progress, report, True)
        accs.append(hist.eval_acc[-1])
        out[f"curves.length{epochs}"] = _curves(hist)
    out["length.eval_acc"] = accs
    out["length.eval_acc_longest"] = accs[length.epochs.index(max(length.epochs))]
    return out


def _curves(hist: History) -> dict:
    return {
        "train_loss": list(hist.train_loss),
        "train_acc": list(hist.train_acc),
        "eval_loss": list(hist.eval_loss),
        "eval_acc": list(hist.eval_acc),
        "seconds": list(hist.seconds),
    }
