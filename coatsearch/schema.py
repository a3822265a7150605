"""The space file's schema (pydantic, unknown keys forbidden); dsl.py loads into it, space.py reads it."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

PosInt = Annotated[int, Field(gt=0)]
Fraction = Annotated[float, Field(ge=0.0, le=1.0)]
LAYOUT_RE = re.compile(r"^[CT](-[CT])*$")
SEARCH_ROOTS = ("model", "train")
_SUFFIX = {"K": 1e3, "M": 1e6, "G": 1e9, "B": 1e9, "T": 1e12}


class Strict(BaseModel):
    """Base: unknown keys are errors, no coercion of strings into numbers."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class InputIn(Strict):
    image_size: Annotated[int, Field(ge=8, le=1024)]
    channels: Literal[1, 3]
    classes: Annotated[int, Field(ge=2)]


class StemIn(Strict):
    kind: Literal["conv", "patch", "vitc"] = "conv"
    width: PosInt = 64
    layers: Annotated[int, Field(ge=1, le=8)] = 2
    stride: Literal[1, 2] = 2
    patch_size: PosInt = 16
    channels: list[PosInt] = []
    strides: list[Literal[1, 2]] = []

    @model_validator(mode="after")
    def _vitc(self) -> StemIn:
        if self.kind == "vitc" and (not self.channels or len(self.channels) != len(self.strides)):
            raise ValueError("a vitc stem needs 'channels' and 'strides' lists of the same length (one per 3x3 conv)")
        return self


class BlockIn(Strict):
    head_size: PosInt = 32
    expand_ratio: Annotated[float, Field(gt=0)] = 4.0
    mlp_ratio: Annotated[float, Field(gt=0)] = 4.0
    se_ratio: Fraction = 0.25
    downsample: Literal["eq5", "dw"] = "eq5"
    pool: Literal["max", "avg"] = "max"
    conv_norm: Literal["batchnorm", "layernorm"] = "batchnorm"
    attn_norm: Literal["layernorm", "batchnorm"] = "layernorm"
    rel_pos: bool = True
    act: Literal["gelu", "relu", "silu"] = "gelu"
    drop_path: Annotated[float, Field(ge=0.0, lt=1.0)] = 0.0

    model_config = ConfigDict(extra="forbid", strict=False, frozen=True)


class BudgetIn(Strict):
    macs: int | float | str
    tolerance: Annotated[float, Field(gt=0.0, lt=1.0)] = 0.05
    scale: Literal["width", "depth", "none"] = "width"

    model_config = ConfigDict(extra="forbid", strict=False, frozen=True)

    @field_validator("macs")
    @classmethod
    def _macs(cls, value: Any) -> int:
        return parse_count(value)


class TrainIn(Strict):
    optimizer: Literal["adamw", "sgd"] = "adamw"
    lr: Annotated[float, Field(gt=0)] = 1e-3
    weight_decay: Annotated[float, Field(ge=0)] = 0.05
    batch_size: PosInt = 128
    warmup_epochs: Annotated[float, Field(ge=0)] = 1.0
    label_smoothing: Annotated[float, Field(ge=0, lt=1)] = 0.0
    grad_clip: Annotated[float, Field(ge=0)] = 0.0
    mixup: Annotated[float, Field(ge=0)] = 0.0
    randaugment: bool = False
    compile: bool = False

    model_config = ConfigDict(extra="forbid", strict=False, frozen=True)


class DimIn(Strict):
    """A search dimension: `choices`, or a `low`..`high` range (int when both are ints), `log` scale."""

    choices: list[Any] | None = None
    low: int | float | None = None
    high: int | float | None = None
    log: bool = False
    step: PosInt | None = None

    model_config = ConfigDict(extra="forbid", strict=False, frozen=True)

    @model_validator(mode="after")
    def _shape(self) -> DimIn:
        if (self.choices is None) == (self.low is None or self.high is None):
            raise ValueError("a search dimension has either 'choices' or both 'low' and 'high'")
        if self.choices is not None and not self.choices:
            raise ValueError("'choices' must not be empty")
        if self.low is not None and self.high is not None:
            if self.low >= self.high:
                raise ValueError(f"'low' ({self.low}) must be below 'high' ({self.high})")
            if self.log and self.low <= 0:
                raise ValueError("a log-scale range needs 'low' > 0")
        return self


