"""A candidate plus sampled params → its matched model spec, optimizer and complexity (what `show` lists)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any, Protocol

from coatsearch.budget.count import count
from coatsearch.budget.joint import solve
from coatsearch.budget.match import MatchResult
from coatsearch.vocab import kinds, specs


class Resolvable(Protocol):
    """What `prepare` matches: a named candidate or baseline (space.objects.Candidate, Baseline) that resolves
    sampled params into its model, optimizer and budget specs. A protocol, so that matching needs no space."""

    @property
    def name(self) -> str: ...

    @property
    def dims(self) -> tuple[Any, ...]: ...

    def resolve(
        self, params: Mapping[str, Any] | None = None
    ) -> tuple[specs.ModelSpec, specs.OptimSpec, specs.Budget | None]: ...


class HasCandidates(Protocol):
    """A space's candidates (space.objects.Space)."""

    @property
    def candidates(self) -> Sequence[Resolvable]: ...


@dataclass(frozen=True)
class Prepared:
    """A candidate ready to train: its name, optimizer and budget, and the match (budget.match.MatchResult) that
    met the budget: the matched model and its size. Without a budget the match is the model as written."""

    name: str
    optim: specs.OptimSpec
    budget: specs.Budget | None
    match: MatchResult

    @property
    def model(self) -> specs.ModelSpec:
        return self.match.spec

    @property
    def macs(self) -> int:
        return self.match.macs

    @property
    def params(self) -> int:
        return self.match.params

    @property
    def multiplier(self) -> float:
        return self.match.multiplier

    @property
    def error(self) -> float | None:
        """Relative MACs error against the budget; None without a budget."""
        return None if self.budget is None else self.match.error

    @property
    def ok(self) -> bool:
        return self.match.ok

    @property
    def reason(self) -> str:
        return self.match.reason

    @property
    def params_error(self) -> float | None:
        return self.match.params_error

    @property
    def knob(self) -> float | None:
        return self.match.knob

    @property
    def params_range(self) -> tuple[int, int] | None:
        return self.match.params_range


def prepare(cand: Resolvable, params: Mapping[str, Any] | None = None) -> Prepared:
    """Resolve `params` into the candidate and solve it to the budget (never drops an unmatched one)."""
    model, optim, budget = cand.resolve(params)
    if budget is None:
        c = count(model)
        return Prepared(cand.name, optim, None, MatchResult(model, c.macs, c.params, 1.0, 0.0, True, ""))
    return Prepared(cand.name, optim, budget, solve(model, budget))


def prepare_all(space: HasCandidates) -> list[Prepared]:
    """Every named candidate at its default settings, matched."""
    return [prepare(c) for c in space.candidates]


def fixed(space: HasCandidates) -> dict[str, Prepared]:
    """Each candidate without search dimensions, matched once: its params never change from trial to trial."""
    return {c.name: prepare(c) for c in space.candidates if not c.dims}


def to_record(p: Prepared) -> dict:
    """A Prepared as plain JSON data (what the study stores, so trials never match it again)."""
    return json.loads(json.dumps(asdict(p)))


def from_record(record: Mapping[str, Any]) -> Prepared:
    """The Prepared that `to_record` wrote, validated back into frozen specs. Studies stored before the match was
    its own field hold one flat record: its match fields are read as the match."""
    from pydantic import TypeAdapter

    rec = dict(record)
    if "match" not in rec:
        flat = {k: rec.pop(k) for k in [f.name for f in fields(MatchResult) if f.name != "spec"] if k in rec}
        rec["match"] = {"spec": rec.pop("model"), **flat, "error": flat.get("error") or 0.0}
    return TypeAdapter(Prepared).validate_python(rec)


def stages_text(model: specs.ModelSpec) -> str:
    """Per-stage depth x width and stride, e.g. 'C1x32/1 C3x64/2 T7x128/2 T1x256/1'."""
    return " ".join(f"{s.kind}{s.depth}x{s.width}/{s.stride}" for s in model.stages)


def stem_text(model: specs.ModelSpec) -> str:
    """The stem in short: 'conv2x16/2', 'patch4', 'vitc32,64,64/2,2,1'."""
    if not model.stages:
        return ""  # a regime baseline: no stem
    return kinds.STEM_KINDS.entry(model.stem.kind).text(model.stem)


def tokens(model: specs.ModelSpec) -> list[str]:
    """Token grid each attention stage attends over, e.g. ['8x8', '4x4'] (M stages add window and grid)."""
    sides = zip(model.stages, model.feature_sizes(), strict=True)
    return [
        kinds.STAGE_KINDS.entry(s.kind).tokens(n, model.block)
        for s, n in sides
        if kinds.STAGE_KINDS.entry(s.kind).attends
    ]


def row(p: Prepared) -> dict:
    """The JSON/table row `coatsearch show` prints for one candidate."""
    return {
        "name": p.name,
        "arch": p.model.arch,
        "layout": p.model.layout,
        "stem": stem_text(p.model),
        "stages": stages_text(p.model),
        "tokens": tokens(p.model),
        "params": p.params,
        "macs": p.macs,
        "budget_macs": p.budget.macs if p.budget else None,
        "error": p.error,
        "multiplier": p.multiplier,
        "ok": p.ok,
        "reason": p.reason,
        **_joint(p),
    }


def _joint(p: Prepared) -> dict:
    """The joint budget's row fields: only when the budget has a params target (MACs-only rows stay as they were)."""
    if p.budget is None or p.budget.params is None:
        return {}
    return {"budget_params": p.budget.params, "params_error": p.params_error, "knob": p.knob}
