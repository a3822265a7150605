"""The one spec vocabulary: frozen dataclasses that YAML validates straight into (pydantic), and code builds.

Each field and default is declared once, with the constraints a space file must meet (pydantic reads the
annotations; see space/load.py). Built from Python, a spec is not re-validated field by field: tests and callers may
construct any value, and the builders say what they cannot take. Rules that tie fields together live in
`__post_init__` (checks only, never normalization) and hold everywhere. No torch here.

The `scores:` section's specs live with their scores (coatsearch/scores/, which derives `ScoresSpec`), and the
documents that hold them, a candidate and a whole space file, in space/schema.py.
"""

from __future__ import annotations

import functools
import typing
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields, is_dataclass, replace
from typing import Annotated, Any, Literal, NamedTuple, TypeVar

from pydantic import AfterValidator, BeforeValidator, ConfigDict, Field, Strict, TypeAdapter
from typing_extensions import dataclass_transform

from coatsearch.vocab import datasets, kinds, numbers, samplers

FORBID = ConfigDict(extra="forbid")  # unknown keys in a space file are errors

_PosInt = Annotated[int, Strict(), Field(gt=0)]  # no strings or floats taken for ints
_LaxPosInt = Annotated[int, Field(gt=0)]
_Real = Annotated[float, Field(allow_inf_nan=False)]  # a finite number: .inf and .nan are errors
_Fraction = Annotated[_Real, Field(ge=0.0, le=1.0)]

# Upper bounds on every field that sizes memory or time (docs/limits.md lists them).
WIDTH_MAX = 8192  # channels of a stage, a stem or a vitc conv
DEPTH_MAX = 100  # blocks in one stage
_SIDE_MAX = 1024  # image side; also bounds patch, window, grid and head sizes
BATCH_MAX = 8192  # training batch size
_EVAL_MAX = 200_000  # held-out images evaluated
DRAWS_MAX = 1000  # data.test_draw: disjoint test draws of one split
PER_CLASS_MAX = 100_000  # training images per class in a subset
EPOCHS_MAX = 1000  # epochs of one schedule (and warmup epochs)
_STEPS_MAX = 10_000_000  # optimizer steps of one run (max_steps) and steps between curve points
CLASSES_MAX = 100_000  # classes of the input and class ids
SEEDS_MAX = 100  # seeds per study
SEED_MAX = 2**31 - 1  # a seed value
SAMPLES_MAX = 10_000  # sampled configurations per candidate and seed
LENGTHS_MAX = 20  # schedule lengths of the length score
_RATIO_MAX = 16.0  # MBConv and MLP expansion ratios
MACS_MAX = 10**12  # multiply-adds per image: a budget, or a model's lower-bound count at load
POINTS_MAX = 100_000  # points of a finite space `show --all` and the grid sampler enumerate
NAME_MAX = 64  # characters in a candidate name (it is in every trial key, table and figure label)

Width = Annotated[int, Field(gt=0, le=WIDTH_MAX)]
Side = Annotated[int, Field(gt=0, le=_SIDE_MAX)]
_Epochs = Annotated[int, Field(gt=0, le=EPOCHS_MAX)]
_Ratio = Annotated[_Real, Field(gt=0, le=_RATIO_MAX)]
Stride = Literal[1, 2]
Name = Annotated[str, Field(pattern=r"^[A-Za-z0-9_.+-]+$", max_length=NAME_MAX)]


_Spec = TypeVar("_Spec")


@dataclass_transform(frozen_default=True)
def spec(cls: type[_Spec]) -> type[_Spec]:
    """A frozen, keyword-or-positional spec dataclass whose space-file form forbids unknown keys."""
    cls.__pydantic_config__ = FORBID  # type: ignore[attr-defined]  # pydantic reads this class attribute
    return dataclass(frozen=True)(cls)


def _parse_count(value: Any) -> int:
    """Parse a MACs or params count (30000000, 3e7, '30M', '4.2G'): a whole count 1..MACS_MAX (`numbers`)."""
    return numbers.parse_count(value, MACS_MAX)


def _stem_kind(name: str) -> str:
    kinds.STEM_KINDS.entry(name)
    return name


