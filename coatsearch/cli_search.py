"""The command line's search views: what a searched candidate's space holds (`show`), a trial's model
(`show STUDY --trial N`), the best architectures as candidate entries (`export STUDY --best K`), and the space
set to measure every network once per seed (`enumerate`)."""

from __future__ import annotations

import random
import sys
from collections.abc import Iterator
from typing import Any

from coatsearch.space import admission, search
from coatsearch.space.objects import Candidate, Space
from coatsearch.vocab.specs import SAMPLES_MAX

_SAMPLE = 8  # architectures `show` lists without --all
_LIST_MAX = 20  # values of a dimension `show` lists (more: the first and the last)
_RANDOM_POINTS = 50  # points `show` solves for a space with a continuous structural dimension
_ENUMERATE_MAX = SAMPLES_MAX  # points of one searched candidate `enumerate` plans per seed


def show_search(space: Space, everything: bool) -> str:
    """Per searched candidate: its dimensions and sizes, how many architectures survive, and a sample."""
    parts = []
    for cand in space.candidates:
        if isinstance(cand, Candidate) and search.searches_model(cand):
            parts.append(_one(space, cand, everything))
    return "\n\n".join(parts)


def _one(space: Space, cand: Candidate, everything: bool) -> str:
    total = search.size(cand)
    lines = [f"search over candidate '{cand.name}' (sampler {space.study.sampler}, {space.study.samples} samples "
             f"per seed):"]  # fmt: skip
    for d in cand.dims:
        values = d.values()
        if values is None:
            shown = f"{d.low}..{d.high}{' log' if d.log else ''}"
        else:  # a long list is shown by its ends (an int range may hold billions)
            shown = ", ".join(map(str, values)) if len(values) <= _LIST_MAX else f"{values[0]}, ..., {values[-1]}"
        lines.append(f"  {d.path}: {shown} ({len(values) if values is not None else 'continuous'})")
    if total is None:
        found = _survey_random(space, cand)
        lines.append(f"  a continuous structural dimension: {found.points} random points solved, "
                     f"{len(found.architectures)} distinct architectures admitted{_why(found)}")  # fmt: skip
    else:
        if total > search.POINTS_MAX:
            print(f"coatsearch: note: candidate '{cand.name}': {total:,} structural points; show solves at most "
                  f"{search.POINTS_MAX:,} of them, for at most {admission.SURVEY_S:g} s", file=sys.stderr)  # fmt: skip
        found = admission.survey(space, cand)
        part = f"of the first {found.points:,} (stopped {found.stopped}) " if found.stopped else ""
        lines.append(f"  {total:,} structural points; {len(found.architectures)} distinct architectures {part}pass "
                     f"the constraints and the budget solve{_why(found)}")  # fmt: skip
    archs = list(found.architectures.items())
    shown_archs = archs if everything else archs[:_SAMPLE]
    more = "" if len(shown_archs) == len(archs) else f" (first {len(shown_archs)} of {len(archs)}; --all lists all)"
    lines.append(f"  architectures{more}:")
    lines += [f"    {name}  {p.model.layout}  {_stages(p)}  {p.params / 1e6:.3f}M params  {p.macs / 1e6:.2f}M MACs  "
              f"{_point(point)}" for name, (point, p) in shown_archs]  # fmt: skip
    return "\n".join(lines)


def _stages(prep: Any) -> str:
    from coatsearch.budget.prepare import stages_text

    return stages_text(prep.model)


def _point(point: dict) -> str:
    return " ".join(f"{k.removeprefix('model.')}={v}" for k, v in point.items())


def _why(found: admission.Survey) -> str:
    if not found.rejected:
        return ""
    return " (" + ", ".join(f"{n} rejected: {kind}" for kind, n in found.rejected.items()) + ")"


def _survey_random(space: Space, cand: Candidate) -> admission.Survey:
    """A survey over random points of a space with a continuous structural dimension (seeded)."""
    from collections import Counter

    rejected: Counter[str] = Counter()
    archs: dict = {}
    for point in _random_points(cand, _RANDOM_POINTS):
        try:
            prep = admission.admit(space, cand, point)
        except admission.Rejected as exc:
            rejected[exc.reason.split(":", 1)[0]] += 1
            continue
        archs.setdefault(search.arch_name(prep.model.layout, admission.structure(prep.model)), (point, prep))
    return admission.Survey(_RANDOM_POINTS, None, dict(rejected), archs)


def _random_points(cand: Candidate, n: int) -> Iterator[dict]:
    rng = random.Random(0)
    for _ in range(n):
        point = {}
        for d in search.model_dims(cand):
            values = d.values()
            point[d.path] = (
                rng.choice(values) if values is not None else rng.uniform(float(d.low or 0), float(d.high or 0))
            )
        yield point


def show_trial(study: str, number: int, studies_dir: Any) -> str:
    """A trial's model rebuilt from its record: candidate, sampled values, solved stages, size, module tree."""
    from coatsearch.budget.prepare import stages_text, stem_text
    from coatsearch.models import build
    from coatsearch.storage.found import trial_model

    tm = trial_model(study, number, studies_dir)
    p = tm.prepared
    values = " ".join(f"{k}={v}" for k, v in tm.params.items()) or "none"
    return "\n".join([
        f"trial {number} of study {study}: candidate {tm.candidate}, architecture {tm.architecture}",
        f"sampled: {values}",
        f"stem {stem_text(p.model)}; stages {stages_text(p.model)}; {p.params / 1e6:.3f}M params, "
        f"{p.macs / 1e6:.2f}M MACs",
        str(build(p.model)),
    ])  # fmt: skip


def enumerated(space: Space, where: str) -> Space:
    """The space set to measure every network of its searched candidates once per seed: the grid sampler over
    every point, on every seed, no re-evaluation (a point whose network was measured on that seed reuses it,
    `store.reuse`). One-line UserError for a space with no searched candidate, a continuous dimension, or more
    points than _ENUMERATE_MAX; nothing is written."""
    import dataclasses
    import math

    from coatsearch.errors import UserError

    searched = [c for c in space.candidates if isinstance(c, Candidate) and c.dims]
    if not searched:
        raise UserError(f"{where}: no candidate has search dimensions; enumerate measures every network of a "
                        "searched candidate (allowed: a space with a `search:` candidate)")  # fmt: skip
    sizes = []
    for cand in searched:
        endless = [d.path for d in cand.dims if d.values() is None]
        if endless:
            raise UserError(f"{where}: candidate '{cand.name}': {endless[0]} is continuous, so the space holds "
                            f"infinitely many points; allowed: choice lists and integer ranges, at most "
                            f"{_ENUMERATE_MAX} points a candidate")  # fmt: skip
        sizes.append(math.prod(len(d.values() or ()) for d in cand.dims))
        if sizes[-1] > _ENUMERATE_MAX:
            structural = search.size(cand) or 0
            raise UserError(f"{where}: candidate '{cand.name}' holds {sizes[-1]} points ({structural} structural, so "
                            f"at most {structural} networks), more than the {_ENUMERATE_MAX} points enumerate "
                            f"measures; allowed: at most {_ENUMERATE_MAX} points a candidate ({_ENUMERATE_MAX} "
                            f"networks at {len(space.study.seeds)} seeds)")  # fmt: skip
    study = dataclasses.replace(space.study, sampler="grid", samples=max(sizes), reevaluate=None)
    return dataclasses.replace(space, study=study)
