"""Readings bracketed by measured points: dense curve points where the ladder is crossed, training
one rung past it, the lr phase at each point, and the report's censoring of readings no measured pair brackets."""

from __future__ import annotations

import dataclasses
import math

import pytest

from coatsearch.analysis import run_frames as RF
from coatsearch.analysis import speed_tables as SP
from coatsearch.analysis import tables
from coatsearch.analysis.measure_results import MatchedLoss
from coatsearch.papers import claims as C
from coatsearch.papers import judging, paper, stem
from coatsearch.papers import measures as M
from coatsearch.papers import verdicts as V
from coatsearch.papers.claim_results import ClaimVerdict
from coatsearch.report import markdown_claims as MC
from coatsearch.report import plots_claims as PC
from coatsearch.report.view_claims import claim_info
from coatsearch.space.objects import Baseline
from coatsearch.training import curves as curve
from coatsearch.training import data, fit, schedule, subsets
from coatsearch.vocab import specs as S
from coatsearch.vocab.specs import DataSpec, OptimSpec
from tests.report_records import AGREE, SPACE, edit_runs, layout_records, noisy, record, seeded, with_derived
from tests.support.training import CPU, one_thread, tiny_net  # noqa: F401 - one_thread is an autouse fixture

OPT = OptimSpec(lr=3e-3, batch_size=20, warmup_epochs=1)


@pytest.fixture(scope="module")
def small() -> tuple[data.TensorData, data.TensorData]:
    """A 200-image synthetic training subset (10 steps per epoch at batch 20) and a 100-image eval set."""
    tr, te = data.load(DataSpec("synthetic"), 32, 1)
    return subsets.subset(tr, 20, None, seed=0), subsets.eval_subset(te, 100, None)


# ---------------------------------------------------------------------------------------------- training side


def test_dense_points_fall_by_the_ratio_start_near_the_top_and_end_below_the_bottom():
    d = curve.Dense((0.5, 0.3, 0.2, 0.15, 0.1))
    assert d.top == pytest.approx(0.5 * schedule.DENSE_RATIO**2) and d.bottom == pytest.approx(0.1 / 1.5 / 1.3)
    d.taken(2.4)  # step 0: nothing in the window yet
    due = []
    for loss in [2.0] * 4 + [1.0] * 4 + [0.8] * 4 + [0.6] * 4 + [0.45] * 4 + [0.44] * 4 + [0.3] * 4:
        if d.due([loss]):
            due.append(loss)
            d.taken(loss)
    assert due == [0.8, 0.6, 0.45, 0.3]  # none above top (0.845); each a 1.3x fall of the estimate (not 0.44)
    d.taken(0.04)  # a point measured below the bottom: dense points end there
    assert not any(d.due([v]) for v in (0.02, 0.01, 0.005, 0.001, 0.0001))


def test_dense_points_follow_the_probe_not_the_batch_level():
    d = curve.Dense((0.5, 0.1))
    d.taken(2.4)
    d.due([0.03] * schedule.DENSE_WINDOW)  # train-mode batch losses far below the probe: a first point
    d.taken(0.2)  # ...which measured 0.2 on the probe: still above the bottom, so dense points go on
    assert d.due([0.02] * schedule.DENSE_WINDOW)


def _bracket(step: tuple, loss: tuple, level: float) -> float:
    """The loss ratio between the last point above `level` and the first at or below it (inf from step 0)."""
    j = next(i for i, v in enumerate(loss) if v <= level)
    return math.inf if j == 0 or step[j - 1] == 0 else loss[j - 1] / loss[j]


def test_matched_loss_run_measures_where_the_ladder_is_crossed_without_changing_the_run(small):
    tr, ev = small
    fast, ladder = OptimSpec(lr=3e-2, batch_size=20, warmup_epochs=1), (1.5, 1.0, 0.7, 0.5)
    plain = fit.fit(tiny_net(), tr, ev, fast, 10, seed=0, device=CPU, eval_every=50, probe=100)
    dense = fit.fit(tiny_net(), tr, ev, fast, 10, seed=0, device=CPU, eval_every=50, probe=100, levels=ladder)
    assert set(plain.curve.step) < set(dense.curve.step)  # the regular points and more, off the regular grid
    assert all(s % 50 for s in set(dense.curve.step) - set(plain.curve.step))
    assert dense.train_loss == plain.train_loss and dense.curve.train_loss[-1] == plain.curve.train_loss[-1]
    sparse = [_bracket(plain.curve.step, plain.curve.train_loss, v) for v in ladder]
    tight = [_bracket(dense.curve.step, dense.curve.train_loss, v) for v in ladder]
    assert math.inf in sparse and max(tight) < 2.5 and all(t <= s for t, s in zip(tight, sparse, strict=True))


