"""One paper_layouts candidate's fit eager, then compiled twice, with curve points: wall time and compiled graphs.

Each fit trains a fresh model of the candidate (seed 0) for STEPS steps at batch 32 on 1,000 training images,
without augmentation, with a curve point every EVERY steps (the probe subset and 1,000 eval images, as a study's
runs measure them), one intra-op thread. The first compiled fit pays the regional compile (served by the
persistent caches in `speed.compile_cache_dir()` when they hold it); the second, on a new model of the same
architecture, reuses the compiled graphs as a study's next seed does. After each fit it prints dynamo's count of
compiled graphs: evaluation batches padded to one shape (`curve.eval_tensors(pad=True)`) keep it at one training
and one evaluation graph per compiled region shape. The last line is `speedup=<eager wall / second compiled wall>`.

    python benchmarks/bench_compiled_fit.py [--candidate C-T-T-T] [--steps 600] [--every 100]
"""

from __future__ import annotations

import time
from pathlib import Path

import torch
import torch._dynamo.utils

from coatsearch import api
from coatsearch.training import data as D
from coatsearch.training import fit
from coatsearch.vocab.specs import OptimSpec

SPACE = Path(__file__).resolve().parent.parent / "spaces" / "paper_layouts.yaml"


def main() -> None:
    from coatsearch.cli_types import Parser, bounded  # the CLI's number check and one-line errors

    ap = Parser(description=__doc__.splitlines()[0])
    ap.add_argument("--candidate", default="C-T-T-T")
    ap.add_argument("--steps", type=bounded(1, 10_000_000), default=600)
    ap.add_argument("--every", type=bounded(1, 10_000_000), default=100)
    args = ap.parse_args()
    torch.set_num_threads(1)
    space = api.load_space(SPACE)
    cand = space.candidate(args.candidate)
    pool, test = D.load(space.data, space.image_size, space.channels)
    sub = D.TensorData(pool.x[:1000], pool.y[:1000], pool.classes, pool.hflip)
    held = D.TensorData(test.x[:1000], test.y[:1000], test.classes, test.hflip)
    walls = {}
    for label, compiled in (("eager", False), ("compiled, first", True), ("compiled, second", True)):
        torch.manual_seed(0)
        model = api.build(cand)
        start = time.perf_counter()
        optim = OptimSpec(batch_size=32, compile=compiled, randaugment=False)
        h = fit.fit(model, sub, held, optim, 1, seed=0, device=torch.device("cpu"), augment=False,
                      eval_every=args.every, max_steps=args.steps)  # fmt: skip
        walls[label] = time.perf_counter() - start
        graphs = torch._dynamo.utils.counters["stats"]["unique_graphs"]
        print(f"{args.candidate} {label}: {h.compile_mode}, {walls[label]:.1f} s, {h.steps} steps, "
              f"{graphs} compiled graphs so far, final eval acc {h.curve.eval_acc[-1]:.3f}", flush=True)  # fmt: skip
    print(f"speedup={walls['eager'] / walls['compiled, second']:.3f}")


if __name__ == "__main__":
    main()
