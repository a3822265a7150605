"""The space file as documents: a candidate and the whole file, whose `scores:` section the score registry derives.

These sit above vocab/specs.py and coatsearch.scores (each score declares its own section spec there), so the
vocabulary stays one: YAML validates straight into these frozen dataclasses (space/load.py). No torch here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, Strict, TypeAdapter

from coatsearch import scores as _scores
from coatsearch.scores import ScoresField
from coatsearch.vocab import kinds
from coatsearch.vocab import specs as _spec
from coatsearch.vocab.specs import (
    DEPTH_MAX,
    FORBID,
    BlockSpec,
    Budget,
    ConstraintsSpec,
    DataSpec,
    InputSpec,
    ModelSpec,
    Name,
    OptimSpec,
    SearchDim,
    StageSpec,
    StemSpec,
    Stride,
    StudySpec,
    Width,
    with_value,
)


@dataclass(frozen=True, kw_only=True)
class CandidateSpec:
    """One candidate as a space file states it, after the shared sections were merged in."""

    __pydantic_config__ = FORBID

    name: Name
    arch: Annotated[str, AfterValidator(kinds.check_candidate_arch)] = "coatnet"  # a name in vocab.kinds.ARCHS
    stem: StemSpec = StemSpec()
    layout: Annotated[str, AfterValidator(kinds.check_layout)]
    depths: tuple[Annotated[int, Field(gt=0, le=DEPTH_MAX)], ...]
    widths: tuple[Width, ...]
    strides: tuple[Stride, ...] | None = None  # per stage; None = 2 everywhere
    block: BlockSpec = BlockSpec()
    train: OptimSpec = OptimSpec()
    search: Mapping[str, SearchDim | None] = field(default_factory=dict)  # dotted path -> dimension
    budget: Budget | None = None
    scores: ScoresField = field(default_factory=lambda: _scores.scores_spec()())  # the registry's ScoresSpec
    # A/A studies (benchmarks/bench_aa.py) stand one architecture under several names; both default to None so
    # that stored spaces compare unchanged (storage.trials.space_changes reads a missing key as None):
    label: Name | None = None  # the paper model it is recorded as (ViT_P, ViT_C, a layout); None: stem and layout
    init_offset: Annotated[int, Field(ge=0, le=2**20)] | None = None  # added to the trial seed for the model's
    # initialization only (data subset and batch order still follow the trial seed, so runs pair by seed); None: 0

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


_ClaimId = Annotated[str, Field(pattern=r"^[a-f]$")]  # a claim of papers.md §3 (report.claims)


@dataclass(frozen=True, kw_only=True)
class CheckpointSpec:
    """Trial checkpoints (training.checkpoint): every `every` steps of runs of `min_steps` or more; 0: never."""

    __pydantic_config__ = FORBID

    every: Annotated[int, Strict(), Field(ge=0, le=10_000_000)] = 500
    min_steps: Annotated[int, Strict(), Field(ge=1, le=10_000_000)] = 2000
    keep: Annotated[bool, Strict()] = False  # keep a trial's checkpoints once it has finished


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
    scores: ScoresField = field(default_factory=lambda: _scores.scores_spec()())
    study: StudySpec = StudySpec()
    untestable: dict[_ClaimId, str] = field(default_factory=dict)  # claim id -> why this scale cannot test it
    pilots: tuple[_ClaimId, ...] = ()  # the claims this space pilots: its looks are on record but spend no test α
    decides: dict[_ClaimId, Annotated[float, Field(gt=0, le=100)] | None] = field(default_factory=dict)  # claim id
    # -> the effect (points) the profile is sized to detect; null: the paper's. `plan`/`run` refuse a profile whose
    # plan cannot decide one (planner.power.undecided). Not the space's identity (space.identity.IDENTITY_FREE)
    log: Literal["none", "tensorboard", "mlflow"] = "none"  # live tracking of each trial (`run --log` overrides it)
    checkpoint: CheckpointSpec = CheckpointSpec()  # how long trials save and resume their state
    keep_top: Annotated[int, Strict(), Field(ge=0, le=100_000)] = 0  # keep the final weights of the K best trials
    # in <study>/weights/kept/ (runner.kept; `run --keep-top` overrides it; 0: none)


_DOCUMENT: dict[type, TypeAdapter] = {}  # the score registry's current ScoresSpec -> the validator built for it


def document() -> TypeAdapter:
    """The validator of a whole space file, for the score registry as it is now (`scores.register_score`)."""
    current = _scores.scores_spec()
    if current not in _DOCUMENT:  # first use, or the registry changed: `scores:` fields validate as `current`
        _spec.clear_adapters()
        _DOCUMENT.clear()
        _DOCUMENT[current] = TypeAdapter(SpaceDoc)
    return _DOCUMENT[current]


def with_params(cand: CandidateSpec, params: Mapping[str, Any]) -> CandidateSpec:
    """`cand` with sampled `params` applied (dotted paths: `model.` fields sit at the candidate's top level)."""
    for path, value in sorted(params.items()):  # `model.layout` before its per-stage `model.layout.<i>`
        root, _, rest = path.partition(".")
        keys = rest.split(".") if root == "model" else [root, *rest.split(".")]
        if root == "model" and len(keys) == 2 and keys[0] == "layout":
            cand = with_value(cand, ["layout"], _with_stage(cand.layout, keys[1], value))
            continue
        cand = with_value(cand, keys, value)
    return cand


def _with_stage(layout: str, index: str, kind: Any) -> str:
    """`layout` with stage `index` (0-based, a per-stage search path `model.layout.<i>`) set to `kind`."""
    letters = layout.split("-")
    if not index.isdigit() or int(index) >= len(letters):
        raise ValueError(f"stage index '{index}': layout '{layout}' has stages 0..{len(letters) - 1}")
    if not isinstance(kind, str):
        raise ValueError(f"a stage kind is a letter ({', '.join(kinds.STAGE_KINDS)}), found {kind!r}")
    letters[int(index)] = kind
    return kinds.check_layout("-".join(letters))
