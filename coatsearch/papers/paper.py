"""The paper measures of a study, from the records: matched-loss generalization, capacity stability, transfer,
paired data, edge warnings and the claims a space marks as untestable at its scale (tables only, no text).

`readings` gives each run's eval accuracy at the common training-loss level as a derived report value
(`generalization.matched_acc`, the generalization score's `derived` metric): the records are never changed, and
the candidate table, rankings and verdicts treat the value like any measured score.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from coatsearch.analysis.measure_results import (
    CapacityReading,
    LevelReading,
    MatchedLoss,
    MatchedPoints,
    MatchedReading,
    Pairing,
    Reading,
    RecipeCurves,
    RunSteps,
    TransferStops,
    UntestedClaim,
)
from coatsearch.analysis.table_rows import CandidateRow
from coatsearch.analysis.tables import Records
from coatsearch.papers import categories as K
from coatsearch.papers import claims as C
from coatsearch.papers import measures as M
from coatsearch.papers.claim_results import ClaimVerdict
from coatsearch.scores import SCORES, derived
from coatsearch.scores.base import points
from coatsearch.storage.record import TrialRecord

MATCHED_KEY = next(k for k in derived() if k.endswith(".matched_acc"))  # the generalization score's derived metric
GEN = C.GEN_SCORE  # the score whose step curves claim (a) is read off
NOT_TESTED = K.NOT_TESTED  # the category of a claim a space marks untestable


def _levels_of(space: dict) -> tuple[float, ...]:
    """The train-loss ladder of the space (`scores.generalization.loss_levels`), else the default."""
    gen = (space.get("scores") or {}).get(GEN) or {}
    return tuple(sorted(gen.get("loss_levels") or M.DEFAULT_LEVELS, reverse=True))


def fit_of(space: Mapping[str, Any]) -> float:
    """Claim (a)'s fit level for the space: its `scores.generalization.fit_loss`, else claims.FIT_LOSS (nats)."""
    gen = (space.get("scores") or {}).get(GEN) or {}
    return float(gen.get("fit_loss") or C.FIT_LOSS)


def _key_candidates(have: list[str], done: Records) -> list[str]:
    """Claim (a)'s key candidates among those with curves (`have`): a chain name as candidate, or as the model label
    of one."""
    names = C.CHAIN_CLAIMS[0].chain.split()[0::2]
    labels = {r.candidate: r.run.model.label if r.run.model else None for r in done}
    out = [c for c in have if c in names]
    for n in names:
        same = [c for c in have if labels.get(c) == n and c not in out]
        out += same if n not in out and len(same) == 1 else []
    return out


def must_learn(key: list[str]) -> list[str]:
    """Claim (a)'s key candidates that gate its regime: the paper's top group (claims.top_group), else the first."""
    top = C.top_group(C.CHAIN_CLAIMS[0].chain)
    return [c for c in key if c in top] or key[:1]


def _unfit(at: pd.DataFrame, key: list[str], fit: float) -> dict[str, str]:
    """Key candidates of claim (a) with a run that never fits to `fit` nats, each with how low all its runs got."""
    lowest = M.lowest_reached(at[at["candidate"].isin(key)])
    out = {}
    for c in key:
        low = lowest.get(c)
        if pd.isna(low) or low > fit * (1 + 1e-9):
            out[c] = f"{c} " + ("never reached the ladder" if pd.isna(low) else f"never fit below {low:.3g} nats")
    return out


def ladder_readings(space: dict, done: Records) -> tuple[LevelReading, ...] | None:
    """Every complete run's reading at each level of the space's ladder, off its generalization step curve, in run
    order; None when no run has one."""
    ladder, runs = _levels_of(space), sorted(done, key=lambda r: r.number)
    curves = [(r, c) for r in runs if (c := r.run.curve(GEN)) is not None and c.step]
    return tuple(x for r, c in curves for x in M.at_levels(r.number, r.candidate, r.seed, c, ladder)) or None


