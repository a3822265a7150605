"""What an architecture search found, per searched candidate: its dimensions, rejected points, best-so-far history,
top architectures (mean ± sd over seeds), the re-evaluation on fresh seeds (paired tests against the best named
candidate, Holm, the difference each could detect), the importance of each dimension (optuna.importance, fANOVA), a
multi-objective search's Pareto front and the checks of analysis.search_checks.

Computed from the trial records as stored (a searched candidate's trials, before the report renames them to their
architectures) and the space record; frozen results in the objective's display units (tables.METRICS), which
summary.json's `search` holds and the report's search section formats. Pure apart from the in-memory Optuna study
importance needs.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from coatsearch.analysis import search_stats as SS
from coatsearch.analysis import stats as S
from coatsearch.analysis.constants import ALPHA, VERDICT_ALPHA
from coatsearch.analysis.search_checks import EnumeratedTable, checks
from coatsearch.analysis.search_types import Arch, Paired, ParetoPoint, Searched, SearchResults
from coatsearch.analysis.tables import METRICS
from coatsearch.space import search
from coatsearch.storage.record import TrialRecord
from coatsearch.storage.trials import REEVAL
from coatsearch.vocab.specs import fresh_seeds

_TOP = 5  # architectures listed per searched candidate
IMPORTANCE_SEEDS = (0, 1, 2, 3, 4)  # fANOVA forest seeds: the importance's spread is over these

POWER = 0.8  # the power at which the re-evaluation states the difference it could have detected
RESOLUTION = 1.0  # points: the difference a search's answer on an accuracy (%) should resolve
SAME = "the same network as"  # a re-evaluated architecture that a named candidate builds too (search.identity)
NOT_SHOWN = "not shown to differ from"  # a comparison that is not firm: it states what it could have detected


def compute(space: Mapping[str, Any], records: Sequence[TrialRecord], table: EnumeratedTable | None = None
            ) -> SearchResults | None:  # fmt: skip
    """What the search found, or None when no candidate samples `model.*` fields; `table`: a study of the same
    space measured whole (`coatsearch enumerate`), which the random baseline reads when this one is not."""
    names = sorted({str(r.params.get("candidate")) for r in records if any(k.startswith("model.") for k in r.params)})
    names += sorted({str(r.candidate) for r in records if r.state == "REJECTED"} - set(names))
    if not names:
        return None
    study = space.get("study") or {}
    objective = str((study.get("objectives") or [study.get("objective")])[0])
    metric = METRICS.get(objective)
    maximize = ((study.get("directions") or [study.get("direction", "maximize")])[0]) == "maximize"
    scale = metric.scale if metric else 1.0
    cands = _candidates(space)
    seeds = [int(s) for s in study.get("seeds") or [0]]
    fresh = set(fresh_seeds(seeds, int((study.get("reevaluate") or {}).get("seeds") or 0)))
    objs = _objectives(study)
    searched = tuple(_searched(space, n, cands.get(n), records, objective, scale, maximize, fresh, objs, table)
                     for n in names)  # fmt: skip
    named = [r for r in records if r.state == "COMPLETE" and r.seed not in fresh and not r.searched()]
    return SearchResults(
        objective,
        metric.label if metric else objective,
        metric.unit if metric else "",
        maximize,
        str(study.get("sampler", "random")),
        searched,
        _archs(named, scale, maximize, by_candidate=True),
        objs,
    )


def _objectives(study: Mapping[str, Any]) -> tuple[tuple[str, str, str, bool], ...]:
    """A multi-objective study's objectives as (key, label, unit, maximize); () for one objective."""
    keys, dirs = list(study.get("objectives") or []), list(study.get("directions") or [])
    out = []
    for key, direction in zip(keys, dirs, strict=False):
        m = METRICS.get(key)
        out.append((key, m.label if m else key, m.unit if m else "", direction == "maximize"))
    return tuple(out) if len(out) >= 2 else ()


