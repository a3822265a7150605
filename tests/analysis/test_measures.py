"""Tests for coatsearch.papers.measures on fabricated curves: matched-loss reading, censoring, capacity, EDF."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from coatsearch.analysis import run_frames as RF
from coatsearch.papers import measures as M
from coatsearch.papers import optim, paper
from coatsearch.report import plots_measures as PM
from tests.report_records import record, with_state


def run_record(number: int, candidate: str, seed: int, losses, accs, score="generalization", **kw):
    """A complete record whose `curves.<score>` has the given train losses and eval accuracies, 10 steps apart."""
    steps = [10 * i for i in range(len(losses))]
    c = {"step": steps, "train_loss": list(losses), "train_acc": [1 - v / 3 for v in losses],
         "eval_loss": list(losses), "eval_acc": list(accs), "probe": 100}  # fmt: skip
    return record(number, candidate, seed, {f"curves.{score}": c}, **kw)


# Fits well, generalizes well / fits well, generalizes worse / never fits below 0.3 nats (a low train-eval gap).
# Points are close in loss (at most 2.7x apart) after the first one above 1 nat, so readings are bracketed.
FIT = [2.3, 1.5, 0.9, 0.5, 0.25, 0.1, 0.04, 0.015, 0.008]
RECORDS = [
    run_record(0, "C-C-C-C", 0, FIT, [0.1, 0.5, 0.6, 0.7, 0.75, 0.8, 0.83, 0.85, 0.86]),
    run_record(1, "C-C-C-C", 1, FIT, [0.1, 0.5, 0.62, 0.72, 0.77, 0.82, 0.84, 0.86, 0.87]),
    run_record(2, "C-T-T-T", 0, FIT, [0.1, 0.45, 0.55, 0.62, 0.68, 0.70, 0.72, 0.74, 0.75]),
    run_record(3, "C-T-T-T", 1, [2.3, 1.5, 0.9, 0.45, 0.2, 0.09, 0.05], [0.1, 0.45, 0.56, 0.63, 0.7, 0.72, 0.76]),
    run_record(4, "ViT_REL", 0, [2.3, 1.2, 0.6, 0.3], [0.1, 0.4, 0.50, 0.52]),
    run_record(5, "ViT_REL", 1, [2.3, 1.1, 0.5, 0.45], [0.1, 0.4, 0.51, 0.53]),
    with_state(run_record(6, "ViT_REL", 2, FIT, [0.9] * 9), "FAIL"),  # not complete: ignored
]


def at_levels(records) -> pd.DataFrame:
    """The complete runs' readings at the default ladder (paper.ladder_readings), as the level rules read them."""
    found = paper.ladder_readings({}, [r for r in records if r.state == "COMPLETE"])
    return M.level_frame(found or ())


def test_curve_frame_reads_step_curves_only():
    legacy = record(9, "C-C-C-T", 0, {"curves.generalization": {"train_loss": [1.0], "eval_acc": [0.5]}})
    f = RF.curve_frame([*RECORDS, legacy], "generalization")
    assert list(f.columns) == list(RF.CURVE_COLUMNS) and len(f) == 3 * 9 + 7 + 2 * 4
    assert set(f["candidate"]) == {"C-C-C-C", "C-T-T-T", "ViT_REL"} and f["step"].max() == 80
    assert f["lr_phase"].isna().all()  # curves recorded before the lr phase was
    assert RF.curve_frame(RECORDS, "capacity").empty


