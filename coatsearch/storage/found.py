"""What a search found, taken out of a study: a trial's model rebuilt from its record (`show STUDY --trial N`,
`coatsearch.build(study=..., trial=...)`), and the best architectures as candidate entries (`export --best K`).

A trial is rebuilt from the space text recorded with the study and the trial's sampled values, solved to the
budget again (the solve is deterministic) and checked against the MACs and params the trial recorded.
An exported entry is the solved model itself (stem, per-stage kind, depth, width and stride, block options)
under `budget: {scale: none}` (checked, not scaled again), so it loads back to the same MACs and params in any
space with the same input.
"""

from __future__ import annotations

import dataclasses
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped]  # no stubs installed here (types-PyYAML)

from coatsearch.budget.prepare import Prepared, prepare
from coatsearch.errors import UserError
from coatsearch.space import search
from coatsearch.space.objects import Candidate, Space
from coatsearch.storage.record import TrialRecord


@dataclass(frozen=True)
class TrialModel:
    """One trial's model: its candidate, sampled values, and the matched model it trained."""

    number: int
    candidate: str
    params: dict[str, Any]
    prepared: Prepared
    architecture: str
    seed: int | None = None  # the trial's seed (a retrain for its weights runs on it)
    value: float | None = None  # the trial's recorded objective value
    measured: float | None = None  # its recorded value of the study's first metric key (what a retrain measures)


def study_space(study: Any) -> Space:
    """The space a study recorded (its text, source and profile), loaded again; a one-line error when absent."""
    from coatsearch.space.objects import load_space
    from coatsearch.storage import store

    rec = store.space_of(study)
    if not rec.get("space_yaml"):
        raise UserError(f"study '{study.study_name}' holds no space text; it cannot rebuild its trials' models")
    return load_space(str(rec.get("source") or "space.yaml"), str(rec.get("profile") or "default"),
                      text=str(rec["space_yaml"]))  # fmt: skip


def trial_model(study_name: str, number: int, studies_dir: str | Path = "studies") -> TrialModel:
    """Trial `number`'s model rebuilt from the study's record (a UserError for a trial that trained none)."""
    from coatsearch.storage import store

    study = store.load_study(Path(studies_dir), study_name)
    records = {r.number: r for r in store.records(study, say=False)}
    r = records.get(number)
    if r is None or r.run.model is None:
        have = sorted(n for n, t in records.items() if t.run.model is not None)
        span = f"{have[0]}..{have[-1]}" if have else "none"
        raise UserError(f"study '{study_name}': no trial {number} with a trained model (trials with one: {span})")
    return _rebuild(study_space(study), r)


def _rebuild(space: Space, r: TrialRecord) -> TrialModel:
    cand = space.candidate(r.candidate if r.candidate in {c.name for c in space.candidates} else r.params["candidate"])
    params = search.sampled(cand, r.params) if isinstance(cand, Candidate) else {}
    prep = prepare(cand, params)
    model = r.run.model
    assert model is not None
    if (prep.macs, prep.params) != (model.macs, model.params):
        raise UserError(
            f"trial {r.number}: rebuilt at {prep.macs} MACs and {prep.params} params, but it recorded {model.macs} "
            f"and {model.params} (the solver changed since the study ran?)"
        )
    return TrialModel(r.number, cand.name, params, prep, search.architecture(r.run) or cand.name, r.seed, r.value,
                      r.run.number(space.study.keys[0]))  # fmt: skip


def best(study_name: str, k: int, studies_dir: str | Path = "studies") -> list[tuple[TrialModel, float, int]]:
    """The `k` best architectures of the study's searched candidates by mean objective over their runs: each
    one's best trial's model, its mean and its run count. A UserError when the study holds fewer than `k`."""
    from coatsearch.storage import store
    from coatsearch.storage.architectures import rank
    from coatsearch.storage.trials import REEVAL

    study = store.load_study(Path(studies_dir), study_name)
    space = study_space(study)

    searched = {c.name for c in space.candidates if search.searches_model(c)}
    runs = [r for r in store.records(study, say=False) if r.state == "COMPLETE" and r.params.get("candidate")
            in searched and (r.run.identity.sample or 0) < REEVAL]  # fmt: skip  # the search's runs, as the report
    direction = space.study.directions[0] if space.study.objectives else space.study.direction
    sign = -1.0 if direction == "maximize" else 1.0
    groups: dict[str, list[TrialRecord]] = {}
    for r in runs:
        if r.value is not None:
            groups.setdefault(search.architecture(r.run), []).append(r)
    if k > len(groups):
        raise UserError(f"--best {k}: study '{study_name}' holds {len(groups)} searched architectures")
    by_seed = {a: _per_seed(rs) for a, rs in groups.items()}
    out = []
    for arch in rank(by_seed, direction == "maximize")[:k]:  # compared on equal seeds, as the report ranks them
        rs = groups[arch]
        top = min(rs, key=lambda r: sign * float(r.value or 0))
        out.append((_rebuild(space, top), statistics.fmean(by_seed[arch].values()), len(rs)))
    return out


def _per_seed(rs: list[TrialRecord]) -> dict[Any, float]:
    """An architecture's value on each seed (the runs of one seed averaged)."""
    seeds: dict[Any, list[float]] = {}
    for r in rs:
        seeds.setdefault(r.seed, []).append(float(r.value or 0))
    return {seed: statistics.fmean(v) for seed, v in seeds.items()}


def entry(tm: TrialModel) -> dict[str, Any]:
    """A candidate entry for a space file: the solved model, its budget checked only (scale: none)."""
    m, b = tm.prepared.model, tm.prepared.budget
    out: dict[str, Any] = {
        "name": tm.architecture,
        "arch": m.arch,
        "stem": _plain(m.stem),
        "layout": m.layout,
        "depths": [s.depth for s in m.stages],
        "widths": [s.width for s in m.stages],
        "strides": [s.stride for s in m.stages],
        "block": _plain(m.block),
    }
    if b is not None:
        out["budget"] = {"macs": b.macs, "tolerance": b.tolerance, "scale": "none", "params": None}
    train = {k.split(".", 1)[1]: v for k, v in tm.params.items() if k.startswith("train.")}
    if train:
        out["train"] = train
    return out


def _plain(spec: Any) -> dict[str, Any]:
    """A frozen spec as plain YAML data, fields left at None dropped."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(spec).items() if v is not None}


def yaml_text(study_name: str, found: list[tuple[TrialModel, float, int]], objective: str) -> str:
    """The exported entries as a `candidates:` list to paste into a space, each with a comment line."""
    from coatsearch.budget.prepare import stages_text

    lines = [
        f"# coatsearch export {study_name}: the {len(found)} best architectures by mean {objective}",
        "# (each is the solved model; budget scale: none checks it without solving again)",
        "candidates:",
    ]
    for tm, mean, n in found:
        p = tm.prepared
        lines.append(f"  # trial {tm.number}: {stages_text(p.model)}, {p.params / 1e6:.3f}M params, "
                     f"{p.macs / 1e6:.2f}M MACs; mean {mean:.4g} over {n} runs")  # fmt: skip
        dumped = yaml.safe_dump([entry(tm)], sort_keys=False, default_flow_style=None, width=110)
        lines += ["  " + line for line in dumped.rstrip().splitlines()]
    return "\n".join(lines) + "\n"
