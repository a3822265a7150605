"""The fair linear floor: chosen on validation images among an L2 path and the recipe run; the regime guard holds
the models that must learn against it by an interval, never by two point estimates."""

from __future__ import annotations

import pytest
import torch

from coatsearch.analysis import constants as CS
from coatsearch.analysis import stats as S
from coatsearch.analysis import tables
from coatsearch.analysis.table_rows import CandidateRow
from coatsearch.papers import claims as C
from coatsearch.papers import verdicts as V
from coatsearch.training.data import TensorData
from coatsearch.training.floor import C_GRID, RECIPE, Floor, linear_floor
from tests.report_records import AGREE, SPACE, layout_records, seeded


def rows_of(values: dict) -> tuple[CandidateRow, ...]:
    return tables.candidate_rows(SPACE, layout_records(values))


def _blobs(n: int, seed: int, noise: float) -> TensorData:
    """Two Gaussian classes in 16 'pixels', separable up to `noise`."""
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % 2
    x = (2 * y - 1).float()[:, None].expand(n, 16) + noise * torch.randn(n, 16, generator=g)
    return TensorData(x.reshape(n, 1, 4, 4).contiguous(), y, (0, 1))


def test_the_floor_is_the_contender_best_on_validation_and_reads_its_test_accuracy():
    train, val, test = _blobs(200, 0, 3.0), _blobs(400, 1, 3.0), _blobs(400, 2, 3.0)
    best, contenders = linear_floor(train, val, test)
    assert [c.choice for c in contenders] == [f"C={c:g}" for c in C_GRID]
    assert best.val_acc == max(c.val_acc for c in contenders) and best in contenders
    assert 0.6 < best.test_acc < 1.0  # it learned: the classes overlap at this noise
    recipe = Floor(1.0, 0.123, RECIPE)  # a recipe run better on the validation images wins, whatever its test acc
    assert linear_floor(train, val, test, recipe)[0] == recipe
    worse = Floor(0.0, 0.999, RECIPE)  # and one worse on validation never does, however well it reads on test
    assert linear_floor(train, val, test, worse)[0] == best


def test_above_floor_needs_an_interval_above_zero():
    floor = {0: 80.0, 1: 81.0, 2: 79.0}
    clear = S.above_floor({0: 84.0, 1: 85.5, 2: 82.5}, floor, 0.05)
    assert clear.above and clear.n == 3 and clear.d == pytest.approx(4.0) and clear.low > 0
    noisy = S.above_floor({0: 86.0, 1: 78.0, 2: 80.5}, floor, 0.05)  # mean +1.5 points, spread too wide
    assert not noisy.above and noisy.low < 0 < noisy.d
    one = S.above_floor({0: 90.0}, floor, 0.05)  # one seed: no interval, never shown above
    assert not one.above and one.low is None
    assert S.above_floor({5: 90.0}, floor, 0.05).n == 0


def test_a_matched_reading_the_linear_model_cannot_reach_is_held_against_its_fair_floor():
    matched = AGREE["generalization.matched_acc"]
    fair = seeded({"generalization.floor_acc": {"baseline-linear": 0.90}})
    rows = rows_of({**AGREE, "generalization.matched_acc": matched, **fair})
    assert "generalization.matched_acc" not in next(r for r in rows if r.candidate == CS.BASELINES[0]).by_seed
    assert V.floor_of("generalization.matched_acc", rows) == pytest.approx(90.0, abs=0.2)
    a = V.all_claims(rows, None)[0]
    assert a.verdict == "out of regime" and "C-C-C-C not shown above the fair linear floor" in a.why
    low = rows_of({**AGREE, **seeded({"generalization.floor_acc": {"baseline-linear": 0.60}})})
    assert V.all_claims(low, None)[0].verdict == "supported"


def test_the_gate_is_the_papers_top_group():
    assert C.top_group(C.CHAIN_CLAIMS[0].chain) == ("C-C-C-C", "C-C-C-T")
    assert C.top_group(C.CHAIN_CLAIMS[1].chain) == ("C-C-T-T", "C-T-T-T")
    assert C.top_group(C.CHAIN_CLAIMS[3].chain) == ("V0",)


def test_a_large_training_set_chooses_c_on_a_balanced_subsample_and_refits_it_on_every_image(monkeypatch):
    """Past SELECT_MAX training images the path runs on a class-balanced subsample; the C best on validation is
    refit on all of them, and that refit (more data, the same C) is the last contender."""
    from coatsearch.training import floor as F

    monkeypatch.setattr(F, "SELECT_MAX", 100)
    train, val, test = _blobs(400, 0, 3.0), _blobs(400, 1, 3.0), _blobs(400, 2, 3.0)
    best, contenders = linear_floor(train, val, test)
    assert [c.choice for c in contenders[:-1]] == [f"C={c:g}" for c in C_GRID]
    picked = max(contenders[:-1], key=lambda f: f.val_acc)
    assert contenders[-1].choice == f"{picked.choice}, all 400" and best.val_acc == max(c.val_acc for c in contenders)
    idx = F._balanced(train.y.numpy(), 100)
    assert len(idx) == 100 and (train.y.numpy()[idx] == 1).sum() == 50 and list(idx) == sorted(set(idx))
    monkeypatch.setattr(F, "SELECT_MAX", 400)  # at the limit: the whole path on every image, no refit
    assert [c.choice for c in linear_floor(train, val, test)[1]] == [f"C={c:g}" for c in C_GRID]
