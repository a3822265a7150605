"""Measured speed of one model on this device: training and inference images/s, and batch-1 latency.

The method of timm's `benchmark.py`: a model in the run's memory format (channels_last on CPU and CUDA) and
autocast, `warmup` untimed steps, then `repeats` timed steps, each closed by a CUDA synchronize, at the
process's intra-op thread count (or `threads`, restored afterwards). The inputs are random tensors of the
model's input shape: speed does not depend on pixel values. Rates are batch / median step time, so a burst of
load from another process during one step does not set the figure; latency reports the median and the
interquartile range of `latency_repeats` single-image forward passes.
"""

from __future__ import annotations

import contextlib
import platform
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch
from torch import nn

from coatsearch.training.curves import autocast, channels_last
from coatsearch.vocab.specs import OptimSpec


@dataclass(frozen=True)
class Throughput:
    """One model's measured speed on one device (rates in images/s, latency in ms)."""

    train_ips: float  # training images/s at `train_batch` (forward, backward, optimizer step)
    infer_ips: float  # inference images/s at `infer_batch` (eval mode, no grad)
    latency_ms: float  # median batch-1 forward latency
    latency_iqr_ms: float  # its interquartile range (75th - 25th percentile)
    train_batch: int
    infer_batch: int
    threads: int  # intra-op threads it ran at
    compiled: bool
    host: str  # platform.node(): a Ray cluster's nodes show
    device: str  # e.g. 'cpu (x86_64)' or the CUDA device name
    seconds: float  # what measuring cost, warm-ups included


@dataclass(frozen=True)
class ThroughputPlan:
    """How to measure: batches, untimed warm-up steps, timed repeats, threads and whether to compile."""

    train_batch: int
    infer_batch: int = 128
    warmup: int = 1
    repeats: int = 4
    latency_repeats: int = 20
    threads: int | None = None  # None: the process's current thread count
    compile: bool = False


@contextlib.contextmanager
def _threads(n: int | None) -> Iterator[int]:
    """Run with `n` intra-op threads (None: as set); yields the count used and restores the previous one."""
    before = torch.get_num_threads()
    torch.set_num_threads(n or before)
    try:
        yield torch.get_num_threads()
    finally:
        torch.set_num_threads(before)


def _timed(step: Callable[[], object], device: torch.device, warmup: int, repeats: int) -> list[float]:
    """Seconds of each of `repeats` calls of `step` after `warmup` untimed ones, CUDA synchronized around each."""
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda *a: None)
    for _ in range(warmup):
        step()
    sync(device)
    out = []
    for _ in range(repeats):
        start = time.perf_counter()
        step()
        sync(device)
        out.append(time.perf_counter() - start)
    return out


def device_name(device: torch.device) -> str:
    """What the device is: the CUDA device's name, else 'cpu (machine)'."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"{device.type} ({platform.machine() or 'unknown'})"


def measure(
    model: nn.Module,
    shape: tuple[int, int, int],
    classes: int,
    optim: OptimSpec,
    device: torch.device,
    plan: ThroughputPlan,
) -> Throughput:
    """Train and inference images/s and batch-1 latency of `model` (its weights are trained a few steps: pass a
    fresh one). `shape` is (channels, side, side); `optim` an OptimSpec (the run's optimizer)."""
    from coatsearch.training.fit import make_optimizer

    begin, cl = time.perf_counter(), channels_last(device)
    gen = torch.Generator().manual_seed(0)
    with _threads(plan.threads) as threads:
        model = model.to(device, memory_format=cl)  # type: ignore[call-overload]  # accepted; not in torch's overloads
        run = torch.compile(model) if plan.compile else model
        opt = make_optimizer(model, optim)
        x = torch.randn(plan.train_batch, *shape, generator=gen).to(device).contiguous(memory_format=cl)
        y = torch.randint(0, classes, (plan.train_batch,), generator=gen).to(device)

        def train_step() -> None:
            with autocast(device):
                loss = nn.functional.cross_entropy(run(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)

        model.train()
        train_s = _timed(train_step, device, plan.warmup, plan.repeats)
        model.eval()
        xi = torch.randn(plan.infer_batch, *shape, generator=gen).to(device).contiguous(memory_format=cl)
        x1 = xi[:1].contiguous(memory_format=cl)
        with torch.no_grad(), autocast(device):
            infer_s = _timed(lambda: run(xi), device, plan.warmup, plan.repeats)
            lat = _timed(lambda: run(x1), device, plan.warmup, plan.latency_repeats)
    q1, _, q3 = statistics.quantiles(lat, n=4, method="inclusive")
    return Throughput(
        train_ips=plan.train_batch / statistics.median(train_s),
        infer_ips=plan.infer_batch / statistics.median(infer_s),
        latency_ms=1e3 * statistics.median(lat),
        latency_iqr_ms=1e3 * (q3 - q1),
        train_batch=plan.train_batch,
        infer_batch=plan.infer_batch,
        threads=threads,
        compiled=plan.compile,
        host=platform.node(),
        device=device_name(device),
        seconds=time.perf_counter() - begin,
    )
