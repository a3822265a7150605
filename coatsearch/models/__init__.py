"""build(spec) -> nn.Module: one builder per architecture, named by its entry in vocab.kinds.ARCHS."""

from __future__ import annotations

from torch import nn

from coatsearch.vocab import kinds
from coatsearch.vocab.specs import ModelSpec


def build(spec: ModelSpec) -> nn.Module:
    """The untrained model described by `spec` (on torch's current default device)."""
    arch = kinds.ARCHS.entry(spec.arch)  # an unknown arch: the one-line error naming the registered ones
    problem = kinds.check_arch(spec.arch, spec.stem.kind, spec.layout)
    if problem:
        raise ValueError(problem)
    return kinds.load(arch.builder)(spec)
