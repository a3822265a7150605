"""What makes a GPU run go right the first time, checked on the CPU: the worker count and pinning rules, Ray's
resource rule, fp32 measurements, the eval batch of every evaluation, the planner's CUDA priors, and the GPU
check itself (benchmarks/gpu_check.sh and .py: its dry run, its summary of a study's nested records, its rel-pos
gradient check and its full-shape fit)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from coatsearch import api
from coatsearch.cli import main
from coatsearch.errors import UserError
from coatsearch.models import build
from coatsearch.runner import ray_backend, workers
from coatsearch.training import capture, curves, tuning
from coatsearch.training.data import TensorData
from tests.support.training import CPU
from tests.tiny import TINY

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import gpu_check as G  # noqa: E402  (benchmarks/gpu_check.py: the GPU check's phases)

GB = 1024  # MB


# ---------------------------------------------------------------------------------------------- workers


def test_several_processes_share_a_gpu_by_its_memory_and_the_host_cores():
    h200 = 139 * GB
    assert tuning.cuda_processes(1, h200, 16, 100) == tuning.GPU_PROCESSES_MAX == 8  # 16 cores, 2 each
    assert tuning.cuda_processes(1, h200, 6, 100) == 3  # the cores bind
    assert tuning.cuda_processes(1, 16 * GB, 64, 100) == 2  # the memory binds: 6 GB each
    assert tuning.cuda_processes(1, 4 * GB, 64, 100) == 1  # a small GPU still runs one
    assert tuning.cuda_processes(2, h200, 64, 100) == 16  # per GPU
    assert tuning.cuda_processes(1, h200, 16, 3) == 3  # never more than the trials left
    assert tuning.cuda_processes(1, h200, 1, 100) == 1


def test_each_worker_pins_one_gpu():
    assert [tuning.worker_device("cuda", i, 2) for i in range(4)] == ["cuda:0", "cuda:1", "cuda:0", "cuda:1"]
    assert tuning.worker_device("auto", 3, 1) == "cuda:0"
    assert tuning.worker_device("auto", 3, 0) == "auto"  # no GPU: auto stays auto (the CPU)
    assert tuning.worker_device("cuda:1", 5, 2) == "cuda:1" and tuning.worker_device("cpu", 5, 2) == "cpu"


_WORKER_THREADS = """
import os, sys, torch
import torch._inductor.config as inductor
from coatsearch.training import tuning
tuning.set_worker_threads(1)
print(torch.get_num_threads(), inductor.compile_threads, os.environ["TORCHINDUCTOR_COMPILE_THREADS"])
"""


def test_a_worker_sets_its_intra_op_and_compile_threads():
    """In a process of its own, as a worker is: set_worker_threads changes torch's and inductor's process-wide
    settings, which no test may leave changed in the test process (a compile after it failed: issue 56)."""
    env = {**os.environ, "TORCHINDUCTOR_COMPILE_THREADS": "0", "PYTHONPATH": str(ROOT)}
    res = subprocess.run([sys.executable, "-c", _WORKER_THREADS], env=env, capture_output=True, text=True,
                         timeout=120, cwd=ROOT)  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.split() == ["1", "1", "1"]


def test_mps_is_seen_from_its_control_pipe(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDA_MPS_PIPE_DIRECTORY", str(tmp_path))
    assert not tuning.mps_running()
    (tmp_path / "control").touch()
    assert tuning.mps_running()


def test_workers_auto_on_cuda_takes_the_gpu_rule(monkeypatch):
    space = api.load_space(TINY, "quick")
    monkeypatch.setattr("coatsearch.training.fit.pick_device", lambda name: torch.device("cuda"))
    monkeypatch.setattr(tuning, "cuda_workers", lambda left, dev: (min(left, 8), 2, "workers auto: a note"))
    assert workers.processes(space, "auto", None, "cuda", say=False) == (2, 2)  # the tiny space plans 2 trials


# ---------------------------------------------------------------------------------------------- Ray


def test_ray_gives_a_cuda_trial_a_fraction_of_a_gpu_and_the_driver_needs_none():
    frac = ray_backend.GPU_FRACTION
    assert 0 < frac < 1
    assert ray_backend._resources("auto", None, None, cluster_gpus=2) == (1.0, frac)  # a GPU-less head node
    assert ray_backend._resources("auto", None, None, cluster_gpus=0) == (1.0, 0.0)
    assert ray_backend._resources("cuda", 2, None, cluster_gpus=0) == (2.0, frac)  # no local GPU asked
    assert ray_backend._resources("cuda:0", None, 1, cluster_gpus=1) == (1.0, 1.0)  # as given
    assert ray_backend._resources("cpu", None, None, cluster_gpus=4) == (1.0, 0.0)
    with pytest.raises(UserError, match="gpus-per-trial"):
        ray_backend._resources("auto", None, -1, cluster_gpus=1)
    with pytest.raises(UserError, match="device"):
        ray_backend._resources("tpu", None, None, cluster_gpus=1)


def test_a_ray_run_on_cuda_is_not_refused_by_a_driver_without_one(tmp_path, monkeypatch):
    """`--device cuda --backend ray` is checked for its form only: the cluster's nodes have the GPUs."""
    seen = {}

    def engine(space, studies, name, **kw):
        seen.update(kw)
        raise KeyboardInterrupt

    monkeypatch.setattr(ray_backend, "run", engine)
    with pytest.raises(KeyboardInterrupt):
        api.run(TINY, backend="ray", device="cuda", studies_dir=tmp_path, report=False, progress=False)
    assert seen["device"] == "cuda"
    with pytest.raises(UserError, match="unknown device"):
        api.run(TINY, backend="ray", device="cuda:x", studies_dir=tmp_path, report=False, progress=False)


