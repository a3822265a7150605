"""Step-level curves (coatsearch.training.curves, training.fit): points, budget, early stop, fixed paired data."""

from __future__ import annotations

import math

import pytest
import torch

from coatsearch.errors import UserError
from coatsearch.training import curves, data, fit, schedule, subsets
from coatsearch.training.point import Curve
from coatsearch.vocab.specs import DataSpec, OptimSpec
from tests.support.training import CPU, one_thread, tiny_net  # noqa: F401 - one_thread is an autouse fixture

OPT = OptimSpec(lr=3e-3, batch_size=50)


@pytest.fixture(scope="module")
def small() -> tuple[data.TensorData, data.TensorData]:
    """A 200-image synthetic training subset (4 steps per epoch at batch 50) and a 100-image eval set."""
    tr, te = data.load(DataSpec("synthetic"), 32, 1)
    return subsets.subset(tr, 20, None, seed=0), subsets.eval_subset(te, 100, None)


def test_curve_steps():
    assert schedule.curve_steps(20, 5) == {0, 5, 10, 15, 20}
    assert schedule.curve_steps(23, 5) == {0, 5, 10, 15, 20, 23}  # the last step is always measured
    assert schedule.curve_steps(117) == {0, *range(12, 117, 12), 117}  # about ten points by default
    assert schedule.curve_steps(3) == {0, 1, 2, 3}
    assert schedule.curve_steps(10, 0) == frozenset()
    with pytest.raises(UserError):
        schedule.curve_steps(10, -1)


def test_points_are_clean_and_do_not_change_the_run(small):
    tr, ev = small
    seen = []
    h = fit.fit(tiny_net(), tr, ev, OPT, 3, seed=0, device=CPU, eval_every=3, probe=64,
                  on_point=lambda s, p: seen.append(s))  # fmt: skip
    c = h.curve
    assert c.step == (0, 3, 6, 9, 12) and list(c.step) == seen and c.probe == 64
    assert h.steps == 12 and h.steps_per_epoch == 4 and h.stopped is None
    assert abs(c.train_loss[0] - math.log(10)) < 0.5 and c.train_loss[-1] < c.train_loss[0]
    assert c.eval_acc[-1] == h.final_eval_acc  # the epoch-end eval reuses the point measured there
    probe = subsets.probe(tr, 64)
    net = tiny_net()
    fit.fit(net, tr, ev, OPT, 3, seed=0, device=CPU, eval_every=0)
    assert (c.train_loss[-1], c.train_acc[-1]) == fit.evaluate(net, probe, CPU, 2 * OPT.batch_size)
    plain = fit.fit(tiny_net(), tr, ev, OPT, 3, seed=0, device=CPU, eval_every=0)
    assert plain.curve == Curve() and plain.train_loss == h.train_loss and plain.eval_acc == h.eval_acc
    again = fit.fit(tiny_net(), tr, ev, OPT, 3, seed=0, device=CPU, eval_every=3, probe=64)
    assert again.curve == c and set(c.as_dict()) == {"step", "train_loss", "train_acc", "eval_loss", "eval_acc",
                                                     "probe", "lr_phase", "val_loss", "val_acc"}  # fmt: skip


def test_epoch_evals_only_when_heard_and_the_clean_loss_is_the_last_probe_point(small):
    tr, ev = small
    h = fit.fit(tiny_net(), tr, ev, OPT, 3, seed=0, device=CPU, eval_every=3, probe=64)
    assert h.eval_acc[:2] == (None, None) and h.eval_acc[-1] == h.curve.eval_acc[-1]  # no pruner: the curve only
    assert (h.clean_train_loss, h.clean_train_acc) == (h.curve.train_loss[-1], h.curve.train_acc[-1])
    heard: list = []
    pruned = fit.fit(tiny_net(), tr, ev, OPT, 3, seed=0, device=CPU, eval_every=3, probe=64,
                       on_epoch=lambda e, s: heard.append(s.eval_acc))  # fmt: skip
    assert None not in pruned.eval_acc and heard == list(pruned.eval_acc) and pruned.curve == h.curve
    net = tiny_net()
    plain = fit.fit(net, tr, ev, OPT, 3, seed=0, device=CPU, eval_every=0)  # no curve: a pass over all 200
    assert (plain.clean_train_loss, plain.clean_train_acc) == fit.evaluate(net, tr, CPU, 2 * OPT.batch_size)


