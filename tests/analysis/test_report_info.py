"""analysis.tables and papers.optim: trial records → plain tables (means, spreads, counts, EDF, optimizer gap)."""

from __future__ import annotations

import math

import pytest

from coatsearch.analysis import run_frames as RF
from coatsearch.analysis import tables
from coatsearch.analysis.table_rows import CandidateRow, GuardCounts, SubsetUse
from coatsearch.papers import measures as M
from coatsearch.papers import optim
from coatsearch.storage import record as R
from coatsearch.storage.record import TrialRecord
from coatsearch.training.point import Curve
from tests.report_records import AGREE, SPACE, failed, layout_records, record, vit_records, with_derived


def _row(rows: tuple[CandidateRow, ...], name: str) -> CandidateRow:
    return next(r for r in rows if r.candidate == name)


def test_stat_mean_sd_and_single_run():
    s = tables.stat([1.0, 2.0, 3.0])
    assert (s.mean, s.sd, s.n) == (2.0, 1.0, 3)
    assert s.se == pytest.approx(1 / math.sqrt(3))
    one = tables.stat([5.0, None, float("nan")])
    assert (one.mean, one.sd, one.n, one.se) == (5.0, None, 1, None)
    assert tables.stat([]) is None


def test_candidate_rows_in_space_order_with_display_units():
    rows = tables.candidate_rows(SPACE, layout_records())
    assert [r.candidate for r in rows] == list(SPACE["candidates"])
    cctt = _row(rows, "C-C-T-T")
    acc = cctt.metrics["generalization.eval_acc"]
    assert acc.n == 3 and acc.mean == pytest.approx(84.1)  # fractions shown as percent
    assert acc.sd == pytest.approx(0.1322876)  # sample sd of 83.95, 84.15, 84.2
    assert cctt.by_seed["generalization.eval_acc"] == pytest.approx({0: 83.95, 1: 84.15, 2: 84.2})
    assert cctt.metrics["capacity.train_loss"].mean == pytest.approx(0.101 + 0.001 / 3)  # losses unscaled
    assert cctt.metrics["macs"].mean == pytest.approx(12.0)  # millions
    assert "transfer.finetune_acc" not in _row(rows, "ViT_REL").metrics  # not measured → absent
    assert _row(rows, "C-C-C-C").n == 3  # the failed seed-3 trial is not a run
    assert cctt.guards["generalization"] == GuardCounts(runs=3, failed=0, not_converged=0, unchecked=0)


def test_counts_and_failure_reasons():
    recs = layout_records()
    assert tables.counts(recs) == tables.Counts(total=17, complete=15, failed=1, interrupted=1, pruned=0, running=0)
    assert list(tables.counts(recs).to_json()) == ["total", "complete", "failed", "interrupted", "pruned", "running"]
    reasons = {f.candidate: f.reason for f in tables.failures(recs)}
    assert reasons["C-C-C-C"] == "budget not met: too small"
    assert reasons["C-T-T-T"] == "interrupted (worker died); rerun resumes it"


def test_interrupted_then_rerun_names_the_completed_trial():
    recs = [failed(0, "C-T-T-T", 0, None), record(1, "C-T-T-T", 0, with_derived({"generalization.eval_acc": 0.8}))]
    recs.append(
        TrialRecord(
            2, None, recs[0].params, None, None, R.failed(R.Identity("C-T-T-T", 0, 0, "x"), None, state="PRUNED")
        )
    )
    reasons = [f.reason for f in tables.failures(recs)]
    assert reasons[0] == "interrupted (worker died); rerun completed as trial 1"
    assert reasons[1].startswith("pruned")


def test_environment_from_space_and_records():
    env = tables.environment(SPACE, layout_records())
    assert env.seeds == (0, 1, 2) and env.image_size == 32 and env.classes == 10
    assert env.hardware == (tables.Hardware("Test CPU", 2, 2, None, "cpu"),)  # the records' host "h" is not shown
    assert tables.jsonable(env)["hardware"] == [  # older records (no CPU kernels): the summary's form as before
        {"cpu": "Test CPU", "cpu_count": 2, "torch_threads": 2, "gpu": None, "device": "cpu"}
    ]
    assert env.versions[0]["optuna"] == "5"
    assert env.wall_total_s == pytest.approx(sum(10.0 + i for i in range(15)))
    assert env.subsets[0] == SubsetUse("generalization", 200, None, 3, None, (2000,))
    assert tables.jsonable(env)["subsets"][0] == {
        "score": "generalization", "per_class": 200, "classes": None, "epochs": 3, "dataset": None, "images": [2000],
    }  # fmt: skip
    assert tables.StudyEnvironment.from_json(tables.jsonable(env)).subsets == env.subsets
    assert env.counts.complete == 15
    assert list(tables.jsonable(env)) == ["study", "data", "image_size", "channels", "classes", "subsets", "seeds",
                                          "hardware", "versions", "wall_total_s", "wall_per_trial", "elapsed_s",
                                          "counts"]  # fmt: skip


