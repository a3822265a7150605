"""Frozen specifications: what a candidate model, its training and its scoring are (no torch here)."""

from __future__ import annotations

from dataclasses import dataclass, field

CONV, ATTN = "C", "T"


@dataclass(frozen=True)
class StemSpec:
    """The stem: CoAtNet's S0 conv stem, a ViT patchify stem, or ViT_C's conv stem."""

    kind: str  # "conv" (CoAtNet S0) | "patch" (ViT patchify) | "vitc" (ViT_C stack of 3x3 convs + 1x1)
    width: int = 64  # conv: S0 channels (patch/vitc: output width is the first stage's width)
    layers: int = 2  # conv: number of 3x3 convs
    stride: int = 2  # conv: stride of the first 3x3 conv (the stem's total stride)
    patch_size: int = 16  # patch: kernel size and stride
    channels: tuple[int, ...] = ()  # vitc: output channels of each 3x3 conv (BN + ReLU after each)
    strides: tuple[int, ...] = ()  # vitc: stride of each 3x3 conv

    @property
    def total_stride(self) -> int:
        """Downsampling factor from the input to the first stage."""
        if self.kind == "conv":
            return self.stride
        if self.kind == "patch":
            return self.patch_size
        out = 1
        for s in self.strides:
            out *= s
        return out


@dataclass(frozen=True)
class StageSpec:
    """One stage: `depth` blocks of one type, the first block strided."""

    kind: str  # "C" (MBConv + SE) | "T" (relative-attention Transformer)
    depth: int
    width: int
    stride: int = 2  # stride of the stage's first block (1 or 2)


@dataclass(frozen=True)
class BlockSpec:
    """Options shared by every block of a model."""

    head_size: int = 32  # attention channels per head; T widths are multiples of it
    expand_ratio: float = 4.0  # MBConv inverted-bottleneck expansion
    mlp_ratio: float = 4.0  # Transformer FFN expansion
    se_ratio: float = 0.25  # squeeze-excitation ratio (of the block's output width)
    downsample: str = "eq5"  # MBConv stride: "eq5" (strided 1x1 on the normalized input) | "dw"
    pool: str = "max"  # pooling on downsampling shortcuts and attention input: "max" | "avg"
    conv_norm: str = "batchnorm"  # norm in MBConv blocks: "batchnorm" | "layernorm"
    attn_norm: str = "layernorm"  # norm in Transformer blocks: "layernorm" | "batchnorm"
    rel_pos: bool = True  # relative-position bias in attention (CoAtNet Eq. 3)
    act: str = "gelu"  # activation in both block types: "gelu" | "relu" | "silu"
    drop_path: float = 0.0  # stochastic depth, max rate (linear over blocks)


@dataclass(frozen=True)
class ModelSpec:
    """A whole candidate model.

    arch "coatnet": stem then stages of C/T blocks, global average pool, linear head (CoAtNet and
    ViT_REL, which is a patch stem followed by one T stage). arch "vit": timm VisionTransformer with
    one T stage (class token, absolute position embedding) and a patch (ViT_P) or vitc (ViT_C) stem.
    """

    name: str
    arch: str  # "coatnet" | "vit"
    image_size: int
    in_chans: int
    num_classes: int
    stem: StemSpec
    stages: tuple[StageSpec, ...]
    block: BlockSpec = field(default_factory=BlockSpec)

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


@dataclass(frozen=True)
class Budget:
    """A MACs band and what is scaled to land in it."""

    macs: int  # target multiply-adds per image
    tolerance: float = 0.05  # allowed relative error |achieved - target| / target
    scale: str = "width"  # "width" | "depth" | "none" (check only)


@dataclass(frozen=True)
class OptimSpec:
    """One training schedule's optimizer and regularization settings."""

    optimizer: str = "adamw"  # "adamw" | "sgd" (momentum 0.9, nesterov off)
    lr: float = 1e-3  # peak learning rate
    weight_decay: float = 0.05  # not applied to norms and biases
    batch_size: int = 128
    warmup_epochs: float = 1.0  # linear warmup, then half-period cosine to zero
    label_smoothing: float = 0.0
    grad_clip: float = 0.0  # max global grad norm; 0 = off
    mixup: float = 0.0  # mixup alpha; 0 = off
    randaugment: bool = False  # light RandAugment on the in-memory batch
    compile: bool = False  # torch.compile the model


@dataclass(frozen=True)
class DataSpec:
    """Where images come from and how they are shaped."""

    dataset: str  # "fashion_mnist" | "mnist" | "cifar10" | "cifar100" | "imagefolder" | "synthetic"
    root: str | None = None  # folder to look in (dataset-specific default when None)
    eval_size: int = 2000  # held-out images used for evaluation (deterministic subset)


@dataclass(frozen=True)
class SubsetSpec:
    """A deterministic training subset: `per_class` images of each of `classes` (None = all)."""

    per_class: int
    epochs: int
    classes: tuple[int, ...] | None = None
    dataset: DataSpec | None = None  # another dataset (transfer target); None = the space's dataset


@dataclass(frozen=True)
class LengthSpec:
    """Training-length stability: the same subset trained for each schedule length."""

    per_class: int
    epochs: tuple[int, ...]  # schedule lengths; the longest is the reference
    classes: tuple[int, ...] | None = None


@dataclass(frozen=True)
class ScoresSpec:
    """Which paper measurements a trial makes (None = skipped)."""

    generalization: SubsetSpec | None = None  # small subset, no regularization: train loss vs eval acc
    capacity: SubsetSpec | None = None  # largest subset, short schedule: train loss and eval acc
    accuracy: SubsetSpec | None = None  # the space's full training recipe (augmentation on): eval acc
    pretrain: SubsetSpec | None = None  # transfer: pretrain on A ...
    finetune: SubsetSpec | None = None  # ... then fine-tune on B (both or neither)
    length: LengthSpec | None = None  # optimizability: accuracy at several schedule lengths


@dataclass(frozen=True)
class StudySpec:
    """How candidates become trials."""

    seeds: tuple[int, ...] = (0,)  # repeats of every candidate
    samples: int = 1  # sampled configurations per candidate and seed (when it has search dimensions)
    sampler: str = "random"  # sampler for search dimensions: "random" | "tpe"
    pruner: str = "none"  # "none" | "median" | "hyperband" (searches only)
    objective: str = "generalization.eval_acc"  # score recorded as the trial value
    direction: str = "maximize"
