"""Found networks in timm's model registry: `register(study, best=K)`, then `timm.create_model(name)` builds them.

Each of a study's K best searched architectures (`export --best K`) is registered through timm's public registry
(`timm.models.register_model`, `generate_default_cfgs`, `build_model_with_cfg`) under
`coatsearch_<study>_<architecture>`. `timm.create_model(name, pretrained=False)` builds the solved model;
`export STUDY --best K --format timm` retrains each on its best trial's seed and writes its safetensors weights
into `<study>/weights/` (coatsearch.runner.weights), and with that file `pretrained=True` loads them through the
pretrained_cfg's `file` entry. `num_classes=` and `in_chans=` work as for any timm model (a changed head is new).
The model takes images as the study's data pipeline gives them (its train pool's per-channel mean and std
subtracted and divided), so the cfg's mean and std are 0 and 1.
"""

from __future__ import annotations

import dataclasses
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
        file = None
        if path.exists():
            content = weights.read(path)
            if content.get("architecture") != tm.architecture:
                raise UserError(f"{path}: holds architecture {content.get('architecture')}, not {tm.architecture}")
            spec, file = weights.checked(path, content), str(path)  # load_weights' bounds, before timm builds
        entries.append((timm_name, tm.architecture, spec, file))
    for timm_name, architecture, spec, file in entries:
        default_cfgs.update(generate_default_cfgs({timm_name: _cfg(spec, file)}))
        with warnings.catch_warnings():  # re-registering our own entry: timm warns that it overwrites it
            warnings.simplefilter("ignore", UserWarning)
            register_model(_entry(timm_name, spec))
        _OURS[timm_name] = (study, architecture)
    return [e[0] for e in entries]


def _cfg(spec: specs.ModelSpec, file: str | None) -> dict[str, Any]:
    """The pretrained cfg of a registered network: its input, classes, head and (with weights) the file."""
    return {
        "file": file,
        "num_classes": spec.num_classes,
        "input_size": (spec.in_chans, spec.image_size, spec.image_size),
        "classifier": _head(spec),
        "mean": (0.0,) * spec.in_chans,
        "std": (1.0,) * spec.in_chans,
        "license": "weights trained by coatsearch on the study's data",
    }


def _head(spec: specs.ModelSpec) -> str:
    """The name of the model's classifier (its last Linear), found on a model built without memory."""
    import torch

    from coatsearch.models import build

    with torch.device("meta"):
        net = build(spec)
    return [n for n, m in net.named_modules() if isinstance(m, nn.Linear)][-1]


def _entry(timm_name: str, spec: specs.ModelSpec) -> Callable[..., nn.Module]:
    """timm's entry point for one network: `fn(pretrained=False, **kwargs)`, named as registered."""
    from timm.models import build_model_with_cfg

    def entry(pretrained: bool = False, **kwargs: Any) -> nn.Module:
        return build_model_with_cfg(partial(_build, spec), timm_name, pretrained, **kwargs)

    entry.__name__ = entry.__qualname__ = timm_name
    entry.__module__ = __name__
    return entry


def _build(spec: specs.ModelSpec, num_classes: int, in_chans: int, **kwargs: Any) -> nn.Module:
    """The solved model with timm's `num_classes` and `in_chans`; other keyword arguments are refused."""
    from coatsearch.models import build

    if kwargs:
        raise TypeError(f"{spec.name}: a coatsearch network takes num_classes and in_chans, not {', '.join(kwargs)}")
    net = build(dataclasses.replace(spec, num_classes=num_classes, in_chans=in_chans))
    net.num_classes = num_classes  # type: ignore[assignment]  # what timm's builder reads for the head
    return net


def export(study: str, best: int, studies_dir: str | Path = "studies", device: str = "cpu") -> Path:
    """Retrain the `best` architectures (nothing written until all are trained), write each one's weights into
    `<study>/weights/`, and print a line per file; the folder."""
    from coatsearch.runner import weights
    from coatsearch.storage import found

    done = [(tm, weights.retrain(study, tm, studies_dir, device)) for tm, _, _ in found.best(study, best, studies_dir)]
    for tm, content in done:
        target = weights.save(weights_path(studies_dir, study, tm.architecture), content)
        got, was = content["retrained"], content["recorded"]
        print(f"{target}: {_name_for(study, tm.architecture)}: trial {content['trial']} retrained on seed "
              f"{content['seed']}: {content['objective']} {got} (recorded {was})")  # fmt: skip
    print(f"in Python: coatsearch.timm_models.register({study!r}, best={best}), then "
          f"timm.create_model({_name_for(study, done[0][0].architecture)!r}, pretrained=True)")  # fmt: skip
    return weights_path(studies_dir, study, done[0][0].architecture).parent