# ---------------------------------------------------------------------------------------------- measuring


def test_measuring_is_fp32_and_restores_the_precision_settings():
    net = build(api.load_space(TINY).candidates[1].spec)
    seen = []
    net.register_forward_hook(lambda m, i, o: seen.append((o.dtype, torch.is_autocast_enabled("cpu"))))
    x, y = torch.randn(10, 1, 16, 16), torch.randint(0, 10, (10,))
    curves.eval_tensors(net, x, y, 4)
    assert seen and all(s == (torch.float32, False) for s in seen)
    back = torch.backends
    before = (back.cudnn.conv.fp32_precision, back.cuda.matmul.fp32_precision)
    with curves.full_precision(torch.device("cuda")):  # sets the flags; needs no GPU
        assert (back.cudnn.conv.fp32_precision, back.cuda.matmul.fp32_precision) == ("ieee", "ieee")
    assert (back.cudnn.conv.fp32_precision, back.cuda.matmul.fp32_precision) == before


def test_robustness_and_transfer_evaluate_at_the_devices_eval_batch(monkeypatch):
    from coatsearch.scores import robustness, transfer

    batches = []
    monkeypatch.setattr("coatsearch.training.fit.evaluate", lambda m, d, dev, b: (batches.append(b), (0.0, 0.5))[1])
    images = TensorData(torch.zeros(3, 1, 8, 8), torch.zeros(3, dtype=torch.int64), tuple(range(10)))

    class Ctx:
        device = torch.device("cuda")
        models = {"accuracy": (None, images, images)}

        class inp:  # noqa: N801 - a stand-in for TrialInput
            seed = 0

            class optim:  # noqa: N801
                batch_size = 32

    monkeypatch.setattr(robustness, "corrupt", lambda x, name, sev, seed: x)
    robustness.run(Ctx(), robustness.RobustnessSpec(source="accuracy", severities=1))
    assert batches and set(batches) == {curves.eval_batch(Ctx.device, 32)} == {curves.EVAL_BATCH_CUDA}
    assert "eval_batch(ctx.device" in Path(transfer.__file__).read_text()  # the linear probe's features too


def test_the_planner_prices_cuda_runs_as_captured():
    sig = ("Net", ())
    cost, speedup = tuning.step_priors("cuda", sig, "auto")
    assert (cost, speedup) == (tuning.CUDA_CAPTURE_S, tuning.CUDA_CAPTURE_SPEEDUP)
    compiled_cost, _ = tuning.step_priors("cuda", sig, "True")
    assert compiled_cost == tuning.CUDA_CAPTURE_S + tuning.COMPILE_PRIOR_S["cuda"]
    assert tuning.step_priors("cpu", sig, "auto") == (tuning.COMPILE_PRIOR_S["cpu"], tuning.SPEEDUP_PRIOR["cpu"])
    from coatsearch.planner import predict

    assert predict.compiles(_Fit("auto", 1000, 1e-3, *tuning.step_priors("cuda", sig, "auto")))  # 1,000 steps capture


class _Fit:
    """The fields of a planner.pilot.FitTiming that predict.compiles reads."""

    stops_early, expected_steps = False, None

    def __init__(self, compile, steps, step_s, compile_s, speedup):
        self.compile, self.steps, self.step_s, self.compile_s, self.speedup = compile, steps, step_s, compile_s, speedup


# ---------------------------------------------------------------------------------------------- the GPU check


