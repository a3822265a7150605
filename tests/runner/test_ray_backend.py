"""The Ray engine: two trials at once, failures beside ASHA's pruning, the searcher's outcomes, the address.

What both engines guarantee (the same records and metrics as the optuna backend, resuming, failing trials, the
caller's signal handlers) is tests/engines/test_contract.py's."""

import json
import signal
import socket
from pathlib import Path

import pytest
import ray
from optuna.trial import TrialState

from coatsearch.errors import UserError
from coatsearch.runner import ray_backend as engine
from coatsearch.space.objects import load_space
from coatsearch.storage import record as R
from coatsearch.storage import store
from tests.tiny import TINY, tiny_variant


def run(space_path: Path, studies: Path, **kw):
    return engine.run(load_space(space_path), studies, "s", progress=False, **kw)


def trials(studies: Path) -> list:
    return store.load_study(studies, "s").get_trials()


@pytest.fixture(autouse=True)
def no_ray_left():
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    yield
    if ray.is_initialized():  # run() shuts down what it started; make sure of it even on failure
        ray.shutdown()
        pytest.fail("ray_backend.run left Ray running")
    after = {sig: signal.getsignal(sig) for sig in before}
    for sig, handler in before.items():  # a local ray.init replaces them; run() gives the caller's back
        signal.signal(sig, handler)
    assert after == before, "ray_backend.run left Ray's signal handlers installed"


def test_an_unreachable_address_is_a_user_error(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends: nobody listens there
    with pytest.raises(UserError, match="no Ray cluster at 127.0.0.1"):
        run(TINY, tmp_path, address=f"127.0.0.1:{port}")
    with pytest.raises(UserError, match="HOST:PORT"):
        run(TINY, tmp_path, address="nowhere")


@pytest.mark.slow
def test_two_trials_at_once_with_rays_results_beside_the_study(tmp_path):
    summary = run(TINY, tmp_path)
    assert (summary.planned, summary.complete, summary.failed, summary.ran_now) == (2, 2, 0, 2)
    spans = [(R.flat(store.record(t).run)["ray"]["start"], R.flat(store.record(t).run)["ray"]["end"])
             for t in trials(tmp_path)]  # fmt: skip
    assert len(spans) == 2 and max(s for s, _ in spans) < min(e for _, e in spans)  # both ran at the same time
    assert list((tmp_path / "s" / "ray").glob("run-*/trial-*"))  # Ray's results beside the study


@pytest.mark.slow
def test_a_failing_trial_is_recorded_not_retried_and_scores_reach_the_study(tmp_path):
    space = tiny_variant(
        tmp_path,
        ("- {name: C-C, layout: C-C}", "- {name: C-C, layout: C-C, train: {lr: 1.0e+12}}"),
        ("study: {seeds: [0]", "study: {seeds: [0], pruner: hyperband"),
    )
    summary = run(space, tmp_path, trials=5)
    assert (summary.complete, summary.failed, summary.ran_now) == (1, 1, 2)
    done = {t.params["candidate"]: t for t in trials(tmp_path)}
    assert "non-finite loss" in done["C-C"].user_attrs["fail_reason"] and done["C-C"].state == TrialState.FAIL
    ok = done["C-T"]  # alone on ASHA's rungs, so never stopped; its per-epoch scores are in the study
    epochs = store.record(ok).run.curves["generalization"].epoch_val_acc  # the pruner reads validation
    assert ok.intermediate_values == dict(enumerate(epochs))


def test_outcomes_of_ray_trials_as_the_study_records_them(tmp_path):
    space = load_space(TINY)
    study = store.create_study(space, tmp_path, "s")
    searcher = engine.StudySearcher(space, study, tmp_path / "s", "r1", None)
    configs = {rid: searcher.suggest(rid) for rid in ("a", "b")}
    assert searcher.suggest("c") == engine.Searcher.FINISHED
    assert {json.loads(c["params"]) == {} for c in configs.values()} == {True}
    searcher.on_trial_result("a", {engine.STEP: 1, engine.SCORE: 0.25})
    searcher.on_trial_complete("a", {engine.STEP: 2, engine.SCORE: 0.5})  # stopped by ASHA
    assert searcher.close() == 1  # "b" never finished: interrupted
    by = {t.number: t for t in study.get_trials()}
    pruned, left = by[configs["a"]["number"]], by[configs["b"]["number"]]
    assert pruned.state == TrialState.PRUNED and pruned.intermediate_values == {0: 0.25, 1: 0.5}
    assert left.state == TrialState.FAIL and "fail_reason" not in left.user_attrs  # its key is free again
    assert pruned.user_attrs["backend"] == "ray"
    state, run, _ = engine.outcome(None, True, tmp_path)
    assert state == "FAIL" and run is not None and "failed 3 times" in (run.fail_reason or "")


def test_asha_only_when_the_space_prunes(tmp_path):
    assert engine.scheduler(load_space(TINY)) is None
    asha = engine.scheduler(load_space(tiny_variant(tmp_path, ("seeds: [0],", "seeds: [0], pruner: median,"))))
    assert isinstance(asha, engine.ASHAScheduler) and asha._max_t == 2
