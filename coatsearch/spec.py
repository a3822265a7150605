"""The one spec vocabulary: frozen dataclasses that YAML validates straight into (pydantic), and code builds.

Each field and default is declared once, with the constraints a space file must meet (pydantic reads the
annotations; see dsl.py). Built from Python, a spec is not re-validated field by field: tests and callers may
construct any value, and the builders say what they cannot take. Rules that tie fields together live in
`__post_init__` (checks only, never normalization) and hold everywhere. No torch here.
"""

from __future__ import annotations

import functools
import re
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields, is_dataclass, replace
from typing import Annotated, Any, Literal, NamedTuple

from pydantic import AfterValidator, AliasPath, BeforeValidator, ConfigDict, Field, Strict, TypeAdapter

from coatsearch import kinds

FORBID = ConfigDict(extra="forbid")  # unknown keys in a space file are errors

PosInt = Annotated[int, Strict(), Field(gt=0)]  # no strings or floats taken for ints
LaxPosInt = Annotated[int, Field(gt=0)]
Fraction = Annotated[float, Field(ge=0.0, le=1.0)]
Stride = Literal[1, 2]
Name = Annotated[str, Field(pattern=r"^[A-Za-z0-9_.+-]+$")]
_SUFFIX = {"K": 1e3, "M": 1e6, "G": 1e9, "B": 1e9, "T": 1e12}


def spec(cls: type) -> type:
    """A frozen, keyword-or-positional spec dataclass whose space-file form forbids unknown keys."""
    cls.__pydantic_config__ = FORBID
    return dataclass(frozen=True)(cls)


def parse_count(value: Any) -> int:
    """Parse a MACs count: 30000000, 3e7, '30M', '4.2G'."""
    if isinstance(value, bool):
        raise ValueError("expected a count like 30000000 or '30M'")
    if isinstance(value, int | float):
        if value <= 0:
            raise ValueError("must be positive")
        return int(value)
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([KMGBT]?)\s*", str(value), flags=re.IGNORECASE)
    if not match:
        raise ValueError("expected a count like 30000000, '30M' or '4.2G'")
    number, suffix = float(match.group(1)), match.group(2).upper()
    return int(number * _SUFFIX.get(suffix, 1))


def _stem_kind(name: str) -> str:
    kinds.stem_kind(name)
    return name


