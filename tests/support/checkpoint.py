"""What the checkpoint tests share: a tiny space long enough to checkpoint, the record without its timings, and a
Ray trainable whose worker dies once after a checkpoint."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
STUDY = "study: {seeds: [0], baselines: false}"
EDITS = (
    ("  - {name: C-C, layout: C-C}\n", ""),
    ("batch_size: 64, warmup_epochs: 0}", "batch_size: 16, warmup_epochs: 1, compile: false}"),
    ("generalization: {per_class: 20, epochs: 2}", "generalization: {per_class: 20, epochs: 30, eval_every: 40}"),
    (STUDY, f"{STUDY}\ncheckpoint: {{every: 20, min_steps: 1}}"),
)  # tiny.yaml, one candidate: its generalization run is 360 steps, a checkpoint every 20
TIMING = ("seconds", "per_s", "wall", "throughput", "_time")  # what no two runs share, interrupted or not
DIE_ONCE = "COATSEARCH_TEST_DIE_ONCE"  # names a file: the first Ray worker that saves a checkpoint makes it and dies


def untimed(value):
    """`value` without the entries that time the run (nested mappings walked, a RunCurve as its JSON form)."""
    if hasattr(value, "to_json") and hasattr(value, "points"):
        return untimed(value.to_json())
    if isinstance(value, dict) or hasattr(value, "items"):
        return {k: untimed(v) for k, v in value.items() if not any(t in k for t in TIMING)}
    return value


def dying_trainable(config: dict, **kw) -> None:
    """The Ray backend's trainable in a worker process that dies after the test's first checkpoint."""
    from coatsearch.runner import ray_backend

    die_after_first_save()
    ray_backend._trainable(config, **kw)


def die_after_first_save() -> None:
    """After the first checkpoint of the test (the file named by DIE_ONCE not there yet; Ray has the checkpoint:
    `tune.report` returned), remove the trial's own folder, so only Ray's copy can resume it, and end the worker
    process as a crash would."""
    from coatsearch.training import checkpoint

    mark = os.environ.get(DIE_ONCE)
    if not mark or getattr(checkpoint.Saver.tick, "dies", False):
        return
    real = checkpoint.Saver.tick

    def tick(self, run, meter, epoch, done):  # the patched method's own signature
        before = self.last
        spent = real(self, run, meter, epoch, done)
        if self.last != before and not os.path.exists(mark):
            Path(mark).touch()
            shutil.rmtree(self.path.parent)
            os._exit(1)
        return spent

    tick.dies = True  # type: ignore[attr-defined]
    checkpoint.Saver.tick = tick


def make_pools():
    """The train and eval pools of the short checkpointed fits."""
    from coatsearch.training import data, subsets
    from coatsearch.vocab.specs import DataSpec

    tr, te = data.load(DataSpec("synthetic"), 32, 1)
    return subsets.subset(tr, 30, None, seed=0), subsets.eval_subset(
        te, 100, None, seed=0
    )  # 300 images: 4 steps an epoch


def fit_under(pools, policy, seed: int = 0, mixup: float = 0.2, compile: bool | str = False):
    """A short fit with mixup, augmentation and curve points, under checkpoint `policy` (None: none)."""
    import dataclasses

    from coatsearch.training import checkpoint_policy, fit
    from coatsearch.vocab.specs import OptimSpec
    from tests.support.training import CPU, tiny_net

    optim = OptimSpec(lr=3e-3, batch_size=64, mixup=mixup, compile=compile)
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        state = checkpoint_policy.Trial(policy) if policy is not None else None
        h = fit.fit(tiny_net(seed), *pools, optim, 1, seed=seed, device=CPU, max_steps=12, eval_every=5,
                    checkpoints=state)  # fmt: skip
    finally:
        torch.set_num_threads(before)
    untimed = {k: v for k, v in dataclasses.asdict(h).items() if k not in ("seconds", "images_per_s")}
    return untimed, state