def matched(space: dict, done: Records) -> MatchedLoss:
    """Generalization at matched training loss: the ladder readings, claim (a)'s level and the per-candidate table.

    The common level is the lowest ladder level at or below the fit level (fit_of: the profile's `fit_loss`, else
    FIT_LOSS) that every run of every key candidate of
    claim (a) reached (any candidate that reached the ladder, when the study has no key candidate). A model that
    must learn (must_learn) with a run that never fits that low is named in `out_of_regime`; another key candidate
    that never fits is named in `censored` and left unread, never silently dropped.
    """
    readings = ladder_readings(space, done)
    if readings is None:
        return MatchedLoss(None, None, (), (), (), (), ())
    ladder, at = _levels_of(space), M.level_frame(readings)
    lowest = M.lowest_reached(at)
    reached = [c for c in lowest.index if not pd.isna(lowest[c])]
    runs = {x.run for x in readings}
    key = _key_candidates(list(dict.fromkeys(r.candidate for r in done if r.number in runs)), done)
    fit = fit_of(space)
    unfit = _unfit(at, key, fit)
    must = must_learn(key)
    fits = [c for c in key or reached if c in reached and c not in unfit]
    rule = (f"every run of a model that must learn must reach {fit:g} nats, where train accuracy exceeds "
            "eval accuracy")  # fmt: skip
    low = at[at["level"] <= fit * (1 + 1e-9)]
    level = M.common_level(low, fits) if fits else None
    table = _table(at, level, lowest)
    censored = at[at["level"] == level].groupby("candidate")["censored"].sum() if level is not None else None
    rows = []
    for r in table.to_dict("records"):
        r["censored_runs"] = int(censored.get(r["candidate"], 0)) if censored is not None else None
        row: dict[str, Any] = {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in r.items()}
        rows.append(MatchedReading(**row))
    never = [c for c in lowest.index if c not in reached]
    notes, too_few = _censored_notes(at, level, [c for c in fits if c in must])
    gate = [why for c, why in unfit.items() if c in must]
    notes += [f"{why}: not read at the common level, so its relations are untested (the paper predicts it to "
              "generalize worse: it does not gate the claim)" for c, why in unfit.items() if c not in must]  # fmt: skip
    out = [*gate, rule] if gate else too_few
    return MatchedLoss(readings, level, tuple(r for r in rows if r.candidate in reached), tuple(never),
                       tuple(ladder), tuple(key), tuple(out), tuple(notes))  # fmt: skip


def _censored_notes(at: pd.DataFrame, level: float | None, key: list[str]) -> tuple[list[str], list[str]]:
    """(one line per run whose reading at `level` is censored though it got there, key candidates left with
    fewer than 2 readings there: claim (a) cannot test them)."""
    if level is None:
        return [], []
    here = at[(at["level"] == level) & at["reached"].astype(bool)]
    cut = here[here["censored"]]
    notes = [f"{r.candidate} seed {r.seed}: {r.why}" for r in cut.itertuples()]
    too_few = []
    for c in key:
        mine = here[here["candidate"] == c]
        if mine["censored"].any() and (~mine["censored"]).sum() < 2:
            whys = "; ".join(dict.fromkeys(w.split(" (")[0] for w in mine.loc[mine["censored"], "why"]))
            too_few.append(f"{c}: {int(mine['censored'].sum())} of {len(mine)} readings at {level:g} nats censored "
                           f"({whys})")  # fmt: skip
    return notes, too_few


def _table(at: pd.DataFrame, level: float | None, lowest: pd.Series) -> pd.DataFrame:
    """Per candidate: eval acc mean/sd (%) at `level` over its uncensored readings, runs, how low runs got, and
    the range of lr phase (lr / peak lr) at those readings."""
    here = at[at["level"] == level] if level is not None else at.iloc[:0]
    grouped, phase = here.groupby("candidate")["eval_acc"], here.groupby("candidate")["lr_phase"]
    table = pd.DataFrame({"eval_acc": grouped.mean().mul(100), "sd": grouped.std().mul(100),
                          "runs": at.groupby("candidate")["run"].nunique(), "lowest_level": lowest,
                          "lowest_any": M.lowest_reached(at, every_run=False), "lr_phase_min": phase.min(),
                          "lr_phase_max": phase.max()}).reindex(lowest.index)  # fmt: skip
    return table.rename_axis("candidate").reset_index()


def readings(found: tuple[LevelReading, ...] | None, level: float | None) -> Mapping[int, Mapping[str, Reading]] | None:
    """Trial number -> {MATCHED_KEY: its Reading at the common level} for the runs that reached it uncensored.

    None without step curves (older records: nothing to read); {} without a common level. A derived value, never
    written into a record; a recorded one is never trusted where curves exist."""
    if found is None:
        return None
    return {x.run: {MATCHED_KEY: x.reading} for x in found if x.level == level and not x.reading.censored}


def capacity(curves: pd.DataFrame | None, done: Records) -> CapacityReading | None:
    """Capacity ranking by final eval accuracy and whether it held over the last third of the steps."""
    if curves is None or curves.empty:
        return None
    r = M.ranking_stability(curves)
    word = "ranking held over the last third of the steps" if r.stable else "provisional"
    facts = {c: {k: tuple(sorted({r.run.value(f"{C.CAPACITY_SCORE}.{k}") for r in done if r.candidate == c} - {None}))
                 for k in ("images", "steps")} for c in r.order}  # fmt: skip
    return CapacityReading(r.order, r.stable, r.crossings, r.note, word, facts)