def test_crossing_interpolates_in_log_loss_between_measured_points_and_censors():
    # halfway between 1.0 and 0.5 in log loss is 0.707: step, accuracy and lr phase halfway too
    r = M.crossing([0, 10, 20], [2.0, 1.0, 0.5], [0.1, 0.5, 0.7], 0.5**0.5, [0.0, 1.0, 0.8])
    assert (r.step, r.eval_acc, r.lr_phase) == pytest.approx((15.0, 0.6, 0.9)) and not r.censored
    assert M.crossing([0, 10, 20], [2.0, 1.0, 0.5], [0.1, 0.5, 0.7], 0.5).eval_acc == pytest.approx(0.7)
    never = M.crossing([0, 10, 20], [2.0, 0.5, 0.3], [0.1, 0.6, 0.8], 0.01)
    assert never.censored and not never.reached and math.isnan(never.eval_acc)
    # the first passage counts, even when the loss later bounces back above the level
    assert M.crossing([0, 10, 20, 30, 40], [2.0, 0.9, 0.4, 0.9, 0.2], [0.1, 0.5, 0.7, 0.5, 0.8], 0.5).step < 20


def test_at_levels_censoring_and_lowest_common_level():
    matched = at_levels(RECORDS)
    assert len(matched) == 6 * len(M.DEFAULT_LEVELS) and M.DEFAULT_LEVELS[0] == 1.0
    assert M.DEFAULT_LEVELS[-1] == pytest.approx(0.01)
    vit = matched[(matched["candidate"] == "ViT_REL") & (matched["level"] < 0.3)]
    assert vit["censored"].all() and vit["eval_acc"].isna().all()  # shown as censored, never credited
    assert M.common_level(matched) == pytest.approx(M.DEFAULT_LEVELS[1])  # 0.562: ViT_REL seed 1 stops at 0.45
    assert M.common_level(matched, ["C-C-C-C", "C-T-T-T"]) == pytest.approx(
        M.DEFAULT_LEVELS[5]
    )  # 0.056: a run stops at 0.05
    assert M.common_level(matched, ["C-C-C-C"]) == pytest.approx(0.01)
    assert M.common_level(matched, ["C-C-C-C", "nope"]) is None
    never = at_levels([run_record(0, "A", 0, [2.3, 1.5], [0.1, 0.2])])
    assert M.common_level(never) is None
    legacy = record(9, "C-C-C-T", 0, {"curves.generalization": {"train_loss": [1.0], "eval_acc": [0.5]}})
    assert paper.ladder_readings({}, [legacy]) is None  # a curve without steps has no readings


def test_matched_table_and_pairs():
    matched = at_levels(RECORDS)
    level, table = M.matched_table(matched)
    assert level == pytest.approx(M.DEFAULT_LEVELS[1])
    t = table.set_index("candidate")
    assert list(table["candidate"]) == ["C-C-C-C", "C-T-T-T", "ViT_REL"]
    assert t.loc["C-C-C-C", "eval_acc"] > t.loc["C-T-T-T", "eval_acc"] > t.loc["ViT_REL", "eval_acc"]
    assert t.loc["ViT_REL", "lowest_level"] == pytest.approx(level) and t.loc["C-C-C-C", "lowest_level"] == 0.01
    assert t.loc["ViT_REL", "lowest_any"] == pytest.approx(M.DEFAULT_LEVELS[2])  # 0.316: seed 0 reached 0.3
    assert (t["runs"] == 2).all()
    # at 0.562 nats, C-C-C-C seed 0: log-interpolated between its points (0.9, 0.6) and (0.5, 0.7)
    t_frac = math.log(0.9 / level) / math.log(0.9 / 0.5)
    pairs = M.paired_at(matched, level)
    assert pairs.loc[0, "C-C-C-C"] == pytest.approx(0.6 + 0.1 * t_frac)
    assert list(pairs.columns) == ["C-C-C-C", "C-T-T-T", "ViT_REL"] and list(pairs.index) == [0, 1]
    none_level, none_table = M.matched_table(matched[matched["level"] < 0.5])
    assert none_level is None and none_table["eval_acc"].isna().all() and len(none_table) == 3


