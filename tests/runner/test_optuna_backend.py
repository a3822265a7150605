"""The Optuna engine end to end: every score recorded, kill -9, an unmatchable budget, parallel workers, pruning.

What both engines guarantee (resuming, failing trials, --trials, the records) is tests/engines/test_contract.py's."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from optuna.trial import TrialState

from coatsearch.space.objects import load_space
from coatsearch.storage import record as R
from coatsearch.storage import store
from coatsearch.storage import trials as P
from tests.support.engine import run, trials
from tests.tiny import TINY, tiny_variant

pytestmark = pytest.mark.slow  # every test runs the engine end to end (workers, kill -9, resumes)


def variant(tmp_path: Path, old: str, new: str) -> Path:
    """tiny.yaml with `old` (which must occur) replaced by `new`, as tmp_path/space.yaml."""
    return tiny_variant(tmp_path, (old, new))


def test_end_to_end_records_every_score(tmp_path):
    summary = run(TINY, tmp_path)
    assert (summary.planned, summary.complete, summary.failed, summary.ran_now) == (2, 2, 0, 2)
    done = trials(tmp_path)
    assert {t.params["candidate"] for t in done} == {"C-C", "C-T"}
    for t in done:
        a = R.flat(store.record(t).run)
        assert set(t.user_attrs) == {"key", "run_id", "backend", "worker", "record", "network"}  # the result: one
        assert t.value == a["generalization.val_acc"] and 0.0 <= t.value <= 1.0  # the objective reads validation
        assert a["generalization.gap"] == pytest.approx(a["generalization.train_acc"] - a["generalization.eval_acc"])
        assert len(a["curves.generalization"]["epoch_eval_acc"]) == 2 and a["curves.generalization"]["step"][0] == 0
        assert 0.0 <= a["transfer.finetune_acc"] <= 1.0 and a["curves.transfer"]["step"][-1] == 2
        assert a["transfer.gain"] == pytest.approx(a["transfer.finetune_acc"] - a["transfer.scratch_acc"])
        assert a["macs"] > 0 and abs(a["budget_error"]) <= 0.1 and a["seed"] == 0
        assert a["env"]["versions"]["torch"] and a["wall_s"] > 0
    study_attrs = store.load_study(tmp_path, "s").user_attrs["space"]
    assert study_attrs["space"] == "tiny" and "generalization" in study_attrs["space_yaml"]


def test_same_seed_gives_the_same_metrics(tmp_path):
    run(TINY, tmp_path / "a")
    run(TINY, tmp_path / "b")

    def losses(folder):
        return sorted(
            (t.params["candidate"], store.record(t).run.curves["generalization"].points.train_loss)
            for t in trials(folder)
        )

    assert losses(tmp_path / "a") == losses(tmp_path / "b")


def test_unmatchable_budget_fails_that_trial_with_the_reason(tmp_path):
    space = variant(tmp_path, "- {name: C-T}", "- {name: C-T, budget: {macs: 1K, scale: width}}")
    run(space, tmp_path)
    failed = [t for t in trials(tmp_path) if t.state == TrialState.FAIL]
    assert len(failed) == 1 and failed[0].user_attrs["fail_reason"].startswith("budget not met: smallest width")


def test_parallel_workers_run_each_planned_trial_once(tmp_path):
    space = variant(tmp_path, "study: {seeds: [0]", "study: {seeds: [0, 1]")
    summary = run(space, tmp_path, workers=2)
    assert (summary.planned, summary.complete) == (4, 4)
    keys = [t.user_attrs["key"] for t in trials(tmp_path)]
    assert sorted(keys) == sorted(set(keys)) and len(keys) == 4
    assert len({t.user_attrs["worker"]["pid"] for t in trials(tmp_path)}) >= 1


def test_kill_9_mid_trial_then_rerun_trains_it_again(tmp_path):
    slow = "generalization: {per_class: 100, epochs: 40}"
    space = variant(tmp_path, "generalization: {per_class: 20, epochs: 2}", slow)
    cmd = [
        sys.executable,
        "-m",
        "coatsearch.cli",
        "run",
        str(space),
        "--study",
        "s",
        "--studies-dir",
        str(tmp_path),
        "--no-report",
        "--quiet",
        "--trials",
        "1",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    journal = store.storage_file(tmp_path, "s")
    deadline = time.time() + 120
    while time.time() < deadline:
        if journal.exists() and any(t.state == TrialState.RUNNING for t in trials(tmp_path)):
            break
        time.sleep(0.5)
    else:
        pytest.fail("the run never started a trial")
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    killed = [t for t in trials(tmp_path) if t.state == TrialState.RUNNING]
    assert len(killed) == 1
    short = load_space(TINY)  # the short schedule, on purpose: recorded in place (the same study resumes)
    record = {**P.space_record(short), "form": P.space_form(short)}
    store.load_study(tmp_path, "s").set_user_attr("space", record)
    summary = run(TINY, tmp_path)
    states = {t.number: t.state for t in trials(tmp_path)}
    assert states[killed[0].number] == TrialState.FAIL  # marked interrupted, no reason: its key is free
    assert summary.complete == 2 and summary.failed == 0
    keys = [t.user_attrs["key"] for t in trials(tmp_path) if t.state == TrialState.COMPLETE]
    assert sorted(keys) == sorted(["C-C/seed=0/sample=0", "C-T/seed=0/sample=0"])


def test_search_with_tpe_and_median_pruner_reports_each_epoch(tmp_path):
    space = variant(
        tmp_path,
        "study: {seeds: [0]",
        "search:\n  train.lr: {low: 1.0e-4, high: 1.0e-2, log: true}\n"
        "study: {seeds: [0], samples: 3, sampler: tpe, pruner: median",
    )
    summary = run(space, tmp_path)
    assert summary.planned == 6 and summary.complete + summary.pruned == 6
    done = trials(tmp_path)
    assert len({t.params["train.lr"] for t in done}) == 6
    assert all(1.0e-4 <= t.params["train.lr"] <= 1.0e-2 for t in done)
    assert all(set(t.intermediate_values) <= {0, 1} and t.intermediate_values for t in done)


def test_tiny_study_end_to_end_reports_the_paper_measures(tmp_path):
    from coatsearch.report import write_report

    space = variant(tmp_path, "generalization: {per_class: 20, epochs: 2}",
                    "generalization: {per_class: 20, epochs: 3, eval_every: 1, loss_levels: [5.0, 2.0]}\n"
                    "  capacity: {per_class: 20, max_steps: 4, eval_every: 1}")  # fmt: skip
    space.write_text(space.read_text() + "untestable: {d: 'no depth splits here'}\n")
    run(space, tmp_path)
    done = trials(tmp_path)
    runs = [store.record(t).run for t in done]
    assert len({r.value("generalization.eval_fingerprint") for r in runs}) == 1  # one eval set per study
    assert len({r.value("generalization.train_fingerprint") for r in runs}) == 1  # same subset for a seed
    text = write_report("s", tmp_path, tmp_path / "reports").read_text()
    for part in ("## Generalization at matched training loss", "Ladder (nats): 5, 2", "## Capacity on abundant data",
                 "## Transfer from equal footing", "## Paired data", "not tested at this scale",
                 "matched_loss.png"):  # fmt: skip
        assert part in text, part
    assert (tmp_path / "reports" / "s" / "matched_loss.png").exists()