def _candidates(space: Mapping[str, Any]) -> dict[str, Any]:
    """The space's candidates rebuilt from the recorded space text (their dimensions); {} when it cannot be."""
    from coatsearch.space.objects import load_space

    try:
        built = load_space(str(space.get("source") or "space.yaml"), str(space.get("profile") or "default"),
                           text=str(space["space_yaml"]))  # fmt: skip
    except Exception:  # noqa: BLE001 - an old or foreign space record: the section goes on without dimensions
        return {}
    return {c.name: c for c in built.candidates}


def _searched(
    space: Mapping[str, Any],
    name: str,
    cand: Any,
    records: Sequence[TrialRecord],
    objective: str,
    scale: float,
    maximize: bool,
    fresh: set[int],
    objs: tuple[tuple[str, str, str, bool], ...] = (),
    table: EnumeratedTable | None = None,
) -> Searched:
    ours = [r for r in records if r.params.get("candidate") == name or r.candidate == name]
    mine = [r for r in ours if (r.run.identity.sample or 0) < REEVAL]  # the search's trials, not re-evaluations
    done = [r for r in mine if r.state == "COMPLETE" and r.value is not None]
    again = [r for r in ours if (r.run.identity.sample or 0) >= REEVAL and r.state == "COMPLETE"]
    named = [r for r in records if r.state == "COMPLETE" and r.seed in fresh and not r.searched()]
    dims = tuple((d.path, _values(d)) for d in cand.dims) if cand is not None else ()
    top = _archs(done, scale, maximize)[:_TOP]
    found = checks(space, name, records, top[0].name if top else "", objective, scale, maximize, fresh, table)
    return Searched(
        name,
        dims,
        search.size(cand) if cand is not None else None,
        len(done),
        _rejected(mine),
        _history(done, scale, maximize),
        top,
        len({search.architecture(r.run) for r in done}),
        _importance(cand, done, maximize) if cand is not None else (),
        _slices(cand, done, scale) if cand is not None else (),
        _reevaluation(again, named, objective, scale, maximize),
        _front(done, objs),
        found.mapped,
        found.random,
        found.fidelity,
    )


def _front(done: Sequence[TrialRecord], objs: tuple[tuple[str, str, str, bool], ...]) -> tuple[ParetoPoint, ...]:
    """Each measured architecture's mean of every objective over its runs (display units), and whether no other
    architecture is at least as good in every objective and better in one; the front first, by objective 1."""
    from coatsearch.analysis.speed_tables import pareto

    if not objs:
        return ()
    runs: dict[str, list[list[float]]] = {}
    stages: dict[str, str] = {}
    for r in done:
        values = [r.run.number(k) for k, *_ in objs]
        if r.run.model is not None and all(v is not None for v in values):
            name = search.architecture(r.run)
            scales = [METRICS[k].scale if k in METRICS else 1.0 for k, *_ in objs]
            runs.setdefault(name, []).append([float(v or 0.0) * c for v, c in zip(values, scales, strict=True)])
            stages[name] = r.run.model.stages
    names = sorted(runs)
    means = [tuple(statistics.fmean(a[i] for a in runs[n]) for i in range(len(objs))) for n in names]
    flags = pareto(means, [up for *_, up in objs])
    rows = [ParetoPoint(n, stages[n], m, len(runs[n]), on) for n, m, on in zip(names, means, flags, strict=True)]
    first = 1.0 if objs[0][3] else -1.0
    return tuple(sorted(rows, key=lambda p: (not p.pareto, -first * p.means[0])))


def _by_seed(records: Sequence[TrialRecord], name_of: Any, read: Any) -> dict[str, dict[int, float]]:
    """name -> seed -> `read(record)` (display units) for every record that has the number."""
    out: dict[str, dict[int, float]] = {}
    for r in records:
        if (v := read(r)) is not None and r.seed is not None:
            out.setdefault(name_of(r), {})[r.seed] = v
    return out


