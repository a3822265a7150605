"""Speed choices: compile auto's rule and probe, the workers choice and its cache, matching once per study."""

import json

import pytest
import torch
from torch import nn

from coatsearch.budget import prepare as candidates
from coatsearch.runner import trial as T
from coatsearch.space.objects import load_space
from coatsearch.storage import store
from coatsearch.storage.trials import plan
from coatsearch.training import tuning as speed
from coatsearch.vocab.specs import OptimSpec
from tests.support.engine import run, trials
from tests.tiny import TINY, tiny_variant

CPU = torch.device("cpu")


def test_compile_pays_only_when_the_steps_left_repay_it():
    assert speed.worth_compiling(1000, 0.3, 60.0, 1.3)  # 1000 x 0.3 x 0.23 = 69 s saved > 60 s
    assert not speed.worth_compiling(100, 0.3, 60.0, 1.3)
    assert not speed.worth_compiling(10**6, 0.3, 60.0, 1.0)  # no speed-up: never


def test_auto_compile_decides_once_after_the_probe_steps(monkeypatch):
    clock = iter(range(0, 10_000, 1))  # every tick is one CPU second later
    monkeypatch.setattr(speed.time, "process_time", lambda: float(next(clock)))
    monkeypatch.setattr(torch, "get_num_threads", lambda: 1)
    net = nn.Linear(3, 2)
    short = speed.AutoCompile(net, CPU, total=10)
    long = speed.AutoCompile(net, CPU, total=10_000)
    said_short = [short.after_step(short.tick()) for _ in range(speed.PROBE_STEPS + 3)]
    said_long = [long.after_step(long.tick()) for _ in range(speed.PROBE_STEPS + 3)]
    assert not any(said_short) and short.eager_s == pytest.approx(1.0)
    assert said_long == [False] * speed.PROBE_STEPS + [True, False, False]  # decided once, after the probe


def test_auto_compile_times_cpu_steps_in_cpu_seconds_per_thread_not_wall(monkeypatch):
    wall, cpu = iter(range(0, 10**6, 50)), iter(range(0, 10**6, 2))  # load: 50 s of wall per 2 s of CPU
    monkeypatch.setattr(speed.time, "perf_counter", lambda: float(next(wall)))
    monkeypatch.setattr(speed.time, "process_time", lambda: float(next(cpu)))
    monkeypatch.setattr(torch, "get_num_threads", lambda: 2)
    auto = speed.AutoCompile(nn.Linear(3, 2), CPU, total=300)
    said = [auto.after_step(auto.tick()) for _ in range(speed.PROBE_STEPS + 1)]
    # 1 s a step: 295 x 1 x 0.23 = 68 s saved < the 90 s prior; wall-timed (50 s a step) it would have compiled
    assert auto.eager_s == pytest.approx(1.0) and not any(said)
    assert speed.worth_compiling(295, 50.0, speed.COMPILE_PRIOR_S["cpu"], speed.SPEEDUP_PRIOR["cpu"])


def test_a_measured_compile_replaces_the_prior():
    net = nn.Linear(5, 4)
    auto = speed.AutoCompile(net, CPU, total=100)
    assert speed.compile_cost("cpu", speed.signature(net)) == speed.COMPILE_PRIOR_S["cpu"]
    auto.eager_s = 0.5
    auto.compiled(3.5)
    assert speed.compile_cost("cpu", speed.signature(nn.Linear(5, 4))) == pytest.approx(3.0)  # same shapes
    assert speed.compile_cost("cpu", speed.signature(nn.Linear(5, 3))) == speed.COMPILE_PRIOR_S["cpu"]


def test_auto_is_the_default_and_short_runs_train_eagerly():
    from coatsearch.training import fit

    assert OptimSpec().compile == "auto"
    x, y = torch.randn(64, 1, 8, 8), torch.arange(64) % 4
    data = fit.TensorData(x, y, (0, 1, 2, 3), True)
    net = nn.Sequential(nn.Flatten(), nn.Linear(64, 4))
    h = fit.fit(net, data, data, OptimSpec(batch_size=16), 2, seed=0, device=CPU)
    assert not h.compiled and h.steps == 8


