"""MACs (multiply-adds per image) and parameter counts of a ModelSpec, attention matmuls included."""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

from coatsearch.vocab.specs import BlockSpec, ModelSpec, StemSpec


@dataclass(frozen=True)
class Complexity:
    """Cost of one model: `macs` multiply-adds for one image (batch 1), `params` parameter count."""

    macs: int
    params: int


def measure(model: torch.nn.Module, image_size: int, in_chans: int, device: str | torch.device = "meta") -> Complexity:
    """Count MACs of one eval-mode forward pass of `model` on a (1, in_chans, S, S) input, and its parameters."""
    return _measure_shape(model, (1, in_chans, image_size, image_size), device)


def _measure_shape(model: torch.nn.Module, shape: tuple[int, ...], device: str | torch.device = "meta") -> Complexity:
    """Count MACs of one eval-mode forward pass of `model` on a zero input of `shape`, and its parameters.

    FlopCounterMode counts matmuls and convolutions (2 FLOPs per multiply-add; biases, norms,
    activations, pooling and softmax are not counted). Under the CPU fused attention kernel it counts
    `scaled_dot_product_attention` as 0, so attention is forced onto the MATH backend, which decomposes it
    into counted bmm calls (QK^T and AV).
    """
    model.eval()
    x = torch.zeros(*shape, device=device)
    with torch.no_grad(), sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as counter:
        model(x)
    params = sum(p.numel() for p in model.parameters())
    return Complexity(macs=counter.get_total_flops() // 2, params=params)


@functools.lru_cache(maxsize=4096)
def count(spec: ModelSpec) -> Complexity:
    """MACs per image and parameters of `spec`, built on the meta device (no memory, no weights); cached.

    CoAtNet-arch models are counted part by part (stem, each block, head) with every distinct block
    counted once: matching counts hundreds of configurations that share most of their blocks. The
    sum equals the whole-model count (tested); ViT-arch models are counted whole.
    """
    from coatsearch.models import build

    if spec.arch == "coatnet":
        return _sum_parts(spec)
    with torch.device("meta"):
        model = build(spec)
    return measure(model, spec.image_size, spec.in_chans, "meta")


def _sum_parts(spec: ModelSpec) -> Complexity:
    """Stem + blocks + head of a CoAtNet-arch model, laid out by `ModelSpec.blocks` (the stage loop CoAtNet uses)."""
    b = spec.block
    parts = [_stem(spec.stem, spec.in_chans, spec.stages[0].width, b, spec.image_size)]
    for p in spec.blocks():
        parts.append(_block(p.kind, p.dim, p.dim_out, p.stride, p.in_side, p.out_side, b))
    parts.append(_head(spec.stages[-1].width, spec.num_classes))
    return Complexity(macs=sum(p.macs for p in parts), params=sum(p.params for p in parts))


@functools.lru_cache(maxsize=16384)
def _block(kind: str, dim: int, dim_out: int, stride: int, side: int, out_side: int, block: BlockSpec) -> Complexity:
    from coatsearch.models.coatnet import make_block

    with torch.device("meta"):
        module = make_block(kind, dim, dim_out, stride, out_side, replace(block, drop_path=0.0), 0.0)
    return _measure_shape(module, (1, dim, side, side))


@functools.lru_cache(maxsize=1024)
def _stem(stem: StemSpec, in_chans: int, first_width: int, block: BlockSpec, image_size: int) -> Complexity:
    from coatsearch.models.stems import build_stem

    with torch.device("meta"):
        module = build_stem(stem, in_chans, first_width, block.conv_norm, block.act)
    return _measure_shape(module, (1, in_chans, image_size, image_size))


@functools.lru_cache(maxsize=1024)
def _head(dim: int, num_classes: int) -> Complexity:
    with torch.device("meta"):
        module = torch.nn.Sequential(torch.nn.LayerNorm(dim), torch.nn.Linear(dim, num_classes))
    return _measure_shape(module, (1, dim))
