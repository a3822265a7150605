"""The report's speed table, Pareto front and >1.5x note, from fabricated records (no timing)."""

from __future__ import annotations

import dataclasses
import json

from coatsearch.analysis import speed_tables as SP
from coatsearch.analysis.tables import jsonable
from coatsearch.papers import frames
from coatsearch.report import markdown_speed as MS
from coatsearch.report import plots_speed, summarize
from coatsearch.report import view_speed as VS
from coatsearch.report.section import ReportContext
from coatsearch.scores.base import Measured
from coatsearch.storage import record as R

SPACE = {"candidates": ["A", "B", "C"], "study": {"objective": "generalization.eval_acc"}}
# candidate -> (eval acc, train img/s, infer img/s): B is slower and less accurate than A (dominated)
TRUTH = {"A": (0.85, 300.0, 900.0), "B": (0.80, 250.0, 800.0), "C": (0.90, 100.0, 400.0)}


def _records(truth=TRUTH, matched: bool = True, speed: bool = True) -> list[R.TrialRecord]:
    out = []
    for i, (name, (acc, train, infer)) in enumerate(truth.items()):
        for seed in (0, 1):
            measured = {
                "generalization.eval_acc": acc + 0.01 * seed,
                "speed.train_ips": train * (1 + 0.02 * seed),
                "speed.infer_ips": infer,
                "speed.infer_latency_ms": 2.0,
                "speed.infer_latency_iqr_ms": 0.1,
                "speed.seconds": 3.0,
                "speed.host": "node-1",
                "speed.device": "cpu (x86_64)",
                "speed.threads": 1,
                "speed.train_batch": 128,
                "speed.infer_batch": 128,
                "speed.compiled": False,
            }
            measured = measured if speed else {}
            model = R.Model(macs=10_500_000, params=600_000, budget_macs=10_500_000 if matched else None)
            run = R.completed(R.Identity(name, seed), model, Measured.from_json(measured), R.Optimizer(), wall_s=100.0)
            out.append(R.TrialRecord(2 * i + seed, 0.5, {"candidate": name}, None, None, run))
    return out


def _speed(table: SP.SpeedTable | None) -> VS.Speed | None:
    """The speed section's Info from a speed table."""
    summary = dataclasses.replace(summarize("s", SPACE, []).summary, speed=table)
    return VS.speed(ReportContext("s", SPACE, frames.build(SPACE, []), summary))


def test_pareto_front():
    assert SP.pareto([(1, 1), (2, 0), (0.5, 0.5), (1, 1)], (True, True)) == [True, True, False, True]
    assert SP.pareto([(1, 5), (2, 3)], (True, False)) == [False, True]  # minimize the second: (2, 3) beats (1, 5)


def test_speed_table_rows_front_and_note():
    t = SP.table(SPACE, _records())
    assert t is not None
    rows = {r.candidate: r for r in t.rows}
    assert list(rows) == ["A", "B", "C"] and t.acc_key == "generalization.eval_acc"
    assert rows["A"].rates["speed.train_ips"][0] == 303.0  # mean of 300 and 306
    assert rows["A"].acc is not None and rows["A"].acc[0] == 85.5 and rows["A"].n == 2 and rows["A"].cost_share == 0.03
    assert {n: r.pareto for n, r in rows.items()} == {"A": True, "B": False, "C": True}
    spread = {s.key: s for s in t.spread}
    assert spread["speed.train_ips"].fast == "A" and spread["speed.train_ips"].slow == "C"
    assert spread["speed.train_ips"].ratio == 303.0 / 101.0
    assert list(jsonable(t)["rows"][0]) == ["candidate", "n", "speed.train_ips", "speed.infer_ips",
                                            "speed.infer_latency_ms", "speed.infer_latency_iqr_ms", "speed.seconds",
                                            "macs", "params", "acc", "cost_share", "matched", "network", "device",
                                            "threads", "train_batch", "infer_batch", "compiled", "pareto"]  # fmt: skip
    text = MS.section(_speed(t))
    assert "## Measured speed" in text and "cpu (x86_64)" in text and "**Note.**" in text and "3.00x" in text
    assert "node-1" not in text  # the runs' host: in their records, never a report
    assert "node-1" not in json.dumps(jsonable(t))
    assert "3.0% of a trial" in text


def test_no_note_within_the_spread_and_none_without_speed():
    close = {"A": (0.85, 300.0, 900.0), "B": (0.80, 250.0, 800.0)}
    text = MS.section(_speed(SP.table(SPACE, _records(close))))
    assert "**Note.**" not in text and "within 1.20x" in text
    assert SP.table(SPACE, _records(speed=False)) is None
    assert _speed(None) is None  # no speed measured: the section is left out


def test_unmatched_candidates_get_no_spread():
    t = SP.table(SPACE, _records(matched=False))
    assert t is not None and t.spread == ()


def test_figure_is_drawn(tmp_path):
    assert plots_speed.draw(_speed(SP.table(SPACE, _records())), tmp_path / "acc_vs_speed.png") == "acc_vs_speed.png"
    assert (tmp_path / "acc_vs_speed.png").stat().st_size > 1000


def test_regime_baselines_stay_off_the_front():
    truth = {**TRUTH, "baseline-linear": (0.95, 5000.0, 90000.0)}  # would dominate every layout
    space = {**SPACE, "candidates": [*SPACE["candidates"], "baseline-linear"]}
    t = SP.table(space, _records(truth))
    assert t is not None
    rows = {r.candidate: r for r in t.rows}
    assert rows["baseline-linear"].pareto is None and rows["A"].pareto and rows["C"].pareto
    assert "pareto" not in jsonable(rows["baseline-linear"])
