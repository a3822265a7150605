"""Registries of stage kinds (C, T, M), stem kinds and architectures, each a vocab.registry.Registry: specs,
matching, counting and models read them.

No torch here: a builder is named as "module:function" and imported on first use, so spec code stays light.
A new stage type is one `register_stage_kind` call (or entry in STAGE_KINDS) plus the module that builds its
block; the layout pattern, its error message, the size guard and matching read the registry when they run.
"""

from __future__ import annotations

import importlib
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from coatsearch.vocab.registry import Registry

CONV_QUANTUM = 8  # channels of conv stages and stems are multiples of this


@dataclass(frozen=True)
class StageKind:
    """One stage type: its block builder, width quantum, and how its tokens are listed and checked."""

    text: str  # what a block is, for docs and errors
    builder: str  # "module:function": make(dim, dim_out, stride, side, block, dpr) -> (B, dim_out, side, side)
    attends: bool  # attention: width in whole heads, tokens listed, after every conv stage under the constraint
    # (dim_out, side, block) -> a lower bound (> 0) on one block's MACs: the size guard refuses a model whose
    # floor exceeds vocab.specs.MACS_MAX before it is counted; required, so no kind turns the guard off
    macs_floor: Callable[[int, int, Any], int]
    tokens: Callable[[int, Any], str] = lambda side, block: f"{side}x{side}"  # attended token grid, as `show` lists it
    check: Callable[[int, Any], str] = lambda side, block: ""  # why a side x side map cannot be built ("" = fine)

    def quantum(self, block: Any) -> int:
        """Width step: the head size for attention stages (whole heads), CONV_QUANTUM otherwise."""
        return block.head_size if self.attends else CONV_QUANTUM


def maxvit_partitions(side: int, block: Any) -> tuple[int, int]:
    """(window, grid) side of an M stage on a side x side map; unset = the whole map."""
    return block.window_size or side, block.grid_size or side


def _maxvit_tokens(side: int, block: Any) -> str:
    window, grid = maxvit_partitions(side, block)
    return f"{side}x{side} w{window} g{grid}"


def _maxvit_check(side: int, block: Any) -> str:
    window, grid = maxvit_partitions(side, block)
    bad = [f"{name} {size}" for name, size in (("window_size", window), ("grid_size", grid)) if side % size]
    return f"an M stage's {side}x{side} map does not divide into {' and '.join(bad)}" if bad else ""


def _mbconv_floor(dim_out: int, side: int, block: Any) -> int:
    """The 1x1 projection alone: side^2 x (expanded width, at least 0.9 x dim_out x expand_ratio) x dim_out."""
    return side * side * int(0.9 * dim_out * block.expand_ratio) * dim_out


def _mlp_floor(dim_out: int, side: int, block: Any) -> int:
    """The feed-forward alone: two side^2 x dim_out x hidden matmuls."""
    return 2 * side * side * dim_out * int(dim_out * block.mlp_ratio)


def _attention_floor(dim_out: int, side: int, block: Any) -> int:
    """Feed-forward plus QK^T and AV over all side^2 tokens."""
    return _mlp_floor(dim_out, side, block) + 2 * side**4 * dim_out


def _maxvit_floor(dim_out: int, side: int, block: Any) -> int:
    """Feed-forward plus QK^T and AV inside each window and each grid group."""
    window, grid = maxvit_partitions(side, block)
    return _mlp_floor(dim_out, side, block) + 2 * side * side * dim_out * (window * window + grid * grid)


STAGE_KINDS: Registry[StageKind] = Registry(
    "stage kind",
    {
        "C": StageKind(
            "MBConv + squeeze-excitation",
            "coatsearch.models.coatnet:mbconv_block",
            attends=False,
            macs_floor=_mbconv_floor,
        ),
        "T": StageKind(
            "relative-attention Transformer",
            "coatsearch.models.coatnet:transformer_block",
            attends=True,
            macs_floor=_attention_floor,
        ),
        "M": StageKind(
            "MaxViT multi-axis attention: window then grid attention",
            "coatsearch.models.maxvit:maxvit_block",
            attends=True,
            tokens=_maxvit_tokens,
            check=_maxvit_check,
            macs_floor=_maxvit_floor,
        ),
    },
)


