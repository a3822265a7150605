"""The `speed` score: measured train/inference throughput and batch-1 latency; never asserts timings."""

import math
from collections.abc import Mapping
from typing import Any

import pytest
import torch

from coatsearch.models import build
from coatsearch.scores import METRICS, SCORES, ScoresSpec, TrialInput, measure
from coatsearch.scores.speed import SpeedSpec
from coatsearch.training import throughput
from tests.tiny import DATA, MODEL, OPTIM

SMALL = SpeedSpec(infer_batch=16, warmup=1, repeats=3, latency_repeats=4)
RATES = ("speed.train_ips", "speed.infer_ips", "speed.infer_latency_ms", "speed.seconds")


def _speed(spec: SpeedSpec = SMALL) -> Mapping[str, Any]:
    return measure(TrialInput(MODEL, OPTIM, DATA, ScoresSpec(speed=spec), seed=0), torch.device("cpu")).metrics


def test_speed_metrics_are_positive_and_finite():
    out = _speed()
    for key in RATES:
        assert isinstance(out[key], float) and math.isfinite(out[key]) and out[key] > 0, key
    assert math.isfinite(out["speed.infer_latency_iqr_ms"]) and out["speed.infer_latency_iqr_ms"] >= 0
    assert out["speed.train_batch"] == OPTIM.batch_size and out["speed.infer_batch"] == 16
    assert out["speed.host"] and out["speed.device"].startswith("cpu") and out["speed.compiled"] is False
    assert {k for k in out if k in METRICS} == {m.key for m in SCORES["speed"].metrics}


def test_speed_runs_at_the_trial_thread_count():
    before = torch.get_num_threads()
    try:
        for n in (1, 2):
            torch.set_num_threads(n)
            assert _speed()["speed.threads"] == n
            assert torch.get_num_threads() == n  # measuring leaves the worker's setting alone
    finally:
        torch.set_num_threads(before)


def test_plan_threads_are_used_then_restored():
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        plan = throughput.ThroughputPlan(
            train_batch=8, infer_batch=8, warmup=1, repeats=3, latency_repeats=4, threads=1
        )
        sp = throughput.measure(build(MODEL), (1, 16, 16), 5, OPTIM, torch.device("cpu"), plan)
        assert sp.threads == 1 and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_train_batch_follows_the_run_unless_stated():
    assert (
        _speed(SpeedSpec(infer_batch=8, train_batch=4, warmup=1, repeats=3, latency_repeats=4))["speed.train_batch"]
        == 4
    )


def test_speed_section_is_validated():
    from pydantic import TypeAdapter, ValidationError

    with pytest.raises(ValidationError):
        TypeAdapter(SpeedSpec).validate_python({"repeats": 1})
    with pytest.raises(ValidationError):
        TypeAdapter(SpeedSpec).validate_python({"warmup": 2, "threads": 3})