def test_chance_level_per_score_and_convergence():
    space = {"input": [32, 1, 10], "scores": {"transfer": {"pretrain": {"classes": [0, 1, 2, 3, 4]},
                                                           "finetune": {"classes": [5, 6, 7, 8, 9]}}}}  # fmt: skip
    assert tables.chance(space, "generalization") == 10.0 and tables.chance(space, "transfer") == 20.0
    assert tables.chance({}, "capacity") is None
    assert tables.converged(Curve(eval_acc=(0.2, 0.5, 0.8, 0.85, 0.86, 0.855))) is True
    assert tables.converged(Curve(step=(1, 2, 3, 4, 5, 6), eval_acc=(0.2, 0.5, 0.8, 0.82, 0.84, 0.86))) is False


def test_environment_of_an_empty_study():
    env = tables.environment({}, [])
    assert env.wall_per_trial is None and env.elapsed_s is None and env.seeds == ()


def test_curves_average_runs_per_epoch():
    table = tables.curves(SPACE, layout_records(), "generalization")
    cctt = next(c for c in table if c.candidate == "C-C-T-T")
    assert cctt.epoch == (1, 2, 3, 4, 5, 6) and cctt.runs == 3
    assert cctt.eval_acc[-1] == pytest.approx(84.1)
    assert tables.curves(SPACE, layout_records(), "pretrain") == ()


def test_length_rows_delta_error_against_longest():
    rows = tables.length_rows({}, vit_records(n=3))
    first = rows[0]
    assert first.epochs == (2, 4, 8)
    assert first.delta_error == pytest.approx((5.0, 2.0, 0.0))


def test_primary_acc_and_search_dims():
    assert tables.primary_acc(SPACE, layout_records()) == "generalization.eval_acc"
    space = {"study": {"objective": "capacity.train_loss"}}  # not an accuracy → first measured accuracy
    only_cap = [record(0, "C-C-T-T", 0, {"capacity.eval_acc": 0.9})]
    assert tables.primary_acc(space, only_cap) == "capacity.eval_acc"
    assert tables.primary_acc({"study": {"objective": "accuracy.eval_acc"}}, vit_records(n=2)) == "accuracy.eval_acc"
    assert optim.search_dims(layout_records()) == []
    assert optim.search_dims(vit_records(n=2)) == ["train.lr", "train.weight_decay"]


def test_edf_delta_from_best_run_of_the_same_model_and_optimizer():
    curves = {e.label: e for e in M.edf(RF.runs_frame(vit_records(n=5), "accuracy.eval_acc"), k=2.0)}
    p_adamw, p_sgd = curves["ViT_P-adamw"], curves["ViT_P-sgd"]
    assert p_adamw.delta == pytest.approx([0.0, 2.0, 4.0, 6.0, 8.0])  # 85 - 8*k/4 points
    assert p_sgd.delta[0] == 0.0  # from SGD's own best; the 10-point AdamW - SGD offset is the optimizer gap
    assert p_adamw.fraction == pytest.approx([0.2, 0.4, 0.6, 0.8, 1.0])
    assert p_adamw.within_k == pytest.approx(0.4) and p_sgd.within_k == pytest.approx(0.4)
    assert curves["ViT_C-sgd"].within_k == 1.0


def test_optimizer_gap_best_runs_and_their_hyperparameters():
    gaps = {g.model_label: g for g in optim.optimizer_gap(RF.runs_frame(vit_records(n=4), "accuracy.eval_acc"))}
    assert gaps["ViT_P"].gap == pytest.approx(10.0) and gaps["ViT_C"].gap == pytest.approx(0.5)
    adamw = gaps["ViT_P"].adamw
    assert adamw is not None and adamw.lr == pytest.approx(1e-3)  # the best run is sample 0 (lr 1e-3)
    assert gaps["ViT_P"].n_sgd == 4
    peak = {p.model_label: p for p in optim.peak(RF.runs_frame(vit_records(n=4), "accuracy.eval_acc")) if p}
    assert peak["ViT_C"].acc == pytest.approx(85.0) and peak["ViT_C"].optimizer == "adamw"
    samples = optim.samples(vit_records(n=4))
    assert {(s.candidate, s.complete) for s in samples} >= {("ViT_P-sgd", 4), ("ViT_C-adamw", 4)}
    assert optim.has_vit(vit_records(n=2)) and not optim.has_vit(layout_records(AGREE))