def test_each_point_records_its_lr_phase(small):
    tr, ev = small
    h = fit.fit(tiny_net(), tr, ev, OPT, 3, seed=0, device=CPU, eval_every=5, probe=50)
    total, warmup = 30, 6  # 3 epochs of 10 steps; warmup one epoch, capped at WARMUP_MAX of the run
    want = [0.0] + [fit.lr_at(s - 1, total, warmup, OPT.lr) / OPT.lr for s in h.curve.step[1:]]
    assert h.curve.lr_phase == pytest.approx(want) and h.curve.as_dict()["lr_phase"] == list(h.curve.lr_phase)
    assert h.curve.lr_phase[:2] == (0.0, pytest.approx(5 / 6)) and h.curve.lr_phase[-1] < 0.01  # warmup, cosine


def test_a_matched_loss_stop_lies_one_rung_below_the_ladder():
    assert S.rung_below((0.5, 0.3, 0.2, 0.15, 0.1)) == pytest.approx(0.1 / 1.5)
    assert S.rung_below((0.4,)) == pytest.approx(0.2)
    S.SubsetSpec(per_class=50, stop_at_loss=0.065, loss_levels=(0.5, 0.3, 0.2, 0.15, 0.1))
    with pytest.raises(ValueError, match="one rung below"):
        S.SubsetSpec(per_class=50, stop_at_loss=0.1, loss_levels=(0.5, 0.3, 0.2, 0.15, 0.1))


def test_shipped_matched_loss_runs_stop_one_rung_below_their_ladder_or_anneal_to_their_end():
    from coatsearch import api

    full = api.load_space("spaces/paper_layouts.yaml", "full").scores.generalization
    assert full.stop_at_loss is not None and full.loss_levels
    assert full.stop_at_loss <= S.rung_below(full.loss_levels) < min(full.loss_levels)
    # the default reads each model where its lr has annealed: every run goes to the end of its own schedule, one
    # length per model, so that the ladder's lowest level is crossed late in each (regime_a4)
    default = api.load_space("spaces/paper_layouts.yaml", "default").candidates
    runs = {c.name: c.scores.generalization for c in default if not isinstance(c, Baseline)}
    assert all(g is not None and g.stop_at_loss is None and g.max_steps is None for g in runs.values())
    assert len({g.epochs for g in runs.values() if g is not None}) == len(runs) == 3


@pytest.mark.committed
def test_the_committed_default_reads_claim_a_where_every_lr_has_annealed():
    """Every key candidate's matched readings in reports/paper_layouts sit below a fifth of its peak lr."""
    import json
    from pathlib import Path

    summary = json.loads((Path(__file__).parents[2] / "reports/paper_layouts/summary.json").read_text())
    key = summary["matched"]["key"]
    rows = [r for r in summary["matched"]["table"] if r["candidate"] in key]
    assert len(rows) == len(key) == 3 and all(r["lr_phase_max"] < 0.2 for r in rows), rows


def test_the_planner_counts_dense_points():
    assert (
        schedule.dense_budget((0.5, 0.3, 0.2, 0.15, 0.1))
        == math.ceil(math.log(0.5 * 1.3**2 / (0.1 / 1.5 / 1.3)) / math.log(1.3)) + 1
    )


# ---------------------------------------------------------------------------------------------- report side


