"""Fixed costs of one trial: a real paper_layouts candidate through a full trial, timed inside the same run.

The trial runs as a worker runs it (`trial.attempt` on a fresh study whose matched specs are stored once),
in a fresh process, so it pays the first data load of its worker. Inside the same run it adds up the time
spent in training steps (`fit._Run.step`) and in evaluation passes (`curves.eval_tensors`: curve points,
epoch evaluations, the clean train pass, robustness) and prints everything else as fixed cost. On CUDA each
timed call is synchronized. The last line is `overhead=<trial wall / (training steps + evaluation passes)>`.
With `--log tensorboard|mlflow` the trial is tracked as `coatsearch run --log` tracks it (runner.tracking, into
the temporary study folder), and the time spent inside the tracker (its curve points and its end) is printed too.

    python benchmarks/bench_trial.py [--candidate C-C-T-T] [--profile default] [--device cpu|cuda] [--threads N]
                                     [--log none|tensorboard|mlflow]
"""

from __future__ import annotations

import dataclasses
import tempfile
import time
from pathlib import Path

import torch

from coatsearch.runner import tracking
from coatsearch.runner import trial as T
from coatsearch.space.objects import load_space
from coatsearch.storage import record as R
from coatsearch.storage import store
from coatsearch.storage.trials import PlanItem
from coatsearch.training import curves, fit

SPACE = Path(__file__).resolve().parent.parent / "spaces" / "paper_layouts.yaml"


class Timer:
    """Seconds spent inside wrapped functions, by name (synchronizing CUDA around each call)."""

    def __init__(self, device: torch.device):
        self.device, self.spent = device, {"train": 0.0, "eval": 0.0}

    def wrap(self, name: str, fn):
        """`fn`, adding its wall time to `name` (a nested call of the same name is counted once)."""
        depth = [0]

        def timed(*args, **kwargs):
            sync = self.device.type == "cuda" and depth[0] == 0
            if sync:
                torch.cuda.synchronize(self.device)
            start, depth[0] = time.perf_counter(), depth[0] + 1
            try:
                return fn(*args, **kwargs)
            finally:
                depth[0] -= 1
                if sync:
                    torch.cuda.synchronize(self.device)
                if depth[0] == 0:
                    self.spent[name] += time.perf_counter() - start

        return timed


def main() -> None:
    """Run one trial and print where its wall time went."""
    from coatsearch.cli_types import Parser, bounded  # the CLI's number check and one-line errors

    ap = Parser(description=__doc__.splitlines()[0])
    ap.add_argument("--candidate", default="C-C-T-T")
    ap.add_argument("--profile", default="default")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=bounded(1, 4096), default=None, help="intra-op threads (default: torch's)")
    ap.add_argument("--log", choices=tracking.CHOICES, default="none", help="track the trial (runner.tracking)")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = fit.pick_device(args.device)
    space = dataclasses.replace(load_space(SPACE, args.profile), log=args.log)
    tracking.check(args.log)
    timer = Timer(device)
    timer.spent["tracking"] = 0.0
    for cls in (tracking.TensorBoard, tracking.MLflow):
        cls.point = timer.wrap("tracking", cls.point)  # type: ignore[method-assign]
        cls.finish = timer.wrap("tracking", cls.finish)  # type: ignore[method-assign]
    fit._Run.step = timer.wrap("train", fit._Run.step)
    fit.eval_tensors = curves.eval_tensors = timer.wrap("eval", curves.eval_tensors)
    with tempfile.TemporaryDirectory() as tmp:
        study = store.create_study(space, Path(tmp), "bench")
        matched = store.matched(study, space, store.folder(Path(tmp), "bench"))
        item = PlanItem(args.candidate, space.study.seeds[0])
        start = time.perf_counter()
        with tracking.tracked(space, store.folder(Path(tmp), "bench"), item, {}, 0) as tracker:
            heard = tracking.listener(tracker)
            state, run, value = T.attempt(space, item, {}, device, R.Environment(), matched=matched, listener=heard)
            tracking.finish(tracker, state, run, value)
        wall = time.perf_counter() - start
    if state != "COMPLETE":
        raise SystemExit(f"trial {state}: {run.fail_reason if run else None}")
    useful = timer.spent["train"] + timer.spent["eval"]
    print(f"candidate {args.candidate}, profile {args.profile}, device {device}, threads {torch.get_num_threads()}")
    tr, ev = timer.spent["train"], timer.spent["eval"]
    print(f"trial wall {wall:.1f} s = training steps {tr:.1f} s + evaluation passes {ev:.1f} s", end="")
    print(f" + the rest (data, build, subsets) {wall - useful:.1f} s")
    if args.log != "none":
        print(f"tracking ({args.log}): {timer.spent['tracking']:.2f} s inside the tracker of {wall:.1f} s")
    print(f"overhead={wall / useful:.3f}")


if __name__ == "__main__":
    main()
