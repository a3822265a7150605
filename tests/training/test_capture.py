"""The whole-step capture (training.capture) and the fallbacks around it, on the CPU.

A recorded step on the CPU is a stand-in that runs the step again at each replay (capture._Replay), so these tests
check everything of the captured path but the CUDA graph itself: the static buffers, the augmentation's draws,
the tensor lr, the slot kept per architecture and reloaded in place, and every fallback to eager. The CUDA graph
is tested in tests/training/test_cuda.py (skipped without CUDA).
"""

from __future__ import annotations

import dataclasses
import math
import warnings

import pytest
import torch
from torch import nn

from coatsearch.scores import training as T
from coatsearch.training import capture, data, fit, history, subsets
from coatsearch.vocab.specs import DataSpec, OptimSpec
from tests.support.training import CPU, one_thread, tiny_net  # noqa: F401 - one_thread is an autouse fixture

RECIPE = OptimSpec(lr=3e-3, batch_size=50, randaugment=True, mixup=0.4, label_smoothing=0.1, grad_clip=1.0)


@pytest.fixture(scope="module")
def small() -> tuple[data.TensorData, data.TensorData]:
    """300 training images (6 steps per epoch at batch 50) and 100 eval images."""
    tr, te = data.load(DataSpec("synthetic"), 32, 1)
    return subsets.subset(tr, 30, None, seed=0), subsets.eval_subset(te, 100, None, seed=0)


@pytest.fixture
def cpu_captures(monkeypatch):
    """The CPU captures (with the stand-in graph); no slot left over from another test."""
    monkeypatch.setattr(capture, "DEVICES", ("cuda", "cpu"))
    capture.clear()
    yield
    capture.clear()


def run(small, optim: OptimSpec, epochs: int = 3, net: nn.Module | None = None) -> history.History:
    tr, ev = small
    return fit.fit(net or tiny_net(), tr, ev, optim, epochs, seed=0, device=CPU, eval_every=6)


def close(a: tuple, b: tuple, tol: float = 1e-4) -> bool:
    return all(math.isclose(x, y, rel_tol=tol, abs_tol=tol) for x, y in zip(a, b, strict=True))


def test_when_a_run_captures():
    cuda = torch.device("cuda")
    assert capture.mode_for(cuda, "auto", capture.MIN_STEPS) == "captured"
    assert capture.mode_for(cuda, "auto", capture.MIN_STEPS - 1) is None  # too short to repay its warm-up
    assert capture.mode_for(cuda, True, 2) == "compiled+captured"
    assert capture.mode_for(cuda, False, 10_000) is None
    assert capture.mode_for(CPU, "auto", 10_000) is None and capture.mode_for(CPU, True, 10_000) is None


@pytest.mark.parametrize("optim", [RECIPE, OptimSpec("sgd", lr=0.05, batch_size=50, randaugment=True)])
def test_a_captured_run_trains_as_the_eager_run(small, cpu_captures, optim):
    eager = run(small, dataclasses.replace(optim, compile=False))
    captured = run(small, dataclasses.replace(optim, compile="auto"))
    assert (eager.compile_mode, captured.compile_mode) == ("eager", "captured") and captured.fallback is None
    assert not captured.compiled and eager.steps == captured.steps == 18
    # the same draws and kernels; only the lr (a float32 tensor) and the mixup weight round apart, and that rounding
    # compounds over the 18 steps: on an AMD EPYC host (AVX512 kernels) the eval loss ends 1.1e-4 apart (relative)
    assert close(eager.train_loss, captured.train_loss) and close(eager.curve.eval_loss, captured.curve.eval_loss, 5e-4)
    assert eager.curve.step == captured.curve.step


def test_a_slot_is_kept_per_architecture_and_reloaded_in_place(small, cpu_captures):
    optim = dataclasses.replace(RECIPE, compile="auto")
    first = run(small, optim)
    (slot,) = capture._SLOTS.values()
    weights = [p.data_ptr() for p in slot.net.parameters()]
    net = tiny_net(seed=0)
    again = run(small, optim, net=net)  # same architecture: same slot, its graph replayed from step 0
    assert list(capture._SLOTS.values()) == [slot] and [p.data_ptr() for p in slot.net.parameters()] == weights
    untimed = {"seconds": 0, "images_per_s": 0}
    assert dataclasses.asdict(first) | untimed == dataclasses.asdict(again) | untimed  # zeroed state = a fresh one
    trained = zip(net.state_dict().values(), slot.net.state_dict().values(), strict=True)
    assert all(torch.equal(a, b) for a, b in trained)  # the caller's model got the trained weights
    other = run(small, optim, net=nn.Sequential(tiny_net(), nn.Linear(10, 10)))  # another architecture
    assert len(capture._SLOTS) == 2 and other.compile_mode == "captured"


