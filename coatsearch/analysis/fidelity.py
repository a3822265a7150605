"""Multi-fidelity search measured on a table of learning curves: random search with Optuna's successive-halving or
Hyperband pruner fed each trial's per-point objective, against the same search at full fidelity (the same draws,
nothing pruned): how often it ends on the same network, and the fraction of the curve points it trained.

A table holds, per network, one learning curve a seed (the objective at each measured point, the last one its
final value); a draw is a uniformly random network not yet drawn, observed on a random seed. Nothing trains."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from coatsearch.errors import UserError

if TYPE_CHECKING:
    import optuna

PRUNERS = ("sha", "hyperband")


@dataclass(frozen=True)
class Fidelity:
    """Successive halving or Hyperband on the table, against full fidelity over the same draws."""

    pruner: str
    trials: int
    replays: int
    same_best: float  # fraction of replays ending on the network the full-fidelity search ends on
    cost: float  # mean fraction of the full-fidelity search's curve points trained
    cost_ci: tuple[float, float]


@dataclass(frozen=True)
class LearningCurves:
    """A study's learning curves for the replay: per network, one curve a seed (the objective score's accuracy at
    each measured point, the last one its final value)."""

    score: str  # the objective's score, whose curves these are
    networks: Mapping[str, tuple[tuple[float, ...], ...]]  # architecture (or candidate) -> a curve per search trial


def _pruner(name: str, points: int) -> optuna.pruners.BasePruner:
    import optuna

    if name == "sha":
        return optuna.pruners.SuccessiveHalvingPruner(min_resource=1)
    return optuna.pruners.HyperbandPruner(min_resource=1, max_resource=points)


def measure(curves: Mapping[str, Sequence[Sequence[float]]], pruner: str, trials: int, replays: int,
            maximize: bool) -> Fidelity:  # fmt: skip
    """`replays` random searches of `trials` draws, each with `pruner` and at full fidelity on the same draws."""
    from coatsearch.analysis.search_stats import mean_ci

    if pruner not in PRUNERS:
        raise UserError(f"--pruner {pruner}: allowed: {', '.join(PRUNERS)}")
    if replays < 2 or not curves:
        raise UserError(f"--repeats {replays}: a multi-fidelity replay needs at least 2 repeats and a table of curves")
    same, costs = 0, []
    for seed in range(replays):
        draws = _draws(curves, trials, seed)
        full = _best([(net, curve[-1]) for net, curve in draws], maximize)
        found, spent = _pruned(draws, pruner, maximize)
        same += found == full
        costs.append(spent / sum(len(curve) for _, curve in draws))
    mean, lo, hi = mean_ci(costs)
    return Fidelity(pruner, trials, replays, same / replays, mean, (lo, hi))


def _draws(curves: Mapping[str, Sequence[Sequence[float]]], trials: int, seed: int) -> list[tuple[str, list]]:
    rng = random.Random(seed)
    nets = sorted(curves)
    rng.shuffle(nets)
    return [(net, list(rng.choice(curves[net]))) for net in nets[:trials]]


def _best(seen: Sequence[tuple[str, float]], maximize: bool) -> str | None:
    if not seen:
        return None
    return (max if maximize else min)(seen, key=lambda item: item[1])[0]


def _pruned(draws: Sequence[tuple[str, list]], pruner: str, maximize: bool) -> tuple[str | None, int]:
    """The network the pruned search ends on (best among the trials it let finish) and the points it trained."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    points = max(len(curve) for _, curve in draws)
    study = optuna.create_study(direction="maximize" if maximize else "minimize", pruner=_pruner(pruner, points))
    finished, spent = [], 0
    for net, curve in draws:
        trial = study.ask()
        for step, value in enumerate(curve):
            spent += 1
            trial.report(value, step)
            if step < len(curve) - 1 and trial.should_prune():
                study.tell(trial, state=optuna.trial.TrialState.PRUNED)
                break
        else:
            study.tell(trial, curve[-1])
            finished.append((net, curve[-1]))
    return _best(finished, maximize), spent


def curves_of(study_name: str, studies_dir: str | Path) -> LearningCurves:
    """Per network, the learning curve of each seed's search trial: the objective's score's validation accuracy
    at each measured point (the test-image accuracy where the study has no validation split)."""
    from coatsearch.space import search
    from coatsearch.storage import found, store
    from coatsearch.storage.trials import REEVAL

    study = store.load_study(Path(studies_dir), study_name)
    score = str(found.study_space(study).study.objective).split(".", 1)[0]
    out: dict[str, list[list[float]]] = {}
    for r in store.records(study, say=False):
        if r.state != "COMPLETE" or (r.run.identity.sample or 0) >= REEVAL:
            continue
        cur = r.run.curve(score)
        values = [float(v) for v in ((cur.val_acc or cur.eval_acc) if cur else ()) if v is not None]
        if values:
            out.setdefault(search.architecture(r.run) or r.candidate, []).append(values)
    return LearningCurves(score, {net: tuple(map(tuple, curves)) for net, curves in out.items()})


def text(results: Sequence[Fidelity]) -> str:
    """One line per pruner: how often it finds the full-fidelity best, at what fraction of the cost."""
    lines = []
    for f in results:
        lines.append(f"{f.pruner}: same best as full fidelity in {100 * f.same_best:.0f}% of {f.replays} replays of "
                     f"{f.trials} draws, at {100 * f.cost:.0f}% [{100 * f.cost_ci[0]:.0f}, {100 * f.cost_ci[1]:.0f}] "
                     "of its curve points")  # fmt: skip
    return "\n".join(lines)
