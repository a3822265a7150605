"""How a study samples: Optuna's sampler and pruner for the space, the candidate and seed every trial fixes with
the search dimensions it samples, and the points claiming enqueues (a re-evaluation's architecture, the grid's next
point). The store opens studies with these (`store.load_study`) and claims through them (`store.claim_point`)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Any

import optuna

from coatsearch.space import admission, search
from coatsearch.space.objects import Space
from coatsearch.space.search import Dim
from coatsearch.storage import architectures
from coatsearch.storage import trials as P
from coatsearch.storage.lock import holds_key
from coatsearch.vocab import kinds, samplers


def sampler(space: Space, stream: int = 0) -> optuna.samplers.BaseSampler:
    """Optuna's sampler for `study.sampler` (space/load.py checked that it fits the space), seeded per stream."""
    return make_sampler(space.study.sampler, space.study.seeds[0] + stream)


def make_sampler(name: str, seed: int) -> optuna.samplers.BaseSampler:
    """The registered sampler `name` (vocab.samplers.SAMPLERS), seeded; an unknown name is a one-line error."""
    import warnings

    kind = samplers.SAMPLERS.entry(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return kinds.load(kind.factory)(seed=seed, **kind.options)


def pruner(space: Space) -> optuna.pruners.BasePruner:
    """The registered pruner `study.pruner` (vocab.samplers.PRUNERS)."""
    kind = samplers.PRUNERS.entry(space.study.pruner)
    return kinds.load(kind.factory)(**kind.options)


def suggest(trial: optuna.Trial, space: Space, item: P.PlanItem) -> dict[str, Any]:
    """Fix the planned candidate and seed, and sample the candidate's search dimensions."""
    for name, choices in P.fixed_choices(space).items():  # the resume check compares these (store._stale_choices)
        trial.suggest_categorical(name, choices)
    return {d.path: _suggest_dim(trial, d) for d in space.candidate(item.candidate).dims}


def _suggest_dim(trial: optuna.Trial, d: Dim) -> Any:
    if d.kind == "choice":
        choices = tuple(d.choices or ())  # a choice dimension always has choices (the spec checks it)
        if len(choices) == 1:
            return choices[0]  # a constant, not a parameter (Optuna needs one choice list per name)
        labels: list[Any] = [search.label(c) for c in choices]
        picked = trial.suggest_categorical(d.path, labels)
        return choices[labels.index(picked)]
    assert d.low is not None and d.high is not None  # a numeric dimension always has bounds (the spec checks it)
    if d.kind == "int":
        return trial.suggest_int(d.path, int(d.low), int(d.high), step=int(d.step or 1), log=d.log)
    return trial.suggest_float(d.path, float(d.low), float(d.high), log=d.log)


def fixed_points(space: Space) -> Callable[[P.PlanItem, list], dict | None]:
    """A planned trial's enqueued point: a re-evaluation trial's architecture (_reeval_point), the grid sampler's
    next point (grid_points), else none ({}: Optuna's sampler samples it)."""
    grid = grid_points(space)

    def point(item: P.PlanItem, trials: list) -> dict | None:
        if item.sample >= P.REEVAL:
            return _reeval_point(space, item, trials)
        return grid(item, trials) if grid else {}

    return point


def _reeval_point(space: Space, item: P.PlanItem, trials: list) -> dict | None:
    """The point of the architecture ranked `item.sample - REEVAL` by mean objective over the search's complete
    trials of its candidate, leaving out the networks a named candidate builds (it is re-evaluated as itself);
    None while any trial on the study's seeds is unfinished, or with fewer architectures."""
    rank, cand = item.sample - P.REEVAL, space.candidate(item.candidate)
    main = {i.key: i for i in P.plan(space) if i.seed in space.study.seeds}  # the search and the named runs
    held = {t.user_attrs.get("key") for t in trials if holds_key(t) and t.state.name != "RUNNING"}
    if not set(main) <= held:
        return None
    finished = [t for t in trials if t.user_attrs.get("key") in main and measured(t)]
    done = [t for t in finished if main[t.user_attrs["key"]].candidate == cand.name and t.values]
    fixed = {c.name for c in space.candidates if not c.dims}
    named = [architectures.trial_structure(t) for t in finished if main[t.user_attrs["key"]].candidate in fixed]
    builds = {search.identity(s) for s in named if s}
    direction = space.study.direction if not space.study.objectives else space.study.directions[0]
    ranked = architectures.ranked(done, cand, direction, exclude=builds)  # a named layout is re-evaluated as itself
    return {"params": ranked[rank]} if rank < len(ranked) else None


def grid_points(space: Space) -> Callable[[P.PlanItem, list], dict | None] | None:
    """For the grid sampler: a planned trial's next point of its candidate's grid (search.grid) that no trial of
    the same candidate and seed took yet; None once that grid is used up. None for the other samplers."""
    if not samplers.SAMPLERS.entry(space.study.sampler).grid:
        return None
    grids = {(c.name, s): search.grid(c, s) for c in space.candidates if c.dims for s in space.study.seeds}

    def next_point(item: P.PlanItem, trials: list) -> dict | None:
        points = grids.get((item.candidate, item.seed))
        if points is None:
            return {}
        same = f"{item.candidate}/seed={item.seed}/"
        used = {t.user_attrs.get("grid") for t in trials if str(t.user_attrs.get("key", "")).startswith(same)}
        index = next((i for i in range(len(points)) if i not in used), None)
        return None if index is None else {"params": points[index], "grid": index}

    return next_point


NETWORK = "network"  # user attribute: what a trial measures (`network`), set when it is claimed
REUSE = "reuse"  # user attribute: the number of the trial whose measurement a sampled point reused
CONSTRAINT = "rejected"  # the Optuna constraint every told trial carries: 1 for a rejected point, 0 otherwise
REUSE_MAX = 20  # reused points for one planned trial before it ends as a reuse itself


def network(cand: Any, prep: Any) -> str:
    """What a trial measures, as a short hash: the solved network's identity (`search.identity`), its training
    settings and its scores. Two points with one hash on one seed would train the same thing twice."""
    model = prep.model
    ident = search.identity(admission.structure(model)) if model.stages else repr(model)
    text = json.dumps({"network": ident, "optim": asdict(prep.optim), "scores": asdict(cand.scores)},
                      sort_keys=True, default=str)  # fmt: skip
    return hashlib.sha1(text.encode()).hexdigest()[:16]


def measured_by(trials: Sequence[Any], seed: Any, net: str, number: int) -> Any | None:
    """The trial other than `number` that measures network `net` on `seed`: a complete measurement first, else
    one still training (None when no trial does). Reused and rejected points measure nothing."""
    same = [t for t in trials if t.number != number and t.user_attrs.get(NETWORK) == net
            and t.params.get("seed") == seed and _measures(t)]  # fmt: skip
    done = [t for t in same if measured(t)]
    return (done or [t for t in same if t.state.name in ("RUNNING", "WAITING")] or [None])[0]


def constrain(trial: optuna.Trial, violated: bool) -> None:
    """Mark a trial feasible or not through Optuna's constraint (`Trial.set_constraint`), which TPE, GP and
    NSGA-II read; set on every trial told, so the samplers see one constraint on all of them. CMA-ES reads no
    constraint (Optuna warns on each trial that has one): its trials carry none."""
    if not _reads_no_constraint(trial.study):
        trial.set_constraint(CONSTRAINT, 1.0 if violated else 0.0)


def _reads_no_constraint(study: optuna.Study) -> bool:
    """Whether the study's sampler reads no constraint (a registered sampler with `constraints` off)."""
    blind = [kinds.load(k.factory) for k in samplers.SAMPLERS.values() if not k.constraints]
    return any(isinstance(study.sampler, cls) for cls in blind if isinstance(cls, type))


def _worst(study: optuna.Study) -> list[float] | None:
    """The worst value of each objective the study measured (what a rejected point is told), None before any."""
    done = [t.values for t in study.get_trials(deepcopy=False) if measured(t)]
    if not done:
        return None
    ways = [d == optuna.study.StudyDirection.MAXIMIZE for d in study.directions]
    return [min(v[i] for v in done) if up else max(v[i] for v in done) for i, up in enumerate(ways)]


def constrained(study: optuna.Study) -> bool:
    """Whether every complete trial of the study carries the constraint (a study begun before it was recorded
    goes on without it: GP refuses a mix of constrained and unconstrained trials). A CMA-ES study records none
    but is told rejected points at the worst value all the same."""
    if _reads_no_constraint(study):
        return True
    return all(CONSTRAINT in t.constraints for t in study.get_trials(deepcopy=False) if t.state.name == "COMPLETE")


def tell_rejected(study: optuna.Study, trial: optuna.Trial) -> None:
    """Tell Optuna a point refused before training. With the constraint recorded (`constrained`) it is told
    COMPLETE at the worst value measured so far with the constraint violated: TPE, GP and NSGA-II read it as
    infeasible, CMA-ES (no constraint model) as the worst point. Before any value is measured, or in a study
    begun without the constraint, it is told PRUNED (TPE reads it; GP, NSGA-II and CMA-ES skip it)."""
    ok = constrained(study)
    values = _worst(study) if ok else None
    if ok:
        constrain(trial, True)
    if values is not None:
        trial.set_user_attr("told", "COMPLETE")
        study.tell(trial, values, state=optuna.trial.TrialState.COMPLETE)
    else:
        study.tell(trial, None, state=optuna.trial.TrialState.PRUNED)


def measured(t: Any) -> bool:
    """Whether an Optuna trial is a measurement: complete, neither a rejected point nor a reuse."""
    return t.state.name == "COMPLETE" and bool(t.values) and _measures(t)


def _measures(t: Any) -> bool:
    """Whether a trial trains its point: neither a rejected point nor a reuse."""
    return "rejected" not in t.user_attrs and REUSE not in t.user_attrs