@spec
class StemSpec:
    """The stem: CoAtNet's S0 conv stem, a ViT patchify stem, or ViT_C's conv stem (kinds.STEM_KINDS)."""

    kind: Annotated[str, AfterValidator(_stem_kind)] = "conv"
    width: PosInt = 64  # conv: S0 channels (patch/vitc: output width is the first stage's width)
    layers: Annotated[int, Strict(), Field(ge=1, le=8)] = 2  # conv: number of 3x3 convs
    stride: Stride = 2  # conv: stride of the first 3x3 conv (the stem's total stride)
    patch_size: PosInt = 16  # patch: kernel size and stride
    channels: tuple[PosInt, ...] = ()  # vitc: output channels of each 3x3 conv (BN + ReLU after each)
    strides: tuple[Stride, ...] = ()  # vitc: stride of each 3x3 conv

    def __post_init__(self) -> None:
        if self.kind == "vitc" and (not self.channels or len(self.channels) != len(self.strides)):
            raise ValueError("a vitc stem needs 'channels' and 'strides' lists of the same length (one per 3x3 conv)")

    @property
    def total_stride(self) -> int:
        """Downsampling factor from the input to the first stage."""
        return kinds.stem_kind(self.kind).total_stride(self)


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

    head_size: LaxPosInt = 32  # attention channels per head; attention widths are multiples of it
    expand_ratio: Annotated[float, Field(gt=0)] = 4.0  # MBConv inverted-bottleneck expansion
    mlp_ratio: Annotated[float, Field(gt=0)] = 4.0  # Transformer FFN expansion
    se_ratio: Fraction = 0.25  # squeeze-excitation ratio (of the block's output width)
    downsample: Literal["eq5", "dw"] = "eq5"  # MBConv stride: "eq5" (strided 1x1 on the normalized input) | "dw"
    pool: Literal["max", "avg"] = "max"  # pooling on downsampling shortcuts and attention input
    conv_norm: Literal["batchnorm", "layernorm"] = "batchnorm"  # norm in MBConv blocks
    attn_norm: Literal["layernorm", "batchnorm"] = "layernorm"  # norm in attention blocks
    rel_pos: bool = True  # relative-position bias in attention (CoAtNet Eq. 3)
    act: Literal["gelu", "relu", "silu"] = "gelu"  # activation in every block type
    drop_path: Annotated[float, Field(ge=0.0, lt=1.0)] = 0.0  # stochastic depth, max rate (linear over blocks)
    window_size: LaxPosInt | None = None  # M: side of a window-attention window (None: the whole map)
    grid_size: LaxPosInt | None = None  # M: side of a grid-attention grid (None: the whole map)


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
    arch: str  # "coatnet" | "vit" | "linear" | "cnn" (models.BUILDERS)
    image_size: int
    in_chans: int
    num_classes: int
    stem: StemSpec
    stages: tuple[StageSpec, ...]
    block: BlockSpec = field(default_factory=BlockSpec)

    def __post_init__(self) -> None:
        problem = kinds.stem_kind(self.stem.kind).check(self.stem, self.image_size)
        for i, (stage, side) in enumerate(zip(self.stages, self.feature_sizes(), strict=True)):
            if problem:
                break
            kind = kinds.stage_kind(stage.kind)
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

    def blocks(self) -> Iterator[BlockPlan]:
        """Every block in order, with its widths, stride, map sides and drop-path rate: the one stage loop."""
        dim = kinds.stem_kind(self.stem.kind).out_width(self.stem, self.stages[0].width)
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
    """A MACs band and what is scaled to land in it."""

    macs: Annotated[int, BeforeValidator(parse_count)]  # target multiply-adds per image ('10.5M' in a file)
    tolerance: Annotated[float, Field(gt=0.0, lt=1.0)] = 0.05  # allowed |achieved - target| / target
    scale: Literal["width", "depth", "none"] = "width"  # what is scaled ("none": check only)


@spec
class OptimSpec:
    """One training schedule's optimizer and regularization settings (a space file's `train`)."""

    optimizer: Literal["adamw", "sgd"] = "adamw"  # sgd: momentum 0.9, nesterov off
    lr: Annotated[float, Field(gt=0)] = 1e-3  # peak learning rate
    weight_decay: Annotated[float, Field(ge=0)] = 0.05  # not applied to norms and biases
    batch_size: LaxPosInt = 128
    warmup_epochs: Annotated[float, Field(ge=0)] = 1.0  # linear warmup, then half-period cosine to zero
    label_smoothing: Annotated[float, Field(ge=0, lt=1)] = 0.0
    grad_clip: Annotated[float, Field(ge=0)] = 0.0  # max global grad norm; 0 = off
    mixup: Annotated[float, Field(ge=0)] = 0.0  # mixup alpha; 0 = off
    randaugment: bool = False  # light RandAugment on the in-memory batch
    compile: bool = False  # torch.compile the model


@spec
class DataSpec:
    """Where images come from and how they are shaped."""

    dataset: Literal["fashion_mnist", "mnist", "cifar10", "cifar100", "imagefolder", "synthetic"]
    root: str | None = None  # folder to look in (dataset-specific default when None)
    eval_size: PosInt = 2000  # held-out images used for evaluation (deterministic subset)


