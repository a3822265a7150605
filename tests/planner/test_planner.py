"""The planner: its prediction against a measured tiny run, its power against report.stats, --budget, the CLI."""

import json
import math
import re

import numpy as np
import pytest
from scipy.stats import t as scipy_t

import coatsearch
from coatsearch import api
from coatsearch.analysis import constants as CS
from coatsearch.analysis import stats as S
from coatsearch.analysis.results import Pair
from coatsearch.analysis.table_rows import CandidateRow
from coatsearch.cli import main
from coatsearch.cli_study import status_text
from coatsearch.papers import claims as C
from coatsearch.papers import verdicts as V
from coatsearch.planner import power as P
from coatsearch.planner import predict as R
from tests.tiny import TINY


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """`coatsearch run` on the tiny space at one worker: it plans first, stores plan.json, then runs and reports.

    One intra-op thread (the pilot and the run take the thread count as set): on a shared, oversubscribed
    machine two threads make single steps erratic (0.3-4.5 s for a step that takes 0.06 s on one thread).
    """
    import torch

    root = tmp_path_factory.mktemp("plan")
    studies, reports = root / "studies", root / "reports"
    argv = ["run", str(TINY), "--workers", "1", "--device", "cpu", "--quiet"]
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        code = main([*argv, "--studies-dir", str(studies), "--reports-dir", str(reports)])
    finally:
        torch.set_num_threads(before)
    assert code == 0
    return studies, reports


@pytest.mark.slow
def test_prediction_is_within_a_factor_of_two_of_the_measured_run(tiny_run):
    studies, reports = tiny_run
    stored = json.loads((studies / "tiny" / "plan.json").read_text())
    check = json.loads((reports / "tiny" / "summary.json").read_text())["plan_check"]
    assert check["predicted_s"] == pytest.approx(stored["study_s"])
    assert check["complete_trials"] == check["planned_trials"] == 2
    assert 0.5 <= check["measured_s"] / check["predicted_s"] <= 2.0  # ratios of two measured quantities
    assert check["measured_over_predicted"] == pytest.approx(check["measured_s"] / check["predicted_s"])
    walls = {r["candidate"]: r["wall_s"] for r in api.results("tiny", studies).to_dict("records")}
    for name, predicted in stored["trial_s"].items():  # each trial too (its own wall time, start-up excluded)
        assert 0.5 <= walls[name] / predicted <= 2.0, (name, walls[name], predicted)


@pytest.mark.slow
def test_run_stores_the_plan_and_status_reads_it(tiny_run):
    studies, _ = tiny_run
    stored = json.loads((studies / "tiny" / "plan.json").read_text())
    assert stored["eta_line"].startswith("plan: 2 trials on cpu, 1 process(es)")
    assert [t["candidate"] for t in stored["timings"]] == ["C-C", "C-T"]
    phases = [f["phase"] for f in stored["timings"][0]["fits"]]
    assert phases == ["generalization", "pretrain", "transfer", "scratch"]  # every run of the tiny trial
    gen = stored["timings"][0]["fits"][0]
    assert gen["steps"] == 6 and gen["batch"] == 64 and gen["images"] == 200  # 2 epochs of 200 images at 64
    st = api.status("tiny", studies)
    assert st.predicted_s == pytest.approx(stored["study_s"]) and st.plan_eta_s == 0
    assert "plan: predicted" in status_text(st)


@pytest.mark.slow
def test_budget_picks_the_most_seeds_that_fit(tiny_run):
    studies, _ = tiny_run
    stored = json.loads((studies / "tiny" / "plan.json").read_text())
    trials, samples, start = stored["trial_s"], stored["samples"], stored["start_s"]
    assert R.makespan(R.study_durations(trials, samples, 1), 1, start) == pytest.approx(stored["study_s"])
    for processes in (1, 2):
        span = [R.makespan(R.study_durations(trials, samples, n), processes, start) for n in (1, 2, 3, 4)]
        assert span == sorted(span)
        budget = (span[2] + span[3]) / 2  # 3 seeds fit, 4 do not
        assert R.most_seeds(trials, samples, processes, budget, start) == 3
        assert R.most_seeds(trials, samples, processes, span[0] * 0.99, start) == 0


def test_makespan_is_the_schedule_in_plan_order():
    assert R.makespan([10, 10, 10], 2) == 20  # the third trial waits for a free worker
    assert R.makespan([30, 10, 10, 10], 2) == 30
    assert R.makespan([10, 10], 2, start=5) == 15
    assert R.study_durations({"A": 1.0, "B": 2.0}, {"B": 2}, 2) == [1.0, 1.0, 2.0, 2.0, 2.0, 2.0]


