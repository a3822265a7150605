"""The report takes what it knows about scores from the registry: guards, chance, titles, derived metrics, keys."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from coatsearch import record as R
from coatsearch import scores
from coatsearch.record import TrialRecord
from coatsearch.report import info, paper
from coatsearch.scores.base import Guard, Score, acc

REPORT = Path(__file__).resolve().parents[1] / "coatsearch" / "report"
METRIC_KEY = re.compile(r"[\"'](?:" + "|".join(scores.SCORES) + r")\.[a-z_0-9]+[\"']")  # e.g. "capacity.eval_acc"
CLAIMS = "claims.py"  # the papers' claims: the data that names the measures each claim reads
# Modules that still name score metrics (issue 19 part 4 is not finished there): at most this many each. A new
# literal anywhere else fails; lower a count when a module stops naming one.
PENDING = {"calibration.py": 38, "plots_speed.py": 3, "speed.py": 10}


def test_no_new_literal_metric_key_in_the_report():
    found = {p.name: len(METRIC_KEY.findall(p.read_text(encoding="utf-8"))) for p in REPORT.glob("*.py")}
    over = {n: k for n, k in found.items() if n != CLAIMS and k > PENDING.get(n, 0)}
    assert not over, f"literal metric keys outside {CLAIMS}: {over} (take them from the score registry)"
    assert found[CLAIMS] > 0 and all(n in found for n in PENDING)


def _toy(monkeypatch) -> None:
    """A score registered from the test: one guarded run of 4 classes, a title and a single-run headline."""
    toy = Score(
        name="toy",
        section=dict,
        run=lambda ctx, spec: {},
        metrics=(acc("toy.eval_acc", "toy eval acc"),),
        curves=lambda spec: ("toy",),
        epochs=lambda spec: (1,),
        headline="toy.eval_acc",
        single_run=True,
        title="Toy runs",
        guards=(Guard("toy", "toy.eval_acc", ("toy",)),),
        derived=(acc("toy.derived_acc", "toy derived"),),
    )
    monkeypatch.setitem(scores.SCORES, "toy", toy)
    for m in (*toy.metrics, *toy.derived):
        monkeypatch.setitem(scores.METRICS, m.key, m)


def _run(number: int, seed: int, value: float) -> TrialRecord:
    run = R.completed(R.Identity("T", seed), R.Model(), {"toy.eval_acc": value, "toy.derived_acc": 0.5}, R.Optimizer())
    return TrialRecord(number, value, {"candidate": "T", "seed": seed}, None, None, run)


def test_a_registered_score_is_guarded_titled_and_derived(monkeypatch):
    _toy(monkeypatch)
    space = {"candidates": ["T"], "input": [8, 1, 10], "scores": {"toy": {"per_class": 5, "classes": [0, 1, 2, 3]}}}
    assert info.group_acc()["toy"] == "toy.eval_acc" and info.chance(space, "toy") == 25.0  # its subset's classes
    assert scores.titles()["toy"] == "Toy runs" and "toy.eval_acc" in scores.v_accs()
    assert scores.derived()[-1] == "toy.derived_acc"
    recs = [_run(0, 0, 0.26), _run(1, 1, 0.9)]  # seed 0 ends within 2 points of chance (25%): failed to train
    (row,) = info.candidate_rows(space, recs)
    assert row["guards"]["toy"] == {"runs": 2, "failed": 1, "not_converged": 0, "unchecked": 2}
    assert row["metrics"]["toy.eval_acc"].n == 1 and row["metrics"]["toy.eval_acc"].mean == pytest.approx(90.0)
    assert row["metrics"]["toy.derived_acc"].n == 1  # no derivation given: the recorded value is kept
    (derived,) = info.candidate_rows(space, recs, {1: {"toy.derived_acc": 0.7}})
    assert derived["metrics"]["toy.derived_acc"].mean == pytest.approx(70.0)  # the report's value, not the record's


def test_the_matched_loss_reading_is_a_report_value_never_written_into_records():
    assert paper.MATCHED_KEY in scores.derived()
    assert paper.MATCHED_KEY not in {m.key for m in scores.SCORES[paper.GEN].metrics}  # not a trial's metric
    assert paper.readings(None, None) is None  # no step curves: nothing derived