def test_a_reading_bracketed_by_the_untrained_model_is_censored_not_interpolated():
    """13009d6 read C-C-C-T seed 0 at 0.1 nats between step 0 (2.6 nats, 10%) and step 100 (0.082, 65.6%): 62.3%."""
    r = M.crossing([0, 100], [2.5966, 0.0815], [0.10, 0.656], 0.1, [0.0, 0.996])
    assert r.censored and r.reached and r.why == M.FROM_INIT and math.isnan(r.eval_acc)
    assert M.crossing([0], [0.05], [0.5], 0.1).why == M.FROM_INIT  # the untrained model already at the level


def test_a_reading_whose_bracket_spans_more_than_the_stated_ratio_is_censored():
    """C-C-C-T seed 3 (13009d6): 0.189 nats at step 200, 0.020 at 300 — a 9.6x bracket around 0.1 nats."""
    r = M.crossing([0, 100, 200, 300], [2.50, 0.164, 0.189, 0.0197], [0.1, 0.616, 0.630, 0.710], 0.1)
    assert r.censored and r.reached and r.why == f"{M.WIDE} (9.59x)"
    ok = M.crossing([0, 100, 140, 160], [2.50, 0.40, 0.13, 0.08], [0.1, 0.60, 0.64, 0.66], 0.1, [0, 1.0, 0.9, 0.8])
    assert not ok.censored and 0.64 < ok.eval_acc < 0.66 and 0.8 < ok.lr_phase < 0.9


def _curve_record(number: int, cand: str, seed: int, steps, losses, accs, phase=None):
    c = {"step": list(steps), "train_loss": list(losses), "train_acc": [0.9] * len(steps),
         "eval_loss": [1.0] * len(steps), "eval_acc": list(accs), "probe": 500}  # fmt: skip
    if phase is not None:
        c["lr_phase"] = list(phase)
    metrics = {"curves.generalization": c, "generalization.eval_acc": accs[-1], "generalization.train_loss": losses[-1],
               "generalization.images": 500, "generalization.steps": int(steps[-1])}  # fmt: skip
    return record(number, cand, seed, metrics)


SPARSE = [0.0, 100.0]  # the committed default's points of a fast run: step 0 and step 100 only
DENSE = [0.0, 60.0, 75.0, 90.0, 100.0]


def _study(steps_fast, linear_acc: float = 0.60) -> list:
    """Claim (a)'s five layouts and the linear baseline, 3 seeds, each fit to 0.08 nats: the fast layouts at
    `steps_fast`, the others and the baseline densely; accuracies in the paper's order, far above `linear_acc`."""
    accs = {"C-C-C-C": 0.80, "C-C-C-T": 0.795, "C-C-T-T": 0.79, "C-T-T-T": 0.76, "ViT_REL": 0.70,
            "baseline-linear": linear_acc}  # fmt: skip
    recs = []
    for seed in range(3):
        for k, (cand, a) in enumerate(accs.items()):
            a += 0.002 * ((seed * 2 + k * k) % 5)  # an irregular spread: the pooled noise is never zero
            steps = steps_fast if cand in ("C-C-C-C", "C-C-C-T") else DENSE
            losses = [2.4, 0.08] if len(steps) == 2 else [2.4, 0.3, 0.15, 0.09, 0.07]
            acc = [0.1, a] if len(steps) == 2 else [0.1, a - 0.05, a - 0.01, a, a + 0.005]
            phase = [0.0] + [1.0 - s / 400 for s in steps[1:]]
            recs.append(_curve_record(len(recs), cand, seed, steps, losses, acc, phase))
    return recs


def _claim_a(recs) -> tuple[ClaimVerdict, MatchedLoss]:
    space = {**SPACE, "scores": {"generalization": {"loss_levels": [0.5, 0.3, 0.2, 0.15, 0.1]}}}
    j = judging.judge_records(space, recs)
    return next(c for c in j.claims if c.id == "a"), j.gen


def test_sparse_curves_leave_claim_a_unread_with_the_reason():
    a, gen = _claim_a(_study(SPARSE))
    assert gen.level == pytest.approx(0.1)  # every run reached 0.1 nats: the level stands
    assert any("C-C-C-C: 3 of 3 readings at 0.1 nats censored (bracket starts at the untrained" in r
               for r in gen.out_of_regime)  # fmt: skip
    assert a.verdict == "out of regime" and "censored" in a.why
    dense, gen = _claim_a(_study(DENSE))
    assert dense.verdict == "supported" and gen.censored == () and gen.out_of_regime == ()
    table = {r.candidate: r for r in gen.table}
    assert 0.7 < table["C-C-C-C"].lr_phase_min <= table["C-C-C-C"].lr_phase_max < 0.85  # read at ~78% of peak