def register_stage_kind(letter: str, kind: StageKind) -> None:
    """Add stage kind `letter` (one upper-case letter not yet registered); layouts may use it from now on."""
    if not (len(letter) == 1 and letter.isascii() and letter.isupper()):
        raise ValueError(f"a stage kind is one upper-case letter A-Z, not {letter!r}")
    if not callable(kind.macs_floor):
        raise ValueError(f"stage kind {letter!r}: macs_floor must be a function (dim_out, side, block) -> MACs")
    STAGE_KINDS.register(letter, kind)  # a letter already registered: the one-line error naming the known ones


def unregister_stage_kind(letter: str) -> StageKind:
    """Remove stage kind `letter` (the undo of `register_stage_kind`); returns it."""
    return STAGE_KINDS.unregister(letter)  # an unknown letter: the one-line error naming the known ones


def check_layout(layout: str) -> str:
    """A layout string as written in a space file, or a ValueError saying what a layout is (registered kinds)."""
    if not all(k in STAGE_KINDS for k in layout.split("-")):
        known = ", ".join(STAGE_KINDS)
        raise ValueError(f"a layout is stage types {known} joined by '-', e.g. 'C-C-T-T'")
    return layout


def conv_after_attention(layout: str) -> str:
    """Why `layout` puts a non-attention stage after an attention stage ("" when it does not)."""
    kinds = layout.split("-")
    first = next((i for i, k in enumerate(kinds) if STAGE_KINDS[k].attends), len(kinds))
    late = next((k for k in kinds[first:] if not STAGE_KINDS[k].attends), None)
    return f"'{layout}' puts a {late} stage after a {kinds[first]} stage" if late else ""


@dataclass(frozen=True)
class StemKind:
    """One stem type: its builder, output width, total stride, short text and the archs that take it."""

    builder: str  # "module:function": make(stem, in_chans, first_width, norm, act) -> nn.Module
    archs: tuple[str, ...]  # architectures that accept this stem
    text: Callable[[Any], str]  # short form for `show`, e.g. 'conv2x16/2'
    total_stride: Callable[[Any], int]  # downsampling from the input to the first stage
    out_width: Callable[[Any, int], int] = lambda stem, first: first  # channels handed to the first stage
    resize: Callable[[Any, Callable[[int], int]], Any] = lambda stem, fn: stem  # the stem with fn applied to widths
    check: Callable[[Any, int], str] = lambda stem, image_size: ""  # why it cannot take this image ("" = fine)
    macs_floor: Callable[[Any, int, int, int], int] = lambda stem, in_chans, first, image_size: 0  # a lower bound


def _patch_check(stem: Any, image_size: int) -> str:
    if image_size % stem.patch_size:
        return f"image size {image_size} is not a multiple of patch size {stem.patch_size}"
    return ""


