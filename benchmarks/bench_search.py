"""Does TPE beat random search on a measured layout space? Samplers replayed on a table (NAS-Bench-201 style).

The table is benchmarks/data/search_grid.csv: every structural point of benchmarks/data/search_grid.yaml (48
points: stage kinds of S2 and S3, the S2:S3 depth split, head size, MBConv downsampling; 18 rejected before
training by conv_before_attention or the budget; the 30 admitted points build 20 distinct networks,
search.identity) trained on real Fashion-MNIST images on two seeds by the grid sampler (the yaml's header gives
the two commands that remake it, about 20 minutes on 2 cores). The shipped spaces/layout_search.yaml holds
several times as many networks at 20 times the MACs, too many to measure in full on 2 cores, so its table is
not committed; search_grid is the same kind of space at a smaller scale.

Each sampler is replayed REPEATS times (replay seeds 0..REPEATS-1) for TRIALS trials through the code path of
`coatsearch replay` (coatsearch.analysis.replay): a trial's value is one seed's measurement of its point, a rejected
point costs no trial, and the regret is the best table mean minus the table mean of the incumbent. Nothing
trains, and the replay is deterministic, so one run is every run. A point whose network the replay drew already
is told that value and costs no trial, as in a study (the table's `architecture` column names the networks). It
prints each sampler's regret curve, the spread of the best found over the REPEATS search seeds, the regret at 10
and 20 trials, random search's regret at 10 and 20 trials from the table in closed form
(analysis.search_stats.random_baseline), and last `tpe_vs_random=<TPE's mean regret at 20 trials / random's>`
(below 1: TPE is better).

    python benchmarks/bench_search.py [--trials 20] [--repeats 100]
"""

from __future__ import annotations

import statistics
from pathlib import Path

from coatsearch.analysis import replay, search_stats

DATA = Path(__file__).resolve().parent / "data"
SPACE, TABLE = DATA / "search_grid.yaml", DATA / "search_grid.csv"
TRIALS_MAX = 100  # trials a replay runs (the table holds 30 admitted points; every loop is bounded)
REPEATS_MAX = 1_000


def main() -> None:
    from coatsearch.cli_types import Parser, bounded

    ap = Parser(description=__doc__.splitlines()[0])  # the CLI's number check and one-line errors
    ap.add_argument("--trials", type=bounded(1, TRIALS_MAX), default=20, help=f"1..{TRIALS_MAX}")
    ap.add_argument("--repeats", type=bounded(2, REPEATS_MAX), default=100, help=f"2..{REPEATS_MAX} (an interval)")
    args = ap.parse_args()
    measured = replay.table_from_csv(SPACE, TABLE)
    means = [statistics.fmean(v) for v in measured.values.values()]
    print(f"table: {len(measured.values)} admitted points, {len(measured.rejected)} points rejected; "
          f"eval accuracy of the points {100 * min(means):.1f}-{100 * max(means):.1f}% "
          f"(mean of {min(map(len, measured.values.values()))} seeds)")  # fmt: skip
    curves = replay.replay(measured, ["random", "tpe"], args.trials, args.repeats)
    print(replay.text(curves))
    at = {c.sampler: {n: (m, lo, hi) for n, m, lo, hi in c.points} for c in curves}
    for n in sorted({10, args.trials} & set(at["random"])):
        print(f"at {n} trials: " + "; ".join(f"{s} {100 * at[s][n][0]:.2f} [{100 * at[s][n][1]:.2f}, "
                                               f"{100 * at[s][n][2]:.2f}]" for s in at))  # fmt: skip
    nets = search_stats.networks(measured.networks, measured.values)
    for n in sorted({10, args.trials}):  # random search in closed form on the table, the replays' cross-check
        b = search_stats.random_baseline(nets, n, measured.maximize)
        print(f"random baseline at {n} trials over {b.networks} networks: regret {100 * b.regret:.2f} "
              f"[{100 * abs(b.best - b.ci[1]):.2f}, {100 * abs(b.best - b.ci[0]):.2f}]")  # fmt: skip
    tpe, rnd = at["tpe"][args.trials][0], at["random"][args.trials][0]
    print(f"tpe_vs_random={tpe / rnd:.3f}" if rnd > 0 else "tpe_vs_random=nan (random's regret is 0)")


if __name__ == "__main__":
    main()