def test_max_steps_budget_ends_inside_an_epoch(small):
    tr, ev = small
    h = fit.fit(tiny_net(), tr, None, OPT, 99, seed=0, device=CPU, max_steps=6, measure_train=False)
    assert h.steps == 6 and len(h.train_loss) == 2 and h.curve.step[-1] == 6 and h.eval_acc == (None, None)
    assert h.curve.eval_acc[-1] is None and h.images_per_s[-1] > 0
    with pytest.raises(UserError, match="max_steps"):
        fit.fit(tiny_net(), tr, None, OPT, 1, seed=0, device=CPU, max_steps=0)
    assert schedule.steps_per_epoch(200, 50) == 4 and schedule.steps_per_epoch(6, 128) == 1


def test_stop_at_loss_target_or_cap(small):
    tr, ev = small
    full = fit.fit(tiny_net(), tr, ev, OPT, 4, seed=0, device=CPU, eval_every=2, measure_train=False)
    target = full.curve.train_loss[3]  # reached at step 6 for the first time, if losses fall
    first = next(s for s, v in zip(full.curve.step, full.curve.train_loss, strict=True) if s and v <= target)
    h = fit.fit(tiny_net(), tr, ev, OPT, 4, seed=0, device=CPU, eval_every=2, stop_at_loss=target)
    assert h.stopped == "target" and h.steps == first and h.curve.step[-1] == first
    assert h.curve.train_loss == full.curve.train_loss[: len(h.curve.step)]  # the same run until the stop
    assert len(h.train_loss) == math.ceil(first / 4)
    cap = fit.fit(tiny_net(), tr, ev, OPT, 4, seed=0, device=CPU, eval_every=2, stop_at_loss=1e-6)
    assert cap.stopped == "cap" and cap.steps == 16
    acc = fit.fit(tiny_net(), tr, ev, OPT, 4, seed=0, device=CPU, eval_every=2, stop_at_acc=0.05)
    assert acc.stopped == "target" and acc.steps == 2  # never at step 0
    for bad in ({"stop_at_loss": 0.0}, {"stop_at_acc": 1.5}, {"stop_at_loss": 0.1, "eval_every": 0}):
        with pytest.raises(UserError):
            fit.fit(tiny_net(), tr, ev, OPT, 1, seed=0, device=CPU, **bad)
    with pytest.raises(UserError, match="needs evaluation data"):
        fit.fit(tiny_net(), tr, None, OPT, 1, seed=0, device=CPU, stop_at_acc=0.5)


def test_pairing_same_eval_images_and_subsets_across_candidates_and_seeds():
    spec = DataSpec("synthetic")
    evals, drawn = set(), {}
    for size, chans in ((32, 1), (36, 3)):  # two candidates with different input shapes
        tr, te = data.load(spec, size, chans)
        for seed in (0, 1):
            evals.add(subsets.fingerprint(subsets.eval_subset(te, 100, (1, 2, 3))))
            drawn.setdefault(seed, set()).add(subsets.fingerprint(subsets.subset(tr, 30, (1, 2, 3), seed=seed)))
    assert len(evals) == 1  # one eval set per study, whatever the seed or the model
    assert all(len(f) == 1 for f in drawn.values()) and drawn[0] != drawn[1]
    tr, te = data.load(spec, 32, 1)
    whole = subsets.eval_subset(te, 0, None)
    assert torch.equal(subsets.image_ids(whole), torch.arange(len(te))) and subsets.fingerprint(
        whole
    ) == subsets.fingerprint(te)
    assert subsets.fingerprint(subsets.eval_subset(te, 100, (1, 2, 3), seed=5)) not in evals
    sub = subsets.subset(tr, 30, (1, 2, 3), seed=0)
    assert torch.equal(tr.x[sub.ids], sub.x) and torch.equal(te.x[whole.ids], whole.x)  # ids index the pool
    nested = subsets.subset(sub, 5, (2,), seed=0)
    assert torch.equal(tr.x[nested.ids], nested.x)


def test_probe_is_fixed_and_spread():
    tr, _ = data.load(DataSpec("synthetic"), 32, 1)
    sub = subsets.subset(tr, 100, None, seed=3)  # 1000 images
    p = subsets.probe(sub, 200)
    assert len(p) == 200 and subsets.fingerprint(p) == subsets.fingerprint(subsets.probe(sub, 200))
    assert torch.bincount(p.y).tolist() == [20] * 10  # evenly spaced over interleaved classes
    assert set(p.ids.tolist()) <= set(sub.ids.tolist())
    assert subsets.fingerprint(subsets.probe(sub, 5000)) == subsets.fingerprint(sub)
    with pytest.raises(UserError):
        subsets.probe(sub, 0)


