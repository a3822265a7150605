"""Found networks as timm models: `register(study, best=K)` names them in timm's registry; `save_folder` writes a
folder that `timm.create_model("local-dir:PATH")` builds without the study.

Each of a study's K best searched architectures (`export --best K`) is registered through timm's public registry
(`timm.models.register_model`, `generate_default_cfgs`, `build_model_with_cfg`) under
`coatsearch_<study>_<architecture>`. `timm.create_model(name, pretrained=False)` builds the solved model;
`export STUDY --best K --format timm` retrains each on its best trial's seed and writes its safetensors weights
into `<study>/weights/` (coatsearch.runner.weights), and with that file `pretrained=True` loads them through the
pretrained_cfg's `file` entry. With `--out DIR` it also writes `DIR/<name>/` (config.json + model.safetensors,
timm's own local-weights layout), whose config names the one generic entry `coatsearch_found` (registered when this
module is imported) with the solved spec as its `model_args`: `import coatsearch.timm_models`, then
`timm.create_model("local-dir:DIR/<name>", pretrained=True)` in any process, with no study folder.

Either route is a timm model as any other: `features_only=True` (the stem's and each stage's map, timm's
`feature_info`; a ViT's blocks through timm's feature getter), `in_chans=` with weights (timm adapts the first
conv, `first_conv` in the cfg), `num_classes=` and `reset_classifier` (a changed head is new). The cfg carries
the study's normalization: the train pool's per-channel mean and std on [0, 1] pixels (after padding or resizing
to the input size), so `timm.data.resolve_data_config` + `create_transform` feed the model as the study did.
Weights written before the mean and std were recorded, and a registered network without weights, say 0 and 1:
the model then takes images already normalized.
"""

from __future__ import annotations

import dataclasses
import json
import re
import string
import warnings
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from torch import nn

from coatsearch.errors import UserError
from coatsearch.vocab import specs

NAME = "coatsearch_{study}_{architecture}"  # the default name template of a registered network
FOUND = "coatsearch_found"  # timm's entry of a saved folder: its config's model_args carry the solved spec
_CONFIG, _FILE = "config.json", "model.safetensors"  # timm's local-dir layout (timm.models._hub)
_WEIGHTS = "weights"  # the study folder's subfolder of `export --format timm` weights
default_cfgs: dict[str, Any] = {}  # timm's register_model reads the pretrained cfgs of the module's entry points
_OURS: dict[str, tuple[str, str]] = {}  # name -> (study, architecture) this process registered


def weights_path(studies_dir: str | Path, study: str, architecture: str) -> Path:
    """Where `export --format timm` puts an architecture's weights: `<study>/weights/<architecture>.safetensors`."""
    from coatsearch import fsafe
    from coatsearch.runner import weights
    from coatsearch.storage import store

    return fsafe.owned(store.folder(Path(studies_dir), study), _WEIGHTS, f"{architecture}{weights.SUFFIX}")


def _name_for(study: str, architecture: str, template: str = NAME) -> str:
    """A registered network's timm name: the template filled in, lower case, other characters than [a-z0-9_] as _."""
    return re.sub(r"[^a-z0-9_]", "_", template.format(study=study, architecture=architecture).lower())


def check_template(template: object) -> str:
    """`template` if it is a name template `str.format` fills from {study} and {architecture} alone; one line else."""
    allowed = "a str naming only {study} and {architecture}, e.g. 'mynet_{architecture}'"
    if not isinstance(template, str) or not template:
        raise UserError(f"name: {template!r} is not allowed; allowed: {allowed}")
    try:
        parsed = [(f, spec, conv) for _, f, spec, conv in string.Formatter().parse(template) if f is not None]
    except ValueError as exc:  # an unmatched brace
        raise UserError(f"name: {template!r} is not a template ({exc}); allowed: {allowed}") from None
    if any(spec or conv for _, spec, conv in parsed):
        raise UserError(f"name: {template!r} has a conversion or format spec; allowed: {allowed}")
    fields = {f for f, _, _ in parsed}
    if fields - {"study", "architecture"}:
        other = ", ".join(repr(f) for f in sorted(fields - {"study", "architecture"}))
        raise UserError(f"name: {template!r} names {other}; allowed: {allowed}")
    try:
        filled = _name_for("s", "a", template)
    except (ValueError, KeyError, IndexError, AttributeError) as exc:  # a format spec: '{study:>5q}'
        raise UserError(
            f"name: {template!r} cannot be filled ({type(exc).__name__}: {exc}); allowed: {allowed}"
        ) from None
    if not filled.strip("_"):
        raise UserError(f"name: {template!r} gives no name; allowed: {allowed}")
    return template