@pytest.mark.parametrize("text, seconds", [("30m", 1800), ("1h30m", 5400), ("90s", 90), ("45", 2700), ("2h", 7200)])
def test_durations(text, seconds):
    assert R.parse_duration(text) == seconds


def _rows(values: dict[str, list[float]], key: str) -> list[CandidateRow]:
    """Candidate rows as the report builds them (by_seed per metric), for the verdict rules and the planner."""
    return [CandidateRow(n, n, "C-C-T-T", "", (), None, (), len(v), {}, {key: dict(enumerate(v))}, {})
            for n, v in values.items()]  # fmt: skip


def _models(rows: list[CandidateRow]) -> list[P.ModelRow]:
    """The planner's rows of the same candidates, before they run."""
    return [P.ModelRow(r.candidate, r.model_label, r.layout, "adamw", False) for r in rows]


def test_power_numbers_are_report_stats_for_the_same_noise():
    rng = np.random.default_rng(0)
    key = "generalization.eval_acc"
    seeds = 3
    values = {n: list(70 + m + rng.normal(0, 2, seeds)) for n, m in (("C-C-T-T", 2), ("V2", 1), ("V1", 0))}
    rows = _rows(values, key)
    noise = V.noises(rows).of(key)
    earlier = P.Earlier("report", "test", rows, {})
    keys = {n: {key} for n in values}
    (d,) = [c for c in P.plan_claims(_models(rows), keys, {}, seeds, earlier, effect=2.0) if c.claim == "d"]
    assert d.measure == key and d.models == ("C-C-T-T", "V2", "V1") and d.relations == 1  # V2 > V1 is the key one
    assert d.sd_diff == noise.sd_diff
    test = S.PairTest(seeds, 0.0, None, ())
    pairs = [Pair("C-C-T-T", "V2", "≥", False, 0.3, test), Pair("V2", "V1", ">", True, 0.3, test)]  # the report's
    report = V.power(C.CHAIN_CLAIMS[3], key, pairs, noise)  # family: C-C-T-T ≥ V2, V2 > V1
    assert report is not None
    assert d.alpha == report.alpha and d.mdd == report.mdd and d.seeds_for_paper == report.seeds_needed
    k = len(values)
    alpha = CS.VERDICT_ALPHA / 2  # Holm's first level over the whole family (≥ relations are tested too)
    assert d.alpha == alpha and d.mdd == S.detectable(noise.sd_diff, seeds, (k - 1) * (seeds - 1), alpha, CS.POWER)
    assert d.seeds_for_effect == S.seeds_needed(noise.sd_diff, 2.0, k, alpha, CS.POWER)
    assert P.decidable(d, d.seeds_for_effect) and not P.decidable(d, d.seeds_for_effect - 1)


def test_the_prior_stands_in_without_an_earlier_study():
    key = "generalization.eval_acc"
    rows = _rows({"C-C-T-T": [0.0], "V2": [0.0], "V1": [0.0]}, key)
    keys = {r.candidate: {key} for r in rows}
    (d,) = [c for c in P.plan_claims(_models(rows), keys, {}, 4, None, None) if c.claim == "d"]
    assert d.sd_diff == P.PRIOR_SD_DIFF["%"] and "prior" in d.noise_source
    assert d.regime[0].startswith("unknown")


def test_steps_to_a_loss_level_from_a_curve():
    steps = [0, 10, 20, 40, 80]
    losses = [2.3, *(2 / math.sqrt(s) for s in steps[1:])]  # 2 / sqrt(step)
    assert P.steps_to(0.3, steps, losses) == pytest.approx((2 / 0.3) ** 2, rel=1e-6)  # extrapolated: ~44
    assert P.steps_to(0.4, steps, losses) == pytest.approx(25, rel=1e-6)  # crossed between 20 and 40
    assert P.steps_to(0.3, [0, 10, 20], [2.3, 1.0, 1.0]) is None  # flat: never reaches it


