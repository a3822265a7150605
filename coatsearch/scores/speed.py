"""Measured speed: training and inference images/s and batch-1 latency of the trial's model, on its device.

A fresh model of the trial's matched spec is timed by coatsearch.training.throughput (warm-up, then timed repeats, as
timm's benchmark.py), at the worker's thread count, the run's memory format and batch size, compiled when the
run's `train.compile` is true (`auto` measures eagerly: a few timed steps never repay a compile). The host and
device go into the record, so the nodes of a Ray cluster show. No training data is read.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Annotated

from pydantic import Field, Strict

from coatsearch.scores.base import Context, Measured, Metric, Score
from coatsearch.vocab import specs

# What the run records, each key by its role (Score.roles): the report asks the registry for a key by role.
_ROLES = MappingProxyType(
    {
        "train_ips": "speed.train_ips",  # training images/s at the train batch
        "infer_ips": "speed.infer_ips",  # inference images/s at the inference batch
        "latency_ms": "speed.infer_latency_ms",  # batch-1 forward latency, median
        "latency_iqr_ms": "speed.infer_latency_iqr_ms",  # its interquartile range
        "train_batch": "speed.train_batch",
        "infer_batch": "speed.infer_batch",
        "threads": "speed.threads",
        "compiled": "speed.compiled",
        "host": "speed.host",
        "device": "speed.device",
        "seconds": "speed.seconds",  # what measuring cost
    }
)


@specs.spec
class SpeedSpec:
    """How the trial's model is timed (defaults cost about 3% of a default paper_layouts trial on one CPU core)."""

    infer_batch: Annotated[int, Strict(), Field(gt=0, le=specs.BATCH_MAX)] = 128  # the stated inference batch
    train_batch: Annotated[int, Strict(), Field(gt=0, le=specs.BATCH_MAX)] | None = None  # None: train.batch_size
    warmup: Annotated[int, Strict(), Field(ge=1, le=1000)] = 1  # untimed steps before each timing
    repeats: Annotated[int, Strict(), Field(ge=3, le=1000)] = 4  # timed train and inference steps (median taken)
    latency_repeats: Annotated[int, Strict(), Field(ge=4, le=10_000)] = 20  # timed batch-1 forward passes


def run(ctx: Context, spec: SpeedSpec) -> Measured:
    """Time a fresh model of the trial's spec: train img/s, inference img/s, batch-1 latency median and IQR."""
    from coatsearch.scores import training as T
    from coatsearch.training import throughput

    m, optim = ctx.inp.model, ctx.inp.optim
    plan = throughput.ThroughputPlan(
        train_batch=spec.train_batch or optim.batch_size,
        infer_batch=spec.infer_batch,
        warmup=spec.warmup,
        repeats=spec.repeats,
        latency_repeats=spec.latency_repeats,
        compile=optim.compile is True,
    )
    net = T.model(ctx, m.num_classes, no_drop=False)
    sp = throughput.measure(net, (m.in_chans, m.image_size, m.image_size), m.num_classes, optim, ctx.device, plan)
    facts = {
        "train_ips": sp.train_ips,
        "infer_ips": sp.infer_ips,
        "latency_ms": sp.latency_ms,
        "latency_iqr_ms": sp.latency_iqr_ms,
        "train_batch": sp.train_batch,
        "infer_batch": sp.infer_batch,
        "threads": sp.threads,
        "compiled": sp.compiled,
        "host": sp.host,
        "device": sp.device,
        "seconds": sp.seconds,
    }
    return Measured({_ROLES[role]: value for role, value in facts.items()})


SCORE = Score(
    name="speed",
    section=SpeedSpec,
    run=run,
    metrics=(
        Metric(_ROLES["train_ips"], "train throughput", "img/s", 1, 0, "higher", table=False),
        Metric(_ROLES["infer_ips"], "inference throughput", "img/s", 1, 0, "higher", table=False),
        Metric(_ROLES["latency_ms"], "batch-1 latency", "ms", 1, 2, "lower", table=False),
        Metric(_ROLES["latency_iqr_ms"], "batch-1 latency IQR", "ms", 1, 2, table=False),
        Metric(_ROLES["seconds"], "speed measuring time", "s", 1, 1, table=False),
    ),
    curves=lambda spec: (),
    epochs=lambda spec: (),
    roles=_ROLES,
)