def test_old_slots_are_dropped(small, cpu_captures, monkeypatch):
    monkeypatch.setattr(capture, "SLOTS_MAX", 2)
    optim = dataclasses.replace(RECIPE, compile="auto")
    for width in (10, 11, 12):
        run(small, optim, epochs=2, net=nn.Sequential(tiny_net(), nn.Linear(10, width), nn.Linear(width, 10)))
    assert len(capture._SLOTS) == 2


@pytest.mark.parametrize("where", ["slot", "record", "replay"])
def test_a_capture_error_falls_back_to_eager_and_is_recorded(small, cpu_captures, monkeypatch, where):
    if where == "slot":
        monkeypatch.setattr(capture.Slot, "__init__", _raise)
    elif where == "record":
        monkeypatch.setattr(capture.Slot, "_record", _raise)
    else:
        calls = {"n": 0}

        def flaky(self) -> None:
            calls["n"] += 1
            if calls["n"] == 5:  # the fifth replay: step WARMUP + 4
                raise RuntimeError("CUDA error: operation not permitted when stream is capturing (injected)")
            self.body()

        monkeypatch.setattr(capture._Replay, "replay", flaky)
    with pytest.warns(UserWarning, match="CUDA-graph capture failed at step"):
        h = run(small, dataclasses.replace(RECIPE, compile="auto"))
    step = {"slot": 0, "record": capture.WARMUP, "replay": capture.WARMUP + 4}[where]
    assert h.compile_mode == "eager" and h.fallback.startswith(f"captured -> eager at step {step}: RuntimeError")
    assert h.steps == 18 and all(math.isfinite(v) for v in h.train_loss) and not capture._SLOTS
    facts = T.run_facts("accuracy", h, small[0], small[1], small[1]).metrics
    assert facts["accuracy.compile_fallback"] == h.fallback and facts["accuracy.compile"] == "eager"


def _raise(*args, **kwargs):
    raise RuntimeError("capture failed (injected)")


def test_a_compile_error_at_a_later_step_falls_back(small, monkeypatch):
    """Not only the first compiled step: an error at any step (a recompile, a new graph) goes on eagerly."""
    calls = {"n": 0}

    def compile_then_fail(model, **kw):
        def forward(x):
            calls["n"] += model.training
            if model.training and calls["n"] == 4:
                raise RuntimeError("InductorError: recompile failed (injected)")
            return model(x)

        return forward

    monkeypatch.setattr(torch, "compile", compile_then_fail)
    with pytest.warns(UserWarning, match="torch.compile failed at step 3"):
        h = run(small, dataclasses.replace(RECIPE, compile=True))
    assert h.compile_mode == "eager" and h.fallback.startswith("compiled -> eager at step 3")
    assert h.steps == 18 and all(math.isfinite(v) for v in h.train_loss)


def test_a_compile_error_in_a_measurement_falls_back(small, monkeypatch):
    def compile_eval_fails(model, **kw):
        def forward(x):
            if not model.training:
                raise RuntimeError("eval graph failed (injected)")
            return model(x)

        return forward

    monkeypatch.setattr(torch, "compile", compile_eval_fails)
    with pytest.warns(UserWarning, match="failed at evaluation"):
        h = run(small, dataclasses.replace(RECIPE, compile=True))
    assert h.fallback.startswith("compiled -> eager at evaluation") and math.isfinite(h.final_eval_loss)
    assert len(h.curve.step) == 4  # 0, 6, 12, 18: every point measured


def test_dense_points_land_on_the_same_step_with_the_cuda_read_cadence(small, monkeypatch):
    """On CUDA the losses are read every step only while a dense point can fall due: the points are the CPU's."""
    tr, ev = small
    fast, ladder = OptimSpec(lr=3e-2, batch_size=20, warmup_epochs=1), (1.5, 1.0, 0.7, 0.5)

    def dense() -> tuple[int, ...]:
        return fit.fit(
            tiny_net(), tr, ev, fast, 6, seed=0, device=CPU, eval_every=50, probe=100, levels=ladder
        ).curve.step

    cpu = dense()
    real = fit._Run.read_every
    monkeypatch.setattr(fit._Run, "read_every", lambda self, meter: real(_Cuda(), meter))
    assert dense() == cpu and len(cpu) > 4  # dense points besides the regular ones
    monkeypatch.setattr(fit._Run, "read_every", lambda self, meter: fit.CHECK_EVERY_CUDA)
    assert dense() != cpu  # the old cadence: a dense point only every 32 steps


class _Cuda:
    cuda = True


def test_an_eager_run_warns_nothing(small):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        h = run(small, dataclasses.replace(RECIPE, compile=False), epochs=1)
    facts = T.run_facts("accuracy", h, *small, small[1]).metrics
    assert h.fallback is None and "accuracy.compile_fallback" not in facts