def register(study: str, best: int = 1, studies_dir: str | Path = "studies", name: str = NAME) -> list[str]:
    """Register the study's `best` found architectures with timm; their timm names, best first.

    Weights written by `export --format timm` are attached as the pretrained cfg's `file`, after the checks
    `load_weights` makes (`weights.checked`: the spec validated, its MACs and parameters bounded, its tensors' shapes
    the model's). The name template may name only {study} and {architecture}; a template that gives two
    architectures one name is refused (never one silently replacing the other), and so is a name timm already holds
    for another model: each a one-line UserError, raised before anything is registered.
    """
    import timm
    from timm.models import generate_default_cfgs, register_model

    from coatsearch.runner import weights
    from coatsearch.storage import found

    check_template(name)  # before anything is read or registered
    models = [tm for tm, _, _ in found.best(study, best, studies_dir)]
    names = [_name_for(study, tm.architecture, name) for tm in models]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise UserError(f"name {name!r}: gives {len(models)} architectures the timm name {twice[0]!r}; one "
                        "architecture, one name: put {architecture} in the template")  # fmt: skip
    entries = []
    for tm, timm_name in zip(models, names, strict=True):
        if timm.is_model(timm_name) and _OURS.get(timm_name) != (study, tm.architecture):
            raise UserError(f"{timm_name}: timm already has a model of that name; register under another name "
                            "(name='<template with {study} and {architecture}>')")  # fmt: skip
        spec, path = tm.prepared.model, weights_path(studies_dir, study, tm.architecture)
        cfg = _cfg(spec, None, None)
        if path.exists():
            content = weights.read(path)
            if content.get("architecture") != tm.architecture:
                raise UserError(f"{path}: holds architecture {content.get('architecture')}, not {tm.architecture}")
            spec = weights.checked(path, content)  # load_weights' bounds, before timm builds
            cfg = _cfg(spec, str(path), content.get("norm"))
        entries.append((timm_name, tm.architecture, spec, cfg))
    for timm_name, architecture, spec, cfg in entries:
        default_cfgs.update(generate_default_cfgs({timm_name: cfg}))
        with warnings.catch_warnings():  # re-registering our own entry: timm warns that it overwrites it
            warnings.simplefilter("ignore", UserWarning)
            register_model(_entry(timm_name, spec))
        _OURS[timm_name] = (study, architecture)
    return [e[0] for e in entries]


def _cfg(spec: specs.ModelSpec, file: str | None, norm: Any) -> dict[str, Any]:
    """The pretrained cfg of a network: input, classes, head, first conv, normalization (`norm`: the weights
    file's [mean, std], else 0 and 1) and, with weights, the file."""
    mean, std = norm if _is_norm(norm, spec.in_chans) else ((0.0,) * spec.in_chans, (1.0,) * spec.in_chans)
    head, first_conv = _names(spec)
    return {
        "file": file,
        "num_classes": spec.num_classes,
        "input_size": (spec.in_chans, spec.image_size, spec.image_size),
        "fixed_input_size": True,  # relative-position tables and ViT positions are sized at construction
        "interpolation": "bilinear",  # as the study resized (coatsearch.training.data)
        "crop_pct": 1.0,  # the study never crops
        "classifier": head,
        "first_conv": first_conv,
        "mean": tuple(mean),
        "std": tuple(std),
        "license": "weights trained by coatsearch on the study's data",
    }


def _is_norm(norm: Any, chans: int) -> bool:
    """Whether `norm` is [mean, std], each `chans` numbers (a weights file's record)."""
    return (
        isinstance(norm, list | tuple)
        and len(norm) == 2
        and all(isinstance(v, list | tuple) and len(v) == chans for v in norm)
        and all(isinstance(x, int | float) for v in norm for x in v)
    )


