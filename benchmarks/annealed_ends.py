"""Claim (a) read at annealed ends: per model and schedule length, the train loss and accuracy where it ended.

A study of the `length` score (spaces/pilots/regime_a4.yaml) trains each model afresh for several schedule lengths,
each annealed to its end, so every length gives one point (train loss on the probe, validation and test accuracy)
at lr ~ 0. Between the two ends that bracket a train-loss level, accuracy is interpolated in log loss: each model's
annealed reading at that level. The last line is `contrast=<first model − last model at the lowest level all
bracket, validation points>`, the models in the order of `--models`.

    python benchmarks/annealed_ends.py regime_a4 [--studies-dir studies] [--models C-C-C-T,ViT_REL]
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

from coatsearch.storage import store

LEVELS = (0.3, 0.2, 0.15, 0.1, 0.07, 0.05)


def ends(studies: Path, name: str) -> dict[str, list[tuple[int, float, float, float]]]:
    """Candidate -> [(epochs, train loss, validation acc %, test acc %)] at the end of each length, shortest first."""
    out: dict[str, list[tuple[int, float, float, float]]] = {}
    for r in store.records(store.load_study(studies, name), say=False):
        for curve in r.run.curves:
            c = r.run.curve(curve)
            if c and r.state == "COMPLETE" and curve.startswith("length") and curve[6:].isdigit():
                point = (int(curve[6:]), c.train_loss[-1], 100 * c.val_acc[-1], 100 * c.eval_acc[-1])
                out.setdefault(r.candidate, []).append(point)
    return {k: sorted(v) for k, v in out.items()}


def at_level(points: list[tuple[int, float, float, float]], level: float) -> float | None:
    """Validation accuracy interpolated in log loss between the two ends around `level` (None: not bracketed)."""
    for (_, l1, a1, _), (_, l2, a2, _) in itertools.pairwise(points):
        if l1 >= level >= l2 and l1 > l2:
            t = (math.log(l1) - math.log(level)) / (math.log(l1) - math.log(l2))
            return a1 + t * (a2 - a1)
    return None


def main() -> None:
    from coatsearch.cli_types import Parser  # the CLI's number check and one-line errors

    ap = Parser(description=__doc__.splitlines()[0])
    ap.add_argument("study")
    ap.add_argument("--studies-dir", default="studies")
    ap.add_argument("--models", default="C-C-C-T,ViT_REL", help="the contrast's two models, better first")
    args = ap.parse_args()
    found = ends(Path(args.studies_dir), args.study)
    for cand, points in found.items():
        print(cand)
        for e, loss, val, test in points:
            print(f"  {e:3d} epochs: train loss {loss:.4f}, validation {val:.1f}%, test {test:.1f}%")
    contrast = None
    a, b = args.models.split(",")
    for level in LEVELS:
        read = {c: at_level(p, level) for c, p in found.items()}
        print(f"at {level:g} nats: " + ", ".join(f"{c} {'–' if v is None else f'{v:.1f}%'}" for c, v in read.items()))
        better, worse = read.get(a), read.get(b)
        if better is not None and worse is not None:
            contrast = better - worse
    print(f"contrast={'nan' if contrast is None else f'{contrast:+.2f}'}")


if __name__ == "__main__":
    main()
