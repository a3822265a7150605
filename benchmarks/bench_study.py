"""A study's wall time with the speed choices off (eager) and on (`compile: auto` per architecture), one process.

One fixed small plan: paper_layouts at PROFILE with CANDIDATES x SEEDS and the profile's scores, every trial run
as a worker runs it (`trial.run_item` with the study's matched specs). Each planned trial runs twice in this
process, once with `train.compile: false` (eager) and once with `compile: auto` (the default: per architecture
over the study's planned runs, regional compile on CPU, persistent caches in the shared folder), the two taking
turns in ABBA order (eager first on even items, auto first on odd ones) so that load from other processes and
warm caches fall on both halves alike; the dataset is decoded before the clock starts. The auto half keeps the
plan's seed-major order, so its first trial of an architecture pays that architecture's compile. Evaluation
passes (inference_mode, channels_last, the eval batch of curve.eval_batch) are the same in both halves.

It prints per half the summed trial wall time, training seconds and steps, the runs' compile modes and the
seconds spent in first compiled steps (compile plus one step: a training run's step taken while its compile is due,
`fit._Run._compiled_loss` entered with `compile_pending` set), then the largest
difference in each recorded accuracy between the twin trials, and last `speedup=<eager wall / auto wall>`.
TORCHINDUCTOR_CACHE_DIR set to an empty folder measures a cold persistent cache; a second process with the
same folder measures a warm one. `--halves eager:false,auto:auto,forced:true` adds a half that always compiles
(each architecture's first run pays the compile, later ones reuse it), to weigh compile seconds against the
steps they speed up; the halves then take turns in rotation.

    python benchmarks/bench_study.py [--profile quick] [--candidates C-C-T-T,C-C-C-C] [--seeds 3] [--threads N]
"""

from __future__ import annotations

import dataclasses
import time
from collections import defaultdict
from pathlib import Path

import torch

from coatsearch.budget import prepare
from coatsearch.runner import trial as T
from coatsearch.space.objects import load_space
from coatsearch.storage import record as R
from coatsearch.storage.trials import PlanItem
from coatsearch.training import data, fit

SPACE = Path(__file__).resolve().parent.parent / "spaces" / "paper_layouts.yaml"
TRAIN_LINE = "train: {optimizer: adamw,"
HALVES = "eager:false,auto:auto"  # half:train.compile, ...; speedup = first half's wall / second half's


def space_with(profile: str, compile_value: str, seeds: int):
    """paper_layouts at `profile` with `train.compile` set and seeds 0..seeds-1."""
    text = SPACE.read_text()
    assert text.count(TRAIN_LINE) == 1, "paper_layouts.yaml: the train line moved"
    text = text.replace(TRAIN_LINE, f"train: {{compile: {compile_value}, optimizer: adamw,")
    space = load_space(SPACE, profile, text=text)
    return dataclasses.replace(space, study=dataclasses.replace(space.study, seeds=tuple(range(seeds))))


class Clock:
    """Seconds spent in first compiled steps (a compile plus one step), by half: the steps a training run takes
    while its compile is due (`compile_pending`, set by `compile: true` or by `auto` once it decides to compile)."""

    def __init__(self):
        self.half, self.spent, self.count = "", defaultdict(float), defaultdict(int)
        inner = fit._Run._compiled_loss  # (run, xb, yb, step): compiles first when the run's compile is due

        def timed(run, *args):
            if not run.compile_pending:
                return inner(run, *args)
            start = time.perf_counter()
            try:
                return inner(run, *args)
            finally:
                self.spent[self.half] += time.perf_counter() - start
                self.count[self.half] += 1

        fit._Run._compiled_loss = timed


def order(halves: list[str], i: int) -> list[str]:
    """The halves' turn for item i: ABBA for two (A first on even items), a rotation for more."""
    if len(halves) == 2:
        return halves[:: 1 if i % 2 == 0 else -1]
    return halves[i % len(halves) :] + halves[: i % len(halves)]