def _names(spec: specs.ModelSpec) -> tuple[str, str | None]:
    """(the classifier: the last Linear, the first conv or None) of the model, found on one built without memory."""
    import torch

    from coatsearch.models import build

    with torch.device("meta"):
        net = build(spec)
    convs = [n for n, m in net.named_modules() if isinstance(m, nn.Conv2d)]
    return [n for n, m in net.named_modules() if isinstance(m, nn.Linear)][-1], (convs[0] if convs else None)


def _create(spec: specs.ModelSpec, timm_name: str, pretrained: bool, **kwargs: Any) -> nn.Module:
    """timm's builder on the solved model: its cfg, weights, head, input conv and feature wrapper."""
    from timm.models import build_model_with_cfg

    if spec.arch == "vit":  # timm's own VisionTransformer: its blocks through forward_intermediates
        feature_cfg: dict[str, Any] = {"feature_cls": "getter", "out_indices": tuple(range(spec.stages[0].depth))}
    else:  # CoAtNet.feature_info: the stem and each stage
        feature_cfg = {"out_indices": tuple(range(1 + len(spec.stages))), "flatten_sequential": True}
    return build_model_with_cfg(partial(_build, spec), timm_name, pretrained, feature_cfg=feature_cfg, **kwargs)


def _entry(timm_name: str, spec: specs.ModelSpec) -> Callable[..., nn.Module]:
    """timm's entry point for one network: `fn(pretrained=False, **kwargs)`, named as registered."""

    def entry(pretrained: bool = False, **kwargs: Any) -> nn.Module:
        return _create(spec, timm_name, pretrained, **kwargs)

    entry.__name__ = entry.__qualname__ = timm_name
    entry.__module__ = __name__
    return entry


def _build(spec: specs.ModelSpec, num_classes: int, in_chans: int, img_size: Any = None, **kwargs: Any) -> nn.Module:
    """The solved model with timm's `num_classes` (0: no head) and `in_chans`; `img_size` only as built, other
    keyword arguments are refused."""
    from coatsearch.models import build

    size = (img_size, img_size) if isinstance(img_size, int) else tuple(img_size or (spec.image_size,) * 2)
    if size != (spec.image_size,) * 2:
        raise ValueError(f"{spec.name}: built for {spec.image_size}x{spec.image_size} images, not img_size {img_size}")
    if kwargs:
        raise TypeError(f"{spec.name}: a coatsearch network takes num_classes and in_chans, not {', '.join(kwargs)}")
    net = build(dataclasses.replace(spec, num_classes=max(1, num_classes), in_chans=in_chans))
    if num_classes == 0:
        net.reset_classifier(0)  # type: ignore[operator]  # CoAtNet and timm's VisionTransformer have it
    net.num_classes = num_classes  # type: ignore[assignment]  # what timm's builder reads for the head
    return net


def coatsearch_found(pretrained: bool = False, spec: Any = None, **kwargs: Any) -> nn.Module:
    """timm's entry of a saved folder (`save_folder`): the solved spec its config.json gives as model_args."""
    from coatsearch.runner import weights

    if not isinstance(spec, dict):
        raise UserError(f"{FOUND}: needs the solved spec as model_args (a folder written by save_folder)")
    try:
        model_spec = weights.spec({"model": spec})
    except Exception as exc:  # pydantic's many lines: the first
        raise UserError(
            f"{FOUND}: its spec cannot be read ({type(exc).__name__}: {str(exc).splitlines()[0]})"[:300]
        ) from None
    if model_spec.macs_floor() > specs.MACS_MAX:
        raise UserError(f"{FOUND}: its spec has at least {model_spec.macs_floor():.3g} MACs (at most {specs.MACS_MAX})")
    return _create(model_spec, FOUND, pretrained, **kwargs)


def _register_found() -> None:
    """Register `coatsearch_found` once (its cfg is the folder's: config.json replaces this default)."""
    from timm.models import generate_default_cfgs, is_model, register_model

    if not is_model(FOUND):
        default_cfgs.update(generate_default_cfgs({FOUND: {"license": "weights trained by coatsearch"}}))
        register_model(coatsearch_found)


