"""Does TPE beat random search on a measured layout space? Samplers replayed on a table (NAS-Bench-201 style).

Two committed tables (`--table`), each every structural point of a space trained on real Fashion-MNIST images on
two seeds by `coatsearch enumerate` or the grid sampler, exported with `coatsearch export --format csv`:
- `layout_search` (the default): benchmarks/data/layout_search.csv, the shipped spaces/layout_search.yaml's
  default profile at paper_layouts' in-regime proxy (24 points, 12 rejected by conv_before_attention, 12
  networks at 3M MACs, 12,000 images, 10 epochs annealed), frozen as benchmarks/data/layout_search.yaml, which
  also gives the commands that remake it;
- `search_grid`: benchmarks/data/search_grid.csv, a smaller space at 0.5M MACs on 16x16 images (48 points, 30
  admitted, 20 networks; benchmarks/data/search_grid.yaml, about 20 minutes on 2 cores).

Each sampler is replayed REPEATS times (replay seeds 0..REPEATS-1) for TRIALS trials through the code path of
`coatsearch replay` (coatsearch.analysis.replay): a trial's value is one seed's measurement of its point, a rejected
point costs no trial, and the regret is the best table mean minus the table mean of the incumbent. Nothing
trains, and the replay is deterministic, so one run is every run. A point whose network the replay drew already
is told that value and costs no trial, as in a study (the table's `architecture` column names the networks). It
prints each sampler's regret curve, the spread of the best found over the REPEATS search seeds, the regret at 3,
5, 10 and 20 trials (those within --trials), random search's regret there from the table in closed form
(analysis.search_stats.random_baseline), and last `tpe_vs_random=<TPE's mean regret at --trials / random's>`
(below 1: TPE is better; the default --trials is half the table's networks).

    python benchmarks/bench_search.py [--table layout_search|search_grid] [--trials N] [--repeats 100]
"""

from __future__ import annotations

import statistics
from pathlib import Path

from coatsearch.analysis import replay, search_stats

DATA = Path(__file__).resolve().parent / "data"
TABLES = ("layout_search", "search_grid")  # DATA/<name>.yaml (the space measured) and DATA/<name>.csv (its table)
TRIALS_MAX = 100  # trials a replay runs (every loop is bounded)
REPEATS_MAX = 1_000
AT = (3, 5, 10, 20)  # budgets the regret is printed at


def main() -> None:
    from coatsearch.cli_types import Parser, bounded

    ap = Parser(description=__doc__.splitlines()[0])  # the CLI's number check and one-line errors
    ap.add_argument("--table", choices=TABLES, default=TABLES[0])
    ap.add_argument("--trials", type=bounded(1, TRIALS_MAX), default=None, help=f"1..{TRIALS_MAX}")
    ap.add_argument("--repeats", type=bounded(2, REPEATS_MAX), default=100, help=f"2..{REPEATS_MAX} (an interval)")
    args = ap.parse_args()
    measured = replay.table_from_csv(DATA / f"{args.table}.yaml", DATA / f"{args.table}.csv")
    means = [statistics.fmean(v) for v in measured.values.values()]
    nets = search_stats.networks(measured.networks, measured.values)
    trials = args.trials or max(1, len(nets) // 2)
    print(f"table {args.table}: {len(measured.values)} admitted points, {len(nets)} networks, "
          f"{len(measured.rejected)} points rejected; eval accuracy of the points {100 * min(means):.1f}-"
          f"{100 * max(means):.1f}% (mean of {min(map(len, measured.values.values()))} seeds)")  # fmt: skip
    curves = replay.replay(measured, ["random", "tpe"], trials, args.repeats)
    print(replay.text(curves))
    at = {c.sampler: {n: (m, lo, hi) for n, m, lo, hi in c.points} for c in curves}
    budgets = sorted({n for n in AT if n <= trials} | {trials})
    for n in budgets:
        print(f"at {n} trials: " + "; ".join(f"{s} {100 * at[s][n][0]:.2f} [{100 * at[s][n][1]:.2f}, "
                                               f"{100 * at[s][n][2]:.2f}]" for s in at))  # fmt: skip
    for n in budgets:  # random search in closed form on the table, the replays' cross-check
        b = search_stats.random_baseline(nets, n, measured.maximize)
        print(f"random baseline at {n} trials over {b.networks} networks: regret {100 * b.regret:.2f} "
              f"[{100 * abs(b.best - b.ci[1]):.2f}, {100 * abs(b.best - b.ci[0]):.2f}]")  # fmt: skip
    tpe, rnd = at["tpe"][trials][0], at["random"][trials][0]
    print(f"tpe_vs_random={tpe / rnd:.3f}" if rnd > 0 else "tpe_vs_random=nan (random's regret is 0)")


if __name__ == "__main__":
    main()
