"""Ray's checkpoint API: a Ray trial whose worker dies after a checkpoint is restored by Ray and resumes from it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from coatsearch.runner import optuna_backend
from coatsearch.runner import ray_backend as engine
from coatsearch.space.objects import load_space
from coatsearch.storage import store
from tests.support.checkpoint import DIE_ONCE, EDITS, ROOT, dying_trainable, untimed
from tests.tiny import tiny_variant


def _complete(studies: Path):
    [rec] = [r for r in store.records(store.load_study(studies, "s")) if r.state == "COMPLETE"]
    return rec


@pytest.mark.slow
def test_a_ray_trial_whose_worker_died_resumes_from_rays_checkpoint_to_the_uninterrupted_record(tmp_path, monkeypatch):
    space = load_space(tiny_variant(tmp_path, *EDITS))
    before = torch.get_num_threads()
    torch.set_num_threads(1)  # as the Ray trial with 1 CPU runs
    try:
        optuna_backend.run(space, tmp_path / "optuna", "s", device="cpu", progress=False)
    finally:
        torch.set_num_threads(before)
    mark = tmp_path / "died"
    monkeypatch.setenv(DIE_ONCE, str(mark))  # Ray's workers inherit the environment
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setattr(engine, "_trainable", dying_trainable)  # pickled by reference: the workers import it
    summary = engine.run(space, tmp_path / "ray", "s", device="cpu", progress=False)
    assert mark.exists()  # the worker died once, after its first checkpoint
    assert (summary.complete, summary.failed) == (1, 0)
    whole, again = _complete(tmp_path / "optuna"), _complete(tmp_path / "ray")
    [(fit, step)] = [(r["fit"], r["step"]) for r in again.run.extra["resumed"]]
    assert fit == 1 and step == 20  # its own folder was removed: Ray's copy of the first checkpoint resumed it
    assert "resumed" not in whole.run.extra
    assert untimed(again.run.curves) == untimed(whole.run.curves)  # bit for bit on the CPU
    assert untimed(again.run.metrics) == untimed(whole.run.metrics)
    assert again.value == whole.value
    assert not list((tmp_path / "ray" / "s" / "ray").glob("run-*/trial-*/checkpoint_*"))  # Ray's copies went too
    assert not (tmp_path / "ray" / "s" / "checkpoints" / "C-T").exists()