def test_the_derived_reading_is_each_runs_reading_at_the_common_level():
    done = [r for r in RECORDS if r.state == "COMPLETE"]
    found = paper.ladder_readings({}, done)
    assert found is not None and len(found) == 6 * len(M.DEFAULT_LEVELS)
    assert [x.run for x in found[:: len(M.DEFAULT_LEVELS)]] == [0, 1, 2, 3, 4, 5]  # in run order, the ladder each
    level = M.common_level(M.level_frame(found))
    derived = paper.readings(found, level)
    assert derived is not None and sorted(derived) == [0, 1, 2, 3, 4, 5]
    by_run = {x.run: x.reading for x in found if x.level == level}
    assert all(d[paper.MATCHED_KEY] == by_run[n] and not by_run[n].censored for n, d in derived.items())
    assert paper.readings(found, None) == {} and paper.readings(None, level) is None


def curves_of(values: dict[str, list[float]], seeds: int = 1, noise: float = 0.0) -> pd.DataFrame:
    """A curve frame: each candidate's eval accuracy at steps 0, 10, 20, ... (the same on every seed ± noise)."""
    rows = []
    for c, accs in values.items():
        for s in range(seeds):
            for i, a in enumerate(accs):
                rows.append({"run": f"{c}{s}", "candidate": c, "seed": s, "step": 10 * i, "train_loss": 1.0,
                             "train_acc": a, "eval_loss": 1.0, "eval_acc": a + noise * (s - 0.5)})  # fmt: skip
    return pd.DataFrame(rows)


def test_ranking_stable_or_provisional():
    steady = M.ranking_stability(curves_of({"A": [0.1, 0.5, 0.6, 0.7, 0.8, 0.9], "B": [0.1, 0.4, 0.5, 0.6, 0.7, 0.8]}))
    assert steady.order == ("A", "B") and steady.stable and steady.note == "" and steady.steps == (40.0, 50.0)
    # JFT-like: B starts worse and catches up inside the last third
    late = M.ranking_stability(
        curves_of({"A": [0.1, 0.5, 0.6, 0.7, 0.75, 0.78, 0.8], "B": [0.1, 0.3, 0.4, 0.6, 0.74, 0.8, 0.82]}, seeds=2)
    )
    assert late.order == ("B", "A") and not late.stable and late.crossings == (("B", "A", 40.0),)
    assert "cross" in late.note
    # a crossing before the last third does not count
    early = M.ranking_stability(curves_of({"A": [0.1, 0.6, 0.6, 0.7, 0.8, 0.9], "B": [0.1, 0.3, 0.7, 0.8, 0.9, 0.95]}))
    assert early.stable and early.order == ("B", "A")
    loss = M.ranking_stability(
        curves_of({"A": [2.0, 1.0, 0.5, 0.3], "B": [2.0, 1.2, 0.6, 0.4]}), "eval_acc", higher=False
    )
    assert loss.order == ("A", "B")
    short = M.ranking_stability(curves_of({"A": [0.1, 0.5], "B": [0.1, 0.4]}), tail=0.1)
    assert not short.stable and "fewer than 2" in short.note
    missing = M.ranking_stability(curves_of({"A": [0.1, 0.5]}), candidates=["A", "Z"])
    assert not missing.stable and missing.order == ("A",)


def test_ranking_aligns_runs_of_different_lengths():
    f = pd.concat([curves_of({"A": [0.1, 0.5, 0.6, 0.7]}), curves_of({"B": [0.1, 0.2, 0.3, 0.4, 0.95, 0.99]})])
    r = M.ranking_stability(f)  # B's extra steps beyond A's end (30) are not compared
    assert r.order == ("A", "B") and r.stable and max(r.steps) == 30.0


