"""The calibration simulator's measured constants (lab.simulate), read from a finished study.

For each model of the study's generalization runs: the median step at which the probe train loss first reaches
claim (a)'s FIT_LOSS (simulate._FIT_STEPS; interpolated in log loss between the two points that bracket it), the
median log-sd of the probe loss around a log-linear fit of each run's curve from its first point after step 0 down
to FIT_LOSS (simulate._PROBE_SD), and each model's mean matched reading. Then the pooled paired noise of the matched
reading (simulate._SIGMA = sd_diff / √2), the fair linear floor's offset from the models' mean (the REAL scenario),
the training images and the batch the steps were counted at. The last line is `sigma_matched=<σ>`.

With --failures, it counts instead the completed runs of the named studies and those that failed to train (every
eval accuracy they recorded within 2 points of chance, 10 classes); the last line is `failed_runs=<k>/<n>`.

    python benchmarks/sim_constants.py paper_layouts [--studies-dir studies]
    python benchmarks/sim_constants.py --failures paper_layouts paper_layouts-rep vit_stems vit_stems-rep
"""

from __future__ import annotations

import math
import statistics
from pathlib import Path

import numpy as np

from coatsearch.analysis import constants as CS
from coatsearch.papers import claims as C
from coatsearch.papers import judging
from coatsearch.papers.paper import GEN, MATCHED_KEY
from coatsearch.storage import record as R
from coatsearch.storage import store
from coatsearch.storage.trials import stored_space_record


def fit_step(step: np.ndarray, loss: np.ndarray, level: float) -> float | None:
    """The step at which the curve first reaches `level`, interpolated in log loss (None: never)."""
    hit = np.flatnonzero(loss <= level)
    if not len(hit) or hit[0] == 0:
        return None
    j = int(hit[0])
    t = (math.log(loss[j - 1]) - math.log(level)) / (math.log(loss[j - 1]) - math.log(loss[j]))
    return float(step[j - 1] + t * (step[j] - step[j - 1]))


def probe_sd(step: np.ndarray, loss: np.ndarray, level: float) -> float | None:
    """Log-sd of the probe loss around a log-linear fit over the points after step 0 down to `level`."""
    keep = (step > 0) & (np.maximum.accumulate(loss[::-1])[::-1] > level)  # up to the last point above it
    if keep.sum() < 4:
        return None
    y = np.log(loss[keep])
    resid = y - np.polyval(np.polyfit(step[keep], y, 1), step[keep])
    return float(resid.std(ddof=2))


def failures(studies: list[str], studies_dir: Path) -> None:
    """Completed runs with an eval accuracy, and those at chance, per study and in all."""
    total = failed = 0
    for name in studies:
        n = k = 0
        for r in store.records(store.load_study(studies_dir, name), say=False):
            m = R.measured(r.run)
            accs = [v for key, v in m.items() if key.endswith("eval_acc") and isinstance(v, int | float)]
            if r.state == "COMPLETE" and accs:
                n, k = n + 1, k + (max(accs) < 0.12)
        print(f"{name}: {k} of {n} completed runs at chance")
        total, failed = total + n, failed + k
    print(f"failed_runs={failed}/{total}")


def main() -> None:
    from coatsearch.cli_types import Parser  # the CLI's number check and one-line errors

    ap = Parser(description=__doc__.splitlines()[0])
    ap.add_argument("study", nargs="+")
    ap.add_argument("--studies-dir", type=Path, default=Path("studies"))
    ap.add_argument("--failures", action="store_true")
    args = ap.parse_args()
    if args.failures:
        return failures(args.study, args.studies_dir)
    st = store.load_study(args.studies_dir, args.study[0])
    records = [r for r in store.records(st, say=False) if r.state == "COMPLETE"]
    steps: dict[str, list[float]] = {}
    sds: dict[str, list[float]] = {}
    images: set[int] = set()
    for r in records:
        m = R.measured(r.run)
        c = m.get(f"curves.{GEN}")
        if not c:
            continue
        images.add(int(m.get(f"{GEN}.images") or 0))
        step, loss = np.asarray(c["step"], float), np.asarray(c["train_loss"], float)
        if (s := fit_step(step, loss, C.FIT_LOSS)) is not None:
            steps.setdefault(r.candidate, []).append(s)
        if (d := probe_sd(step, loss, C.FIT_LOSS)) is not None:
            sds.setdefault(r.candidate, []).append(d)
    judged = judging.judge_records(stored_space_record(st.user_attrs), records, describe=False)
    level = judged.gen.level
    means = {}
    for row in judged.rows:
        vals = [v for v in row.by_seed.get(MATCHED_KEY, {}).values() if v is not None]
        if vals:
            means[row.candidate] = statistics.fmean(vals)
    for name in sorted(set(steps) | set(sds)):
        st_ = steps.get(name, [])
        print(f"{name}: steps to {C.FIT_LOSS} nats median {statistics.median(st_) if st_ else float('nan'):.0f} "
              f"(n {len(st_)}), probe log-sd median {statistics.median(sds.get(name, [math.nan])):.3f}, "
              f"matched reading {means.get(name, math.nan):.2f}")  # fmt: skip
    models = [v for k, v in means.items() if k not in CS.BASELINES]
    floors = [
        100 * float(R.measured(r.run)[f"{GEN}.floor_acc"])
        for r in records
        if r.candidate == CS.BASELINES[0] and f"{GEN}.floor_acc" in R.measured(r.run)
    ]
    noise = judged.noise.of(MATCHED_KEY)
    print(f"matched level {level} nats; training images {sorted(images)}")
    if floors and models:
        floor, mean = statistics.fmean(floors), statistics.fmean(models)
        print(f"fair linear floor {floor:.2f}% against the models' mean {mean:.2f}%: offset {floor - mean:+.2f}")
    if noise is not None:
        print(f"pooled paired sd {noise.sd_diff:.3f} (df {noise.df}, {noise.k} candidates)")
        print(f"sigma_matched={noise.sd_diff / math.sqrt(2):.3f}")


if __name__ == "__main__":
    main()