def test_regime_names_steps_needed_against_the_profile():
    curve = {"candidate": "C-T-T-T", "step": [0, 10, 20, 40], "train_loss": [2.3, 2 / 10**0.5, 2 / 20**0.5, 0.316],
             "eval_acc": [10, 50, 60, 65]}  # fmt: skip
    earlier = P.Earlier("report", "x", [], {"generalization": [curve]})
    (line,) = P.regime("generalization.matched_acc", ["C-T-T-T"], {"C-T-T-T": {"generalization": 30}}, earlier,
                       0.3, True)  # fmt: skip
    assert line.startswith("C-T-T-T is expected to need ~4") and "the profile gives 30 (out of regime)" in line
    slow = {**curve, "train_loss": [2.3, 2.0, 1.9, 1.8]}  # would need far more than 10x its 40 steps
    (line,) = P.regime("generalization.matched_acc", ["C-T-T-T"], {"C-T-T-T": {"generalization": 30}},
                       P.Earlier("report", "x", [], {"generalization": [slow]}), 0.3, True)  # fmt: skip
    assert "not expected to reach 0.3 nats within 400 steps" in line and "at 1.80 nats" in line


@pytest.mark.slow  # the CLI's plan end to end: its timing pilot trains every candidate
def test_plan_json_and_bad_input(tmp_path, capsys):
    assert callable(coatsearch.plan)
    args = ["plan", str(TINY), "--workers", "1", "--device", "cpu", "--studies-dir", str(tmp_path / "s")]
    assert main([*args, "--reports-dir", str(tmp_path / "r"), "--budget", "soon"]) == 2
    err = capsys.readouterr().err
    assert "--budget 'soon': not a duration; allowed: e.g. 30m" in err and len(err.strip().splitlines()) == 1
    assert main([*args, "--reports-dir", str(tmp_path / "r"), "--budget", "10m", "--json"]) == 0
    said = capsys.readouterr()
    plan = json.loads(said.out)
    assert "coatsearch: piloting 2 candidate(s) of tiny" in said.err  # a line as the pilot starts, one as it ends
    assert re.search(r"coatsearch: piloted 2 candidate\(s\) in \d+ s", said.err)
    assert plan["trials"] == 2 and plan["processes"] == 1 and plan["budget_s"] == 600
    assert plan["budget_seeds"] >= 1 and plan["study_s"] > 0 and plan["peak_mb"] > 0
    assert not (tmp_path / "s").exists() and not (tmp_path / "r").exists()  # planning writes nothing


@pytest.mark.slow
def test_pilot_seeds_run_a_pilot_study_that_gives_the_noise(tmp_path):
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)  # see tiny_run
    try:
        made = coatsearch.plan(TINY, workers=1, device="cpu", studies_dir=tmp_path, reports_dir=tmp_path, pilot_seeds=2)
    finally:
        torch.set_num_threads(before)
    assert made.noise == f"pilot {tmp_path / 'tiny-pilot2'}"
    done = api.results("tiny-pilot2", tmp_path)
    assert sorted(zip(done["candidate"], done["seed"], done["state"], strict=True)) == [
        ("C-C", 0, "COMPLETE"), ("C-C", 1, "COMPLETE"), ("C-T", 0, "COMPLETE"), ("C-T", 1, "COMPLETE")]  # fmt: skip
    assert made.seeds == 1 and made.trials == 2  # the plan is still of the space as written


def test_two_pilot_processes_take_the_candidates_in_plan_order(tmp_path):
    made = coatsearch.plan(TINY, workers=2, device="cpu", studies_dir=tmp_path, reports_dir=tmp_path)
    assert made.processes == 2 and [t.candidate for t in made.timings] == ["C-C", "C-T"]
    assert made.start_s > 0  # each process's start-up (loading the data) is measured on its first candidate
    for t in made.timings:
        assert {f.phase for f in t.fits} == {"generalization", "pretrain", "transfer", "scratch"}
        assert all(f.step_s > 0 and f.point_s > 0 for f in t.fits) and t.peak_mb > 0
    assert made.study_s >= max(made.trial_s.values())  # two trials on two processes: at least the longer one


def _fit(phase: str, steps: int, stops_early: bool) -> R.FitTiming:
    """A piloted run of `steps` steps at 0.1 s a step and 1 s a curve point, never compiled."""
    return R.FitTiming(phase, steps, 11, 32, 500, stops_early, "False", 0.1, 1.0, 0.0, 60.0, 1.3)


def test_an_earlier_study_gives_the_steps_a_run_that_stops_at_a_target_takes():
    trial = R.TrialTiming("A", (_fit("generalization", 1000, True), _fit("accuracy", 1000, False)), 0.0, 0.0, 0.0)
    assert R.trial_seconds(trial) == 2 * (100 + 11)  # no earlier study: the cap, an upper bound
    known = R.with_earlier(trial, {"A": {"generalization": 250.0, "accuracy": 250.0}, "B": {"accuracy": 1.0}})
    gen, acc = known.fits
    assert gen.expected_steps == 250 and acc.expected_steps is None  # only a stop-at-target run is shortened
    assert R.fit_seconds(gen) == 25 + 3 and R.fit_seconds(acc) == 100 + 11  # 250 steps, ceil(11 / 4) points
    longer = R.with_earlier(trial, {"A": {"generalization": 5000.0}})
    assert R.fit_seconds(longer.fits[0]) == 100 + 11  # never beyond the cap