@spec
class SubsetSpec:
    """A deterministic training subset: `per_class` images of each of `classes` (None = all)."""

    per_class: LaxPosInt
    epochs: LaxPosInt
    classes: tuple[Annotated[int, Field(ge=0)], ...] | None = None
    dataset: DataSpec | None = None  # another dataset (transfer target); None = the space's dataset


@spec
class LengthSpec:
    """Training-length stability: the same subset trained for each schedule length."""

    per_class: PosInt
    epochs: Annotated[tuple[PosInt, ...], Field(min_length=2)]  # schedule lengths; the longest is the reference
    classes: tuple[Annotated[int, Strict(), Field(ge=0)], ...] | None = None


def _transfer_keys(value: Any) -> Any:
    """Check the keys under `scores.transfer` (its two fields are read through alias paths); null = off."""
    if not isinstance(value, dict) or "transfer" not in value:
        return value
    transfer = value["transfer"]
    if transfer is None:
        return {k: v for k, v in value.items() if k != "transfer"}
    for key in transfer if isinstance(transfer, dict) else ():
        if key not in ("pretrain", "finetune"):
            raise ValueError(f"unknown key '{key}' under 'transfer'; allowed: pretrain, finetune")
    return value


@spec
class ScoresSpec:
    """Which paper measurements a trial makes (None = skipped); a file writes pretrain/finetune under `transfer`."""

    generalization: SubsetSpec | None = None  # small subset, no regularization: train loss vs eval acc
    capacity: SubsetSpec | None = None  # largest subset, short schedule: train loss and eval acc
    accuracy: SubsetSpec | None = None  # the space's full training recipe (augmentation on): eval acc
    pretrain: Annotated[SubsetSpec | None, Field(validation_alias=AliasPath("transfer", "pretrain"))] = None
    finetune: Annotated[SubsetSpec | None, Field(validation_alias=AliasPath("transfer", "finetune"))] = None
    length: LengthSpec | None = None  # optimizability: accuracy at several schedule lengths

    def __post_init__(self) -> None:
        if (self.pretrain is None) != (self.finetune is None):
            raise ValueError("'transfer' needs both 'pretrain' and 'finetune'")


Scores = Annotated[ScoresSpec, BeforeValidator(_transfer_keys)]


@spec
class StudySpec:
    """How candidates become trials."""

    seeds: Annotated[tuple[Annotated[int, Strict()], ...], Field(min_length=1)] = (0,)  # repeats of every candidate
    samples: PosInt = 1  # sampled configurations per candidate and seed (when it has search dimensions)
    sampler: Literal["random", "tpe"] = "random"  # sampler for search dimensions
    pruner: Literal["none", "median", "hyperband"] = "none"  # searches only
    objective: str = "generalization.eval_acc"  # score recorded as the trial value
    direction: Literal["maximize", "minimize"] = "maximize"
    baselines: Annotated[bool, Strict()] = True  # also train BASELINES per seed, on the same subsets (never matched)


BASELINES = {"baseline-linear": "linear", "baseline-cnn": "cnn"}  # regime baselines: candidate name -> arch


def baseline_model(name: str, inp: InputSpec) -> ModelSpec:
    """The fixed model of the regime baseline `name` for `inp` images: no stem or stages (models/baselines.py)."""
    return ModelSpec(name, BASELINES[name], inp.image_size, inp.channels, inp.classes, StemSpec(), ())


def _freeze(value: Any) -> Any:
    return tuple(_freeze(v) for v in value) if isinstance(value, list | tuple) else value


@spec
class SearchDim:
    """A search dimension as written: `choices`, or a `low`..`high` range (int when both are ints), `log` scale."""

    choices: Annotated[tuple[Any, ...] | None, BeforeValidator(_freeze)] = None
    low: int | float | None = None
    high: int | float | None = None
    log: bool = False
    step: LaxPosInt | None = None

    def __post_init__(self) -> None:
        if (self.choices is None) == (self.low is None or self.high is None):
            raise ValueError("a search dimension has either 'choices' or both 'low' and 'high'")
        if self.choices is not None and not self.choices:
            raise ValueError("'choices' must not be empty")
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