_register_found()


def export(
    study: str,
    best: int,
    studies_dir: str | Path = "studies",
    device: str = "cpu",
    out: str | Path | None = None,
    *,
    retrain: bool = False,
) -> Path:
    """The `best` architectures' weights, kept by `run --keep-top` where they match, else (or with `retrain`)
    retrained (runner.kept.for_export; nothing written until all are at hand), written into `<study>/weights/`, a
    line per file; with `out`, also a timm folder per architecture there (`save_folder`). The study's weights
    folder, or `out`."""
    from coatsearch.runner import kept, weights
    from coatsearch.storage import found
    from coatsearch.storage.paths import writable

    if out is not None:  # refused before anything is trained
        writable(Path(out), Path(studies_dir), "--out", "the timm folders", study)
    done = [
        (tm, kept.for_export(study, tm, studies_dir, device, retrain))
        for tm, _, _ in found.best(study, best, studies_dir)
    ]
    for tm, content in done:
        target = weights.save(weights_path(studies_dir, study, tm.architecture), content)
        print(f"{target}: {_name_for(study, tm.architecture)}: trial {content['trial']} {kept.origin(content)}")
    if out is not None:
        folders = save_folder(study, best, out, studies_dir)
        print(f"in Python: import coatsearch.timm_models, then timm.create_model('local-dir:{folders[0]}', "
              "pretrained=True): no study folder needed")  # fmt: skip
        return Path(out)
    print(f"in Python: coatsearch.timm_models.register({study!r}, best={best}), then "
          f"timm.create_model({_name_for(study, done[0][0].architecture)!r}, pretrained=True)")  # fmt: skip
    return weights_path(studies_dir, study, done[0][0].architecture).parent


def save_folder(
    study: str, best: int = 1, out: str | Path = "found", studies_dir: str | Path = "studies", name: str = NAME
) -> list[Path]:
    """Write `out/<timm name>/` (config.json + model.safetensors) for each of the study's `best` architectures, from
    the weights `export --format timm` wrote (checked as `load_weights` checks them); the folders, best first.

    `timm.create_model("local-dir:<folder>", pretrained=True)` builds one after `import coatsearch.timm_models`,
    in any process and without the study: config.json names the generic entry `coatsearch_found`, gives the solved
    spec as its model_args and the pretrained cfg (`_cfg`); model.safetensors is the weights file itself.
    """
    from coatsearch import fsafe
    from coatsearch.runner import weights
    from coatsearch.storage import found
    from coatsearch.storage.paths import writable

    check_template(name)
    out = writable(Path(out), Path(studies_dir), "--out", "the timm folders", study)
    done = []
    for tm, _, _ in found.best(study, best, studies_dir):
        path = weights_path(studies_dir, study, tm.architecture)
        if not path.exists():
            raise UserError(f"{path}: no weights yet; write them first: coatsearch export {study} --best {best} "
                            "--format timm")  # fmt: skip
        content = weights.read(path)
        done.append((_name_for(study, tm.architecture, name), weights.checked(path, content), content))
    folders = []
    for timm_name, spec, content in done:
        folder = fsafe.check_plain(out / timm_name)
        weights.save(folder / _FILE, content)
        fsafe.write(folder / _CONFIG, json.dumps(_config(spec, content), indent=2) + "\n")
        print(f"{folder}: {_CONFIG} + {_FILE} ({timm_name}, trial {content['trial']})")
        folders.append(folder)
    return folders


def _config(spec: specs.ModelSpec, content: dict[str, Any]) -> dict[str, Any]:
    """A folder's config.json (timm's layout: architecture, num_classes, model_args, pretrained_cfg) and where the
    weights came from."""
    cfg = {k: v for k, v in _cfg(spec, None, content.get("norm")).items() if k != "file"}
    keep = ("study", "trial", "architecture", "seed", "objective", "recorded", "retrained", "kept")
    return {
        "architecture": FOUND,
        "num_classes": spec.num_classes,
        "model_args": {"spec": content["model"]},
        "pretrained_cfg": cfg,
        "coatsearch": {k: content.get(k) for k in keep},
    }