def _convs_floor(in_chans: int, image_size: int, channels: tuple[int, ...], strides: tuple[int, ...]) -> int:
    """MACs of a chain of 3x3 convs (padding 1): each output side^2 x 9 x in x out."""
    total, side, dim = 0, image_size, in_chans
    for width, stride in zip(channels, strides, strict=True):
        side = -(-side // stride)
        total, dim = total + side * side * 9 * dim * width, width
    return total


STEM_KINDS: Registry[StemKind] = Registry(
    "stem kind",
    {
        "conv": StemKind(
            "coatsearch.models.stems:conv_stem",
            archs=("coatnet",),
            text=lambda st: f"conv{st.layers}x{st.width}/{st.stride}",
            total_stride=lambda st: st.stride,
            out_width=lambda st, first: st.width,
            resize=lambda st, fn: replace(st, width=fn(st.width)),
            macs_floor=lambda st, c, first, n: _convs_floor(
                c, n, (st.width,) * st.layers, (st.stride,) + (1,) * (st.layers - 1)
            ),
        ),
        "patch": StemKind(
            "coatsearch.models.stems:patch_stem",
            archs=("coatnet", "vit"),
            text=lambda st: f"patch{st.patch_size}",
            total_stride=lambda st: st.patch_size,
            check=_patch_check,
            macs_floor=lambda st, c, first, n: n * n * c * first,  # kernel = stride = p: every pixel once per channel
        ),
        "vitc": StemKind(
            "coatsearch.models.stems:vitc_stem",
            archs=("vit",),
            text=lambda st: f"vitc{','.join(map(str, st.channels))}/{','.join(map(str, st.strides))}",
            total_stride=lambda st: math.prod(st.strides),
            resize=lambda st, fn: replace(st, channels=tuple(fn(c) for c in st.channels)),
            macs_floor=lambda st, c, first, n: _convs_floor(c, n, st.channels, st.strides),
        ),
    },
)


@dataclass(frozen=True)
class ArchKind:
    """One architecture: its model builder and the layouts it takes (its stems say which stems: StemKind.archs)."""

    text: str  # what it is, for docs and errors
    builder: str  # "module:function": build(spec: ModelSpec) -> nn.Module
    candidate: bool = True  # a space file's candidate may name it (False: the regime baselines, BASELINES)
    layout: Callable[[str], str] = lambda layout: ""  # why it cannot take this layout ("" = fine)


def _one_global_stage(layout: str) -> str:
    return f"arch 'vit' is one global-attention stage: layout 'T', not {layout!r}" if layout != "T" else ""


ARCHS: Registry[ArchKind] = Registry(
    "arch",
    {
        "coatnet": ArchKind(
            "stem, then stages of blocks, global average pool, linear head", "coatsearch.models.coatnet:build_coatnet"
        ),  # fmt: skip
        "vit": ArchKind(
            "timm VisionTransformer: one T stage, class token",
            "coatsearch.models.vit:build_vit",
            layout=_one_global_stage,
        ),  # fmt: skip
        "linear": ArchKind(
            "regime baseline: a linear classifier on pixels",
            "coatsearch.models.baselines:build_linear",
            candidate=False,
        ),  # fmt: skip
        "cnn": ArchKind("regime baseline: a small CNN", "coatsearch.models.baselines:build_cnn", candidate=False),
    },
)


def check_candidate_arch(name: str) -> str:
    """`name` when a candidate may name it (a registered architecture, not a baseline's), else ValueError."""
    if not ARCHS.entry(name).candidate:
        allowed = ", ".join(n for n, k in ARCHS.items() if k.candidate)
        raise ValueError(f"arch {name!r} is a regime baseline's (study.baselines); allowed: {allowed}")
    return name


def check_arch(arch: str, stem: str, layout: str) -> str:
    """Why `arch` cannot take this stem kind or layout ("" when it can)."""
    takes = [name for name, kind in STEM_KINDS.items() if arch in kind.archs]
    if takes and stem not in takes:
        return f"a '{stem}' stem does not fit arch '{arch}', which takes {' or '.join(repr(t) for t in takes)} stems"
    return ARCHS.entry(arch).layout(layout)


def load(target: str) -> Callable:
    """Import a registry builder named "module:function"."""
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


def constraint_problem(conv_before_attention: bool, layout: str) -> str:
    """Why a layout breaks the space's constraints ("" when it does not)."""
    late = conv_after_attention(layout) if conv_before_attention else ""
    return f"{late} (constraints.conv_before_attention is on)" if late else ""


def satisfiable(conv_before_attention: bool, layout: str, dims: Sequence[tuple[str, Sequence[Any]]]) -> bool:
    """Whether some combination of the layout dimensions' values (`model.layout`, `model.layout.<i>`, sorted
    by path) gives a layout the constraints allow."""
    for combo in itertools.product(*(values for _, values in dims)):
        letters = layout.split("-")
        for (path, _), value in zip(dims, combo, strict=True):
            if path == "model.layout":
                letters = str(value).split("-")
            elif (index := int(path.rsplit(".", 1)[1])) < len(letters):
                letters[index] = str(value)
        if not constraint_problem(conv_before_attention, "-".join(letters)):
            return True
    return False
