"""Trained weights of the found architectures (`export STUDY --best K --format yaml|timm --save-weights`).

A trial keeps no weights when it trains (a search trains hundreds of models; keeping each would multiply the
study's size), so each exported architecture's best trial is trained again: the same solved model, sampled
values, scores, data subset, step budget and seed, on the device asked for. Training is seeded, so on the CPU
the retrained objective is the recorded one; the file records both, and `export` prints both. The file is
safetensors (never a pickle: nothing is unpickled to read it): the tensors are the score model's state_dict,
its metadata the solved model spec, the input's normalization (timm's mean and std) and where it came from, as
JSON strings. It is written atomically (`coatsearch.fsafe`), never through a link. `load(path)` builds the model
from the spec in the file and loads the weights; timm loads the same file through a pretrained_cfg `file` entry
(`coatsearch.timm_models`).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import torch
from pydantic import TypeAdapter
from torch import nn

from coatsearch.errors import UserError
from coatsearch.storage.found import TrialModel, study_space
from coatsearch.vocab import specs

FORMAT = "coatsearch.runner.weights/2"  # /1 was a torch.save pickle, never read
SUFFIX = ".safetensors"
_PICKLE_MAGIC = (b"\x80", b"PK\x03\x04")  # a pickle (protocol 2+) and torch.save's zip container
_FILE_MAX = 2**42  # bytes of a weights file (4 TB: no real bound; the spec and the header's tensors bound it)


def path_for(yaml_path: Path, architecture: str) -> Path:
    """Where an exported architecture's weights go: beside the YAML, `<stem>.<architecture>.safetensors`."""
    return yaml_path.with_name(f"{yaml_path.stem}.{architecture}{SUFFIX}")


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
    measured = scores.Measured()
    for score, section in scores.enabled(cand.scores):
        measured = measured.merge(score.run(ctx, section))
    metrics = measured.metrics
    key = space.study.keys[0]
    net = trained(ctx.models, key)
    if net is None:
        raise UserError(f"trial {tm.number}: its scores keep no trained model, so it has no weights to save")
    retrained = float(metrics[key]) if isinstance(metrics.get(key), int | float) else None
    made = content(space, prep.model, net, study=study_name, trial=tm.number, architecture=tm.architecture,
                   seed=tm.seed, objective=key, recorded=tm.measured)  # fmt: skip
    return {**made, "retrained": retrained}


def trained(models: dict[str, Any], key: str) -> nn.Module | None:
    """The trained model a trial's weights are: the one of the score whose metric `key` is the study's first
    objective, else the first score's that kept one (`scores.Context.models`); None when no score kept one."""
    kept = models.get(key.split(".", 1)[0]) or next(iter(models.values()), None)
    return None if kept is None else kept[0]


def content(space: Any, model: specs.ModelSpec, net: nn.Module, **origin: Any) -> dict[str, Any]:
    """A weights file's content: `origin` (study, trial, architecture, seed, objective, recorded), the solved
    model's spec with the trained head's classes, the input's normalization and the state dict on the CPU."""
    from coatsearch.training import data

    mean_std = data.load(space.data, model.image_size, model.in_chans)[0].norm
    return {
        "format": FORMAT,
        **origin,  # "recorded": the study's first metric key as the trial recorded it (the value may be another)
        "retrained": None,
        "model": TypeAdapter(specs.ModelSpec).dump_python(_classes(model, net), mode="json"),
        "norm": [list(v) for v in mean_std] if mean_std else None,  # the input's [mean, std] (timm's cfg)
        "state_dict": {k: v.detach().cpu() for k, v in net.state_dict().items()},
    }


def _classes(model: specs.ModelSpec, net: nn.Module) -> specs.ModelSpec:
    """The spec of the trained module: its head's output count, which the score may have set."""
    heads = [m for m in net.modules() if isinstance(m, nn.Linear)]
    return dataclasses.replace(model, num_classes=heads[-1].out_features) if heads else model


def save(path: Path, content: dict[str, Any]) -> Path:
    """Write a retrained architecture's safetensors file atomically (no link followed; a failed write leaves none)."""
    from safetensors.torch import save_file

    from coatsearch import fsafe

    tensors = {k: v.contiguous() for k, v in content["state_dict"].items()}
    meta = {k: json.dumps(v) for k, v in content.items() if k != "state_dict"}
    with fsafe.replacing(path) as tmp:
        save_file(tensors, str(tmp), metadata=meta)
    return path


