"""A space file → Space of candidates; a candidate plus sampled params → frozen model, optimizer and budget specs.

`Space` and its candidates are also the public API's (`coatsearch.load_space`): each candidate is matched to the
budget on first use of `prepared` (or `spec`, `params`, `macs`, `build()`), once, and keeps the result.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coatsearch.scores import ScoresSpec
from coatsearch.space import schema
from coatsearch.space.load import load_document
from coatsearch.space.search import Dim
from coatsearch.vocab import specs

if TYPE_CHECKING:
    from torch import nn

    from coatsearch.budget.prepare import Prepared


class _Matched:
    """What a candidate and a baseline both offer: the model matched at default settings, its size, its module."""

    name: str

    @cached_property
    def prepared(self) -> Prepared:
        """Matched to the budget at its default settings (solved once; `coatsearch show` lists it)."""
        from coatsearch.budget.prepare import prepare

        assert isinstance(self, Candidate | Baseline)
        return prepare(self)

    @property
    def spec(self) -> specs.ModelSpec:
        """The matched model spec, for candidates and baselines alike."""
        return self.prepared.model

    @property
    def layout(self) -> str:
        """Stage types, e.g. "C-C-T-T" ("" for a regime baseline)."""
        return self.prepared.model.layout

    @property
    def params(self) -> int:
        """Parameter count of the matched model."""
        return self.prepared.params

    @property
    def macs(self) -> int:
        """Multiply-adds per image of the matched model."""
        return self.prepared.macs

    def build(self) -> nn.Module:
        """The untrained matched model (torch's current default device)."""
        from coatsearch.models import build

        return build(self.spec)


@dataclass(frozen=True)
class Candidate(_Matched):
    """A named candidate: its validated definition, the images it takes, and the dimensions searched over it."""

    name: str
    definition: schema.CandidateSpec  # the merged candidate (model fields, train, budget, scores, search), unmatched
    input: specs.InputSpec  # image size, channels, classes (from the space's `input`)
    dims: tuple[Dim, ...] = ()

    @property
    def scores(self) -> ScoresSpec:
        """What its trials measure (the shared `scores` merged with its own)."""
        return self.definition.scores

    def resolve(
        self, params: Mapping[str, Any] | None = None
    ) -> tuple[specs.ModelSpec, specs.OptimSpec, specs.Budget | None]:
        """Apply sampled `params` (dotted path → value) and return (model, optimizer, budget) specs."""
        cand = schema.with_params(self.definition, params or {})
        return cand.model(self.input), cand.train, cand.budget


@dataclass(frozen=True)
class Baseline(_Matched):
    """A regime baseline (specs.BASELINES): a fixed model on the same subsets and seeds, never searched or matched."""

    name: str
    input: specs.InputSpec
    train: specs.OptimSpec  # the space's shared training settings
    scores: ScoresSpec  # the space's shared scores
    dims: tuple[Dim, ...] = ()

    @property
    def definition(self) -> specs.ModelSpec:
        """The baseline's fixed model (what a stored space and a stored match are compared by)."""
        return specs.baseline_model(self.name, self.input)

    def resolve(self, params: Mapping[str, Any] | None = None) -> tuple[specs.ModelSpec, specs.OptimSpec, None]:
        """(model, optimizer, no budget); a baseline has no parameters to sample."""
        return specs.baseline_model(self.name, self.input), self.train, None


@dataclass(frozen=True)
class Space:
    """Everything a study needs, frozen: candidates, budget, data, scores and study settings."""

    name: str
    source: str
    profile: str
    description: str
    scale: str
    image_size: int
    channels: int
    classes: int
    conv_before_attention: bool
    candidates: tuple[Candidate | Baseline, ...]  # the space's candidates, then the baselines (study.baselines)
    data: specs.DataSpec
    scores: ScoresSpec
    study: specs.StudySpec
    untestable: Mapping[str, str] = field(default_factory=dict)  # claim id -> why this scale cannot test it
    pilots: tuple[str, ...] = ()  # the claims this space pilots (registration, report looks)
    decides: Mapping[str, float | None] = field(default_factory=dict)  # claim id -> effect sized for (None: paper)
    reseeded: bool = False  # seeds and test draw set apart from the file (a replicate's: with_draw)
    log: str = "none"  # live tracking of each trial (runner.tracking): none, tensorboard or mlflow; not its identity
    tracking_uri: str | None = None  # the MLflow store (runner.tracking.mlflow_uri; None: env, else SQLite); ditto
    checkpoint: schema.CheckpointSpec = field(
        default_factory=schema.CheckpointSpec
    )  # trial checkpoints; not its identity
    keep_top: int = 0  # keep the final weights of the K best trials (runner.kept; 0: none); not its identity

    def candidate(self, name: str) -> Candidate | Baseline:
        """The candidate called `name`; a one-line error lists the names that exist."""
        for cand in self.candidates:
            if cand.name == name:
                return cand
        raise KeyError(f"no candidate '{name}'; candidates: {', '.join(c.name for c in self.candidates)}")


def load_space(path: str | Path, profile: str = "default", text: str | None = None) -> Space:
    """Read, validate and expand a space file, or its given `text` (raises load.SpaceError on bad input)."""
    return _build_space(load_document(path, profile, text), str(path), profile)


def with_draw(space: Space, seeds: tuple[int, ...], test_draw: int) -> Space:
    """The space on other seeds and another test draw (a replicate's, coatsearch.replication); all else as it is."""
    from dataclasses import replace

    study, data = replace(space.study, seeds=tuple(seeds)), replace(space.data, test_draw=test_draw)
    return replace(space, study=study, data=data, reseeded=True)


def as_recorded(space: Space, record: Mapping[str, Any]) -> Space:
    """A space loaded from a study's recorded text, as the study ran it (its space record,
    storage.trials.space_record): with the recorded sampler, samples and re-evaluation where they differ from the
    file's (`coatsearch enumerate` runs it on the grid of every point, without a re-evaluation:
    cli_search.enumerated), and on the recorded seeds and test draw (a replicate runs it on fresh ones: `reseeded`)."""
    from dataclasses import replace

    ran, study = record.get("study") or {}, space.study
    changes: dict[str, Any] = {}
    if isinstance(ran.get("sampler"), str) and ran["sampler"] != study.sampler:
        changes["sampler"] = ran["sampler"]
    if isinstance(ran.get("samples"), int) and ran["samples"] != study.samples:
        changes["samples"] = ran["samples"]
    if "reevaluate" in ran and ran["reevaluate"] is None and study.reevaluate is not None:
        changes["reevaluate"] = None
    space = replace(space, study=replace(study, **changes)) if changes else space
    if not record.get("reseeded"):
        return space
    seeds = tuple(ran.get("seeds") or space.study.seeds)
    draw = (record.get("data") or {}).get("test_draw", space.data.test_draw)
    if seeds == tuple(space.study.seeds) and draw == space.data.test_draw:
        return space
    return with_draw(space, seeds, int(draw))


def _build_space(doc: schema.SpaceDoc, source: str, profile: str) -> Space:
    """Turn a validated document into a Space."""
    return Space(
        name=doc.name,
        source=source,
        profile=profile,
        description=doc.description,
        scale=doc.scale,
        image_size=doc.input.image_size,
        channels=doc.input.channels,
        classes=doc.input.classes,
        conv_before_attention=doc.constraints.conv_before_attention,
        candidates=tuple(_candidate(c, doc.input) for c in doc.candidates) + _baselines(doc),
        data=doc.data,
        scores=doc.scores,
        study=doc.study,
        untestable=dict(doc.untestable),
        pilots=tuple(doc.pilots),
        decides=dict(doc.decides),
        log=doc.log,
        checkpoint=doc.checkpoint,
        keep_top=doc.keep_top,
    )


def _candidate(cand: schema.CandidateSpec, inp: specs.InputSpec) -> Candidate:
    dims = tuple(Dim(**asdict(d), path=path) for path, d in sorted(cand.search.items()) if d is not None)
    return Candidate(name=cand.name, definition=cand, input=inp, dims=dims)


def _baselines(doc: schema.SpaceDoc) -> tuple[Baseline, ...]:
    if not doc.study.baselines:
        return ()
    return tuple(Baseline(name, doc.input, doc.train, doc.scores) for name in specs.BASELINES)