def _reevaluation(
    again: Sequence[TrialRecord], named: Sequence[TrialRecord], key: str, scale: float, maximize: bool
) -> tuple[Paired, ...]:
    """Each re-evaluated architecture against the best named candidate, paired by fresh seed (analysis.stats: the
    pair's own paired noise, its t interval and p), Holm-adjusted over the architectures compared, firm at
    VERDICT_ALPHA.

    The best named candidate is chosen on the trial values (the validation images, where the study has a split),
    and every comparison reads `key`, the objective on the test images: no choice sees the images that judge it.
    An architecture that a named candidate builds too (search.identity) is that candidate: nothing to test.
    """

    def value(r: TrialRecord) -> float | None:
        return None if r.value is None else float(r.value) * scale

    def judged(r: TrialRecord) -> float | None:
        v = r.run.number(key)
        return None if v is None else v * scale

    found = _by_seed(again, lambda r: search.architecture(r.run), judged)
    names = _by_seed(named, lambda r: r.candidate, judged)
    chosen = _by_seed(named, lambda r: r.candidate, value)
    if not found or not names or not (chosen := {n: v for n, v in chosen.items() if n in names}):
        return ()
    sign = 1.0 if maximize else -1.0
    best = max(chosen, key=lambda n: sign * statistics.fmean(chosen[n].values()))
    stages = {search.architecture(r.run): r.run.model.stages for r in again if r.run.model is not None}
    same = {search.architecture(r.run): r.candidate for r in named}
    out, tested = [], []
    for arch, vals in found.items():
        if (twin := same.get(arch)) in names:  # the search found a named layout again
            out.append(Paired(arch, stages.get(arch, ""), twin, statistics.fmean(vals.values()),
                              statistics.fmean(names[twin].values()), 0, 0.0, None, None, None, SAME))  # fmt: skip
        else:  # the pair's own paired noise: never one sd pooled over unlike networks
            own = S.noise({arch: vals, best: names[best]})
            tested.append((arch, vals, own, S.paired(vals, names[best], sign, own, ALPHA)))
    level = VERDICT_ALPHA / max(1, len(tested))  # the first Holm step's
    percent = key in METRICS and METRICS[key].unit == "%"
    for (arch, vals, own, res), q in zip(tested, S.holm([res.p for *_, res in tested]), strict=True):
        firm = q is not None and q < VERDICT_ALPHA
        can = S.detectable(own.sd_diff, res.n, own.df, level, POWER) if own and res.n >= 2 else None
        verdict = NOT_SHOWN if not firm else ("better than" if res.d > 0 else "worse than")
        short = percent and can is not None and can > RESOLUTION and own is not None and bool(own.sd_diff)
        needed = S.seeds_needed(own.sd_diff, RESOLUTION, 2, level, POWER) if short and own else None
        out.append(Paired(arch, stages.get(arch, ""), best, statistics.fmean(vals.values()),
                          statistics.fmean(names[best].values()), res.n, res.d, res.ci, res.p, q,
                          verdict, can, own.sd_diff if own else None, own.df if own else None,
                          level, needed))  # fmt: skip
    return tuple(sorted(out, key=lambda x: -x.d))


def _values(d: Any) -> str:
    values = d.values()
    if values is None:
        return f"{d.low}..{d.high}{' (log)' if d.log else ''}"
    return ", ".join(map(str, values)) if len(values) <= 8 else f"{values[0]}..{values[-1]} ({len(values)} values)"


def _rejected(mine: Sequence[TrialRecord]) -> tuple[tuple[str, int, str], ...]:
    reasons = [str(r.run.extra.get("rejected") or r.run.fail_reason or "") for r in mine if r.state == "REJECTED"]
    kinds = Counter(why.split(":", 1)[0] for why in reasons)
    return tuple((k, n, next(w for w in reasons if w.startswith(k))) for k, n in kinds.most_common())


def _history(done: Sequence[TrialRecord], scale: float, maximize: bool) -> tuple[tuple[int, float, float, float], ...]:
    """(trial, seconds since the search's first trial started, value, best so far), in trial order."""
    done = sorted(done, key=lambda r: r.number)
    starts = [datetime.fromisoformat(r.start) for r in done if r.start]
    t0 = min(starts) if starts else None
    out, best = [], None
    for r in done:
        v = float(r.value or 0.0) * scale
        best = v if best is None else (max(best, v) if maximize else min(best, v))
        end = datetime.fromisoformat(r.complete) if r.complete else None
        out.append((r.number, (end - t0).total_seconds() if end and t0 else float("nan"), v, best))
    return tuple(out)


