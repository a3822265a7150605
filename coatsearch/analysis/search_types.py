"""What a search study's report holds of it, as frozen types: the architectures it measured, each searched
candidate's result, the re-evaluation's paired comparisons, the random baseline and the fidelity check.

The types only: analysis.search_results computes them from the trial records, analysis.search_checks and
analysis.search_stats the checks, and the report formats them. They sit apart so that the study's summary
(report.summary) can name them without importing the code that computes them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class RandomBaseline:
    """Random search at a budget of k trials on a measured table (objective units as given)."""

    k: int
    networks: int  # distinct networks in the table
    mean: float  # expected table mean of the incumbent after k random trials
    ci: tuple[float, float]  # 95% t interval of that expectation (simulation error)
    spread: tuple[float, float]  # 10th and 90th percentile of one random search's result
    best: float  # the best network's table mean
    regret: float  # best - mean, in the better direction (>= 0)

    def regret_of(self, found: float, maximize: bool) -> float:
        """The regret of a search that found a network with table mean `found` (>= 0 when the table is complete)."""
        return (self.best - found) if maximize else (found - self.best)


@dataclass(frozen=True)
class Tau:
    """Kendall's tau-b between two rankings of the same networks, its 95% interval and p (scipy.stats)."""

    n: int
    tau: float
    ci: tuple[float, float] | None  # Fieller, Hartley & Pearson (1957): atanh(tau) ± 1.96 √(0.437 / (n − 4))
    p: float | None


@dataclass(frozen=True)
class Mapped:
    """The search's sampled points that passed the constraints and the budget, and the networks they built."""

    points: int  # admitted points (trained or reused)
    trained: int  # points that trained their network on their seed
    reused: int  # points whose network was measured on that seed already (nothing trained)
    networks: int  # distinct networks among them


@dataclass(frozen=True)
class Random:
    """Random search at the search's budget on the measured table, and what the search itself found there."""

    baseline: RandomBaseline | None  # display units; None: the table is not measured whole
    found: str  # the network the search ranks first
    found_mean: float | None  # its table mean (display units)
    regret: float | None  # the search's regret against the best network of the table
    note: str  # why there is no baseline ("" with one)
    by_budget: tuple[RandomBaseline, ...] = ()  # the baseline at 1, 2, 4, ... trials, below the table's size
    table: str = ""  # the study whose table it reads when this one did not measure the space whole ("": this one)


@dataclass(frozen=True)
class Arch:
    """One measured architecture: its row name, model, and the objective over its runs (display units)."""

    name: str
    layout: str
    stages: str
    block: str
    params: int | None
    macs: int | None
    mean: float  # over seeds, each seed's runs averaged first
    sd: float | None  # over seeds
    n: int  # runs
    seeds: tuple[int, ...]


@dataclass(frozen=True)
class Searched:
    """What the search over one candidate found."""

    candidate: str
    dims: tuple[tuple[str, str], ...]  # (path, values as text)
    size: int | None  # structural points the space holds (None: continuous)
    trials: int  # complete trials
    rejected: tuple[tuple[str, int, str], ...]  # (kind, count, an example reason)
    history: tuple[tuple[int, float, float, float], ...]  # (trial number, elapsed s, value, best so far)
    top: tuple[Arch, ...]
    measured: int  # distinct architectures measured
    importance: tuple[
        tuple[str, float | None, float | None], ...
    ]  # (path, mean, sd over forest seeds; None: never varied)
    slices: tuple[tuple[str, tuple[tuple[Any, float], ...]], ...]  # (path, (value, objective) per trial)
    reevaluation: tuple[Paired, ...] = ()  # each re-evaluated architecture against the best named candidate
    front: tuple[ParetoPoint, ...] = ()  # multi-objective studies: every measured architecture, on the front or not
    mapped: Mapped | None = None  # points -> networks (search_checks)
    random: Random | None = None  # the random-search baseline and the search's regret (search_checks)
    fidelity: Tau | None = None  # the search's objective against the re-evaluation (search_checks)


@dataclass(frozen=True)
class ParetoPoint:
    """One architecture of a multi-objective search: its mean objectives (display units) and Pareto membership."""

    name: str
    stages: str
    means: tuple[float, ...]
    n: int
    pareto: bool


@dataclass(frozen=True)
class Paired:
    """A re-evaluated architecture against the best named candidate on the same fresh seeds (a paired t test)."""

    found: str
    stages: str
    named: str
    found_mean: float
    named_mean: float
    n: int  # seeds both ran
    d: float  # mean of found - named, in the better direction
    ci: tuple[float, float] | None
    p: float | None
    p_holm: float | None
    verdict: str  # "better than", "worse than", NOT_SHOWN, or SAME (`named`: the candidate it is)
    detectable: float | None = None  # the smallest true d found at 80% power (the first Holm step's level)
    sd_diff: float | None = None  # the pair's own paired sd (analysis.stats.noise over the two), display units
    df: int | None = None  # its degrees of freedom (seeds - 1)
    level: float | None = None  # the two-sided level `detectable` is at: the first Holm step's
    needed: int | None = None  # fresh seeds at which search_results.RESOLUTION would be detectable (accuracy, %)


@dataclass(frozen=True)
class SearchResults:
    """What the search found: the objective, each searched candidate, and the named candidates for reference."""

    objective: str
    label: str
    unit: str
    maximize: bool
    sampler: str
    searched: tuple[Searched, ...]
    named: tuple[Arch, ...]  # the candidates without search dimensions, by mean objective
    objectives: tuple[tuple[str, str, str, bool], ...] = ()  # multi-objective: (key, label, unit, maximize)
