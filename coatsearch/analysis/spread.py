"""How far apart the budget-matched candidates are in MACs and params: computed here, rendered by markdown."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from coatsearch.analysis.constants import BASELINES
from coatsearch.analysis.table_rows import CandidateRow


@dataclass(frozen=True)
class Sizes:
    """The budget-matched candidates' spread: MACs budget errors (%), params errors (%, a joint budget), params."""

    macs_err: tuple[float, float]  # lowest, highest MACs budget error (%)
    params_err: tuple[float, float] | None  # lowest, highest params budget error (%); None: MACs-only budget
    small: tuple[str, float]  # (candidate, params in M) of the smallest
    big: tuple[str, float]  # and of the largest
    budgets: tuple[tuple[str, float], ...] = ()  # (candidate, MACs budget in M) when the budgets differ, else ()


def sizes(rows: Sequence[CandidateRow]) -> Sizes | None:
    """The spread over candidate rows with a budget error (baselines left out); None with fewer than 2."""
    sized = [r for r in rows if r.candidate not in BASELINES and "budget_error" in r.metrics]
    if len(sized) < 2:
        return None
    err = [r.metrics["budget_error"].mean for r in sized]
    small = min(sized, key=lambda r: r.metrics["params"].mean)
    big = max(sized, key=lambda r: r.metrics["params"].mean)
    joint = all("budget_params_error" in r.metrics for r in sized)
    p_err = [r.metrics["budget_params_error"].mean for r in sized] if joint else []
    targets = {r.candidate: r.budget_macs for r in sized}
    differ = len(set(targets.values())) > 1  # a candidate's own budget: matched to it, not to the others
    return Sizes(
        (min(err), max(err)),
        (min(p_err), max(p_err)) if joint else None,
        (small.candidate, small.metrics["params"].mean),
        (big.candidate, big.metrics["params"].mean),
        tuple((n, (t or 0) / 1e6) for n, t in targets.items()) if differ else (),
    )