@spec
class StemSpec:
    """The stem: CoAtNet's S0 conv stem, a ViT patchify stem, or ViT_C's conv stem (kinds.STEM_KINDS)."""

    kind: Annotated[str, AfterValidator(_stem_kind)] = "conv"
    width: Annotated[int, Strict(), Field(gt=0, le=WIDTH_MAX)] = (
        64  # conv: S0 channels (patch/vitc: output width is the first stage's width)
    )
    layers: Annotated[int, Strict(), Field(ge=1, le=8)] = 2  # conv: number of 3x3 convs
    stride: Stride = 2  # conv: stride of the first 3x3 conv (the stem's total stride)
    patch_size: Annotated[int, Strict(), Field(gt=0, le=_SIDE_MAX)] = 16  # patch: kernel size and stride
    channels: Annotated[
        tuple[Annotated[int, Strict(), Field(gt=0, le=WIDTH_MAX)], ...], Field(max_length=8)
    ] = ()  # vitc: output channels of each 3x3 conv (BN + ReLU after each)
    strides: Annotated[tuple[Stride, ...], Field(max_length=8)] = ()  # vitc: stride of each 3x3 conv

    def __post_init__(self) -> None:
        if self.kind == "vitc" and (not self.channels or len(self.channels) != len(self.strides)):
            raise ValueError("a vitc stem needs 'channels' and 'strides' lists of the same length (one per 3x3 conv)")

    @property
    def total_stride(self) -> int:
        """Downsampling factor from the input to the first stage."""
        return kinds.STEM_KINDS.entry(self.kind).total_stride(self)


@spec
class StageSpec:
    """One stage: `depth` blocks of one kind (kinds.STAGE_KINDS), the first block strided."""

    kind: str  # "C" (MBConv + SE) | "T" (relative-attention Transformer) | "M" (MaxViT window + grid attention)
    depth: int
    width: int
    stride: int = 2  # stride of the stage's first block (1 or 2)


@spec
class BlockSpec:
    """Options shared by every block of a model."""

    head_size: Side = 32  # attention channels per head; attention widths are multiples of it
    expand_ratio: _Ratio = 4.0  # MBConv inverted-bottleneck expansion
    mlp_ratio: _Ratio = 4.0  # Transformer FFN expansion
    se_ratio: _Fraction = 0.25  # squeeze-excitation ratio (of the block's output width)
    downsample: Literal["eq5", "dw"] = "eq5"  # MBConv stride: "eq5" (strided 1x1 on the normalized input) | "dw"
    pool: Literal["max", "avg"] = "max"  # pooling on downsampling shortcuts and attention input
    conv_norm: Literal["batchnorm", "layernorm"] = "batchnorm"  # norm in MBConv blocks
    attn_norm: Literal["layernorm", "batchnorm"] = "layernorm"  # norm in attention blocks
    rel_pos: bool = True  # relative-position bias in attention (CoAtNet Eq. 3)
    act: Literal["gelu", "relu", "silu"] = "gelu"  # activation in every block type
    drop_path: Annotated[_Real, Field(ge=0.0, lt=1.0)] = 0.0  # stochastic depth, max rate (linear over blocks)
    window_size: Side | None = None  # M: side of a window-attention window (None: the whole map)
    grid_size: Side | None = None  # M: side of a grid-attention grid (None: the whole map)


class BlockPlan(NamedTuple):
    """One block of a model as the stage loop lays it out."""

    stage: int  # index of its stage
    kind: str
    dim: int  # input channels
    dim_out: int
    stride: int
    in_side: int  # input map side
    out_side: int
    dpr: float  # drop-path rate


