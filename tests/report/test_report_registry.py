"""The report takes what it knows about scores from the registry: guards, chance, titles, derived metrics, keys."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from coatsearch import scores
from coatsearch.analysis import speed_tables, tables
from coatsearch.analysis.measure_results import Reading
from coatsearch.analysis.table_rows import GuardCounts
from coatsearch.papers import paper
from coatsearch.scores.base import Guard, Measured, Score, acc
from coatsearch.storage import record as R
from coatsearch.storage.record import TrialRecord

PACKAGE = Path(__file__).resolve().parents[2] / "coatsearch"
READERS = [*(PACKAGE.parent / "lab").glob("*.py")] + [  # analysis, the claims, rendering and the rule's lab
    p for pkg in ("analysis", "papers", "report", "answer") for p in (PACKAGE / pkg).glob("*.py")
]
METRIC_KEY = re.compile(r"[\"'](?:" + "|".join(scores.SCORES) + r")\.[a-z_0-9]+[\"']")  # e.g. "capacity.eval_acc"
CLAIMS = "papers/claims.py"  # the papers' claims: the data that names the measures each claim reads
NAMES = "analysis/constants.py"  # the score names the study tables are named after
# Modules that still name score metrics: at most this many each. A new
# literal anywhere else fails; lower a count when a module stops naming one.
PENDING: dict[str, int] = {}
# Strict, for every module out of PENDING: no score named at all, as a key ("speed.train_ips"), a key's start
# (f"speed.{fact}") or a bare name ("transfer", SCORES["speed"]). Summary sections, figures and space sections named
# like a score take the name from the claims data (claims.CAPACITY_SCORE, SPEED_SCORE, ...), as keys do from scores.
SCORE_NAME = re.compile(r"[\"'](?:" + "|".join(scores.SCORES) + r")[\"'.]")
CLEANED = (
    "lab/calibration.py",
    "analysis/speed_tables.py",
    "report/plots_speed.py",
    "analysis/tables.py",
    "report/markdown_measures.py",
    "report/markdown_speed.py",
    "papers/paper.py",
    "papers/verdicts.py",
)  # once in PENDING, now strict


def _name(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


def test_no_new_literal_metric_key_in_the_report():
    found = {_name(p): len(METRIC_KEY.findall(p.read_text(encoding="utf-8"))) for p in READERS}
    over = {n: k for n, k in found.items() if n not in (CLAIMS, NAMES) and k > PENDING.get(n, 0)}
    assert not over, f"literal metric keys outside {CLAIMS}: {over} (take them from the score registry)"
    assert found[CLAIMS] > 0 and all(n in found for n in PENDING)


def test_a_cleaned_module_names_no_score_at_all():
    found = {_name(p): SCORE_NAME.findall(p.read_text(encoding="utf-8")) for p in READERS}
    over = {n: hits for n, hits in found.items() if n not in (CLAIMS, NAMES) and n not in PENDING and hits}
    assert not over, f"score names in cleaned report modules: {over} (take them from the claims data or registry)"
    assert found[CLAIMS] and set(CLEANED) <= found.keys() - PENDING.keys()  # the claims data does name them


def test_the_claims_data_names_only_registered_scores():
    from coatsearch.analysis import constants as CS
    from coatsearch.papers import claims as C

    named = (
        C.GEN_SCORE,
        C.CAPACITY_SCORE,
        C.TRANSFER_SCORE,
        CS.LENGTH_SCORE,
        CS.SPEED_SCORE,
        CS.ROBUSTNESS_SCORE,
    )
    assert set(named) <= scores.SCORES.keys() and len(set(named)) == len(named)
    assert paper.GEN == C.GEN_SCORE == paper.MATCHED_KEY.partition(".")[0]  # claim (a) reads its derived metric


def _toy(monkeypatch, registry_patch) -> None:
    """A score registered from the test: one guarded run of 4 classes, a title and a single-run headline."""
    toy = Score(
        name="toy",
        section=dict,
        run=lambda ctx, spec: Measured(),
        metrics=(acc("toy.eval_acc", "toy eval acc"),),
        curves=lambda spec: ("toy",),
        epochs=lambda spec: (1,),
        headline="toy.eval_acc",
        single_run=True,
        title="Toy runs",
        guards=(Guard("toy", "toy.eval_acc", ("toy",)),),
        derived=(acc("toy.derived_acc", "toy derived"),),
    )
    registry_patch.setitem(scores.SCORES, "toy", toy)
    for m in (*toy.metrics, *toy.derived):
        monkeypatch.setitem(scores.METRICS, m.key, m)


def _run(number: int, seed: int, value: float) -> TrialRecord:
    run = R.completed(
        R.Identity("T", seed),
        R.Model(),
        Measured.from_json({"toy.eval_acc": value, "toy.derived_acc": 0.5}),
        R.Optimizer(),
    )
    return TrialRecord(number, value, {"candidate": "T", "seed": seed}, None, None, run)


def test_a_registered_score_is_guarded_titled_and_derived(monkeypatch, registry_patch):
    _toy(monkeypatch, registry_patch)
    space = {"candidates": ["T"], "input": [8, 1, 10], "scores": {"toy": {"per_class": 5, "classes": [0, 1, 2, 3]}}}
    assert tables.group_acc()["toy"] == "toy.eval_acc" and tables.chance(space, "toy") == 25.0  # its subset's classes
    assert scores.titles()["toy"] == "Toy runs" and "toy.eval_acc" in scores.v_accs()
    assert scores.derived()[-1] == "toy.derived_acc"
    recs = [_run(0, 0, 0.26), _run(1, 1, 0.9)]  # seed 0 ends within 2 points of chance (25%): failed to train
    (row,) = tables.candidate_rows(space, recs)
    assert row.guards["toy"] == GuardCounts(runs=2, failed=1, not_converged=0, unchecked=2)
    assert row.metrics["toy.eval_acc"].n == 1 and row.metrics["toy.eval_acc"].mean == pytest.approx(90.0)
    assert row.metrics["toy.derived_acc"].n == 1  # no derivation given: the recorded value is kept
    (derived,) = tables.candidate_rows(space, recs, {1: {"toy.derived_acc": Reading(eval_acc=0.7, why="")}})
    assert derived.metrics["toy.derived_acc"].mean == pytest.approx(70.0)  # the report's value, not the record's


def test_the_matched_loss_reading_is_a_report_value_never_written_into_records():
    assert paper.MATCHED_KEY in scores.derived()
    assert paper.MATCHED_KEY not in {m.key for m in scores.SCORES[paper.GEN].metrics}  # not a trial's metric
    assert paper.readings(None, None) is None  # no step curves: nothing derived


def _paced(registry_patch) -> dict[str, str]:
    """The speed score registered as 'pace': its roles name `pace.*` keys, and no score is called 'speed'."""
    speed = scores.SCORES["speed"]
    roles = {r: "pace." + k.partition(".")[2] for r, k in speed.roles.items()}
    registry_patch.delitem(scores.SCORES, "speed")
    registry_patch.setitem(scores.SCORES, "pace", dataclasses.replace(speed, name="pace", roles=roles))
    return roles


def test_the_speed_report_reads_its_keys_by_role(registry_patch, tmp_path):
    roles = _paced(registry_patch)
    facts = {"host": "node-1", "device": "cpu", "threads": 1, "train_batch": 64, "infer_batch": 32, "compiled": False}
    recs = []
    for i, (name, ips) in enumerate((("A", 100.0), ("B", 300.0))):
        rates = {"train_ips": ips, "infer_ips": 2 * ips, "latency_ms": 2.0, "latency_iqr_ms": 0.1, "seconds": 4.0}
        measured = {roles[k]: v for k, v in {**rates, **facts}.items()} | {"generalization.eval_acc": 0.8 + i / 10}
        run = R.completed(
            R.Identity(name, 0), R.Model(budget_macs=10), Measured.from_json(measured), R.Optimizer(), wall_s=40.0
        )
        recs.append(TrialRecord(i, 0.5, {"candidate": name, "seed": 0}, None, None, run))
    space = {"candidates": ["A", "B"], "study": {"objective": "generalization.eval_acc"}}
    t = speed_tables.table(space, recs)
    assert t is not None
    rows = {r.candidate: r for r in t.rows}
    rates = {n: r.rates for n, r in rows.items()}
    assert rates["B"]["pace.train_ips"] == (300.0, None) and rates["A"]["pace.infer_latency_ms"] == (2.0, None)
    assert rows["A"].cost_share == 0.1 and rows["A"].facts["infer_batch"] == ("32",) and rows["B"].pareto
    assert [(s.key, s.fast, s.ratio) for s in t.spread] == [("pace.train_ips", "B", 3.0),
                                                                         ("pace.infer_ips", "B", 3.0)]  # fmt: skip


def test_a_role_is_declared_once_and_a_missing_one_names_those_declared():
    assert scores.role("train_ips") == scores.SCORES["speed"].roles["train_ips"]
    with pytest.raises(KeyError, match=r"declared: .*\btrain_ips\b"):
        scores.role("steps_per_joule")
    twin = dataclasses.replace(scores.SCORES["speed"], name="pace", metrics=(), roles={"host": "pace.host"})
    with pytest.raises(ValueError, match=r"roles must be new.*\['host'\]"):
        scores.register_score(twin)
    assert "pace" not in scores.SCORES
