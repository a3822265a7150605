"""Size and save time of a trial checkpoint: a default-profile paper_layouts candidate trained through `fit.fit`.

The candidate's model is the one matched for spaces/paper_layouts.yaml's `default` profile (`Candidate.prepared`,
as `coatsearch show` lists it) with the profile's optimizer settings (eager). It trains `--steps` steps on the
generalization score's real Fashion-MNIST subset (`per_class` images of each class, seed 0; no augmentation, no
curve points, no clean train pass) through `fit.fit`, inside `runner.resume.trial` with the space's checkpoint
policy replaced by `{every: --every, min_steps: 1, keep: true}`, so the run's saver writes
`<study>/checkpoints/<candidate>/seed=0/sample=0/fit1.safetensors` as a trial's would. Every `Saver.save` call
is timed (wall clock around the whole call: gathering the model, optimizer and RNG state to CPU tensors, JSON
metadata, safetensors write through the safe writer). Prints each save's milliseconds, the file's size and, last,
`checkpoint_save_ms=<median save>`.

    python benchmarks/bench_checkpoint.py [--candidate C-C-C-T] [--profile default] [--steps 300] [--every 50]
                                          [--threads N]
"""

from __future__ import annotations

import dataclasses
import statistics
import tempfile
import time
from pathlib import Path

import torch

from coatsearch.models import build
from coatsearch.runner import resume
from coatsearch.space.objects import load_space
from coatsearch.storage.trials import PlanItem
from coatsearch.training import checkpoint, data, fit, subsets

SPACE = Path(__file__).resolve().parent.parent / "spaces" / "paper_layouts.yaml"


def main() -> None:
    """Train one checkpointed run and print the checkpoint's size and save times."""
    from coatsearch.cli_types import Parser, bounded  # the CLI's number check and one-line errors

    ap = Parser(description=__doc__.splitlines()[0])
    ap.add_argument("--candidate", default="C-C-C-T")
    ap.add_argument("--profile", default="default")
    ap.add_argument("--steps", type=bounded(1, 10_000_000), default=300)
    ap.add_argument("--every", type=bounded(1, 10_000_000), default=50)
    ap.add_argument("--threads", type=bounded(1, 4096), default=None, help="intra-op threads (default: torch's)")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    space = load_space(SPACE, args.profile)
    policy = dataclasses.replace(space.checkpoint, every=args.every, min_steps=1, keep=True)
    space = dataclasses.replace(space, checkpoint=policy)
    cand = space.candidate(args.candidate)
    prep = cand.prepared
    spec = prep.model
    per_class = cand.scores.generalization.per_class if cand.scores.generalization else 600
    pool, test = data.load(space.data, spec.image_size, spec.in_chans)
    train = subsets.subset(pool, per_class, None, seed=0)
    torch.manual_seed(0)
    net = build(spec)
    params = sum(p.numel() for p in net.parameters())

    saves: list[float] = []
    real = checkpoint.Saver.save

    def timed(self, *a, **kw):
        start = time.perf_counter()
        try:
            return real(self, *a, **kw)
        finally:
            saves.append(time.perf_counter() - start)

    checkpoint.Saver.save = timed  # type: ignore[method-assign]
    device = torch.device("cpu")
    with tempfile.TemporaryDirectory() as tmp:
        item = PlanItem(args.candidate, 0)
        start = time.perf_counter()
        with resume.trial(space, Path(tmp), item) as (done, saves):
            fit.fit(net, train, None, prep.optim, 1, seed=0, device=device, augment=False,
                    measure_train=False, eval_every=0, max_steps=args.steps, checkpoints=saves)  # fmt: skip
            done(("COMPLETE", None, None))
        wall = time.perf_counter() - start
        files = sorted((resume.folder_of(Path(tmp), item)).glob("fit*.safetensors"))
        if not files or not saves:
            raise SystemExit("no checkpoint was written")
        size = files[0].stat().st_size
    o = prep.optim
    print(f"candidate {args.candidate}, profile {args.profile}, params {params}, {len(train)} training images, "
          f"batch {o.batch_size}, optimizer {o.optimizer}, threads {torch.get_num_threads()}")  # fmt: skip
    print(f"{args.steps} steps in {wall:.1f} s, {len(saves)} saves (every {args.every} steps)")
    print("save ms: " + " ".join(f"{s * 1000:.1f}" for s in saves))
    print(f"checkpoint file {files[0].name}: {size} bytes ({size / 1e6:.3f} MB)")
    ms = sorted(s * 1000 for s in saves)
    print(f"save: median {statistics.median(ms):.1f} ms, min {ms[0]:.1f} ms, max {ms[-1]:.1f} ms")
    print(f"checkpoint_bytes={size}")
    print(f"checkpoint_save_ms={statistics.median(ms):.1f}")


if __name__ == "__main__":
    main()