def test_matched_readings_below_the_linear_baseline_put_the_claim_out_of_regime():
    """13009d6 had no floor for the matched-loss reading: 'supported' here, from networks below a linear model."""
    a, _ = _claim_a(_study(DENSE, linear_acc=0.85))
    assert a.verdict == "out of regime"
    assert "C-C-C-C not shown above the fair linear floor on gen. eval acc at matched loss at 0.1 nats (" in a.why
    assert "C-C-C-T not shown above" in a.why and "C-T-T-T" not in a.why  # the models that must learn only
    assert V.floor_of("generalization.matched_acc", judging.judge_records(SPACE, _study(DENSE)).rows) is not None


def test_convergence_not_checkable_is_out_of_regime_where_the_claim_needs_it():
    """13009d6 passed it silently: a claim (d) with no curves to check was judged as if converged."""
    recs = layout_records({**AGREE, **seeded({"accuracy.eval_acc": {"C-C-T-T": 0.841, "V2": 0.839, "V1": 0.801}})})

    def no_curve(r, m):
        m.pop("curves.accuracy", None)

    d = next(c for c in V.all_claims(tables.candidate_rows(SPACE, edit_runs(recs, no_curve)), None) if c.id == "d")
    assert d.verdict == "out of regime" and "convergence not checkable for 3 of 3 run(s)" in d.why
    kept = next(c for c in V.all_claims(tables.candidate_rows(SPACE, recs), None) if c.id == "d")
    assert kept.verdict == "supported"


def test_firm_verdicts_carry_their_scale_and_margins_are_derived():
    a, _ = _claim_a(_study(DENSE))
    scaled = judging.with_scale({"data": {"dataset": "fashion_mnist"}, "input": [32, 1, 10]},
                                _study(DENSE), a, None)  # fmt: skip
    assert scaled.scale.startswith("at this proxy scale: fashion_mnist, ") and "32x32x1" in scaled.scale
    assert "500 training images" in scaled.scale and "3 seeds, 100 steps a run" in scaled.scale
    unresolved = dataclasses.replace(a, found=dataclasses.replace(a.found, verdict="unresolved"))
    assert judging.with_scale({}, [], unresolved, None) is unresolved  # not firm: no scale
    claims = {c.id: c for c in C.CHAIN_CLAIMS}
    assert claims["d"].margin == pytest.approx(0.3) and "V2 − V1 = 0.6" in claims["d"].margin_note
    assert claims["a"].margin == 1.0 and "not numbers" in claims["a"].margin_note


def test_the_report_says_when_equivalence_cannot_be_confirmed_at_n():
    a = {c.id: c for c in V.all_claims(tables.candidate_rows(SPACE, layout_records(noisy(AGREE, 0.02))), None)}["a"]
    note = a.evidence[0].equivalence
    assert note.startswith("'≈'/'≥' cannot be confirmed at this n, only refuted: C-C-C-C ≈ C-C-C-T: 90% half-width")
    assert "paired seeds would confirm" in note
    good = {c.id: c for c in V.all_claims(tables.candidate_rows(SPACE, layout_records(AGREE)), None)}["a"]
    assert good.evidence[0].equivalence.startswith("'≈'/'≥' relations can be confirmed at this n")


def _fixed_only(p_drop: float = 0.10, seeds=(0, 1, 2)) -> list:
    recs, jitter = [], (0.0, 0.004, -0.003, 0.002)
    for s in seeds:
        for i, (label, opt) in enumerate(stem.CELLS):
            acc = 0.85 - {("ViT_P", "sgd"): p_drop, ("ViT_C", "sgd"): 0.005}.get((label, opt), 0.0)
            acc += 0.03 if label == "ViT_C" else 0.0  # ViT_C's peak: 3 points above ViT_P at its better optimizer
            metrics = with_derived({"accuracy.eval_acc": acc + 0.01 * s + jitter[(i + s) % 4]})
            lr = 1e-3 if opt == "adamw" else 5e-2
            recs.append(record(len(recs), f"{label}-{opt}", s, metrics, label=label, optimizer=opt, lr=lr))
    return recs


