"""Replaying samplers on a measured table (NAS-Bench-201 style): a study that measured every point of a finite
searched candidate, several seeds each, is the table; each sampler is run on it many times, each trial's value
one seed's measurement of its point, and its simple regret (the best mean in the table minus the table mean of
the incumbent, the point with the best value observed so far) is reported against the number of trials, mean
and 95% t interval over the repeats. Nothing trains or is written."""

from __future__ import annotations

import random
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coatsearch.errors import UserError
from coatsearch.space import search
from coatsearch.storage.trials import REEVAL

SAMPLERS = ("random", "tpe", "gp")  # single-objective samplers that take choice lists
ASKS_PER_TRIAL = 50  # asks per counted trial before a replay gives up (rejected points cost no trial)


@dataclass(frozen=True)
class Curve:
    """One sampler's regret after each number of trials: (trials, mean, ci low, ci high) over the repeats."""

    sampler: str
    points: tuple[tuple[int, float, float, float], ...]


@dataclass(frozen=True)
class Table:
    """A finite searched candidate measured in full: point (its stored values, dimension order) -> the values
    its seeds measured, the points rejected before training, and the objective's direction."""

    candidate: Any
    values: dict[tuple, list[float]]
    rejected: frozenset[tuple]
    maximize: bool


def table(study_name: str, studies_dir: str | Path) -> Table:
    """The table of a study that measured every point; a UserError naming how many points it lacks otherwise."""
    from coatsearch.storage import found, store

    study = store.load_study(Path(studies_dir), study_name)
    space = found.study_space(study)
    rows = [(r.params, r.state, r.value, r.run.identity.sample) for r in store.records(study, say=False)]
    return _table(space, rows, f"study '{study_name}'")


def table_from_csv(space_file: str | Path, csv_file: str | Path) -> Table:
    """The table of an exported study (`coatsearch export STUDY --format csv`) and the space it ran."""
    import pandas as pd

    from coatsearch.space.objects import load_space

    frame = pd.read_csv(csv_file)
    rows = [({k: v for k, v in row.items() if not pd.isna(v)}, row["state"],
             None if pd.isna(row["value"]) else row["value"], row.get("sample"))
            for row in frame.to_dict("records")]  # fmt: skip
    return _table(load_space(space_file), rows, str(csv_file))


def _table(space: Any, rows: Sequence[tuple[Mapping[str, Any], str, Any, Any]], where: str) -> Table:
    """The table from (params, state, value, sample) rows of the space's first searched candidate."""
    cands = [c for c in space.candidates if search.searches_model(c)]
    if not cands or search.size(cands[0]) is None:
        raise UserError(f"{where}: replay needs a searched candidate with a finite space")
    cand = cands[0]
    paths = [d.path for d in search.model_dims(cand)]
    values: dict[tuple, list[float]] = {}
    rejected: set[tuple] = set()
    for params, state, value, sample in rows:
        if params.get("candidate") != cand.name or (sample or 0) >= REEVAL:
            continue
        key = tuple(params.get(p) for p in paths)
        if state == "REJECTED":
            rejected.add(key)
        elif state == "COMPLETE" and value is not None:
            values.setdefault(key, []).append(float(value))
    total = search.size(cand) or 0
    if len(values) + len(rejected - set(values)) < total:
        raise UserError(f"{where} measured or rejected {len(values) + len(rejected)} of the {total} "
                        "points; replay needs every point (run the space with study.sampler: grid)")  # fmt: skip
    direction = space.study.directions[0] if space.study.objectives else space.study.direction
    return Table(cand, values, frozenset(rejected), direction == "maximize")


def replay(measured: Table, samplers: Sequence[str], trials: int, repeats: int) -> list[Curve]:
    """Each sampler's regret curve over `repeats` replays of `trials` trials on the table."""
    bad = [s for s in samplers if s not in SAMPLERS]
    if bad:
        raise UserError(f"--sampler {bad[0]}: replay takes {', '.join(SAMPLERS)} (single objective, choice lists)")
    best = (max if measured.maximize else min)(statistics.fmean(v) for v in measured.values.values())
    return [_curve(s, measured.candidate, measured.values, best, measured.maximize, trials, repeats) for s in samplers]


def _curve(sampler: str, cand: Any, values: dict, best: float, maximize: bool, trials: int, repeats: int) -> Curve:
    from scipy import stats as st

    runs = [_one(sampler, cand, values, best, maximize, trials, seed) for seed in range(repeats)]
    points = []
    for n in range(1, trials + 1):
        at = [run[n - 1] for run in runs]
        mean = statistics.fmean(at)
        half = float(st.t.ppf(0.975, len(at) - 1)) * statistics.stdev(at) / len(at) ** 0.5 if len(at) > 1 else 0.0
        points.append((n, mean, mean - half, mean + half))
    return Curve(sampler, tuple(points))


def _one(sampler: str, cand: Any, values: dict, best: float, maximize: bool, trials: int, seed: int) -> list[float]:
    """One replay: the regret after each counted trial (a point not in the table is rejected, not counted)."""
    import optuna

    from coatsearch.storage.sampling import make_sampler

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    dims = search.model_dims(cand)
    dists: dict[str, optuna.distributions.BaseDistribution] = {
        d.path: optuna.distributions.CategoricalDistribution([search.label(v) for v in d.values() or ()]) for d in dims
    }
    study = optuna.create_study(direction="maximize" if maximize else "minimize", sampler=make_sampler(sampler, seed))
    rng, regrets, incumbent = random.Random(seed), [], None  # incumbent: (observed value, point)
    for _ in range(trials * ASKS_PER_TRIAL):
        trial = study.ask(dists)
        key = tuple(trial.params[d.path] for d in dims)
        if key not in values:
            study.tell(trial, state=optuna.trial.TrialState.PRUNED)  # rejected: a constraint or the budget
            continue
        value = rng.choice(values[key])  # one seed's measurement, as a real trial would give
        study.tell(trial, value)
        if incumbent is None or (value > incumbent[0] if maximize else value < incumbent[0]):
            incumbent = (value, key)
        regrets.append(abs(best - statistics.fmean(values[incumbent[1]])))  # the incumbent's table mean
        if len(regrets) == trials:
            return regrets
    raise UserError(f"replay of {sampler}: fewer than {trials} admissible points in {trials * ASKS_PER_TRIAL} asks")


def text(curves: list[Curve], scale: float = 100.0) -> str:
    """The regret table: each sampler's mean regret [95% interval] at 1, 5, 10, 20, ... trials (points)."""
    trials = len(curves[0].points)
    marks = [n for n in (1, 2, 5, 10, 20, 50, 100, 200, 500) if n < trials] + [trials]
    lines = ["regret (best table mean - the incumbent's, points) after N trials, mean [95% CI] over repeats:",
             "sampler  " + "  ".join(f"N={n}".ljust(22) for n in marks)]  # fmt: skip
    for c in curves:
        cells = [f"{m * scale:.2f} [{lo * scale:.2f}, {hi * scale:.2f}]".ljust(22) for n, m, lo, hi in c.points
                 if n in marks]  # fmt: skip
        lines.append(f"{c.sampler:<8} " + "  ".join(cells))
    return "\n".join(lines)