class DataIn(Strict):
    dataset: Literal["fashion_mnist", "mnist", "cifar10", "cifar100", "imagefolder", "synthetic"]
    root: str | None = None
    eval_size: PosInt = 2000


class SubsetIn(Strict):
    per_class: PosInt
    epochs: PosInt
    classes: list[Annotated[int, Field(ge=0)]] | None = None
    dataset: DataIn | None = None

    model_config = ConfigDict(extra="forbid", strict=False, frozen=True)


class TransferIn(Strict):
    pretrain: SubsetIn
    finetune: SubsetIn


class LengthIn(Strict):
    per_class: PosInt
    epochs: Annotated[list[PosInt], Field(min_length=2)]
    classes: list[Annotated[int, Field(ge=0)]] | None = None


class ScoresIn(Strict):
    generalization: SubsetIn | None = None
    capacity: SubsetIn | None = None
    accuracy: SubsetIn | None = None
    transfer: TransferIn | None = None
    length: LengthIn | None = None


class ModelPatch(Strict):
    """Model fields as written in the shared `model` section or a candidate (all optional)."""

    arch: Literal["coatnet", "vit"] | None = None
    stem: StemIn | None = None
    layout: str | None = None
    depths: list[PosInt] | None = None
    widths: list[PosInt] | None = None
    strides: list[Literal[1, 2]] | None = None
    block: BlockIn | None = None

    model_config = ConfigDict(extra="forbid", strict=False, frozen=True)


class CandidateIn(Strict):
    """One candidate after the shared `model`, `train`, `search` and `budget` were merged in."""

    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.+-]+$")]
    arch: Literal["coatnet", "vit"] = "coatnet"
    stem: StemIn = StemIn()
    layout: str
    depths: list[PosInt]
    widths: list[PosInt]
    strides: list[Literal[1, 2]] | None = None
    block: BlockIn = BlockIn()
    train: TrainIn = TrainIn()
    search: dict[str, DimIn | None] = {}
    budget: BudgetIn | None = None
    scores: ScoresIn = ScoresIn()

    model_config = ConfigDict(extra="forbid", strict=False, frozen=True)

    @field_validator("layout")
    @classmethod
    def _layout(cls, value: str) -> str:
        if not LAYOUT_RE.match(value):
            raise ValueError("a layout is stage types C or T joined by '-', e.g. 'C-C-T-T'")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> CandidateIn:
        n = len(self.layout.split("-"))
        for key in ("depths", "widths", "strides"):
            values = getattr(self, key)
            if values is not None and len(values) != n:
                raise ValueError(f"'{key}' has {len(values)} entries but layout '{self.layout}' has {n} stages")
        if self.arch == "vit" and (self.layout != "T" or self.stem.kind == "conv"):
            raise ValueError("arch 'vit' needs layout 'T' and a 'patch' or 'vitc' stem")
        if self.arch == "coatnet" and self.stem.kind == "vitc":
            raise ValueError("a 'vitc' stem belongs to arch 'vit'; arch 'coatnet' takes 'conv' or 'patch'")
        for kind, width in zip(self.layout.split("-"), self.widths, strict=True):
            if kind == "T" and width % self.block.head_size:
                raise ValueError(f"T-stage width {width} is not a multiple of head_size {self.block.head_size}")
        return self


class StudyIn(Strict):
    seeds: Annotated[list[int], Field(min_length=1)] = [0]
    samples: PosInt = 1
    sampler: Literal["random", "tpe"] = "random"
    pruner: Literal["none", "median", "hyperband"] = "none"
    objective: str = "generalization.eval_acc"
    direction: Literal["maximize", "minimize"] = "maximize"


class ConstraintsIn(Strict):
    conv_before_attention: bool = False


class SpaceDoc(Strict):
    """The whole file, after the profile was applied and the candidates merged with shared sections."""

    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]+$")]
    description: str = ""
    scale: str = ""
    input: InputIn
    model: ModelPatch = ModelPatch()
    train: TrainIn = TrainIn()
    search: dict[str, DimIn | None] = {}
    budget: BudgetIn | None = None
    constraints: ConstraintsIn = ConstraintsIn()
    candidates: Annotated[list[CandidateIn], Field(min_length=1)]
    data: DataIn = DataIn(dataset="synthetic")
    scores: ScoresIn = ScoresIn()
    study: StudyIn = StudyIn()


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