def test_claim_f_names_the_parts_its_verdict_rests_on_and_where_each_lr_came_from():
    """13009d6 said 'supported, 1 of 1 deciding part(s)' for a claim whose EDF half never ran; the length and EDF
    parts are named as not run, never counted as held."""
    space = {"study": {"objective": "accuracy.eval_acc"}}
    f = next(c for c in judging.judge_records(space, _fixed_only()).claims if c.id == "f")
    assert f.verdict == "supported" and f.scope == "gap contrast and peak parts only; EDF and training length not run"
    assert [p.status for p in f.parts] == ["holds", "not run", "not run", "holds"]
    mark = MC.mark(claim_info(f))
    assert mark.startswith("✅ supported (gap contrast and peak parts only; EDF and training length not run), at this")
    assert "ViT_P sgd lr 0.05" in f.notes[0] and "one lr per optimizer (AdamW, SGD) shared by both" in f.notes[0]
    assert len(f.parts[0].per_seed) == 3


def test_paired_difference_figure_for_every_firm_verdict(tmp_path):
    space = {"study": {"objective": "accuracy.eval_acc"}}
    claims = judging.judge_records(space, _fixed_only()).claims
    dense, _ = _claim_a(_study(DENSE))
    fig = PC.figure([claim_info(c) for c in (*claims, dense)])
    assert fig is not None and len(fig.axes) == 2  # (a) and (f): both firm
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["gap contrast", "peak"]  # each tested part
    assert (
        PC.figure(
            [claim_info(dataclasses.replace(dense, found=dataclasses.replace(dense.found, verdict="unresolved")))]
        )
        is None
    )
    infos = [claim_info(c) for c in claims]
    assert PC.draw(infos, tmp_path / "p.png") == "p.png" and (tmp_path / "p.png").stat().st_size > 5000


def test_curves_are_drawn_per_run_and_the_pareto_front_pools_one_network():
    curves = RF.curve_frame(_study(DENSE), "generalization")
    per_run = paper.mean_curves(SPACE, curves, _study(DENSE))
    assert {len(c.runs) for c in per_run} == {3} and not hasattr(per_run[0], "train_loss")  # no mean over runs
    # timing noise between runs of one network pooled
    assert SP.by_network(["P", "P", "C"], [100.0, 110.0, 50.0]) == [105.0, 105.0, 50.0]


def test_a_profile_fit_level_reads_claim_a_where_its_runs_stop_and_the_default_does_not():
    """Runs annealed to 0.15 nats: out of regime at the default fit level (0.1 nats); with the profile's 0.2 they
    are read at the lowest ladder level at or below it that every run reached, 0.15."""
    recs = edit_runs(_study(DENSE), _stop_at_015)
    ladder = [0.5, 0.3, 0.2, 0.15, 0.1]
    default = judging.judge_records({**SPACE, "scores": {"generalization": {"loss_levels": ladder}}}, recs)
    raised = judging.judge_records(
        {**SPACE, "scores": {"generalization": {"loss_levels": ladder, "fit_loss": 0.2}}}, recs
    )
    a = {j: next(c for c in x.claims if c.id == "a") for j, x in (("default", default), ("raised", raised))}
    assert default.gen.level is None and a["default"].verdict == "out of regime"
    assert "must reach 0.1 nats" in " ".join(default.gen.out_of_regime)
    assert raised.gen.level == pytest.approx(0.15) and raised.gen.out_of_regime == ()
    assert a["raised"].verdict == "supported"


def _stop_at_015(r, m) -> None:
    """Every curve ends at 0.15 nats: its last two points (0.09 and 0.07 in _study) leave."""
    c = m["curves.generalization"]
    for k in ("step", "train_loss", "train_acc", "eval_loss", "eval_acc", "lr_phase"):
        if isinstance(c.get(k), list) and len(c[k]) == len(DENSE):
            c[k] = c[k][:3]
    m["generalization.train_loss"] = c["train_loss"][-1]