@pytest.mark.parametrize(
    ("rates", "cores", "trials", "want"),
    [
        ({1: 400.0, 2: 600.0}, 2, 10, (2, 1)),  # two 1-thread processes: 800 > 600
        ({1: 400.0, 2: 900.0}, 2, 10, (1, 2)),  # threads scale well: one process
        ({1: 400.0, 2: 600.0}, 2, 1, (1, 2)),  # one trial: one process, both cores
        ({1: 100.0, 2: 150.0, 4: 380.0}, 4, 3, (1, 4)),  # 3 trials cannot fill 4 processes
    ],
)
def test_workers_choice(rates, cores, trials, want):
    assert speed.choose(rates, cores, trials) == want


def test_auto_workers_probes_once_then_reads_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("COATSEARCH_CACHE", str(tmp_path))
    calls = []
    monkeypatch.setattr(speed, "probe_rates", lambda cores: calls.append(cores) or {1: 400.0, 2: 500.0})
    first = speed.auto_workers(trials=8, cores=2)
    second = speed.auto_workers(trials=8, cores=2)
    assert calls == [2] and (first.processes, first.threads) == (2, 1) and not first.cached and second.cached
    assert "2 process(es) x 1 thread(s)" in second.text()
    assert json.loads((tmp_path / "workers.json").read_text())[speed.machine_key(2)] == {"1": 400.0, "2": 500.0}


def test_the_probe_measures_every_thread_count_dividing_the_cores():
    rates = speed.probe_rates(2, steps=1, batch=8)
    assert set(rates) == {1, 2} and all(r > 0 for r in rates.values())


def test_the_probe_keeps_each_thread_counts_best_round(monkeypatch):
    clock = iter([0.0, 10.0, 10.0, 11.0, 11.0, 12.0, 12.0, 14.0])  # round 1: 1 thread hit by a 10-s burst of load
    monkeypatch.setattr(speed.time, "perf_counter", lambda: next(clock))
    rates = speed.probe_rates(2, steps=1, batch=8, rounds=2)
    assert rates == {1: 8.0, 2: 8.0}  # 8 images in 1 s, each count's best round (not 0.8 for the burst)


@pytest.mark.slow
def test_each_candidate_is_matched_once_per_study(tmp_path, monkeypatch):
    space = load_space(TINY)
    study = store.create_study(space, tmp_path, "s")
    folder = store.folder(tmp_path, "s")
    first = store.matched(study, space, folder)
    assert set(first) == {c.name for c in space.candidates}
    monkeypatch.setattr(candidates, "prepare", lambda *a, **k: pytest.fail("matched again"))
    monkeypatch.setattr(T, "prepare", lambda *a, **k: pytest.fail("matched again"))
    again = store.matched(store.load_study(tmp_path, "s"), space, folder)  # another process reads it back
    assert again == first
    run(TINY, tmp_path, "s", workers=1)  # every trial reuses the stored specs: no match at all
    done = trials(tmp_path)
    assert len(done) == len(plan(space)) and all(t.state.name == "COMPLETE" for t in done)
    assert {store.record(t).run.model.macs for t in done} == {p.macs for p in first.values()}


def test_an_edited_candidate_is_matched_again(tmp_path):
    space = load_space(TINY)
    study = store.create_study(space, tmp_path, "s")
    folder = store.folder(tmp_path, "s")
    old = store.matched(study, space, folder)
    edited = load_space(tiny_variant(tmp_path, ("depths: [1, 1]", "depths: [1, 2]")))
    new = store.matched(study, edited, folder)
    assert all(new[n].model.stages[1].depth == 2 != old[n].model.stages[1].depth for n in old)
    assert store.matched(store.load_study(tmp_path, "s"), edited, folder) == new  # stored: read back


