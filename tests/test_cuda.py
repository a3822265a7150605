"""CUDA: bf16 autocast, channels_last, the captured step (no host sync), workers and GPUs per trial, studies.

Every test is marked `cuda` and skips without a CUDA device: tests/conftest.py excepts exactly these skips
from CI's "a skip fails the run" rule.
"""

import math

import pytest
import torch

from coatsearch import api
from coatsearch.cli import main
from coatsearch.models import build
from coatsearch.space.objects import load_space
from coatsearch.training import curves, fit
from coatsearch.training.data import load, subset
from coatsearch.vocab.specs import DataSpec, OptimSpec
from tests.tiny import TINY

CUDA = torch.device("cuda")
pytestmark = [pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]


@pytest.fixture(scope="module")
def pool():
    tr, _ = load(DataSpec("synthetic"), 16, 1)
    return subset(tr, 20, None, seed=0)


def tiny_model():
    return build(api.load_space(TINY).candidates[1].spec)  # C-T: convs and attention


def test_training_runs_bf16_autocast_and_channels_last(pool, monkeypatch):
    seen = {}
    real = fit._Run._loss

    def spy(self, xb, yb):
        seen["format"] = xb.is_contiguous(memory_format=torch.channels_last)
        seen["autocast"] = torch.is_autocast_enabled("cuda")
        with curves.autocast(CUDA):
            seen["dtype"] = self.run_model(xb).dtype
        return real(self, xb, yb)

    monkeypatch.setattr(fit._Run, "_loss", spy)
    h = fit.fit(tiny_model(), pool, pool, OptimSpec(batch_size=32, compile=False), 1, seed=0, device=CUDA)
    assert seen["format"] and seen["dtype"] == torch.bfloat16 and math.isfinite(h.final_train_loss)


def test_compile_on_cuda_trains_and_matches_eager_closely(pool):
    eager = fit.fit(tiny_model(), pool, pool, OptimSpec(batch_size=32, compile=False), 2, seed=0, device=CUDA)
    comp = fit.fit(tiny_model(), pool, pool, OptimSpec(batch_size=32, compile=True), 2, seed=0, device=CUDA)
    assert comp.compiled and not eager.compiled
    assert comp.train_loss[-1] == pytest.approx(eager.train_loss[-1], rel=0.1, abs=0.05)


def test_compiled_cuda_step_is_captured_and_never_syncs_the_host(pool, monkeypatch):
    from torch._dynamo.utils import counters

    real = fit._Run.step

    def strict(self, i, idx, global_step):
        """A step after the compile and the CUDA-graph recording (steps 0-2) raises on any host sync."""
        torch.cuda.set_sync_debug_mode("error" if global_step >= 3 else "default")
        try:
            return real(self, i, idx, global_step)
        finally:
            torch.cuda.set_sync_debug_mode("default")

    monkeypatch.setattr(fit._Run, "step", strict)
    counters.clear()
    h = fit.fit(tiny_model(), pool, pool, OptimSpec(batch_size=32, compile=True), 3, seed=0, device=CUDA)
    assert h.compile_mode == "reduce-overhead" and h.compiled and counters["inductor"]["cudagraph_skips"] == 0
    assert math.isfinite(h.final_train_loss) and h.steps == 3 * (len(pool) // 32)


def test_evaluation_on_cuda_takes_large_batches():
    assert curves.eval_batch(CUDA, 128) == curves.EVAL_BATCH_CUDA >= 1024
    assert curves.eval_batch(torch.device("cpu"), 128) == 256


def test_auto_compile_on_cuda_finishes(pool):
    h = fit.fit(tiny_model(), pool, pool, OptimSpec(batch_size=32), 2, seed=0, device=CUDA)
    assert math.isfinite(h.final_eval_loss) and h.steps == 2 * (len(pool) // 32)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["optuna", "ray"])
def test_quick_study_on_cuda_through_both_backends(tmp_path, backend):
    flags = ["--workers", "1"] if backend == "optuna" else ["--gpus-per-trial", "0.5", "--cpus-per-trial", "1"]
    args = ["run", str(TINY), "--profile", "quick", "--device", "cuda", "--backend", backend, *flags]
    assert main([*args, "--studies-dir", str(tmp_path / "s"), "--no-report", "--quiet"]) == 0
    rows = api.results("tiny-quick", tmp_path / "s")
    assert (rows["state"] == "COMPLETE").all() and rows["device"].str.startswith("cuda").all()


def test_workers_auto_on_cuda_is_one_process_with_every_core(tmp_path):
    space = api.load_space(TINY, "quick")
    assert api._workers(space, "auto", None, "cuda", say=False) == (1, None)
    assert load_space(TINY).candidates  # the space file itself is unchanged by the run