@spec
class InputSpec:
    """The images every candidate takes."""

    image_size: Annotated[int, Strict(), Field(ge=8, le=1024)]
    channels: Literal[1, 3]
    classes: Annotated[int, Strict(), Field(ge=2)]


@dataclass(frozen=True, kw_only=True)
class CandidateSpec:
    """One candidate as a space file states it, after the shared sections were merged in."""

    __pydantic_config__ = FORBID

    name: Name
    arch: Literal["coatnet", "vit"] = "coatnet"
    stem: StemSpec = StemSpec()
    layout: Annotated[str, AfterValidator(kinds.check_layout)]
    depths: tuple[LaxPosInt, ...]
    widths: tuple[LaxPosInt, ...]
    strides: tuple[Stride, ...] | None = None  # per stage; None = 2 everywhere
    block: BlockSpec = BlockSpec()
    train: OptimSpec = OptimSpec()
    search: Mapping[str, SearchDim | None] = field(default_factory=dict)  # dotted path -> dimension
    budget: Budget | None = None
    scores: Scores = ScoresSpec()

    def __post_init__(self) -> None:
        n = len(self.layout.split("-"))
        for key in ("depths", "widths", "strides"):
            values = getattr(self, key)
            if values is not None and len(values) != n:
                raise ValueError(f"'{key}' has {len(values)} entries but layout '{self.layout}' has {n} stages")
        problem = kinds.check_arch(self.arch, self.stem.kind, self.layout)
        if problem:
            raise ValueError(problem)

    def model(self, inp: InputSpec) -> ModelSpec:
        """The explicit per-stage model this candidate describes for `inp` images (raises ValueError)."""
        letters = self.layout.split("-")
        strides = self.strides or (2,) * len(letters)
        stages = tuple(StageSpec(*s) for s in zip(letters, self.depths, self.widths, strides, strict=True))
        return ModelSpec(self.name, self.arch, inp.image_size, inp.channels, inp.classes, self.stem, stages, self.block)


@spec
class ConstraintsSpec:
    """Rules every candidate layout must follow."""

    conv_before_attention: Annotated[bool, Strict()] = False  # no conv stage after an attention stage


@dataclass(frozen=True, kw_only=True)
class SpaceDoc:
    """A whole space file, after the profile was applied and the shared sections merged into each candidate."""

    __pydantic_config__ = FORBID

    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]+$")]
    description: str = ""
    scale: str = ""
    input: InputSpec
    model: dict[str, Any] = field(default_factory=dict)  # shared model fields, validated inside each candidate
    train: OptimSpec = OptimSpec()
    search: dict[str, SearchDim | None] = field(default_factory=dict)
    budget: Budget | None = None
    constraints: ConstraintsSpec = ConstraintsSpec()
    candidates: Annotated[tuple[CandidateSpec, ...], Field(min_length=1)]
    data: DataSpec = DataSpec("synthetic")
    scores: Scores = ScoresSpec()
    study: StudySpec = StudySpec()


DOCUMENT = TypeAdapter(SpaceDoc)


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
        return replace(obj, **{keys[0]: _adapter(type(obj), keys[0]).validate_python(value)})
    child = getattr(obj, keys[0])
    if not is_dataclass(child):
        raise ValueError(f"'{keys[0]}' is not a section")
    return replace(obj, **{keys[0]: with_value(child, keys[1:], value)})


def with_params(cand: CandidateSpec, params: Mapping[str, Any]) -> CandidateSpec:
    """`cand` with sampled `params` applied (dotted paths: `model.` fields sit at the candidate's top level)."""
    for path, value in params.items():
        root, _, rest = path.partition(".")
        keys = rest.split(".") if root == "model" else [root, *rest.split(".")]
        cand = with_value(cand, keys, value)
    return cand