def vit_runs() -> list[dict]:
    """ViT_P: AdamW best 85, SGD best 75, both spread 4 points per sample; ViT_C: 85/84.5, tight."""
    recs = []
    for label, opt, top, step in (("ViT_P", "adamw", 0.85, 0.04), ("ViT_P", "sgd", 0.75, 0.04),
                                  ("ViT_C", "adamw", 0.85, 0.005), ("ViT_C", "sgd", 0.845, 0.005)):  # fmt: skip
        for i, lr in enumerate((1e-3, 2e-3, 4e-3, 8e-3)):
            acc = {"accuracy.eval_acc": top - step * i}
            kw = {"label": label, "optimizer": opt, "lr": lr, "wd": 0.05 * (i + 1), "sample": i}
            recs.append(record(len(recs), f"{label}-{opt}", 0, acc, **kw))
    return recs


def test_edf_is_per_model_and_optimizer():
    runs = RF.runs_frame(vit_runs(), "accuracy.eval_acc")
    assert len(runs) == 16 and runs["acc"].max() == pytest.approx(85.0)
    curves = {(e.model_label, e.optimizer): e for e in M.edf(runs, k=2.0)}
    p_sgd = curves[("ViT_P", "sgd")]
    assert p_sgd.delta == pytest.approx([0, 4, 8, 12]) and p_sgd.best == pytest.approx(75.0)  # own best
    assert p_sgd.within_k == pytest.approx(0.25) and p_sgd.fraction == pytest.approx([0.25, 0.5, 0.75, 1])
    assert curves[("ViT_C", "sgd")].within_k == 1.0 and curves[("ViT_C", "sgd")].delta[0] == 0
    assert all(e.delta[0] == 0 for e in curves.values())  # every curve starts at its own best run
    gaps = {g.model_label: g for g in optim.optimizer_gap(runs)}  # the one optimizer gap (report.optim)
    assert gaps["ViT_P"].gap == pytest.approx(10.0) and gaps["ViT_C"].gap == pytest.approx(0.5)
    assert gaps["ViT_P"].n_sgd == 4
    adamw_only = {g.model_label: g for g in optim.optimizer_gap(runs[runs["optimizer"] == "adamw"])}
    assert adamw_only["ViT_C"].gap is None and adamw_only["ViT_C"].n_sgd == 0


def test_edge_warnings_when_the_best_sample_is_at_the_edge():
    runs = RF.runs_frame(vit_runs(), "accuracy.eval_acc")
    warns = M.edge_warnings(runs)
    assert {(w.model_label, w.optimizer, w.dim, w.edge) for w in warns} == {
        (label, opt, dim, "low") for label in ("ViT_P", "ViT_C") for opt in ("adamw", "sgd")
        for dim in ("lr", "weight_decay")
    }  # fmt: skip
    assert "lowest of 4 sampled values" in warns[0].message
    best_mid = np.where(runs["lr"] == 2e-3, 90.0, runs["acc"])
    middle = runs.assign(acc=best_mid, sel=best_mid)  # the best run is chosen on its validation value (`sel`)
    assert not [w for w in M.edge_warnings(middle) if w.dim == "lr"]
    assert M.edge_warnings(runs.iloc[:2]) == ()  # too few samples to tell


def test_matched_loss_figure(tmp_path):
    curves = RF.curve_frame(RECORDS, "generalization")
    matched = at_levels(RECORDS)
    path = tmp_path / "matched_loss.png"
    assert PM.matched_loss(curves, matched, path, M.common_level(matched)) == "matched_loss.png"
    assert path.stat().st_size > 10_000 and path.read_bytes()[:4] == b"\x89PNG"
    fig = PM.matched_loss_figure(curves, matched, M.common_level(matched))
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.xaxis_inverted()  # loss falls to the right
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels[:3] == ["C-C-C-C", "C-T-T-T", "ViT_REL"] and "some runs censored" in labels
    censored_ends = [ln for ln in ax.lines if ln.get_marker() == "x"]
    assert len(censored_ends) == 3  # both ViT_REL runs and one C-T-T-T run never reach 0.01 nats
    assert PM.matched_loss(curves.iloc[:0], matched, tmp_path / "none.png") is None
    assert not (tmp_path / "none.png").exists()