def test_earlier_steps_are_the_median_steps_of_each_candidates_runs(tiny_run):
    studies, _ = tiny_run
    runs = coatsearch.results("tiny", studies_dir=studies)
    runs = runs[runs["state"] == "COMPLETE"]
    steps = P.from_study(studies, "tiny").steps
    cols = [c for c in runs.columns if c.endswith(".steps")]
    assert cols and set(steps) == set(runs["candidate"])
    for col in cols:  # e.g. generalization.steps -> phase generalization
        medians = runs.groupby("candidate")[col].median().dropna()
        assert len(medians) and {c: steps[c][col.split(".")[0]] for c in medians.index} == medians.to_dict()


def test_a_committed_report_gives_each_candidates_longest_run_steps(tmp_path):
    curves = {"generalization": [{"candidate": "A", "step": [0, 100, 300], "train_loss": [2, 1, 0.1]},
                                 {"candidate": "A", "step": [0, 500], "train_loss": [2, 0.1]},  # a second recipe
                                 {"candidate": "B", "step": [], "train_loss": []}],
              "accuracy": [{"candidate": "B", "step": [0, 800], "eval_acc": [10, 70]}]}  # fmt: skip
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "summary.json").write_text(json.dumps({"candidates": [{"candidate": "A"}], "curves": curves}))
    earlier = P.from_report(tmp_path, "s")
    assert earlier is not None and earlier.steps == {"A": {"generalization": 500.0}, "B": {"accuracy": 800.0}}
    trial = R.TrialTiming("A", (_fit("generalization", 1000, True),), 0.0, 0.0, 0.0)
    assert R.fit_seconds(R.with_earlier(trial, earlier.steps).fits[0]) == 50 + 6  # 500 steps, ceil(11 / 2) points


def test_a_report_of_this_version_with_runs_kept_apart_gives_steps_and_the_regime(tmp_path):
    # report.paper.mean_curves keeps each run apart ({"runs": [...]}); the planner reads its median run
    runs = [{"run": 0, "step": [0, 100, 300], "train_loss": [2.3, 0.5, 0.05], "eval_acc": [10, 60, 70]},
            {"run": 1, "step": [0, 150, 400], "train_loss": [2.3, 0.4, 0.08], "eval_acc": [10, 62, 71]},
            {"run": 2, "step": [0, 200], "train_loss": [2.3, 0.3], "eval_acc": [10, 55]}]  # fmt: skip
    curves = {"generalization": [{"candidate": "A", "label": "A", "runs": runs}]}
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "summary.json").write_text(json.dumps({"candidates": [{"candidate": "A"}], "curves": curves}))
    earlier = P.from_report(tmp_path, "s")
    assert earlier is not None and earlier.steps == {"A": {"generalization": 400.0}}  # its longest run
    median = P.representative(curves["generalization"][0])  # the median final train loss (0.08): run 1
    assert (median.step, median.train_loss, median.eval_acc) == ((0, 150, 400), (2.3, 0.4, 0.08), (10, 62, 71))
    [line] = P.regime("generalization.matched_acc", ["A"], {"A": {"generalization": 500}}, earlier, 0.1, False)
    assert line.startswith("A is expected to need ~") and "the profile gives 500 (in regime)" in line


def _vit_rows(sampled: bool = False) -> tuple[list[P.ModelRow], dict]:
    rows = [P.ModelRow(f"{m}-{o}", m, "T", o, sampled) for m in ("ViT_P", "ViT_C") for o in ("adamw", "sgd")]
    return rows, {r.candidate: {P.STEM_MEASURE} for r in rows}


