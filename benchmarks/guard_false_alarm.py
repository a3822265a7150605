"""The convergence guard's false-alarm rate on real runs whose convergence is known from a run twice as long.

The guard (analysis.tables.converged) calls a run still rising when its eval accuracy rises more than
claims.PLATEAU_POINTS over the last third of its curve. A study that trains each model afresh at several lengths
(a pilot with one score per length, named `length<E>` as spaces/pilots/regime_a4.yaml does) gives the truth: a
run of E epochs has converged when the same model and seed trained for 2E epochs ends at most PLATEAU_POINTS
higher on the validation images. Every run with a doubled partner is one case: the guard's call against the
truth. The last line is `false_alarm=<flagged>/<converged>`.

    python benchmarks/guard_false_alarm.py regime_a4 [--studies-dir studies]
"""

from __future__ import annotations

import re
from pathlib import Path

from coatsearch.analysis import tables
from coatsearch.analysis.constants import PLATEAU_POINTS
from coatsearch.storage import store
from coatsearch.training.point import Curve


def cases(studies_dir: Path, name: str) -> list[tuple[str, int, int, float, bool | None, bool]]:
    """(model, seed, epochs, gain at twice the epochs in points, the guard's call, converged) per doubled run."""
    runs: dict[tuple[str, int, int], Curve] = {}
    for r in store.records(store.load_study(studies_dir, name), say=False):
        if r.state != "COMPLETE":
            continue
        for group in r.run.curves:
            curve = r.run.curve(group)
            if (m := re.fullmatch(r"length(\d+)", group)) and curve and curve.val_acc:
                runs[(r.candidate, int(r.seed or 0), int(m.group(1)))] = curve
    out = []
    for (model, seed, epochs), curve in sorted(runs.items()):
        longer = runs.get((model, seed, 2 * epochs))
        if longer is None:
            continue
        gain = 100 * (longer.val_acc[-1] - curve.val_acc[-1])
        out.append((model, seed, epochs, gain, tables.converged(curve), gain <= PLATEAU_POINTS))
    return out


def main() -> None:
    from coatsearch.cli_types import Parser  # the CLI's number check and one-line errors

    ap = Parser(description=__doc__.splitlines()[0])
    ap.add_argument("study")
    ap.add_argument("--studies-dir", type=Path, default=Path("studies"))
    args = ap.parse_args()
    found = cases(args.studies_dir, args.study)
    for model, seed, epochs, gain, call, truth in found:
        said = {True: "converged", False: "still rising", None: "not checkable"}[call]
        print(f"{model} seed {seed}, {epochs} epochs: {gain:+.1f} points at {2 * epochs}; "
              f"{'converged' if truth else 'not converged'}, guard: {said}")  # fmt: skip
    converged = [c for c in found if c[5]]
    flagged = sum(c[4] is False for c in converged)
    missed = sum(c[4] is True for c in found if not c[5])
    print(f"not converged: {len(found) - len(converged)}, of which the guard passed {missed}")
    print(f"false_alarm={flagged}/{len(converged)}")


if __name__ == "__main__":
    main()