def test_cpu_training_feeds_channels_last_batches(monkeypatch):
    from coatsearch.training import fit

    seen = []
    real = fit._Run._loss
    monkeypatch.setattr(
        fit._Run,
        "_loss",
        lambda self, xb, yb: seen.append(xb.is_contiguous(memory_format=torch.channels_last)) or real(self, xb, yb),
    )
    x, y = torch.randn(32, 3, 8, 8), torch.arange(32) % 4
    net = nn.Sequential(nn.Conv2d(3, 4, 3), nn.Flatten(), nn.LazyLinear(4))
    net(x)
    fit.fit(net, fit.TensorData(x, y, (0, 1, 2, 3), True), None, OptimSpec(batch_size=16), 1, seed=0, device=CPU)
    assert seen == [True, True] and net[0].weight.is_contiguous(memory_format=torch.channels_last)


def test_compile_weighs_every_planned_run_of_the_architecture():
    # one run: 300 x 0.3 x 0.23 = 21 s saved < 60 s; six runs (the other seeds and scores hit the cache at 9 s
    # each): 125 s saved > 60 + 5 x 9 = 105 s
    assert not speed.worth_compiling(300, 0.3, 60.0, 1.3)
    assert speed.worth_compiling(300, 0.3, 60.0, 1.3, runs=6, cached_s=9.0)
    assert not speed.worth_compiling(300, 0.3, 60.0, 1.3, runs=6, cached_s=20.0)  # cache hits too dear


def test_auto_compile_decides_for_the_studys_runs(monkeypatch):
    clock = iter(range(0, 10_000, 1))  # every eager step takes one CPU second
    monkeypatch.setattr(speed.time, "process_time", lambda: float(next(clock)))
    monkeypatch.setattr(torch, "get_num_threads", lambda: 1)
    net = nn.Linear(7, 2)
    decisions = {}
    for runs in (1, 4):
        auto = speed.AutoCompile(net, CPU, total=200, runs=runs)
        decisions[runs] = any(auto.after_step(auto.tick()) for _ in range(speed.PROBE_STEPS + 1))
    assert decisions == {1: False, 4: True}  # 195 x 0.23 = 45 s < 90 s; 4 x 45 = 180 s > 90 + 3 x 9 s


def test_regions_are_the_blocks_of_the_stages():
    from coatsearch.models import build

    space = load_space(TINY)
    model = build(candidates.prepare(space.candidate("C-T")).model)
    blocks = speed.regions(model)
    assert [type(b).__name__ for b in blocks] == ["MbConvBlock", "TransformerBlock2d"]
    assert not any(b is model.stem or b in list(model.stem.modules()) for b in blocks)
    assert speed.regions(nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU())) == []  # layers, not blocks


def test_a_small_compile_runs_in_this_process():
    """torch.compile of a small block through inductor (its C++ kernels and compile threads) in the test process:
    the fast lane's compile, which tests/repo/test_suite_order.py also runs after the worker-threads test."""
    torch.manual_seed(0)
    block = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 4))
    x = torch.randn(5, 8)
    compiled = torch.compile(block, dynamic=False)
    with torch.no_grad():
        assert torch.allclose(compiled(x), block(x), atol=1e-5)


def test_the_compile_caches_go_to_one_shared_folder(tmp_path, monkeypatch):
    import os

    import torch._functorch.config
    import torch._inductor.config
    from torch._inductor.runtime.cache_dir_utils import default_cache_dir

    monkeypatch.setenv("COATSEARCH_CACHE", str(tmp_path))
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", default_cache_dir())  # what importing inductor writes back
    speed.configure_dynamo()
    assert speed.compile_cache_dir() == tmp_path / "inductor"
    assert torch._inductor.config.fx_graph_cache and torch._functorch.config.enable_autograd_cache
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "inductor")  # inherited by workers
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "mine"))  # a user's own folder wins
    assert speed.compile_cache_dir() == tmp_path / "mine"


def test_the_record_says_which_mode_ran():
    from coatsearch.scores import training
    from coatsearch.training import fit

    x, y = torch.randn(64, 1, 8, 8), torch.arange(64) % 4
    data = fit.TensorData(x, y, (0, 1, 2, 3), True)
    net = nn.Sequential(nn.Flatten(), nn.Linear(64, 4))
    h = fit.fit(net, data, data, OptimSpec(batch_size=16, compile=False), 1, seed=0, device=CPU)
    assert h.compile_mode == "eager" and not h.compiled
    assert training.run_facts("generalization", h, data, data, data).metrics["generalization.compile"] == "eager"