def _archs(done: Sequence[TrialRecord], scale: float, maximize: bool, by_candidate: bool = False) -> tuple[Arch, ...]:
    """The measured architectures (or candidates), grouped as architectures.by_mean groups them and ranked on equal
    seeds as `export --best` ranks them (architectures.rank): mean ± sd over seeds, the runs of one seed averaged
    first (`n`: runs)."""
    from coatsearch.storage.architectures import by_mean

    out = []
    for name, rs, _ in by_mean(done, maximize, (lambda r: r.candidate) if by_candidate else None):
        per_seed: dict[Any, list[float]] = {}
        for r in rs:  # one network on one seed trains alike whichever point built it: one value per seed
            per_seed.setdefault(r.seed, []).append(float(r.value or 0.0) * scale)
        vals = [statistics.fmean(v) for v in per_seed.values()]
        m = rs[0].run.model
        assert m is not None
        block = search.identity(m.structure).rsplit("|", 1)[-1].strip() if m.structure else ""  # options it reads
        sd = statistics.stdev(vals) if len(vals) > 1 else None
        seeds = tuple(sorted({r.seed for r in rs if r.seed is not None}))
        out.append(Arch(name, m.layout, m.stages, block, m.params, m.macs, statistics.fmean(vals), sd, len(rs), seeds))
    order = SS.rank({a.name: dict.fromkeys(a.seeds or (None,), a.mean) for a in out}, maximize)  # equal seeds
    return tuple(sorted(out, key=lambda a: order.index(a.name)))


def _dims(cand: Any) -> list[Any]:
    return [d for d in cand.dims if not (d.kind == "choice" and len(d.choices or ()) == 1)]


def _slices(
    cand: Any, done: Sequence[TrialRecord], scale: float
) -> tuple[tuple[str, tuple[tuple[Any, float], ...]], ...]:
    return tuple(
        (d.path, tuple((r.params[d.path], float(r.value or 0.0) * scale) for r in done if d.path in r.params))
        for d in _dims(cand)
    )


def _importance(
    cand: Any, done: Sequence[TrialRecord], maximize: bool
) -> tuple[tuple[str, float | None, float | None], ...]:
    """fANOVA importance of each sampled dimension over the complete trials, mean and sd over forest seeds; a
    dimension the trials never varied has no importance (None: undefined, not zero)."""
    import optuna

    dims = {d.path: _distribution(d) for d in _dims(cand)}
    trials = [r for r in done if all(p in r.params for p in dims)]
    if len(dims) < 1 or len(trials) < 3:
        return ()
    varied = {p for p in dims if len({search.label(r.params[p]) for r in trials}) > 1}  # else: undefined
    if not varied:
        return tuple((p, None, None) for p in dims)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="maximize" if maximize else "minimize")
    for r in trials:
        params = {p: r.params[p] for p in dims}
        study.add_trial(optuna.trial.create_trial(params=params, distributions=dims, value=float(r.value or 0.0)))
    runs: dict[str, list[float]] = {p: [] for p in dims}
    for seed in IMPORTANCE_SEEDS:
        try:
            found = optuna.importance.get_param_importances(
                study, evaluator=optuna.importance.FanovaImportanceEvaluator(seed=seed), normalize=True
            )
        except (ValueError, RuntimeError):  # all values equal, or one distinct point: nothing to apportion
            return ()
        for p in dims:
            runs[p].append(float(found.get(p, 0.0)))
    rows: list[tuple[str, float | None, float | None]] = [
        (p, statistics.fmean(v), statistics.stdev(v) if len(v) > 1 else None) if p in varied else (p, None, None)
        for p, v in runs.items()
    ]
    return tuple(sorted(rows, key=lambda row: -row[1] if row[1] is not None else 1.0))


def _distribution(d: Any) -> Any:
    import optuna

    if d.kind == "choice":
        return optuna.distributions.CategoricalDistribution([search.label(c) for c in d.choices or ()])
    if d.kind == "int":
        return optuna.distributions.IntDistribution(int(d.low), int(d.high), log=d.log, step=int(d.step or 1))
    return optuna.distributions.FloatDistribution(float(d.low), float(d.high), log=d.log)
