"""Transfer (CoAtNet Table 2) from equal footing: pretrain on A, fine-tune every weight on B, against two baselines.

- Pretrain to a common eval accuracy on A (`pretrain.target_acc`) or the pretrain step cap, whichever comes
  first; `transfer.pretrain_stopped` records which ("target" | "cap").
- Fine-tune every weight with a fresh head at `finetune.lr_factor` × the pretrain lr, for the fine-tune budget
  (`max_steps`, else `epochs`, never fewer than MIN_FINETUNE_STEPS unless `max_steps` says so).
- Baselines, same seed and B data: the same architecture from scratch for the same number of steps at the
  full lr, and a linear probe (logistic regression) on the frozen pretrained features.
- transfer.gain = fine-tune − scratch accuracy: what pretraining bought.
"""

from __future__ import annotations

import dataclasses
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from coatsearch.scores.base import Context, Guard, Measured, Metric, Score, acc
from coatsearch.training import schedule
from coatsearch.vocab import specs

if TYPE_CHECKING:  # torch is imported when a run starts
    import torch

    from coatsearch.training.data import TensorData

MIN_FINETUNE_STEPS = 300  # the least fine-tune (and scratch) budget when `finetune.max_steps` is not given
_PROBE_ITERS = 200  # L-BFGS iterations of the linear probe
_PROBE_L2 = 1e-4  # L2 penalty of the linear probe (on standardized features)


@specs.spec
class TransferSpec:
    """Pretrain on subset A (`pretrain`), then fine-tune on subset B (`finetune`, may name another dataset)."""

    pretrain: specs.SubsetSpec
    finetune: specs.SubsetSpec


FACTS = ("fingerprint", "_images")  # what transfer keeps of its runs' facts: which images, how many held out


def run(ctx: Context, spec: TransferSpec) -> Measured:
    """Pretrain, fine-tune, train the two baselines; accuracies, the gain, how pretraining stopped, and curves."""
    from coatsearch.scores import training as T
    from coatsearch.training.curves import eval_batch

    pre, fin = spec.pretrain, spec.finetune
    optim = ctx.inp.optim
    train_a, held_a, val_a = T.splits(ctx, pre)
    source = T.model(ctx, len(train_a.classes), no_drop=False)
    hist_a = T.train(ctx, "pretrain", source, train_a, held_a, optim, pre, augment=True, stop_at_acc=pre.target_acc,
                     validation=val_a)  # fmt: skip
    train_b, held_b, val_b = T.splits(ctx, fin)
    batch = schedule.subset_optim(optim, fin).batch_size
    steps = fin.max_steps or max(MIN_FINETUNE_STEPS, schedule.run_steps(fin, len(train_b), batch))
    fin = dataclasses.replace(fin, max_steps=steps)
    tuned = T.model(ctx, len(train_b.classes), no_drop=False)
    copy_body(source, tuned)
    slow = dataclasses.replace(optim, lr=optim.lr * fin.lr_factor)
    hist_b = T.train(ctx, "transfer", tuned, train_b, held_b, slow, fin, augment=True, validation=val_b)
    ctx.models["transfer"] = (tuned, held_b, val_b)
    scratch = T.model(ctx, len(train_b.classes), no_drop=False)
    hist_s = T.train(ctx, "scratch", scratch, train_b, held_b, optim, fin, augment=True, validation=val_b)
    probe = linear_probe(source, train_b, held_b, ctx.device, eval_batch(ctx.device, optim.batch_size))
    tuned_acc, scratch_acc = T.final_eval_acc(hist_b), T.final_eval_acc(hist_s)
    val_tuned, val_scratch = T.final_val_acc(hist_b), T.final_val_acc(hist_s)
    metrics = {
        "transfer.pretrain_acc": hist_a.eval_acc[-1],
        "transfer.pretrain_stopped": hist_a.stopped or "cap",
        "transfer.pretrain_steps": hist_a.steps,
        "transfer.finetune_acc": tuned_acc,
        "transfer.scratch_acc": scratch_acc,
        "transfer.gain": tuned_acc - scratch_acc,
        "transfer.probe_acc": probe,
        "transfer.val_pretrain_acc": hist_a.val_acc[-1],  # the validation twins (subsets.split): for selection
        "transfer.val_finetune_acc": val_tuned,
        "transfer.val_scratch_acc": val_scratch,
        "transfer.val_gain": val_tuned - val_scratch,
        "transfer.finetune_steps": hist_b.steps,
        "transfer.lr_factor": fin.lr_factor,
        "transfer.images": len(train_a) + len(train_b),
        "transfer.seconds": sum(hist_a.seconds) + sum(hist_b.seconds) + sum(hist_s.seconds),
        "transfer.compile": "/".join(h.compile_mode for h in (hist_a, hist_b, hist_s)),  # pretrain/finetune/scratch
        **_fallbacks({"pretrain": hist_a, "finetune": hist_b, "scratch": hist_s}),
        **_kept(T.run_facts("pretrain", hist_a, train_a, held_a, val_a)),
        **_kept(T.run_facts("finetune", hist_b, train_b, held_b, val_b)),
    }
    return Measured(metrics, {"pretrain": T.curves(hist_a), "transfer": T.curves(hist_b), "scratch": T.curves(hist_s)})