@spec
class ModelSpec:
    """A whole candidate model.

    arch "coatnet": stem then stages of blocks, global average pool, linear head (CoAtNet and ViT_REL,
    which is a patch stem followed by one T stage). arch "vit": timm VisionTransformer with one T stage
    (class token, absolute position embedding) and a patch (ViT_P) or vitc (ViT_C) stem.
    arch "linear" / "cnn": the regime baselines (BASELINES), with no stages; the stem is not used.
    """

    name: str
    arch: str  # "coatnet" | "vit" | "linear" | "cnn": a name in vocab.kinds.ARCHS
    image_size: int
    in_chans: int
    num_classes: int
    stem: StemSpec
    stages: tuple[StageSpec, ...]
    block: BlockSpec = field(default_factory=BlockSpec)

    def __post_init__(self) -> None:
        problem = kinds.STEM_KINDS.entry(self.stem.kind).check(self.stem, self.image_size)
        for i, (stage, side) in enumerate(zip(self.stages, self.feature_sizes(), strict=True)):
            if problem:
                break
            kind = kinds.STAGE_KINDS.entry(stage.kind)
            if stage.stride not in (1, 2):
                problem = f"stage {i}: stride {stage.stride} not in (1, 2)"
            elif kind.attends and stage.width % self.block.head_size:
                problem = (
                    f"{stage.kind}-stage width {stage.width} is not a multiple of head_size {self.block.head_size}"
                    " (attention needs whole heads of that head size)"
                )
            else:
                problem = kind.check(side, self.block)
        if problem:
            raise ValueError(problem)

    @property
    def layout(self) -> str:
        """Stage types joined with dashes, e.g. "C-C-T-T"."""
        return "-".join(s.kind for s in self.stages)

    def feature_sizes(self) -> tuple[int, ...]:
        """Spatial side length of each stage's output map."""
        size = -(-self.image_size // self.stem.total_stride)
        out = []
        for stage in self.stages:
            size = -(-size // stage.stride)
            out.append(size)
        return tuple(out)

    def macs_floor(self) -> int:
        """A lower bound on the MACs per image, from the dominant terms only (no torch): checked against MACS_MAX."""
        if not self.stages:  # a regime baseline (linear or small CNN): a fixed small model, nothing to bound
            return 1
        stem = kinds.STEM_KINDS.entry(self.stem.kind).macs_floor(
            self.stem, self.in_chans, self.stages[0].width, self.image_size
        )
        blocks = (kinds.STAGE_KINDS.entry(p.kind).macs_floor(p.dim_out, p.out_side, self.block) for p in self.blocks())
        return stem + sum(blocks)

    def blocks(self) -> Iterator[BlockPlan]:
        """Every block in order, with its widths, stride, map sides and drop-path rate: the one stage loop."""
        dim = kinds.STEM_KINDS.entry(self.stem.kind).out_width(self.stem, self.stages[0].width)
        side = -(-self.image_size // self.stem.total_stride)
        n_blocks, k = sum(s.depth for s in self.stages), 0
        for i, (stage, out_side) in enumerate(zip(self.stages, self.feature_sizes(), strict=True)):
            for j in range(stage.depth):
                dpr = self.block.drop_path * k / max(n_blocks - 1, 1)  # linear over all blocks, 0 -> drop_path
                stride = stage.stride if j == 0 else 1
                yield BlockPlan(i, stage.kind, dim, stage.width, stride, side, out_side, dpr)
                dim, side, k = stage.width, out_side, k + 1


@spec
class Budget:
    """A MACs band (and optionally a params band) and what is scaled to land in it."""

    macs: Annotated[
        int, BeforeValidator(_parse_count), Field(le=MACS_MAX)
    ]  # target multiply-adds per image ('10.5M' in a file)
    tolerance: Annotated[_Real, Field(gt=0.0, lt=1.0)] = 0.05  # allowed |achieved - target| / target, for both
    scale: Literal["width", "depth", "none"] = "width"  # what is scaled ("none": check only)
    params: Annotated[int, BeforeValidator(_parse_count), Field(le=MACS_MAX)] | None = (
        None  # target parameter count ('0.5M'); with it, width and a second knob are solved together (match.py)
    )

    def __post_init__(self) -> None:
        if self.params is not None and self.scale != "width":
            raise ValueError(f"a params target is solved with scale: width (width and growth), not {self.scale!r}")


@spec
class OptimSpec:
    """One training schedule's optimizer and regularization settings (a space file's `train`)."""

    optimizer: Literal["adamw", "sgd"] = "adamw"  # sgd: momentum 0.9, nesterov off
    lr: Annotated[_Real, Field(gt=0)] = 1e-3  # peak learning rate
    weight_decay: Annotated[_Real, Field(ge=0)] = 0.05  # not applied to norms and biases
    batch_size: Annotated[int, Field(gt=0, le=BATCH_MAX)] = 128
    warmup_epochs: Annotated[_Real, Field(ge=0, le=EPOCHS_MAX)] = 1.0  # linear warmup (<= 20% of a run), then cosine
    label_smoothing: Annotated[_Real, Field(ge=0, lt=1)] = 0.0
    grad_clip: Annotated[_Real, Field(ge=0)] = 0.0  # max global grad norm; 0 = off
    mixup: Annotated[_Real, Field(ge=0)] = 0.0  # mixup alpha; 0 = off
    randaugment: bool = False  # light RandAugment on the in-memory batch
    compile: bool | Literal["auto"] = "auto"  # torch.compile the model; auto: when the run's steps repay it


@spec
class DataSpec:
    """Where images come from and how they are shaped."""

    dataset: Annotated[str, AfterValidator(datasets.check_dataset)]  # a name in vocab.datasets.DATASETS
    root: str | None = None  # folder to look in (dataset-specific default when None)
    # validation images (pilots, pruning, objectives, selection), drawn once; 0 = half of each class of the test split
    eval_size: Annotated[int, Strict(), Field(ge=0, le=_EVAL_MAX)] = 0
    # test images (verdicts only) per draw, after the validation images; None = as many as validation (subsets.split)
    test_size: Annotated[int, Strict(), Field(gt=0, le=_EVAL_MAX)] | None = None
    test_draw: Annotated[int, Strict(), Field(ge=0, le=DRAWS_MAX)] = 0  # which disjoint test draw (replicates: 1, 2)
    # shared: one test draw serves every trial seed; per_seed: each seed samples its own test images from the pool
    # outside validation, so the seed-to-seed spread (and every interval) holds the image-sampling variance
    test_sampling: Literal["shared", "per_seed"] = "shared"


DEFAULT_LEVELS = tuple(10 ** (-k / 4) for k in range(9))  # the default train-loss ladder, nats: 1, 0.56, ..., 0.01


def rung_below(levels: Sequence[float]) -> float:
    """One rung below a train-loss ladder's lowest level, at the ratio of its two lowest (half for a single level)."""
    low = sorted(levels)
    return low[0] * (low[0] / low[1] if len(low) > 1 else 0.5)


_Levels = Annotated[tuple[Annotated[_Real, Field(gt=0)], ...], Field(min_length=1, max_length=LENGTHS_MAX)]


@spec
class SubsetSpec:
    """A deterministic training subset (`per_class` images of each of `classes`) and how a run on it is measured."""

    per_class: Annotated[int, Field(gt=0, le=PER_CLASS_MAX)] | None = None  # None = every image of each class
    epochs: _Epochs = 1  # the schedule, unless max_steps is given
    classes: tuple[Annotated[int, Field(ge=0, lt=CLASSES_MAX)], ...] | None = None
    dataset: DataSpec | None = None  # another dataset (transfer target); None = the space's dataset
    eval_every: Annotated[int, Strict(), Field(ge=0, le=_STEPS_MAX)] | None = None  # steps between curve points
    max_steps: Annotated[int, Field(gt=0, le=_STEPS_MAX)] | None = None  # a step budget (cosine ends there), not epochs
    stop_at_loss: Annotated[_Real, Field(gt=0)] | None = None  # stop once the probe's clean train loss is this low
    loss_levels: _Levels | None = None  # generalization: the report's train-loss ladder (nats); None = the default
    fit_loss: Annotated[_Real, Field(gt=0, le=1)] | None = None  # generalization: claim (a)'s fit level (nats),
    # the highest level it may be read at; None = papers.claims.FIT_LOSS. Registered with the profile.
    target_acc: Annotated[_Real, Field(gt=0, le=1)] | None = None  # transfer.pretrain: stop at this eval accuracy
    lr_factor: Annotated[_Real, Field(gt=0, le=_RATIO_MAX)] = (
        0.1  # transfer.finetune: fine-tune lr = pretrain lr x this
    )
    batch_size: Annotated[int, Field(gt=0, le=BATCH_MAX)] | None = None  # this run's batch; None = train.batch_size

    def __post_init__(self) -> None:
        if self.loss_levels and self.stop_at_loss is not None and self.stop_at_loss > rung_below(self.loss_levels):
            raise ValueError(
                f"stop_at_loss {self.stop_at_loss:g} must be at most one rung below the lowest of loss_levels "
                f"({rung_below(self.loss_levels):.3g} nats), so that measured points bracket every reading"
            )
        if self.fit_loss is not None and self.loss_levels and self.fit_loss < min(self.loss_levels):
            raise ValueError(f"fit_loss {self.fit_loss:g} is below every level of loss_levels: nothing could be read")


@spec
class ReevaluateSpec:
    """Retrain the search's `top` architectures and every named candidate on `seeds` fresh seeds (paired)."""

    top: Annotated[int, Strict(), Field(ge=1, le=20)] = 3
    seeds: Annotated[int, Strict(), Field(ge=2, le=SEEDS_MAX)] = 3


@spec
class StudySpec:
    """How candidates become trials."""

    seeds: Annotated[
        tuple[Annotated[int, Strict(), Field(ge=0, le=SEED_MAX)], ...], Field(min_length=1, max_length=SEEDS_MAX)
    ] = (0,)  # repeats of every candidate
    samples: Annotated[int, Strict(), Field(gt=0, le=SAMPLES_MAX)] = (
        1  # sampled configurations per candidate and seed (when it has search dimensions)
    )
    # sampler for search dimensions, a name in vocab.samplers.SAMPLERS (space/load.py checks that it fits)
    sampler: Annotated[str, AfterValidator(samplers.check_sampler)] = "random"
    pruner: Annotated[str, AfterValidator(samplers.check_pruner)] = "none"  # searches only; vocab.samplers.PRUNERS
    objective: str = "generalization.eval_acc"  # score recorded as the trial value
    direction: Literal["maximize", "minimize"] = "maximize"
    baselines: Annotated[bool, Strict()] = True  # also train BASELINES per seed, on the same subsets (never matched)
    objectives: Annotated[tuple[str, ...], Field(max_length=8)] = ()  # >= 2 keys: a multi-objective study
    directions: tuple[Literal["maximize", "minimize"], ...] = ()  # one per objective
    reevaluate: ReevaluateSpec | None = None  # after the search: top architectures vs named ones on fresh seeds

    def __post_init__(self) -> None:
        if self.objectives and (len(self.objectives) < 2 or len(self.directions) != len(self.objectives)):
            raise ValueError(
                "'objectives' lists two or more metric keys and 'directions' one direction (maximize or minimize) "
                f"per objective; found {len(self.objectives)} objective(s), {len(self.directions)} direction(s)"
            )
        if self.directions and not self.objectives:
            raise ValueError("'directions' goes with 'objectives' (a single objective uses 'direction')")
        if twice := _repeated(self.seeds):
            raise ValueError(f"seeds: seed {twice[0]} is listed twice; allowed: distinct seeds (each one run once)")
        if twice := _repeated(self.objectives):
            raise ValueError(
                f"objectives: '{twice[0]}' is listed twice; allowed: distinct metric keys, one direction each"
            )

    @property
    def fresh_seeds(self) -> tuple[int, ...]:
        """The re-evaluation's seeds: the next `reevaluate.seeds` after the study's own (none without it)."""
        return fresh_seeds(self.seeds, self.reevaluate.seeds if self.reevaluate else 0)

    @property
    def keys(self) -> tuple[str, ...]:
        """The metric keys the trial values are: `objectives`, else the one `objective`."""
        return self.objectives or (self.objective,)


def fresh_seeds(seeds: Sequence[int], n: int) -> tuple[int, ...]:
    """The `n` seeds after a study's own `seeds`: its re-evaluation's (StudySpec.fresh_seeds, and stored records)."""
    return tuple(range(max(seeds) + 1, max(seeds) + 1 + n))


def _repeated(values: tuple) -> list:
    """The values that occur again in `values` (in order), empty when all differ."""
    return [v for i, v in enumerate(values) if v in values[:i]]


BASELINES = {"baseline-linear": "linear", "baseline-cnn": "cnn"}  # regime baselines: candidate name -> arch


def baseline_model(name: str, inp: InputSpec) -> ModelSpec:
    """The fixed model of the regime baseline `name` for `inp` images: no stem or stages (models/baselines.py)."""
    return ModelSpec(name, BASELINES[name], inp.image_size, inp.channels, inp.classes, StemSpec(), ())


def _freeze(value: Any) -> Any:
    return tuple(_freeze(v) for v in value) if isinstance(value, list | tuple) else value


def _plain_choice(value: Any, nested: bool = False) -> bool:
    """Whether a search choice is a scalar, or (one level deep) a tuple of scalars."""
    if isinstance(value, tuple) and not nested:
        return all(_plain_choice(v, True) for v in value)
    return isinstance(value, str | int | float | bool)


@spec
class SearchDim:
    """A search dimension as written: `choices`, or a `low`..`high` range (int when both are ints), `log` scale."""

    choices: Annotated[tuple[Any, ...] | None, BeforeValidator(_freeze)] = None
    low: int | _Real | None = None
    high: int | _Real | None = None
    log: bool = False
    step: _LaxPosInt | None = None

    def __post_init__(self) -> None:
        if (self.choices is None) == (self.low is None or self.high is None):
            raise ValueError("a search dimension has either 'choices' or both 'low' and 'high'")
        if self.choices is not None and not self.choices:
            raise ValueError("'choices' must not be empty")
        if bad := [c for c in self.choices or () if not _plain_choice(c)]:
            raise ValueError(
                f"choices: {type(bad[0]).__name__} {bad[0]!r} is not allowed; allowed: numbers, strings, "
                "booleans, or lists of them (one value per searched field, no mappings)"
            )
        if self.low is not None and self.high is not None:
            if self.low >= self.high:
                raise ValueError(f"'low' ({self.low}) must be below 'high' ({self.high})")
            if self.log and self.low <= 0:
                raise ValueError("a log-scale range needs 'low' > 0")

    @property
    def kind(self) -> str:
        """ "choice", "int" (both ends ints) or "float"."""
        if self.choices is not None:
            return "choice"
        return "int" if isinstance(self.low, int) and isinstance(self.high, int) else "float"

    def values(self) -> Sequence[Any] | None:
        """Every value of a finite dimension (choices, or an int range: a `range`, never a list of a billion ints),
        None for a continuous one."""
        if self.kind == "choice":
            return list(self.choices or ())
        if self.kind == "int" and not self.log:
            assert self.low is not None and self.high is not None
            return range(int(self.low), int(self.high) + 1, int(self.step or 1))
        return None


def grid_size(dims: Mapping[str, SearchDim | None]) -> int:
    """How many points a finite set of dimensions (path -> SearchDim, None for none) holds; counted, never listed."""
    total = 1
    for d in dims.values():
        if d is not None:
            total *= len(d.values() or ())
    return total


@spec
class InputSpec:
    """The images every candidate takes."""

    image_size: Annotated[int, Strict(), Field(ge=8, le=_SIDE_MAX)]
    channels: Literal[1, 3]
    classes: Annotated[int, Strict(), Field(ge=2, le=CLASSES_MAX)]


@spec
class ConstraintsSpec:
    """Rules every candidate layout must follow."""

    conv_before_attention: Annotated[bool, Strict()] = False  # no conv stage after an attention stage


def clear_adapters() -> None:
    """Forget the field validators made so far (a registry changed what a field's type resolves to)."""
    _adapter.cache_clear()


@functools.lru_cache(maxsize=256)
def _adapter(cls: type, name: str) -> TypeAdapter:
    """Validator of one field of a spec class, as a space file would be checked."""
    return TypeAdapter(typing.get_type_hints(cls, include_extras=True)[name], config=FORBID)


def with_value(obj: Any, keys: list[str], value: Any) -> Any:
    """`obj` with the field at `keys` set to `value`, validated like the space file (ValueError if not)."""
    names = {f.name for f in fields(obj)}
    if keys[0] not in names:
        raise ValueError(f"unknown field '{keys[0]}'")
    if len(keys) == 1:
        cls: type = type(obj)
        return replace(obj, **{keys[0]: _adapter(cls, keys[0]).validate_python(value)})
    child = getattr(obj, keys[0])
    if not is_dataclass(child):
        raise ValueError(f"'{keys[0]}' is not a section")
    return replace(obj, **{keys[0]: with_value(child, keys[1:], value)})


VIT_P, VIT_C = "ViT_P", "ViT_C"  # the ViT paper's two models: patchify stem, convolutional stem
VIT_LABELS = (VIT_P, VIT_C)


def model_label(model: ModelSpec) -> str:
    """What the papers call the model: ViT_P, ViT_C, ViT_REL, or the stage layout."""
    if not model.stages:
        return f"{model.arch} baseline"
    if model.arch == "vit":
        return VIT_C if model.stem.kind == "vitc" else VIT_P
    return "ViT_REL" if model.stem.kind == "patch" else model.layout
