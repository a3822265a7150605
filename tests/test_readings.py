"""Readings bracketed by measured points (issue 30): dense curve points where the ladder is crossed, training
one rung past it, the lr phase at each point, and the report's censoring of readings no measured pair brackets."""

from __future__ import annotations

import math

import pytest

from coatsearch import curve, data, train
from coatsearch import spec as S
from coatsearch.spec import DataSpec, OptimSpec
from tests.support.training import CPU, one_thread, tiny_net  # noqa: F401 - one_thread is an autouse fixture

OPT = OptimSpec(lr=3e-3, batch_size=20, warmup_epochs=1)


@pytest.fixture(scope="module")
def small() -> tuple[data.TensorData, data.TensorData]:
    """A 200-image synthetic training subset (10 steps per epoch at batch 20) and a 100-image eval set."""
    tr, te = data.load(DataSpec("synthetic"), 32, 1)
    return data.subset(tr, 20, None, seed=0), data.eval_subset(te, 100, None)


# ---------------------------------------------------------------------------------------------- training side


def test_dense_points_fall_by_the_ratio_start_near_the_top_and_end_below_the_bottom():
    d = curve.Dense((0.5, 0.3, 0.2, 0.15, 0.1))
    assert d.top == pytest.approx(0.5 * curve.DENSE_RATIO**2) and d.bottom == pytest.approx(0.1 / 1.5 / 1.3)
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
    d.due([0.03] * curve.DENSE_WINDOW)  # train-mode batch losses far below the probe: a first point
    d.taken(0.2)  # ...which measured 0.2 on the probe: still above the bottom, so dense points go on
    assert d.due([0.02] * curve.DENSE_WINDOW)


def _bracket(step: tuple, loss: tuple, level: float) -> float:
    """The loss ratio between the last point above `level` and the first at or below it (inf from step 0)."""
    j = next(i for i, v in enumerate(loss) if v <= level)
    return math.inf if j == 0 or step[j - 1] == 0 else loss[j - 1] / loss[j]


def test_matched_loss_run_measures_where_the_ladder_is_crossed_without_changing_the_run(small):
    tr, ev = small
    fast, ladder = OptimSpec(lr=3e-2, batch_size=20, warmup_epochs=1), (1.5, 1.0, 0.7, 0.5)
    plain = train.fit(tiny_net(), tr, ev, fast, 10, seed=0, device=CPU, eval_every=50, probe=100)
    dense = train.fit(tiny_net(), tr, ev, fast, 10, seed=0, device=CPU, eval_every=50, probe=100, levels=ladder)
    assert set(plain.curve.step) < set(dense.curve.step)  # the regular points and more, off the regular grid
    assert all(s % 50 for s in set(dense.curve.step) - set(plain.curve.step))
    assert dense.train_loss == plain.train_loss and dense.curve.train_loss[-1] == plain.curve.train_loss[-1]
    sparse = [_bracket(plain.curve.step, plain.curve.train_loss, v) for v in ladder]
    tight = [_bracket(dense.curve.step, dense.curve.train_loss, v) for v in ladder]
    assert math.inf in sparse and max(tight) < 2.5 and all(t <= s for t, s in zip(tight, sparse, strict=True))


def test_each_point_records_its_lr_phase(small):
    tr, ev = small
    h = train.fit(tiny_net(), tr, ev, OPT, 3, seed=0, device=CPU, eval_every=5, probe=50)
    total, warmup = 30, 6  # 3 epochs of 10 steps; warmup one epoch, capped at WARMUP_MAX of the run
    want = [0.0] + [train.lr_at(s - 1, total, warmup, OPT.lr) / OPT.lr for s in h.curve.step[1:]]
    assert h.curve.lr_phase == pytest.approx(want) and h.curve.as_dict()["lr_phase"] == list(h.curve.lr_phase)
    assert h.curve.lr_phase[:2] == (0.0, pytest.approx(5 / 6)) and h.curve.lr_phase[-1] < 0.01  # warmup, cosine


def test_a_matched_loss_stop_lies_one_rung_below_the_ladder():
    assert S.rung_below((0.5, 0.3, 0.2, 0.15, 0.1)) == pytest.approx(0.1 / 1.5)
    assert S.rung_below((0.4,)) == pytest.approx(0.2)
    S.SubsetSpec(per_class=50, stop_at_loss=0.065, loss_levels=(0.5, 0.3, 0.2, 0.15, 0.1))
    with pytest.raises(ValueError, match="one rung below"):
        S.SubsetSpec(per_class=50, stop_at_loss=0.1, loss_levels=(0.5, 0.3, 0.2, 0.15, 0.1))


def test_shipped_matched_loss_runs_stop_one_rung_below_their_ladder():
    from coatsearch import api

    for profile in ("default", "full"):
        gen = api.load_space("spaces/paper_layouts.yaml", profile).scores.generalization
        assert gen.stop_at_loss is not None and gen.loss_levels
        assert gen.stop_at_loss <= S.rung_below(gen.loss_levels) < min(gen.loss_levels)


def test_the_planner_counts_dense_points():
    assert (
        curve.dense_budget((0.5, 0.3, 0.2, 0.15, 0.1))
        == math.ceil(math.log(0.5 * 1.3**2 / (0.1 / 1.5 / 1.3)) / math.log(1.3)) + 1
    )
