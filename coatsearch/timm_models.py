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
    from coatsearch.runner import weights
    from coatsearch.storage import store

    return store.folder(Path(studies_dir), study) / _WEIGHTS / f"{architecture}{weights.SUFFIX}"


def _name_for(study: str, architecture: str, template: str = NAME) -> str:
    """A registered network's timm name: the template filled in, lower case, other characters than [a-z0-9_] as _."""
    return re.sub(r"[^a-z0-9_]", "_", template.format(study=study, architecture=architecture).lower())


def register(study: str, best: int = 1, studies_dir: str | Path = "studies", name: str = NAME) -> list[str]:
    """Register the study's `best` found architectures with timm; their timm names, best first.

    Weights written by `export --format timm` are attached as the pretrained cfg's `file`. A name timm
    already holds for another model is a one-line UserError, raised before anything is registered.
    """
    import timm
    from timm.models import generate_default_cfgs, register_model

    from coatsearch.runner import weights
    from coatsearch.storage import found

    entries = []
    for tm, _, _ in found.best(study, best, studies_dir):
        timm_name = _name_for(study, tm.architecture, name)
        if timm.is_model(timm_name) and _OURS.get(timm_name) != (study, tm.architecture):
            raise UserError(f"{timm_name}: timm already has a model of that name; register under another name "
                            "(name='<template with {study} and {architecture}>')")  # fmt: skip
        spec, path = tm.prepared.model, weights_path(studies_dir, study, tm.architecture)
        file = None
        if path.exists():
            content = weights.read(path)
            if content.get("architecture") != tm.architecture:
                raise UserError(f"{path}: holds architecture {content.get('architecture')}, not {tm.architecture}")
            spec, file = weights.spec(content), str(path)
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
