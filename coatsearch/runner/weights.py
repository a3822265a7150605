"""Trained weights of the found architectures (`export STUDY --best K --format yaml --save-weights`).

A trial keeps no weights when it trains (a search trains hundreds of models; keeping each would multiply the
study's size), so each exported architecture's best trial is trained again: the same solved model, sampled
values, scores, data subset, step budget and seed, on the device asked for. Training is seeded, so on the CPU
the retrained objective is the recorded one; the file records both, and `export` prints both. The file, a
`torch.save` of plain data (weights_only-loadable), holds the state_dict of the objective's score model, the
solved model spec, and where it came from; it is written atomically (`coatsearch.fsafe`), never through a link.
`load(path)` builds the model from the spec in the file and loads the weights: nothing else is needed.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import torch
from pydantic import TypeAdapter
from torch import nn

from coatsearch.errors import UserError
from coatsearch.storage.found import TrialModel, study_space
from coatsearch.vocab import specs as S

FORMAT = "coatsearch.runner.weights/1"


def path_for(yaml_path: Path, architecture: str) -> Path:
    """Where an exported architecture's weights go: beside the YAML, `<stem>.<architecture>.pt`."""
    return yaml_path.with_name(f"{yaml_path.stem}.{architecture}.pt")


def retrain(study_name: str, tm: TrialModel, studies_dir: str | Path, device: str = "cpu") -> dict[str, Any]:
    """Train trial `tm` again on its recorded seed and values; the file's content (weights and provenance)."""
    from coatsearch import scores
    from coatsearch.scores.base import Context, TrialInput
    from coatsearch.storage import store
    from coatsearch.training.fit import pick_device

    space = study_space(store.load_study(Path(studies_dir), study_name))
    cand = space.candidate(tm.candidate)
    prep = tm.prepared
    runs = len(space.study.seeds) * max(1, len(scores.enabled(cand.scores)))
    inp = TrialInput(prep.model, prep.optim, space.data, cand.scores, int(tm.seed or 0), runs)
    ctx = Context(inp, pick_device(device))  # the one device check, as --device
    metrics: dict[str, Any] = {}
    for score, section in scores.enabled(cand.scores):
        metrics.update(score.run(ctx, section))
    key = space.study.keys[0]
    kept = ctx.models.get(key.split(".", 1)[0]) or next(iter(ctx.models.values()), None)
    if kept is None:
        raise UserError(f"trial {tm.number}: its scores keep no trained model, so it has no weights to save")
    net = kept[0]
    return {
        "format": FORMAT,
        "study": study_name,
        "trial": tm.number,
        "architecture": tm.architecture,
        "seed": tm.seed,
        "objective": key,
        "recorded": tm.measured,  # the same metric as "retrained" (the trial value may be another: validation)
        "retrained": float(metrics[key]) if isinstance(metrics.get(key), int | float) else None,
        "model": TypeAdapter(S.ModelSpec).dump_python(_classes(prep.model, net), mode="json"),
        "state_dict": {k: v.detach().cpu() for k, v in net.state_dict().items()},
    }


def _classes(model: S.ModelSpec, net: nn.Module) -> S.ModelSpec:
    """The spec of the trained module: its head's output count, which the score may have set."""
    heads = [m for m in net.modules() if isinstance(m, nn.Linear)]
    return dataclasses.replace(model, num_classes=heads[-1].out_features) if heads else model


def save(path: Path, content: dict[str, Any]) -> Path:
    """Write a retrained architecture's file atomically (no link followed; a failed write leaves none)."""
    from coatsearch import fsafe

    with fsafe.replacing(path) as tmp:
        torch.save(content, tmp)
    return path


def load(path: str | Path, device: str = "cpu") -> nn.Module:
    """The trained model a `--save-weights` file holds: built from its spec, its weights loaded, in eval mode.

    The device is checked first (`fit.pick_device`, as `--device`), the file is a regular file read to the CPU,
    and the spec's size is bounded (its MACs lower bound, as a space file's) and its parameters counted part by
    part on torch's meta device (budget.count) against the stored values before the real model is built: a
    small file naming a huge model is one line, not gigabytes.
    """
    from coatsearch import fsafe
    from coatsearch.budget.count import count
    from coatsearch.models import build
    from coatsearch.training.fit import pick_device

    if not isinstance(path, str | Path) or not str(path):
        raise UserError(f"path: {path!r} is not allowed; allowed: a weights file's path (a str or Path)")
    dev = pick_device(device)
    fsafe.check_named(Path(path), "weights file")  # regular: no FIFO, no device
    try:
        content = torch.load(Path(path), map_location="cpu", weights_only=True)
    except Exception as exc:  # torch's own message advises weights_only=False: never for a file of unknown origin
        raise UserError(f"{path}: not a coatsearch weights file ({type(exc).__name__})") from None
    if (
        not isinstance(content, dict)
        or content.get("format") != FORMAT
        or not isinstance(content.get("state_dict"), dict)
    ):
        raise UserError(f"{path}: not a coatsearch weights file (format {FORMAT} expected)")
    stored = sum(v.numel() for v in content["state_dict"].values() if isinstance(v, torch.Tensor))
    try:
        spec = TypeAdapter(S.ModelSpec).validate_python(content["model"])
        floor, params = spec.macs_floor(), 0
        if floor <= S.MACS_MAX:
            params = count(spec).params  # counted part by part on the meta device: nothing is allocated
    except Exception as exc:
        raise UserError(f"{path}: its model spec cannot be read ({type(exc).__name__}: {exc})"[:300]) from None
    if floor > S.MACS_MAX or params > stored:
        size = f"at least {floor:.3g} MACs" if floor > S.MACS_MAX else f"{params:,} parameters"
        raise UserError(
            f"{path}: its weights do not fit its model spec ({stored:,} values stored, the spec has {size})"
        )
    net = build(spec)
    try:
        net.load_state_dict(content["state_dict"])
    except RuntimeError as exc:
        raise UserError(f"{path}: its weights do not fit its model spec ({str(exc).splitlines()[0][:160]})") from None
    return net.to(dev).eval()