def _kept(facts: Measured) -> dict[str, Any]:
    """The facts of a run that transfer records (FACTS: which images, how many held out)."""
    return {k: v for k, v in facts.metrics.items() if k.endswith(FACTS)}


def _fallbacks(runs: dict) -> dict:
    """`transfer.compile_fallback` naming each run that went on eagerly after a compile or capture error; {} if none."""
    told = [f"{name}: {h.fallback}" for name, h in runs.items() if h.fallback]
    return {"transfer.compile_fallback": "; ".join(told)} if told else {}


def copy_body(source: torch.nn.Module, target: torch.nn.Module) -> None:
    """Copy every weight but the classifier (found as the parameters a class count changes)."""
    classifier = target.get_classifier()  # type: ignore[operator]  # CoAtNet and timm's ViT both define it
    names = {id(p): n for n, p in target.named_parameters()}
    head = {names[id(p)] for p in classifier.parameters()}
    body = {k: v for k, v in source.state_dict().items() if k not in head}
    target.load_state_dict(body, strict=False)


def features(model: torch.nn.Module, data: TensorData, device: torch.device, batch_size: int) -> torch.Tensor:
    """Frozen pre-classifier features of `data` (eval mode, no gradients): the model with its head removed."""
    import copy

    import torch

    body = copy.deepcopy(model).to(device).eval()
    body.head = torch.nn.Identity()  # CoAtNet and timm's VisionTransformer both call their classifier `head`
    with torch.no_grad():
        return torch.cat([body(data.x[i : i + batch_size].to(device)).float() for i in range(0, len(data), batch_size)])


def linear_probe(
    model: torch.nn.Module, train: TensorData, held: TensorData, device: torch.device, batch_size: int
) -> float:
    """Eval accuracy of a logistic regression (L-BFGS, L2) on the frozen, standardized features of `model`."""
    import torch
    import torch.nn.functional as F

    ftr, fte = features(model, train, device, batch_size), features(model, held, device, batch_size)
    std, mean = torch.std_mean(ftr, dim=0)
    ftr, fte = (ftr - mean) / std.clamp_min(1e-6), (fte - mean) / std.clamp_min(1e-6)
    ytr = train.y.to(device)
    w = torch.zeros(ftr.shape[1], train.num_classes, device=device, requires_grad=True)
    b = torch.zeros(train.num_classes, device=device, requires_grad=True)
    opt = torch.optim.LBFGS([w, b], max_iter=_PROBE_ITERS, line_search_fn="strong_wolfe")

    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = F.cross_entropy(ftr @ w + b, ytr) + _PROBE_L2 * w.square().sum()
        loss.backward()
        return loss

    opt.step(closure)
    with torch.no_grad():
        return ((fte @ w + b).argmax(1).cpu() == held.y).float().mean().item()


SCORE = Score(
    name="transfer",
    section=TransferSpec,
    run=run,
    metrics=(
        acc("transfer.pretrain_acc", "pretrain acc (A)"),
        acc("transfer.finetune_acc", "finetune acc (B)", ranked=True),
        acc("transfer.scratch_acc", "scratch acc (B)"),
        Metric("transfer.gain", "transfer gain (finetune − scratch)", "points", 100, 1, "higher", 0.5, ranked=True),
        acc("transfer.probe_acc", "linear probe acc (B)"),
    ),
    curves=lambda spec: ("pretrain", "transfer", "scratch"),
    epochs=lambda spec: (spec.pretrain.epochs, spec.finetune.epochs),
    signal=lambda spec: "transfer",
    headline="transfer.finetune_acc",
    fallback=4,
    keeps_model=True,
    guards=(
        Guard("pretrain", "transfer.pretrain_acc", ("transfer", "pretrain")),
        Guard("transfer", "transfer.finetune_acc", ("transfer", "finetune")),
    ),
    roles=MappingProxyType(
        {
            "gain": "transfer.gain",  # fine-tune − from-scratch accuracy: out of regime when no key candidate gains
            "stopped": "transfer.pretrain_stopped",  # how pretraining stopped: "target" or "cap"
            "finetune_steps": "transfer.finetune_steps",
        }
    ),
)
