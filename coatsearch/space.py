"""Validated document → Space of candidates; a candidate plus sampled params → frozen specs."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from coatsearch import spec as S
from coatsearch.schema import SEARCH_ROOTS, CandidateIn, DataIn, ScoresIn, SpaceDoc, SubsetIn


@dataclass(frozen=True)
class Dim:
    """One search dimension over a dotted field path (`model.block.head_size`, `train.lr`)."""

    path: str
    kind: str  # "choice" | "int" | "float"
    choices: tuple[Any, ...] = ()
    low: float = 0.0
    high: float = 0.0
    log: bool = False
    step: int | None = None


@dataclass(frozen=True)
class Candidate:
    """A named candidate: its merged settings (canonical JSON) and the dimensions searched over it."""

    name: str
    settings: str  # canonical JSON of the merged candidate (model fields, train, budget)
    input: tuple[int, int, int]  # image size, channels, classes (from the space's `input`)
    scores: S.ScoresSpec  # what its trials measure (the shared `scores` merged with its own)
    dims: tuple[Dim, ...] = ()

    def resolve(self, params: Mapping[str, Any] | None = None) -> tuple[S.ModelSpec, S.OptimSpec, S.Budget | None]:
        """Apply sampled `params` (dotted path → value) and return (model, optimizer, budget) specs."""
        data = json.loads(self.settings)
        for path, value in (params or {}).items():
            _set(data, path, value)
        return _to_specs(CandidateIn.model_validate(data), self.input)


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
    candidates: tuple[Candidate, ...]
    data: S.DataSpec
    scores: S.ScoresSpec
    study: S.StudySpec

    def candidate(self, name: str) -> Candidate:
        """The candidate called `name`; a one-line error lists the names that exist."""
        for cand in self.candidates:
            if cand.name == name:
                return cand
        raise KeyError(f"no candidate '{name}'; candidates: {', '.join(c.name for c in self.candidates)}")


def load_space(path: str | Path, profile: str = "default") -> Space:
    """Read, validate and expand a space file (raises dsl.SpaceError on bad input)."""
    from coatsearch.dsl import load_document

    return build_space(load_document(path, profile), str(path), profile)


def build_space(doc: SpaceDoc, source: str, profile: str) -> Space:
    """Turn a validated document into a Space."""
    size = (doc.input.image_size, doc.input.channels, doc.input.classes)
    cands = tuple(_candidate(c, size) for c in doc.candidates)
    return Space(
        name=doc.name,
        source=source,
        profile=profile,
        description=doc.description,
        scale=doc.scale,
        image_size=size[0],
        channels=size[1],
        classes=size[2],
        conv_before_attention=doc.constraints.conv_before_attention,
        candidates=cands,
        data=_data(doc.data),
        scores=_scores(doc.scores),
        study=S.StudySpec(**{**doc.study.model_dump(), "seeds": tuple(doc.study.seeds)}),
    )


def check_search(doc: SpaceDoc) -> Iterator[tuple[tuple, str]]:
    """Yield (field location, message) for every search dimension, layout or constraint that is invalid."""
    seen: set[str] = set()
    choices: dict[str, tuple] = {}
    if doc.study.pruner != "none" and (doc.study.direction != "maximize" or not doc.study.objective.endswith("acc")):
        yield ("study", "pruner"), "a pruner needs an accuracy objective ('<score>.eval_acc') and direction maximize"
    for i, cand in enumerate(doc.candidates):
        if cand.name in seen:
            yield ("candidates", i, "name"), f"candidate name '{cand.name}' is used twice"
        seen.add(cand.name)
        if doc.constraints.conv_before_attention and "T-C" in cand.layout:
            yield (
                ("candidates", i, "layout"),
                (f"'{cand.layout}' puts a C stage after a T stage (constraints.conv_before_attention is on)"),
            )
        base = cand.model_dump()
        for path, dim in cand.search.items():
            if dim is None:
                continue
            loc = ("search", path) if doc.search.get(path) == dim else ("candidates", i, "search", path)
            if dim.choices is not None and len(dim.choices) > 1:
                if choices.setdefault(path, tuple(map(str, dim.choices))) != tuple(map(str, dim.choices)):
                    yield loc, "every candidate must search the same choices for one path (Optuna needs one list)"
            if path.split(".", 1)[0] not in SEARCH_ROOTS or "." not in path:
                yield loc, "a search path starts with 'model.' or 'train.'"
                continue
            for value in dim.choices if dim.choices is not None else (dim.low, dim.high):
                try:
                    _set(base, path, value)
                    CandidateIn.model_validate(base)
                except (ValidationError, KeyError) as exc:
                    yield loc, f"value {value!r} is not valid there: {_first_error(exc)}"
                    break


def _first_error(exc: Exception) -> str:
    if not isinstance(exc, ValidationError):
        return str(exc)
    err = exc.errors()[0]
    if err["type"] == "extra_forbidden":
        return f"unknown field '{err['loc'][-1]}'"
    return f"{'.'.join(map(str, err['loc']))}: {err['msg']}"


def _candidate(cand: CandidateIn, size: tuple[int, int, int]) -> Candidate:
    data = cand.model_dump(exclude={"search", "scores"})
    dims = tuple(_dim(path, d) for path, d in sorted(cand.search.items()) if d is not None)
    settings = json.dumps(data, sort_keys=True)
    return Candidate(name=cand.name, settings=settings, input=size, scores=_scores(cand.scores), dims=dims)


def _dim(path: str, d: Any) -> Dim:
    if d.choices is not None:
        return Dim(path=path, kind="choice", choices=tuple(_freeze(c) for c in d.choices))
    kind = "int" if isinstance(d.low, int) and isinstance(d.high, int) else "float"
    return Dim(path=path, kind=kind, low=d.low, high=d.high, log=d.log, step=d.step)


def _freeze(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def _set(data: dict, path: str, value: Any) -> None:
    """Write `value` at a dotted search path into a candidate dict (`model.` fields sit at top level)."""
    root, _, rest = path.partition(".")
    keys = rest.split(".") if root == "model" else [root, *rest.split(".")]
    node = data
    for key in keys[:-1]:
        if not isinstance(node.get(key), dict):
            raise KeyError(f"'{key}' in '{path}' is not a section")
        node = node[key]
    node[keys[-1]] = list(value) if isinstance(value, tuple) else value


def _to_specs(c: CandidateIn, size: tuple[int, int, int]) -> tuple[S.ModelSpec, S.OptimSpec, S.Budget | None]:
    image_size, channels, classes = size
    kinds = c.layout.split("-")
    strides = c.strides or [2] * len(kinds)
    stem = S.StemSpec(**{**c.stem.model_dump(), "channels": tuple(c.stem.channels), "strides": tuple(c.stem.strides)})
    stages = tuple(
        S.StageSpec(kind=k, depth=d, width=w, stride=s)
        for k, d, w, s in zip(kinds, c.depths, c.widths, strides, strict=True)
    )
    model = S.ModelSpec(
        name=c.name,
        arch=c.arch,
        image_size=image_size,
        in_chans=channels,
        num_classes=classes,
        stem=stem,
        stages=stages,
        block=S.BlockSpec(**c.block.model_dump()),
    )
    budget = S.Budget(**c.budget.model_dump()) if c.budget is not None else None
    return model, S.OptimSpec(**c.train.model_dump()), budget


def _data(d: DataIn) -> S.DataSpec:
    return S.DataSpec(dataset=d.dataset, root=d.root, eval_size=d.eval_size)


def _subset(s: SubsetIn | None) -> S.SubsetSpec | None:
    if s is None:
        return None
    classes = tuple(s.classes) if s.classes is not None else None
    dataset = _data(s.dataset) if s.dataset is not None else None
    return S.SubsetSpec(per_class=s.per_class, epochs=s.epochs, classes=classes, dataset=dataset)


def _scores(sc: ScoresIn) -> S.ScoresSpec:
    length = None
    if sc.length is not None:
        classes = tuple(sc.length.classes) if sc.length.classes is not None else None
        length = S.LengthSpec(per_class=sc.length.per_class, epochs=tuple(sc.length.epochs), classes=classes)
    return S.ScoresSpec(
        generalization=_subset(sc.generalization),
        capacity=_subset(sc.capacity),
        accuracy=_subset(sc.accuracy),
        pretrain=_subset(sc.transfer.pretrain) if sc.transfer else None,
        finetune=_subset(sc.transfer.finetune) if sc.transfer else None,
        length=length,
    )