def read(path: str | Path) -> dict[str, Any]:
    """A weights file's content (`retrain`'s form): a one-line UserError for a link, a pickle or another file.

    Header first: the safetensors header is read by hand (`checkpoint_check.raw_header`: at most 64 MB of JSON,
    every tensor's byte range inside the file), the format and the model spec checked (`checked`, on tensors of
    the header's shapes on torch's meta device), and only then are the tensors read: a sparse file whose header
    names one huge tensor is one line, never read whole.
    """
    from safetensors import SafetensorError, safe_open

    from coatsearch import fsafe

    path = fsafe.check_plain(Path(path))
    try:
        with open(path, "rb") as fh:
            start = fh.read(9)
    except OSError as exc:
        raise UserError(f"{path}: cannot be read ({exc.strerror})") from None
    # safetensors: an 8-byte header length, then the JSON header; its first byte may be 0x80 (a length of 128 + 256k)
    if start[8:9] != b"{" and start.startswith(_PICKLE_MAGIC):
        raise UserError(f"{path}: is a pickle (torch.save), which coatsearch never loads; export the weights "
                        f"again with --save-weights (safetensors)")  # fmt: skip
    content = _header(path)
    checked(path, content)  # the spec bounded and the header's tensors the model's, before any tensor is read
    try:
        with safe_open(str(path), framework="pt") as f:
            state = {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118 - a safe_open handle, not a dict
    except (SafetensorError, OSError, ValueError) as exc:
        raise UserError(f"{path}: not a coatsearch weights file ({exc})") from None
    return {**content, "state_dict": state}


def _header(path: Path) -> dict[str, Any]:
    """The file's metadata, with a state dict of meta-device tensors of the header's dtypes and shapes (nothing
    allocated); a one-line UserError when the header is not a coatsearch weights file's."""
    from coatsearch.training import checkpoint_check as cc

    try:
        entries, data = cc.raw_header(path, _FILE_MAX, "a weights file", "a weights file may hold")
        raw = entries.pop("__metadata__", None) or {}
        shapes = {k: cc.entry(k, e, data, "a weights file") for k, e in entries.items()}
        content = {k: json.loads(v) for k, v in raw.items()} if isinstance(raw, dict) else {}
    except cc.Damaged as exc:
        raise UserError(f"{path}: not a coatsearch weights file ({exc})") from None
    except (ValueError, TypeError, RecursionError) as exc:
        raise UserError(f"{path}: not a coatsearch weights file (metadata: {str(exc)[:80]})") from None
    if content.get("format") != FORMAT or not isinstance(content.get("model"), dict):
        raise UserError(f"{path}: not a coatsearch weights file (safetensors with format {FORMAT} expected)")
    meta = {k: torch.empty(shape, dtype=cc.DTYPES[d], device="meta") for k, (d, shape) in shapes.items()}
    return {**content, "state_dict": meta}


def spec(content: dict[str, Any]) -> specs.ModelSpec:
    """The solved model spec a weights file's content records."""
    return TypeAdapter(specs.ModelSpec).validate_python(content["model"])


def checked(path: str | Path, content: dict[str, Any]) -> specs.ModelSpec:
    """The model spec of a weights file's `content`, bounded before anything is allocated: the one check of every
    route to a stored model (`load`, timm's `create_model` through `coatsearch.timm_models.register`).

    The spec is validated (a bad field is one line), its MACs lower bound is at most MACS_MAX, its parameters,
    counted part by part on torch's meta device, at most the stored values, and the stored tensors' names and
    shapes are the state dict of the model built on the meta device (nothing allocated); a one-line UserError else.
    """
    from coatsearch.budget.count import count
    from coatsearch.models import build

    stored = sum(v.numel() for v in content["state_dict"].values() if isinstance(v, torch.Tensor))
    try:
        model_spec = spec(content)
        floor, params = model_spec.macs_floor(), 0
        if floor <= specs.MACS_MAX:
            params = count(model_spec).params  # counted part by part on the meta device: nothing is allocated
    except Exception as exc:
        first = str(exc).splitlines()[0] if str(exc) else ""
        if hasattr(exc, "errors"):  # pydantic: the first error, one line
            err = exc.errors()[0]
            first = f"field {'.'.join(map(str, err['loc']))}: {err['msg']} (found {err.get('input')!r})"
        raise UserError(f"{path}: its model spec cannot be read ({type(exc).__name__}: {first})"[:300]) from None
    if floor > specs.MACS_MAX or params > stored:
        size = f"at least {floor:.3g} MACs" if floor > specs.MACS_MAX else f"{params:,} parameters"
        raise UserError(
            f"{path}: its weights do not fit its model spec ({stored:,} values stored, the spec has {size})"
        )
    try:
        with torch.device("meta"):
            shapes = {k: tuple(v.shape) for k, v in build(model_spec).state_dict().items()}
    except Exception as exc:
        raise UserError(f"{path}: its model spec cannot be built ({type(exc).__name__}: {exc})"[:300]) from None
    got = {k: tuple(v.shape) for k, v in content["state_dict"].items()}
    for name in sorted(set(shapes) | set(got)):
        if shapes.get(name) != got.get(name):
            raise UserError(f"{path}: its weights do not fit its model spec (tensor {name!r}: stored "
                            f"{list(got[name]) if name in got else 'none'}, the spec's "
                            f"{list(shapes[name]) if name in shapes else 'none'})"[:300])  # fmt: skip
    return model_spec


def load(path: str | Path, device: str = "cpu") -> nn.Module:
    """The trained model a `--save-weights` file holds: built from its spec, its weights loaded, in eval mode.

    The device is checked first (`fit.pick_device`, as `--device`), the file is a regular safetensors file read to
    the CPU (`read`: never a pickle), and the spec's size is bounded (its MACs lower bound, as a space file's) and its
    parameters counted part by part on torch's meta device (budget.count) against the stored values before the real
    model is built: a small file naming a huge model is one line, not gigabytes.
    """
    from coatsearch import fsafe
    from coatsearch.models import build
    from coatsearch.training.fit import pick_device

    if not isinstance(path, str | Path) or not str(path):
        raise UserError(f"path: {path!r} is not allowed; allowed: a weights file's path (a str or Path)")
    dev = pick_device(device)
    fsafe.check_named(Path(path), "weights file")  # regular: no FIFO, no device
    content = read(path)
    model_spec = checked(path, content)
    net = build(model_spec)
    try:
        net.load_state_dict(content["state_dict"])
    except RuntimeError as exc:
        raise UserError(f"{path}: its weights do not fit its model spec ({str(exc).splitlines()[0][:160]})") from None
    return net.to(dev).eval()