@pytest.mark.slow
def test_the_gpu_check_dry_run_passes_on_the_cpu(tmp_path):
    env = {**os.environ, "OUT": str(tmp_path / "out"), "GPU_CHECK_WORK": str(tmp_path / "work")}
    res = subprocess.run(["bash", "benchmarks/gpu_check.sh", "--dry-run"], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=3000)  # fmt: skip
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    phases = (tmp_path / "out" / "phases.txt").read_text()
    for name in ("preflight", "tests", "throughput", "capture", "study", "summary"):
        assert f"=== {name}: exit 0" in phases, phases
    returned = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert all(n.endswith(".txt") for n in returned) and len(returned) == 7  # small text files only
    assert "no study paper_layouts-quick" in (tmp_path / "out" / "summary.txt").read_text()


def test_the_gpu_check_fits_its_limits_and_names_what_to_carry():
    text = (ROOT / "benchmarks" / "gpu_check.sh").read_text()
    limits = [int(v) for v in text.split("LIMITS=(")[1].split(")")[0].split()]
    phases = text.split("PHASES=(")[1].split(")")[0].split()
    assert len(limits) == len(phases) == 6 and sum(limits) <= 540
    header = text.split("set -uo pipefail")[0]
    assert ".whl/" in header and ".data/fashion-mnist/" in header
    assert "PYTHONUNBUFFERED=1" in text and "python3 -u" in text
    assert set(phases) == {"preflight", "tests", "throughput", "capture", "study", "summary"}


def test_the_preflight_names_each_missing_carried_folder(tmp_path):
    assert len(G.missing_carried(tmp_path)) == 2
    (tmp_path / ".whl").mkdir()
    (tmp_path / ".whl" / "optuna-5.0.0-py3-none-any.whl").touch()
    folder = tmp_path / ".data" / "fashion-mnist"
    folder.mkdir(parents=True)
    for stem in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte"):
        (folder / (stem + ".gz")).touch()
    assert [m.split()[0] for m in G.missing_carried(tmp_path)] == [".data/fashion-mnist/"]
    (folder / "t10k-labels-idx1-ubyte").touch()
    assert G.missing_carried(tmp_path) == []


def test_the_summary_reads_the_trials_nested_records(tmp_path):
    studies = tmp_path / "s"
    assert main(["run", str(TINY), "--profile", "quick", "--device", "cpu", "--workers", "1", "--trials", "1",
                 "--studies-dir", str(studies), "--no-report", "--quiet", "--no-plan"]) == 0  # fmt: skip
    lines = G.summarize(studies, "tiny-quick")
    assert lines[0].startswith("trial 0 C-C COMPLETE device cpu pid") and "generalization=eager" in lines[0]
    assert "trials {'COMPLETE': 1}; processes 1 on cpu" in lines[1]
    wall = float(lines[2].split()[0].split("=")[1])
    images = float(lines[2].split()[1].split("=")[1])
    assert wall > 0 and images > 0 and lines[3].startswith("aggregate_img_s=")
    assert lines[4] == "processes_per_gpu=1.0"
    assert G.summarize(studies, "none") == [f"no study none under {studies}"]


def test_the_rel_pos_gradient_check_catches_a_kernel_without_a_bias_gradient(monkeypatch):
    torch.manual_seed(0)
    net = build(api.load_space(TINY).candidates[1].spec)  # C-T: one rel-pos attention stage
    x, y = torch.randn(4, 1, 16, 16), torch.randint(0, 10, (4,))
    assert G.relpos_grad_error(net, x, y) < 1e-4  # fp32 on the CPU: the kernels agree
    real = torch.nn.functional.scaled_dot_product_attention

    def no_bias_grad(q, k, v, attn_mask=None, **kw):  # a fused kernel that drops the bias gradient; MATH is right
        fused = torch.backends.cuda.flash_sdp_enabled()  # off inside sdpa_kernel([MATH])
        return real(q, k, v, attn_mask=attn_mask.detach() if fused and attn_mask is not None else attn_mask, **kw)

    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", no_bias_grad)
    assert G.relpos_grad_error(net, x, y) == pytest.approx(1.0)


def test_a_full_shape_fit_reports_how_it_ran(monkeypatch):
    monkeypatch.setattr(capture, "DEVICES", ("cuda", "cpu"))
    capture.clear()
    try:
        got = G.full_shapes("C-T", "auto", CPU, steps=capture.MIN_STEPS, profile="quick", space=TINY)
    finally:
        capture.clear()
    assert got["mode"] == "captured" and got["fallback"] is None and got["steps"] == capture.MIN_STEPS
    assert got["cudagraph_skips"] == 0 and got["img_s"] > 0
