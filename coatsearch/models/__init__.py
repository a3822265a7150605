"""build(spec) -> nn.Module: one builder per architecture, chosen from a plain dict."""

from __future__ import annotations

from torch import nn

from coatsearch.models.baselines import build_cnn, build_linear
from coatsearch.models.coatnet import build_coatnet
from coatsearch.models.vit import build_vit
from coatsearch.vocab import kinds
from coatsearch.vocab.specs import ModelSpec

BUILDERS = {"coatnet": build_coatnet, "vit": build_vit, "linear": build_linear, "cnn": build_cnn}


def build(spec: ModelSpec) -> nn.Module:
    """The untrained model described by `spec` (on torch's current default device)."""
    if spec.arch not in BUILDERS:
        raise ValueError(f"unknown arch {spec.arch!r}; known: {', '.join(sorted(BUILDERS))}")
    problem = kinds.check_arch(spec.arch, spec.stem.kind, spec.layout)
    if problem:
        raise ValueError(problem)
    return BUILDERS[spec.arch](spec)