def transfer(rows: Sequence[CandidateRow], done: Records) -> tuple[TransferStops, ...]:
    """Per candidate: how its pretraining runs stopped ("target" / "cap" counts) and the fine-tune step budget."""
    gain, stopped, steps = (SCORES[C.TRANSFER_SCORE].role(k) for k in ("gain", "stopped", "finetune_steps"))
    out = []
    for row in rows:
        runs = [r for r in done if r.candidate == row.candidate and gain in r.run.keys()]
        if not runs:
            continue
        stops = [r.run.value(stopped) for r in runs]
        out.append(TransferStops(row.candidate, stops.count("target"), stops.count("cap"),
                                 tuple(sorted({r.run.value(steps) for r in runs}))))  # fmt: skip
    return tuple(out)


def pairing(done: Records) -> tuple[Pairing, ...]:
    """Per score: how many distinct eval sets the complete runs saw (1 = one per study) and whether, for every seed,
    all candidates trained on the same subset and read the same eval images (from the recorded fingerprints)."""
    scores = sorted({k.rsplit(".", 1)[0] for r in done for k in r.run.keys() if k.endswith(".eval_fingerprint")})
    out = []
    for score in scores:
        ev, tr = f"{score}.eval_fingerprint", f"{score}.train_fingerprint"
        evals = {v for r in done if (v := r.run.value(ev)) is not None}
        by_seed: dict = {}
        eval_by_seed: dict = {}
        for r in done:
            if (v := r.run.value(tr)) is not None:
                by_seed.setdefault(r.seed, set()).add(v)
            if (v := r.run.value(ev)) is not None:
                eval_by_seed.setdefault(r.seed, set()).add(v)
        out.append(Pairing(score, len(evals), len(by_seed), all(len(v) == 1 for v in by_seed.values()),
                           all(len(v) == 1 for v in eval_by_seed.values())))  # fmt: skip
    return tuple(out)


def untestable(space: dict, claims: list[ClaimVerdict]) -> tuple[list[ClaimVerdict], tuple[UntestedClaim, ...]]:
    """(claims judged, claims the space marks untestable at its scale with the reason): never a verdict for those."""
    marked = space.get("untestable") or {}
    judged = [c for c in claims if c.id not in marked]
    titles = {c.id: c.title for c in (*C.CHAIN_CLAIMS, C.REL_CLAIM, C.STEM_CLAIM)}
    untested = tuple(UntestedClaim(k, titles.get(k, ""), v, NOT_TESTED) for k, v in marked.items())
    return judged, untested


def claim_notes(claims: list[ClaimVerdict], cap: CapacityReading | None) -> list[ClaimVerdict]:
    """Claims with a note on claim (b) when the capacity ranking is provisional (its curves still cross)."""
    if cap is None or cap.stable:
        return claims
    note = f"capacity ranking provisional: {cap.note}"
    return [dataclasses.replace(c, notes=(*c.notes, note)) if c.id == "b" else c for c in claims]


def _recipe(record: TrialRecord) -> str:
    """A run's optimizer, lr and weight decay, as a curve label's suffix."""
    o = record.run.optimizer
    lr, wd = (o.lr, o.weight_decay) if o else (None, None)
    nan = float("nan")
    return f"{record.run.optimizer_name}, lr {nan if lr is None else lr:.3g}, wd {nan if wd is None else wd:.3g}"


def mean_curves(space: dict, f: pd.DataFrame, done: Records) -> tuple[RecipeCurves, ...]:
    """Per candidate and recipe (optimizer, lr, wd): each run's clean train loss and eval accuracy (%) by step.

    Runs are kept apart, never averaged: runs that stop at different steps (a loss target) or are measured at
    different steps (dense points) would make a mean over a shrinking set of runs. A candidate whose runs differ
    in recipe gets one entry per recipe, labelled with it.
    """
    if f.empty:
        return ()
    recipe = {r.number: _recipe(r) for r in done}
    f = f.assign(recipe=f["run"].map(recipe)).sort_values(["run", "step"])
    names = [
        c for c in dict.fromkeys([*(space.get("candidates") or []), *f["candidate"]]) if c in f["candidate"].values
    ]
    out = []
    for c in names:
        mine = f[f["candidate"] == c]
        recipes = list(dict.fromkeys(mine["recipe"]))
        for rec in recipes:
            runs = tuple(RunSteps(int(n), tuple(g["step"].tolist()), tuple(g["train_loss"].tolist()),
                                  tuple(points(g["eval_acc"]).tolist()))
                         for n, g in mine[mine["recipe"] == rec].groupby("run"))  # fmt: skip
            out.append(RecipeCurves(c, c if len(recipes) == 1 else f"{c} ({rec})", runs))
    return tuple(out)


def matched_points(gen: MatchedLoss, curves: pd.DataFrame) -> MatchedPoints | None:
    """The matched-loss reading's points (what matched_loss.png draws): every run's curve points (`curves`,
    run_frames.curve_frame of the generalization score), the ladder readings and the common level; None without
    step curves."""
    if gen.readings is None:
        return None
    return MatchedPoints(tuple(curves.to_dict("records")), tuple(x.to_json() for x in gen.readings), gen.level)
