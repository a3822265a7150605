"""The same quick study through both backends in one run: Ray's wall time against Optuna's.

Both run the first `--trials` planned trials of paper_layouts' quick profile with the same parallelism:
the optuna backend with P worker processes of T = cores / P threads, Ray with P slots of T CPUs (a local Ray started and
stopped inside its timed call, as `coatsearch run --backend ray` does). Each writes a fresh study in a
temporary folder; no report. The last line is `ratio=<ray wall / optuna wall>`.

    python benchmarks/bench_backends.py [--trials 4] [--processes 2] [--device cpu] [--profile quick]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from coatsearch import api

SPACE = Path(__file__).resolve().parent.parent / "spaces" / "paper_layouts.yaml"


def timed(backend: str, space: api.Space, args: argparse.Namespace, folder: Path) -> tuple[float, api.RunResult]:
    """Wall seconds of one whole `api.run` on `backend` (P processes or slots of T threads), and its result."""
    threads = max(1, (os.cpu_count() or 1) // args.processes)  # what the optuna backend gives each worker
    extra = {"workers": args.processes} if backend == "optuna" else {"cpus_per_trial": float(threads)}
    start = time.perf_counter()
    res = api.run(
        space, study="bench", backend=backend, device=args.device, trials=args.trials, studies_dir=folder,
        report=False, progress=False, **extra,
    )  # fmt: skip
    return time.perf_counter() - start, res


def main() -> None:
    """Run the study on both backends; print each wall time, then the ratio."""
    from coatsearch.cli_types import Parser, bounded  # the CLI's number check and one-line errors

    ap = Parser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=bounded(1, 100_000), default=4)
    ap.add_argument("--processes", type=bounded(1, 64), default=2, help="optuna workers = Ray slots")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--profile", default="quick")
    args = ap.parse_args()
    space = api.load_space(SPACE, args.profile)
    walls = {}
    for backend in ("optuna", "ray"):
        with tempfile.TemporaryDirectory() as tmp:
            walls[backend], res = timed(backend, space, args, Path(tmp))
        print(f"{backend:6} {walls[backend]:7.1f} s  ({res.complete} complete, {res.failed} failed)")
    print(f"ratio={walls['ray'] / walls['optuna']:.3f}")


if __name__ == "__main__":
    main()