def test_claim_f_power_is_the_gap_contrasts_t_test_at_the_earlier_studys_noise():
    from coatsearch.papers import stem

    rng = np.random.default_rng(1)
    n = 5
    acc = {cell: 70 + rng.normal(0, 1.5, n) for cell in ("ViT_P/adamw", "ViT_P/sgd", "ViT_C/adamw", "ViT_C/sgd")}
    cells = {c: {"lr": 1e-3, "wd": 0.05, "by_seed": dict(enumerate(map(float, v)))} for c, v in acc.items()}
    d = (acc["ViT_P/adamw"] - acc["ViT_P/sgd"]) - (acc["ViT_C/adamw"] - acc["ViT_C/sgd"])
    part = stem.gap_contrast(cells)
    sd = stem.contrast_sd(part.ci, part.n)
    assert sd == pytest.approx(float(np.std(d, ddof=1)), rel=1e-9)  # read back from the report's own interval
    earlier = P.Earlier("study", "test", [], {}, {}, P.StemNoise(sd, n, ()))
    for sampled, family in (
        (False, 2),
        (True, 4),
    ):  # the gap and peak parts; sampled runs add an EDF part per optimizer
        rows, keys = _vit_rows(sampled)
        (f,) = [c for c in P.plan_claims(rows, keys, {}, 4, earlier, effect=3.0) if c.claim == "f"]
        alpha = CS.VERDICT_ALPHA / family
        assert (f.sd_diff, f.family, f.alpha) == (sd, family, alpha)
        assert f.mdd == S.detectable(sd, 4, 3, alpha, CS.POWER)  # a one-sample t test: n - 1 df
        assert f.seeds_for_paper == S.seeds_needed(sd, C.STEM_CLAIM.paper_effect, 2, alpha, CS.POWER)
        assert f.seeds_for_effect == S.seeds_needed(sd, 3.0, 2, alpha, CS.POWER)
        assert f.regime[0].startswith("in regime")
        assert P.decidable(f, f.seeds_for_effect) and not P.decidable(f, f.seeds_for_effect - 1)


def test_claim_f_noise_and_regime_from_a_committed_report(tmp_path):
    part = {"short": "gap contrast", "d": 1.0, "n": 5, "ci": [-0.5, 2.5], "p": 0.1, "status": "unresolved"}
    why = ("out of regime — ViT_P SGD: mean run 56.9% over 5 seed(s) is not above the linear baseline's 63.2% on the "
           "same seeds; ViT_C SGD: mean run 60.0% over 5 seed(s) is not above the linear baseline's 63.2% on the "
           "same seeds (0 of 1 deciding part(s) hold)")  # fmt: skip
    summary = {"candidates": [{"candidate": "ViT_P-adamw"}], "curves": {},
               "claims": [{"id": "a", "why": "x"}, {"id": "f", "why": why, "parts": [part]}]}  # fmt: skip
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "summary.json").write_text(json.dumps(summary))
    earlier = P.from_report(tmp_path, "s")
    assert earlier is not None and earlier.stem is not None
    t = float(scipy_t.ppf(1 - CS.ALPHA / 2, 4))
    assert earlier.stem.sd == pytest.approx(1.5 * math.sqrt(5) / t) and earlier.stem.seeds == 5
    assert [line.split(":")[0] for line in earlier.stem.out_of_regime] == ["ViT_P SGD", "ViT_C SGD"]
    rows, keys = _vit_rows()
    (f,) = [c for c in P.plan_claims(rows, keys, {}, 20, earlier, None) if c.claim == "f"]
    assert all(line.startswith("out of regime") for line in f.regime) and len(f.regime) == 2
    assert f.mdd is not None and f.mdd < C.STEM_CLAIM.paper_effect  # powered, yet
    assert not P.decidable(f, 20)  # out of regime: not decidable


def test_claim_f_without_an_earlier_study_uses_the_prior():
    rows, keys = _vit_rows()
    (f,) = [c for c in P.plan_claims(rows, keys, {}, 4, None, None) if c.claim == "f"]
    assert f.sd_diff == P.PRIOR_SD_DIFF["points"] and "prior" in f.noise_source and f.regime[0].startswith("unknown")


def test_spawned_pilots_run_at_the_threads_the_runs_workers_will_have(monkeypatch):
    """`--workers 2` with no thread count: the run's workers share the cores out (1 each on 2 cores); the pilot's
    spawned processes must too, not keep the default of every core each (it then predicted 5x the run's time)."""
    import os

    from coatsearch.planner import pilot
    from coatsearch.training.tuning import spawned_threads

    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    assert (spawned_threads(2, None), spawned_threads(1, None), spawned_threads(2, 3)) == (1, 2, 3)
    seen = []
    monkeypatch.setattr(pilot, "_in_pool", lambda tasks, args, space, processes: seen.append(args) or [])
    from types import SimpleNamespace

    pilot.run_pilots(None, [SimpleNamespace(name="a"), SimpleNamespace(name="b")], 0, "cpu", 2, None)
    assert seen == [(0, "cpu", 1)]
