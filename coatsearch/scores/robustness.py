"""Robustness (ImageNet-C / MNIST-C spirit): accuracy of another score's trained model on corrupted eval images.

No second training run: the model (and its fixed eval images) come from the source score of the same trial,
which runs first. Corruptions act on the normalized images (mean 0, sd 1 per channel, so a shift or rotation
fills with the mean); magnitudes grow with severity 1..5 and are relative to the image size where that matters.
Gaussian noise is drawn from a generator seeded by the trial's seed, so a trial is deterministic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from pydantic import Field, Strict

from coatsearch.scores.base import Context, Guard, Measured, Score, acc
from coatsearch.vocab import specs

if TYPE_CHECKING:  # torch is imported when a run starts
    import torch

    from coatsearch.training.data import TensorData

# corruption -> magnitude at severities 1..5
_SEVERITIES = {
    "noise": (0.3, 0.6, 0.9, 1.2, 1.5),  # Gaussian noise sd, in data sd units
    "blur": (0.6, 1.0, 1.5, 2.0, 3.0),  # Gaussian blur sigma, in pixels
    "contrast": (0.6, 0.45, 0.3, 0.2, 0.1),  # factor towards each image's mean
    "shift": (0.08, 0.16, 0.24, 0.32, 0.40),  # translation, fraction of the image side (right and down)
    "rotate": (12, 24, 36, 48, 60),  # degrees, counter-clockwise
}
CORRUPTIONS = tuple(_SEVERITIES)


@specs.spec
class RobustnessSpec:
    """Which score's trained model is corrupted-tested, and how many severities (1..5) of each corruption."""

    source: specs.Name = "generalization"  # an enabled score that keeps its trained model (Score.keeps_model)
    severities: Annotated[int, Strict(), Field(ge=1, le=len(_SEVERITIES["noise"]))] = 3


def check(spec: RobustnessSpec, models: tuple[str, ...]) -> str | None:
    """The source must be an enabled score, before this one, that keeps its trained model ('field: problem')."""
    if spec.source in models:
        return None
    have = ", ".join(models) or "none"
    return f"source: '{spec.source}' is not an enabled score that keeps its trained model (enabled that do: {have})"


def corrupt(x: torch.Tensor, name: str, severity: int, seed: int) -> torch.Tensor:
    """A corrupted copy of the images `x` (N, C, H, W): corruption `name` at `severity` (1-based)."""
    import torch
    from torchvision.transforms.v2 import functional as TF

    m = _SEVERITIES[name][severity - 1]
    if name == "noise":
        gen = torch.Generator(device="cpu").manual_seed(seed * 1000 + severity)
        return x + m * torch.randn(x.shape, generator=gen).to(x.device, x.dtype)
    if name == "blur":
        k = 2 * int(2 * m + 0.5) + 1
        return TF.gaussian_blur(x, kernel_size=[k, k], sigma=[m, m])
    if name == "contrast":
        mean = x.mean(dim=(1, 2, 3), keepdim=True)
        return mean + m * (x - mean)
    if name == "shift":
        d = round(m * x.shape[-1])
        return TF.affine(x, angle=0.0, translate=[d, d], scale=1.0, shear=[0.0, 0.0], fill=0.0)
    return TF.rotate(x, float(m), fill=0.0)


def run(ctx: Context, spec: RobustnessSpec) -> Measured:
    """Clean and corrupted eval accuracy of the source score's model; one mean per corruption, per severity."""
    import dataclasses

    from coatsearch.training.curves import eval_batch
    from coatsearch.training.fit import evaluate

    if spec.source not in ctx.models:
        raise ValueError(f"robustness: source score '{spec.source}' trained no model in this trial")
    model, held, validation = ctx.models[spec.source]
    batch = eval_batch(ctx.device, ctx.inp.optim.batch_size)  # the device's evaluation batch, as curve points
    levels = list(range(1, spec.severities + 1))

    def acc_at(images: TensorData, name: str, severity: int) -> float:
        images = dataclasses.replace(images, x=corrupt(images.x, name, severity, ctx.inp.seed))
        return evaluate(model, images, ctx.device, batch)[1]

    per = {name: [acc_at(held, name, s) for s in levels] for name in CORRUPTIONS}  # the test images
    out = {f"robustness.{name}_acc": sum(accs) / len(accs) for name, accs in per.items()}
    val = [acc_at(validation, name, s) for name in CORRUPTIONS for s in levels]  # the twin that selection reads
    clean = evaluate(model, held, ctx.device, batch)[1]
    metrics = {
        "robustness.clean_acc": clean,
        "robustness.corrupt_acc": sum(sum(a) for a in per.values()) / (len(levels) * len(per)),
        "robustness.val_clean_acc": evaluate(model, validation, ctx.device, batch)[1],
        "robustness.val_corrupt_acc": sum(val) / len(val),
        **out,
        "robustness.source": spec.source,
    }
    curve = {"severity": [0, *levels], **{n: [clean, *a] for n, a in per.items()}}  # accuracy per severity
    return Measured(metrics, {"robustness": curve})


SCORE = Score(
    name="robustness",
    section=RobustnessSpec,
    run=run,
    metrics=(
        acc("robustness.clean_acc", "robust. clean acc", table=False),
        acc("robustness.corrupt_acc", "corrupted acc (mean)", ranked=True),
        *(acc(f"robustness.{n}_acc", f"{n} acc", table=False) for n in CORRUPTIONS),
    ),
    curves=lambda spec: ("robustness",),
    epochs=lambda spec: (),
    headline="robustness.corrupt_acc",
    fallback=6,
    check=check,
    guards=(Guard("robustness", "robustness.clean_acc", ("robustness",)),),
)