def run_plan(spaces: dict, names: list[str], device, clock: Clock) -> tuple[dict, dict]:
    """({half: summed trial wall seconds}, {half: attrs per trial}) of every (candidate, seed), in ABBA turns."""
    first = next(iter(spaces.values()))
    matched = {half: {n: prepare.prepare(sp.candidate(n)) for n in names} for half, sp in spaces.items()}
    data.load(first.data, first.image_size, first.channels)  # decoded once, outside the clock
    walls, out = dict.fromkeys(spaces, 0.0), {half: [] for half in spaces}
    items = [PlanItem(name, seed) for seed in first.study.seeds for name in names]
    for i, item in enumerate(items):
        for half in order(list(spaces), i):
            clock.half, start = half, time.perf_counter()
            _, attrs = T.run_item(spaces[half], item, {}, device, matched=matched[half])
            walls[half] += time.perf_counter() - start
            out[half].append(R.flat(attrs))  # the run record as its flat attributes
        print(f"  item {i + 1}/{len(items)} {item.candidate} seed {item.seed}: "
              + ", ".join(f"{h} {walls[h]:.0f} s" for h in spaces), flush=True)  # fmt: skip
    return walls, out


def summary(label: str, wall: float, records: list[dict], clock: Clock) -> None:
    """One line per half: wall, training seconds and steps (every score's runs), compile modes and seconds."""
    seconds = sum(v for r in records for k, v in r.items() if k.endswith(".seconds"))
    steps = sum(v for r in records for k, v in r.items() if k.endswith("steps") and isinstance(v, int))
    modes = sorted({str(v) for r in records for k, v in r.items() if k.endswith(".compile")})
    print(f"{label:6} wall {wall:7.1f} s  training {seconds:7.1f} s over {steps} steps  compile modes {modes}  "
          f"first compiled steps {clock.spent[label]:.1f} s in {clock.count[label]} runs")  # fmt: skip


def compare(base: str, half: str, records: dict, speedup: float) -> None:
    """Check that the twin trials' records agree in structure; print the largest accuracy gaps and the speed-up."""
    a_recs, b_recs = records[base], records[half]
    assert [sorted(a) for a in a_recs] == [sorted(b) for b in b_recs], f"{base} and {half} records differ in structure"
    accs = sorted({k for a in a_recs for k, v in a.items() if k.endswith("_acc") and isinstance(v, float)})
    pairs = list(zip(a_recs, b_recs, strict=True))  # each candidate records its own scores' accuracies
    diffs = {k: max(abs(a[k] - b[k]) for a, b in pairs if isinstance(a.get(k), float)) for k in accs}
    gaps = ", ".join(f"{k} {v:.4f}" for k, v in diffs.items())
    print(f"{half} vs {base}: {speedup:.3f}x; largest |{half} - {base}| per accuracy: {gaps}")


def main() -> None:
    """Run the plan eager, then with the speed choices; print both and the speed-up."""
    from coatsearch.cli_types import Parser, bounded  # the CLI's number check and one-line errors

    ap = Parser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="quick")
    ap.add_argument("--candidates", default="C-C-T-T,C-C-C-C")
    ap.add_argument("--seeds", type=bounded(1, 100), default=3)
    ap.add_argument("--halves", default=HALVES, help=f"half:compile,... (default {HALVES}; e.g. add forced:true)")
    ap.add_argument("--threads", type=bounded(1, 4096), default=None, help="intra-op threads (default: torch's)")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device, names = fit.pick_device("auto"), args.candidates.split(",")
    print(f"device {device}, threads {torch.get_num_threads()}, profile {args.profile}, candidates {names}, "
          f"seeds {args.seeds}")  # fmt: skip
    halves = dict(h.split(":") for h in args.halves.split(","))
    spaces = {half: space_with(args.profile, value, args.seeds) for half, value in halves.items()}
    clock = Clock()
    walls, records = run_plan(spaces, names, device, clock)
    for half in spaces:
        summary(half, walls[half], records[half], clock)
    base, *others = spaces
    for half in others:
        compare(base, half, records, walls[base] / walls[half])
    print(f"speedup={walls[base] / walls[others[0]]:.3f}")


if __name__ == "__main__":
    main()
