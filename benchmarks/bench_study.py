"""A study's wall time with the speed choices off (eager) and on (`compile: auto` per architecture), one process.

One fixed small plan: paper_layouts at PROFILE with CANDIDATES x SEEDS and the profile's scores, every trial run
as a worker runs it (`trial.run_item` with the study's matched specs). It runs the plan twice in this
process: first with `train.compile: false` (eager), then with `compile: auto` (the default: per architecture
over the study's planned runs, regional compile on CPU, persistent caches in the shared folder). Evaluation
passes (inference_mode, channels_last, the eval batch of curve.eval_batch) are the same in both halves.
It prints per half the wall time, training seconds and steps and the runs' compile modes, then the largest
difference in each recorded accuracy between the halves' twin trials, and last `speedup=<eager wall / auto wall>`.

    python benchmarks/bench_study.py [--profile quick] [--candidates C-C-T-T,C-C-C-C] [--seeds 3] [--threads N]
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

import torch

from coatsearch import candidates, train
from coatsearch import trial as T
from coatsearch.space import load_space
from coatsearch.trials_plan import PlanItem

SPACE = Path(__file__).resolve().parent.parent / "spaces" / "paper_layouts.yaml"
TRAIN_LINE = "train: {optimizer: adamw,"


def space_with(profile: str, compile_value: str, seeds: int):
    """paper_layouts at `profile` with `train.compile` set and seeds 0..seeds-1."""
    text = SPACE.read_text()
    assert text.count(TRAIN_LINE) == 1, "paper_layouts.yaml: the train line moved"
    text = text.replace(TRAIN_LINE, f"train: {{compile: {compile_value}, optimizer: adamw,")
    space = load_space(SPACE, profile, text=text)
    return dataclasses.replace(space, study=dataclasses.replace(space.study, seeds=tuple(range(seeds))))


def run_plan(space, names: list[str], device) -> tuple[float, list[dict]]:
    """(wall seconds, attrs per trial) of every (candidate, seed) of the plan, in seed-major order."""
    matched = {n: candidates.prepare(space.candidate(n)) for n in names}
    out, start = [], time.perf_counter()
    for seed in space.study.seeds:
        for name in names:
            _, attrs = T.run_item(space, PlanItem(name, seed), {}, device, matched=matched)
            out.append(attrs)
    return time.perf_counter() - start, out


def summary(label: str, wall: float, records: list[dict]) -> None:
    """One line per half: wall, training seconds and steps (every score's runs), compile modes seen."""
    seconds = sum(v for r in records for k, v in r.items() if k.endswith(".seconds"))
    steps = sum(v for r in records for k, v in r.items() if k.endswith("steps") and isinstance(v, int))
    modes = sorted({str(v) for r in records for k, v in r.items() if k.endswith(".compile")})
    print(f"{label:5} wall {wall:7.1f} s  training {seconds:7.1f} s over {steps} steps  compile modes {modes}")


def main() -> None:
    """Run the plan eager, then with the speed choices; print both and the speed-up."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="quick")
    ap.add_argument("--candidates", default="C-C-T-T,C-C-C-C")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=None, help="intra-op threads (default: torch's)")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device, names = train.pick_device("auto"), args.candidates.split(",")
    print(f"device {device}, threads {torch.get_num_threads()}, profile {args.profile}, candidates {names}, "
          f"seeds {args.seeds}")  # fmt: skip
    eager_wall, eager = run_plan(space_with(args.profile, "false", args.seeds), names, device)
    summary("eager", eager_wall, eager)
    auto_wall, auto = run_plan(space_with(args.profile, "auto", args.seeds), names, device)
    summary("auto", auto_wall, auto)
    assert [sorted(a) for a in eager] == [sorted(a) for a in auto], "the halves' records differ in structure"
    accs = sorted(k for k in eager[0] if k.endswith("_acc") and isinstance(eager[0][k], float))
    diffs = {k: max(abs(a[k] - b[k]) for a, b in zip(eager, auto, strict=True)) for k in accs}
    print("largest |auto - eager| per accuracy: " + ", ".join(f"{k} {v:.4f}" for k, v in diffs.items()))
    print(f"speedup={eager_wall / auto_wall:.3f}")


if __name__ == "__main__":
    main()
