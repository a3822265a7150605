"""Report-side measures as the papers define them, as pure functions over pandas tables.

- Generalization at matched training loss (CoAtNet §2.2): "if two models have the same training loss, the one
  with higher evaluation accuracy generalizes better". Each run's step-level curve of clean train loss against
  eval accuracy is read at a ladder of train-loss levels; candidates are compared at the lowest level every
  compared run reached. A run that never reaches a level is censored there: shown, never credited.
- Capacity (CoAtNet §2.2, JFT curves that cross): the final ranking on abundant data, and whether it held over
  the last third of the steps; curves that still cross make the comparison provisional.
- Optimizability (ViT_C paper §4): the EDF of Δ top-1 error from the best run of the same model *and*
  optimizer (stability alone), the AdamW − SGD gap between best runs as a separate measure, and a warning
  when a model's best lr or weight decay is the extreme sample of its range (the optimum may lie outside).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from coatsearch.analysis.measure_results import EdfRow, EdgeWarning, LevelReading, Reading
from coatsearch.papers.claims import EDF_K
from coatsearch.training.point import Curve
from coatsearch.vocab.specs import DEFAULT_LEVELS

_LEVEL_COLUMNS = LevelReading.COLUMNS
TINY_LOSS = 1e-12  # losses are floored here before taking logs
MAX_SPAN = 3.0  # a reading is censored when its two measured points differ more than this factor in train loss
FROM_INIT = "bracket starts at the untrained model (step 0)"
WIDE = f"bracket wider than {MAX_SPAN:g}x in train loss"


# ---------------------------------------------------------------------------------------------- readings


def crossing(step: Any, loss: Any, acc: Any, level: float, phase: Any = None) -> Reading:
    """A run's reading at `level`: between the last point above it and the first at or below it, step, eval acc
    and lr phase interpolated linearly in log loss (the ladder is geometric).

    Censored, never interpolated: a level the run never reaches; a bracket that starts at the untrained model
    (step 0, or a run whose first point is already at or below the level); a bracket whose two points differ
    more than MAX_SPAN in train loss.
    """
    step, loss, acc = (np.asarray(v, dtype=float) for v in (step, loss, acc))
    phase = np.full(len(step), math.nan) if phase is None else np.asarray(phase, dtype=float)
    hit = np.flatnonzero(loss <= level)
    if not len(hit):
        return Reading()
    j = int(hit[0])
    if j == 0 or step[j - 1] <= 0:
        return Reading(reached=True, why=FROM_INIT)
    span = loss[j - 1] / max(loss[j], TINY_LOSS)
    if span > MAX_SPAN:
        return Reading(reached=True, why=f"{WIDE} ({span:.2f}x)")
    hi, lo = math.log(loss[j - 1]), math.log(max(loss[j], TINY_LOSS))
    t = (hi - math.log(level)) / (hi - lo)
    s_, a_, p_ = (float(v[j - 1] + t * (v[j] - v[j - 1])) for v in (step, acc, phase))
    return Reading(s_, a_, p_, reached=True, why="")


def at_levels(run: int, candidate: str, seed: int | None, curve: Curve,
              levels: Iterable[float] = DEFAULT_LEVELS) -> tuple[LevelReading, ...]:  # fmt: skip
    """One run's reading at each train-loss level, its curve's points taken in step order."""
    order = np.argsort(np.asarray(curve.step, dtype=float), kind="stable")
    step, loss, acc = (np.asarray(v, dtype=float)[order] for v in (curve.step, curve.train_loss, curve.eval_acc))
    phase = np.asarray(curve.lr_phase, dtype=float)[order] if curve.lr_phase else None
    return tuple(LevelReading(run, candidate, seed, float(lv), crossing(step, loss, acc, lv, phase)) for lv in levels)


def level_frame(readings: Iterable[LevelReading]) -> pd.DataFrame:
    """Readings as a table (_LEVEL_COLUMNS, one row each) for the level rules below; censored rows have NaN step,
    acc and phase."""
    return pd.DataFrame([r.to_json() for r in readings], columns=list(_LEVEL_COLUMNS))


def _among(matched: pd.DataFrame, candidates: Iterable[str] | None) -> pd.DataFrame:
    return matched if candidates is None else matched[matched["candidate"].isin(list(candidates))]


def common_level(matched: pd.DataFrame, candidates: Iterable[str] | None = None) -> float | None:
    """The lowest level that every run of every compared candidate reached; None when there is none.

    A run counts as reaching a level even where its reading there is censored by its bracket (it is then left
    out of the comparison at that level, and the report counts it as censored there).
    """
    names = list(dict.fromkeys(matched["candidate"])) if candidates is None else list(candidates)
    m = _among(matched, names)
    if m.empty or set(names) - set(m["candidate"]):
        return None
    missed = ~m["reached"].astype(bool) if "reached" in m else m["censored"].astype(bool)
    reached = missed.groupby(m["level"]).apply(lambda c: not c.any())
    return float(reached[reached].index.min()) if reached.any() else None


def lowest_reached(matched: pd.DataFrame, every_run: bool = True) -> pd.Series:
    """Per candidate, the lowest level all its runs reached (any of its runs: every_run=False), read or censored
    by its bracket; NaN for none."""
    names = list(dict.fromkeys(matched["candidate"]))
    missed = ~matched["reached"].astype(bool) if "reached" in matched else matched["censored"].astype(bool)
    ok = ~missed.groupby([matched["candidate"], matched["level"]]).agg("any" if every_run else "all").astype(bool)
    return ok[ok].reset_index().groupby("candidate")["level"].min().reindex(names)


def matched_table(matched: pd.DataFrame, candidates: Iterable[str] | None = None) -> tuple[float | None, pd.DataFrame]:
    """(common level, per-candidate table): eval acc mean/sd in % at that level, runs, and how low runs got.

    `lowest_level` is the lowest level all of a candidate's runs reached, `lowest_any` the lowest any run
    reached; below them its runs are censored. Without a common level the accuracy columns are NaN.
    """
    m = _among(matched, candidates)
    level = common_level(m, candidates)
    names = list(dict.fromkeys(m["candidate"])) if candidates is None else list(candidates)
    grouped = (m[m["level"] == level] if level is not None else m.iloc[:0]).groupby("candidate")["eval_acc"]
    table = pd.DataFrame(
        {
            "eval_acc": grouped.mean().mul(100),
            "sd": grouped.std().mul(100),
            "runs": m.groupby("candidate")["run"].nunique(),
            "lowest_level": lowest_reached(m),
            "lowest_any": lowest_reached(m, every_run=False),
        }
    ).reindex(names)
    return level, table.rename_axis("candidate").reset_index()


def paired_at(matched: pd.DataFrame, level: float, candidates: Iterable[str] | None = None) -> pd.DataFrame:
    """Eval accuracy (fraction) at `level`, seeds × candidates, only seeds where every candidate has a value."""
    m = _among(matched, candidates)
    wide = m[m["level"] == level].pivot_table(index="seed", columns="candidate", values="eval_acc", aggfunc="mean")
    names = list(dict.fromkeys(m["candidate"])) if candidates is None else list(candidates)
    return wide.reindex(columns=names).dropna()


# ---------------------------------------------------------------------------------------------- capacity


@dataclass(frozen=True)
class Ranking:
    """A capacity ranking at the end of training and whether it held over the last part of the steps."""

    order: tuple[str, ...]  # best first, at the final common step
    stable: bool  # every pair kept its order over the tail
    crossings: tuple[tuple[str, str, float], ...]  # (ahead at the end, behind at the end, last step reversed)
    steps: tuple[float, ...]  # the tail steps compared
    note: str  # why the ranking is provisional ("" when stable)


def ranking_stability(
    curves: pd.DataFrame,
    metric: str = "eval_acc",
    higher: bool = True,
    tail: float = 1 / 3,
    candidates: Iterable[str] | None = None,
) -> Ranking:
    """Rank candidates by their mean curve (over runs) of `metric` and check the order over the last `tail`.

    Steps run to the last step every candidate has; mean curves are interpolated onto the union of their
    steps in [(1 - tail) × last, last]. Ties are not crossings.
    """
    names = list(dict.fromkeys(curves["candidate"])) if candidates is None else list(candidates)
    mean = curves.dropna(subset=[metric]).groupby(["candidate", "step"])[metric].mean()
    have = set(mean.index.get_level_values(0))
    if not names or set(names) - have:
        return Ranking(tuple(n for n in names if n in have), False, (), (), "a candidate has no curve")
    end = min(mean[c].index.max() for c in names)
    start = end - tail * end - 1e-9 * end  # a hair early, so that float rounding keeps the step at 2/3
    grid = np.array(sorted({s for s in curves["step"] if start <= s <= end}), dtype=float)
    sign = 1.0 if higher else -1.0
    value = {c: sign * np.interp(grid, mean[c].index.to_numpy(float), mean[c].to_numpy(float)) for c in names}
    order = tuple(sorted(names, key=lambda c: -value[c][-1]))
    crossings = []
    for a, b in combinations(order, 2):  # a ends ahead of (or level with) b
        behind = np.flatnonzero(value[a] - value[b] < 0)
        if len(behind) and value[a][-1] > value[b][-1]:
            crossings.append((a, b, float(grid[behind[-1]])))
    note = "" if not crossings else "curves still cross in the last third of the steps"
    if len(grid) < 2:
        note = "fewer than 2 curve points in the last third of the steps"
    return Ranking(order, not note, tuple(crossings), tuple(grid.tolist()), note)


# ---------------------------------------------------------------------------------------------- optimizability


def edf(runs: pd.DataFrame, k: float = EDF_K) -> tuple[EdfRow, ...]:
    """Per candidate and optimizer: sorted Δ error (points) from the best run of the same model and optimizer.

    The best run is chosen on the validation images (`sel`, runs_frame) and read on the test images, so Δ can be
    negative; without validation images `sel` is `acc` (the old rule). Rows carry delta, the cumulative fraction,
    n, the share within k points, and the best run's accuracy (%).
    """
    picked = runs.loc[runs.groupby(["model_label", "optimizer"])["sel"].idxmax()]
    best = picked.set_index(["model_label", "optimizer"])["acc"]
    many = runs["optimizer"].nunique() > 1
    out = []
    for (cand, opt), group in runs.groupby(["candidate", "optimizer"], sort=False):
        label = group["model_label"].iloc[0]
        top = float(best[(label, opt)])
        delta = sorted(float(top - a) for a in group["acc"])
        n = len(delta)
        name = f"{cand} ({opt})" if many and opt not in cand.lower() else cand
        out.append(EdfRow(name, cand, label, opt, top, tuple(delta), tuple((i + 1) / n for i in range(n)), n, k,
                          sum(d <= k for d in delta) / n))  # fmt: skip
    return tuple(out)


def edge_warnings(
    runs: pd.DataFrame, dims: Iterable[str] = ("lr", "weight_decay"), min_samples: int = 3
) -> tuple[EdgeWarning, ...]:
    """Per model and optimizer: a warning where the best run's lr or wd is the lowest or highest value sampled.

    Only groups with at least `min_samples` distinct values of a dimension are checked. Each row has
    model_label, optimizer, dim, value, edge ("low" | "high"), the sampled range and a one-line message.
    """
    out = []
    for (label, opt), group in runs.groupby(["model_label", "optimizer"], sort=False):
        best = group.loc[group["sel"].idxmax()]  # chosen on the validation images
        for dim in dims:
            values = group[dim].dropna()
            if values.nunique() < min_samples or pd.isna(best[dim]):
                continue
            lo, hi = float(values.min()), float(values.max())
            edge = "low" if best[dim] == lo else "high" if best[dim] == hi else None
            if edge is None:
                continue
            word = "lowest" if edge == "low" else "highest"
            msg = (
                f"{label} ({opt}): the best run's {dim} {best[dim]:.3g} is the {word} of {values.nunique()} "
                f"sampled values ({lo:.3g}–{hi:.3g}); the optimum may lie outside the range"
            )
            out.append(EdgeWarning(label, opt, dim, float(best[dim]), edge, lo, hi, msg))
    return tuple(out)
