"""CUDA: bf16 autocast, channels_last, the whole step captured (no host sync), fp32 measuring, the full-shape
candidates compiled and captured, workers per GPU, studies.

Every test is marked `cuda` and skips without a CUDA device: tests/conftest.py excepts exactly these skips
from CI's "a skip fails the run" rule. The full-shape tests (`full_shapes` in their names) are what
benchmarks/gpu_check.sh's `capture` phase runs with its figures, so its `tests` phase leaves them out.
"""

import math
import sys
from pathlib import Path

import pytest
import torch

from coatsearch import api
from coatsearch.cli import main
from coatsearch.models import build
from coatsearch.runner import workers
from coatsearch.space.objects import load_space
from coatsearch.training import capture, curves, fit, tuning
from coatsearch.training.data import load
from coatsearch.training.subsets import subset
from coatsearch.vocab.specs import DataSpec, OptimSpec
from tests.tiny import TINY

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import gpu_check as G  # noqa: E402  (the GPU check's full-shape fit and rel-pos gradient check)

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
    assert torch.backends.cudnn.benchmark  # shapes are fixed


def test_measuring_on_cuda_is_fp32():
    net = tiny_model().to(CUDA)
    seen = []
    net.register_forward_hook(lambda m, i, o: seen.append(o.dtype))
    x, y = torch.randn(40, 1, 16, 16, device=CUDA), torch.randint(0, 10, (40,), device=CUDA)
    loss, _ = curves.eval_tensors(net, x, y, 16)
    assert seen == [torch.float32] * 3 and math.isfinite(loss)


def test_compile_on_cuda_trains_and_matches_eager_closely(pool):
    eager = fit.fit(tiny_model(), pool, pool, OptimSpec(batch_size=32, compile=False), 2, seed=0, device=CUDA)
    comp = fit.fit(tiny_model(), pool, pool, OptimSpec(batch_size=32, compile=True), 2, seed=0, device=CUDA)
    assert comp.compiled and not eager.compiled
    assert comp.train_loss[-1] == pytest.approx(eager.train_loss[-1], rel=0.1, abs=0.05)


def test_compiled_cuda_step_is_captured_and_never_syncs_the_host(pool, monkeypatch):
    from torch._dynamo.utils import counters

    real = fit._Run.step

    def strict(self, i, idx, global_step):
        """A replay (after the warm-up steps, where the compile runs, and the recording, which syncs) raises on any
        host sync."""
        torch.cuda.set_sync_debug_mode("error" if global_step > capture.WARMUP else "default")
        try:
            return real(self, i, idx, global_step)
        finally:
            torch.cuda.set_sync_debug_mode("default")

    monkeypatch.setattr(fit._Run, "step", strict)
    counters.clear()
    h = fit.fit(tiny_model(), pool, pool, OptimSpec(batch_size=32, compile=True), 3, seed=0, device=CUDA)
    assert h.compile_mode == "compiled+captured" and h.compiled and h.fallback is None
    assert counters["inductor"]["cudagraph_skips"] == 0
    assert math.isfinite(h.final_train_loss) and h.steps == 3 * (len(pool) // 32)


def test_a_captured_step_trains_as_the_eager_step_and_its_graph_is_reused(pool):
    capture.clear()
    eager = fit.fit(tiny_model(), pool, pool, OptimSpec(batch_size=32, compile=False), 2, seed=0, device=CUDA)
    first = fit.fit(tiny_model(), pool, pool, OptimSpec(batch_size=32), 2, seed=0, device=CUDA)
    (slot,) = capture._SLOTS.values()
    graph = slot.graph
    again = fit.fit(tiny_model(), pool, pool, OptimSpec(batch_size=32), 2, seed=0, device=CUDA)
    assert (first.compile_mode, again.compile_mode) == ("captured", "captured") and not first.compiled
    assert first.fallback is None and list(capture._SLOTS.values()) == [slot] and slot.graph is graph
    assert first.train_loss[-1] == pytest.approx(eager.train_loss[-1], rel=0.1, abs=0.05)
    assert again.train_loss[-1] == pytest.approx(first.train_loss[-1], rel=0.1, abs=0.05)


@pytest.mark.parametrize("name", ["C-T-T-T", "ViT_REL"])
def test_full_shapes_compile_and_capture_a_paper_candidate(name):
    """The full profile's shapes and recipe, compiled and captured: no fallback, no skipped graph, and the rel-pos
    bias gradient of the default attention kernel equals the MATH kernel's."""
    got = G.full_shapes(name, True, CUDA)
    assert got["mode"] == "compiled+captured" and got["fallback"] is None and got["cudagraph_skips"] == 0, got
    assert got["steps"] == G.CAPTURE_STEPS and math.isfinite(got["eval_loss"])
    spec = api.load_space(G.SPACE, "full").candidate(name).spec
    torch.manual_seed(0)
    x = torch.randn(32, spec.in_chans, spec.image_size, spec.image_size, device=CUDA)
    y = torch.randint(0, spec.num_classes, (32,), device=CUDA)
    assert G.relpos_grad_error(build(spec).to(CUDA, memory_format=torch.channels_last), x, y) < G.RELPOS_TOL


def test_evaluation_on_cuda_takes_large_batches():
    assert curves.eval_batch(CUDA, 128) == curves.EVAL_BATCH_CUDA >= 1024
    assert curves.eval_batch(torch.device("cpu"), 128) == 256


def test_auto_compile_on_cuda_captures(pool):
    h = fit.fit(tiny_model(), pool, pool, OptimSpec(batch_size=32), 2, seed=0, device=CUDA)
    assert math.isfinite(h.final_eval_loss) and h.steps == 2 * (len(pool) // 32) >= capture.MIN_STEPS
    assert h.compile_mode == "captured" and h.fallback is None


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["optuna", "ray"])
def test_quick_study_on_cuda_through_both_backends(tmp_path, backend):
    flags = ["--workers", "1"] if backend == "optuna" else ["--gpus-per-trial", "0.5", "--cpus-per-trial", "1"]
    args = ["run", str(TINY), "--profile", "quick", "--device", "cuda", "--backend", backend, *flags]
    assert main([*args, "--studies-dir", str(tmp_path / "s"), "--no-report", "--quiet"]) == 0
    rows = api.results("tiny-quick", tmp_path / "s")
    assert (rows["state"] == "COMPLETE").all() and rows["device"].str.startswith("cuda").all()


def test_workers_auto_on_cuda_shares_each_gpu():
    space = api.load_space(TINY, "quick")  # 2 trials
    procs, threads, note = tuning.cuda_workers(100, CUDA)
    assert procs >= 1 and threads >= 1 and "MPS" in note
    assert workers.processes(space, "auto", None, "cuda", say=False) == tuning.cuda_workers(2, CUDA)[:2]
    assert load_space(TINY).candidates
    assert tuning.worker_device("cuda", 1) == f"cuda:{1 % torch.cuda.device_count()}"
