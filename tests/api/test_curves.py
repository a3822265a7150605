"""`coatsearch.curves`: the per-step curves of a real tiny study as a tidy table, as a user reads them."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import coatsearch
from coatsearch.analysis.run_frames import STEP_COLUMNS, STEP_METRICS
from tests.tiny import TINY


@pytest.fixture(scope="module")
def studies(tmp_path_factory) -> Path:
    """tests/spaces/tiny.yaml run once (two candidates, one seed: generalization and transfer); its studies folder."""
    root = tmp_path_factory.mktemp("curves") / "studies"
    coatsearch.run(coatsearch.load_space(TINY), study="tiny", workers=1, device="cpu", studies_dir=root,
                   report=False, progress=False)  # fmt: skip
    return root


def test_curves_are_one_row_per_measured_point_of_every_complete_trial(studies):
    from coatsearch.storage import store

    table = coatsearch.curves("tiny", studies_dir=studies)
    assert list(table.columns) == [*STEP_COLUMNS, *STEP_METRICS]
    trials = coatsearch.results("tiny", studies)
    done = trials[trials["state"] == "COMPLETE"]
    assert len(done) == 2 and set(table["trial"]) == set(done["number"])
    assert set(table["candidate"]) == {"C-C", "C-T"} and set(table["study"]) == {"tiny"} and set(table["seed"]) == {0}
    assert {"generalization"} <= set(table["phase"]) and len(set(table["phase"])) > 1  # transfer's runs too
    for trial in store.load_study(studies, "tiny").get_trials(deepcopy=False):
        run = store.record(trial).run
        for phase in run.curves:
            if (curve := run.curve(phase)) is None or not curve.step:
                continue
            rows = table[(table["trial"] == trial.number) & (table["phase"] == phase)]
            assert list(rows["step"]) == list(curve.step)  # every point, in order
            assert list(rows["train_loss"]) == pytest.approx(list(curve.train_loss))
            assert list(rows["eval_acc"]) == pytest.approx(list(curve.eval_acc))
    gen = table[table["phase"] == "generalization"]
    assert all(rows["step"].is_monotonic_increasing for _, rows in gen.groupby("trial"))
    assert gen[["train_loss", "eval_acc", "lr_phase"]].notna().all().all()
    assert ((gen["eval_acc"] >= 0) & (gen["eval_acc"] <= 1)).all() and (gen["train_loss"] > 0).all()
    assert pd.api.types.is_integer_dtype(table["step"]) and pd.api.types.is_float_dtype(table["val_acc"])


def test_a_study_with_no_complete_trial_gives_an_empty_table_with_the_columns(studies, tmp_path):
    from tests.report_records import SPACE, failed, make_study

    make_study(tmp_path, "none", SPACE, [failed(0, "C-C-C-C", 0, "budget not met: too small")])
    table = coatsearch.curves("none", studies_dir=tmp_path)
    assert table.empty and list(table.columns) == [*STEP_COLUMNS, *STEP_METRICS]
    assert all(pd.api.types.is_float_dtype(table[k]) for k in STEP_METRICS)
