"""The planner's GPU count: each run's steps and evaluated images as the space states them, priced at a rate."""

from pathlib import Path

import pytest

from coatsearch import api
from coatsearch.planner import gpu

TINY = Path(__file__).parents[1] / "spaces" / "tiny.yaml"


@pytest.fixture(scope="module")
def counted():
    """The tiny space's GPU plan at an easy rate (1e12 FLOP/s)."""
    return gpu.gpu_plan(api.load_space(TINY), 0.5, peak=2e12)


def test_runs_are_the_spaces_steps_and_batches(counted):
    # generalization: 20 per class x 10 classes = 200 images, batch 64 -> 3 steps an epoch, 2 epochs;
    # pretrain: 50 images (5 classes) in one batch of 50, 1 epoch; fine-tune and scratch: max_steps 2
    for name in ("C-C", "C-T"):
        runs = {r.phase: (r.steps, r.batch) for r in counted.runs[name]}
        assert runs == {"generalization": (6, 64), "pretrain": (1, 50), "transfer": (2, 50), "scratch": (2, 50)}


def test_seconds_are_flops_over_the_rate(counted):
    for name, runs in counted.runs.items():
        macs = counted.macs[name]
        flops = sum(macs * (6 * r.steps * r.batch + 2 * r.eval_images) for r in runs)
        assert counted.trial_s[name] == pytest.approx(flops / 1e12)
        assert all(r.eval_images > 0 for r in runs)  # every run evaluates at least its last point
    assert counted.study_s == pytest.approx(sum(counted.trial_s.values()))  # one seed, no samples
    assert counted.gpu_hours == pytest.approx(counted.study_s / 3600)


def test_more_seeds_cost_proportionally(tmp_path):
    text = TINY.read_text().replace("study: {seeds: [0],", "study: {seeds: [0, 1, 2],")
    three = tmp_path / "tiny3.yaml"
    three.write_text(text)
    one, many = gpu.gpu_plan(api.load_space(TINY), 0.01), gpu.gpu_plan(api.load_space(three), 0.01)
    assert many.study_s == pytest.approx(3 * one.study_s)
