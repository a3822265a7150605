"""Claim (c)'s paired noise from a transfer pilot: per split, each seed's validation gain (fine-tune − scratch,
points) of C-C-T-T and C-T-T-T, their paired difference, its sd, and the seeds a study needs to detect the
paper's +0.61 points (CoAtNet Table 2) at the verdict's α and 80% power (analysis.stats.seeds_needed, 2 models).

A split is a pair of candidates `C-C-T-T<suffix>` and `C-T-T-T<suffix>` (spaces/pilots/transfer_c.yaml: "" is
split A, "-B" split B). Validation images only: a pilot informs the design. The last line is
`seeds_needed=<fewest over the splits>` (None: no split gets there within stats.MAX_SEEDS).

    python benchmarks/transfer_noise.py transfer_c [--studies-dir studies]
"""

from __future__ import annotations

import statistics
from pathlib import Path

from coatsearch.analysis import constants as CS
from coatsearch.analysis import stats
from coatsearch.storage import store

KEYS = ("val_pretrain_acc", "val_finetune_acc", "val_scratch_acc", "val_gain", "pretrain_steps")
PAPER = 0.61  # points: CoAtNet Table 2, C-C-T-T − C-T-T-T after JFT pretraining (82.39 − 81.78)


def seeds_of(studies: Path, name: str) -> dict[str, dict[int, dict[str, float]]]:
    """Candidate -> seed -> the transfer measures KEYS (accuracies and gain in points) of its complete trials."""
    out: dict[str, dict[int, dict[str, float]]] = {}
    for r in store.records(store.load_study(studies, name), say=False):
        vals = {k: r.run.number(f"transfer.{k}") for k in KEYS}
        if r.state == "COMPLETE" and all(v is not None for v in vals.values()):
            scale = {k: (1 if k == "pretrain_steps" else 100) for k in KEYS}
            out.setdefault(r.candidate, {})[r.seed] = {k: float(v) * scale[k] for k, v in vals.items()}  # type: ignore[arg-type]
    return out


def main() -> None:
    from coatsearch.cli_types import Parser  # the CLI's one-line errors

    ap = Parser(description=__doc__.splitlines()[0])
    ap.add_argument("study")
    ap.add_argument("--studies-dir", default="studies")
    args = ap.parse_args()
    found = seeds_of(Path(args.studies_dir), args.study)
    needed = []
    for suffix in sorted({c[len("C-C-T-T") :] for c in found if c.startswith("C-C-T-T")}):
        a, b = found.get(f"C-C-T-T{suffix}", {}), found.get(f"C-T-T-T{suffix}", {})
        print(f"split {suffix or 'A'}:")
        for name, runs in ((f"C-C-T-T{suffix}", a), (f"C-T-T-T{suffix}", b)):
            for seed, v in sorted(runs.items()):
                print(f"  {name} seed {seed}: pretrain {v['val_pretrain_acc']:.1f}% in {v['pretrain_steps']:.0f} "
                      f"steps, fine-tune {v['val_finetune_acc']:.1f}%, scratch {v['val_scratch_acc']:.1f}%, "
                      f"gain {v['val_gain']:+.2f}")  # fmt: skip
        diffs = [a[s]["val_gain"] - b[s]["val_gain"] for s in sorted(set(a) & set(b))]
        if len(diffs) < 2:
            print("  fewer than 2 paired seeds: no noise estimate")
            continue
        sd = statistics.stdev(diffs)
        n = stats.seeds_needed(sd, PAPER, 2, CS.VERDICT_ALPHA, CS.POWER)
        needed.append(n)
        print(f"  gain difference C-C-T-T − C-T-T-T per seed: {', '.join(f'{d:+.2f}' for d in diffs)}; "
              f"mean {statistics.mean(diffs):+.2f}, paired sd {sd:.2f} over {len(diffs)} seeds; "
              f"seeds to detect +{PAPER} points: {n}")  # fmt: skip
    print(f"seeds_needed={min((n for n in needed if n is not None), default=None)}")


if __name__ == "__main__":
    main()