def test_batch_order_depends_on_seed_and_size_only(small):
    tr, ev = small
    orders = []
    for net in (tiny_net(0), tiny_net(1)):  # two "candidates": different weights, same data order
        order = []
        run = fit._Run(net, tr, OPT, 4, 7, CPU, augment=False)
        run.step = lambda i, idx, g, order=order: order.append(idx.tolist())
        run.epoch(0, 4, _Bar(), frozenset(), _Silent())  # type: ignore[arg-type]
        orders.append(order)
    assert orders[0] == orders[1] and len(orders[0]) == 4


class _Bar:
    """A progress bar that counts nothing."""

    def update(self, n: int = 1) -> None:
        """Ignore an update."""


class _Silent:
    """A meter that never measures and never stops a run."""

    def feed(self, losses: torch.Tensor) -> bool:
        """No dense point is ever due."""
        return False

    def __call__(self, step: int) -> bool:
        """No stop."""
        return False


class Spy(torch.nn.Module):
    """Wraps a model and records, per forward call, (batch size, channels_last, inference mode, training)."""

    def __init__(self, inner: torch.nn.Module):
        super().__init__()
        self.inner, self.calls = inner, []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        fmt = x.is_contiguous(memory_format=torch.channels_last)
        self.calls.append((len(x), fmt, torch.is_inference_mode_enabled(), self.training))
        return self.inner(x)


def test_eval_passes_run_inference_mode_channels_last_in_eval_batches(small):
    tr, _ = small
    spy = Spy(tiny_net()).train()
    x = tr.x[:130].contiguous()  # 130 images at batch 64: 64, 64, 2
    loss, acc = curves.eval_tensors(spy, x, tr.y[:130], 64)
    assert [c[0] for c in spy.calls] == [64, 64, 2]
    assert all(c[1:] == (True, True, False) for c in spy.calls)  # channels_last, inference_mode, eval mode
    assert spy.training  # the caller's mode comes back
    with torch.no_grad():
        ref = torch.nn.functional.cross_entropy(spy.inner.eval()(x), tr.y[:130]).item()
    assert loss == pytest.approx(ref, rel=1e-5) and 0 <= acc <= 1


def test_padded_eval_passes_have_one_shape_and_count_only_the_real_images(small):
    tr, _ = small
    spy = Spy(tiny_net())
    x, y = tr.x[:130].contiguous(), tr.y[:130]
    plain = curves.eval_tensors(spy, x, y, 64)
    spy.calls.clear()
    padded = curves.eval_tensors(spy, x, y, 64, pad=True)
    assert [c[0] for c in spy.calls] == [64, 64, 64]  # the last batch of 2 is filled to 64: no new compiled shape
    assert padded[0] == pytest.approx(plain[0], rel=1e-6) and padded[1] == plain[1]  # the 62 zero images not counted
    few = curves.eval_tensors(spy, x[:5], y[:5], 64, pad=True)  # fewer images than one batch
    assert spy.calls[-1][0] == 64 and few[1] in {k / 5 for k in range(6)}


def test_eval_batch_is_device_chosen():
    assert curves.eval_batch(CPU, 128) == 256
    assert curves.eval_batch(torch.device("cuda"), 128) == curves.EVAL_BATCH_CUDA
    assert curves.eval_batch(torch.device("cuda"), 4096) == 8192


def test_points_after_the_compile_measure_the_compiled_model(small, monkeypatch):
    tr, ev = small
    spies = []

    def fake_compile(model, device):  # stands in for torch.compile: a wrapper module, as torch.compile returns
        spies.append(Spy(model))
        return spies[-1], "compiled"

    monkeypatch.setattr(fit, "compile_model", fake_compile)
    h = fit.fit(tiny_net(), tr, ev, OptimSpec(lr=3e-3, batch_size=50, compile=True), 1, seed=0, device=CPU,
                  eval_every=2, probe=64)  # fmt: skip
    (spy,) = spies
    assert h.compile_mode == "compiled" and h.curve.step == (0, 2, 4)
    evals = [c for c in spy.calls if c[2]]  # inference-mode calls: the points after step 0 (probe 64 + eval 100)
    assert [c[0] for c in evals] == [100, 100] * 2  # the probe's 64 padded to the eval batch: one compiled shape
    assert len(spy.calls) - len(evals) == 4  # and every training step
