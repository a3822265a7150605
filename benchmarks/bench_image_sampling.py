"""Why per-seed test draws: the false firm rate of a paired seed test when two architectures differ image by image.

Two architectures with the same population accuracy that get DIFFERENT images right (an architecture-specific
per-image effect, sd `tau` in logits) are judged by the claims' paired rule (`report.stats`: noise pooled from
the candidate + seed fit, Student t, level `claims.VERDICT_ALPHA`), two-sided, on `SEEDS` seeds:
- shared: one test draw of `TEST` images serves every seed (`data.test_sampling: shared`);
- per_seed: each seed samples its own `TEST` images from the pool outside validation (`per_seed`).
Per image and seed, correctness is Bernoulli(sigmoid(mu + difficulty + architecture effect + seed noise)); the
pool is the `POOL` Fashion-MNIST test images outside 1,000 validation images. Each replicate draws a fresh pool
effect, so the expected difference is 0 and every firm call is false. With tau = 0 both draws are calibrated; as
tau grows, one shared draw carries a fixed architecture-by-image offset that more seeds do not average away, so
its firm rate climbs above α, while per-seed draws put that offset into the seed-to-seed spread.

    python benchmarks/bench_image_sampling.py [--replicates 2000]

The last line is `shared_firm_at_tau1=<rate>` (per-seed rates are printed above it).
"""

from __future__ import annotations

import numpy as np
from scipy import stats as st

from coatsearch.analysis import stats
from coatsearch.analysis.constants import VERDICT_ALPHA

POOL, TEST, SEEDS = 9000, 1000, 5  # Fashion-MNIST's 10,000 test images less 1,000 validation; a study's draw, seeds
MU, DIFFICULTY, SEED_NOISE = 1.6, 1.5, 0.8  # logits: ~80% accuracy, image difficulty, run-to-run noise per image
TAUS = (0.0, 0.5, 1.0, 1.5)


def one_study(rng: np.random.Generator, tau: float, per_seed: bool) -> bool:
    """One null study of two architectures: is the paired test firm (two-sided, at VERDICT_ALPHA)?"""
    difficulty = rng.normal(0, DIFFICULTY, POOL)
    arch = rng.normal(0, tau, (2, POOL))  # each architecture's own per-image advantage; population mean 0
    arch -= arch.mean(axis=1, keepdims=True)  # the pool itself favours neither (the pool's own draw is not tested)
    shared = rng.choice(POOL, TEST, replace=False)
    acc: dict[str, dict[int, float]] = {"A": {}, "B": {}}
    for seed in range(SEEDS):
        images = rng.choice(POOL, TEST, replace=False) if per_seed else shared
        for k, name in enumerate(acc):
            logit = MU + difficulty[images] + arch[k, images] + rng.normal(0, SEED_NOISE, TEST)
            acc[name][seed] = 100.0 * float((rng.random(TEST) < 1 / (1 + np.exp(-logit))).mean())
    pooled = stats.noise(acc)
    out = stats.paired(acc["A"], acc["B"], 1.0, pooled, VERDICT_ALPHA)
    return out.p is not None and out.p < VERDICT_ALPHA


def disagreement(rng: np.random.Generator, tau: float) -> tuple[float, float]:
    """(share of images two seeds of one architecture answer differently, the same for two architectures)."""
    difficulty, arch = rng.normal(0, DIFFICULTY, POOL), rng.normal(0, tau, (2, POOL))

    def right(k: int) -> np.ndarray:
        logit = MU + difficulty + arch[k] + rng.normal(0, SEED_NOISE, POOL)
        return rng.random(POOL) < 1 / (1 + np.exp(-logit))

    a1, a2, b = right(0), right(0), right(1)
    return float((a1 != a2).mean()), float((a1 != b).mean())


def main() -> None:
    from coatsearch.cli_types import Parser, bounded  # the CLI's number check and one-line errors

    ap = Parser(description=__doc__.split("\n")[0])
    ap.add_argument("--replicates", type=bounded(1, 1_000_000), default=2000, help="null studies per (tau, sampling)")
    args = ap.parse_args()
    rng = np.random.default_rng(20261202)
    print(f"{args.replicates} null studies per cell, {SEEDS} seeds, {TEST} test images of {POOL}, α {VERDICT_ALPHA}")
    rates = {}
    for tau in TAUS:
        for per_seed in (False, True):
            firm = sum(one_study(rng, tau, per_seed) for _ in range(args.replicates))
            ci = st.binomtest(firm, args.replicates).proportion_ci(0.95, method="exact")
            rates[tau, per_seed] = firm / args.replicates
            if not per_seed:
                seeds, archs = disagreement(rng, tau)
                print(f"tau {tau:.1f}: two seeds of one architecture disagree on {100 * seeds:.1f}% of images, "
                      f"two architectures on {100 * archs:.1f}%")  # fmt: skip
            print(f"tau {tau:.1f} {'per_seed' if per_seed else 'shared  '}: firm {100 * firm / args.replicates:5.1f}% "
                  f"[{100 * ci.low:.1f}%, {100 * ci.high:.1f}%]")  # fmt: skip
    print(f"shared_firm_at_tau1={rates[1.0, False]:.3f}")


if __name__ == "__main__":
    main()
