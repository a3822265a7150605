"""What a search is measured against: the random-search baseline at the same budget (the expected best of k random
draws on a measured table, with its interval, and the regret against the best network of the space), the Kendall
rank correlation between the search's fidelity and the re-evaluation, and the t interval of a mean they share.

Random search, as a study runs it: each draw is a uniformly random point of the space; a rejected point costs no
trial, and a point whose network was drawn already costs none either (`store.reuse`), so the k trials measure k
distinct networks, each drawn with a weight of the points that build it. A trial observes one seed's value of its
network; the incumbent is the network with the best observed value, and what random search finds is the
incumbent's table mean (as `replay` scores a sampler). Pure: no training, no files.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from coatsearch.analysis.search_types import RandomBaseline, Tau
from coatsearch.storage.architectures import rank  # noqa: F401  (one ranking, in the storage stage: export uses it)

_RANDOM_DRAWS = 4000  # simulated random searches behind one baseline (seeded: the same table gives the same figure)


def mean_ci(values: Sequence[float], level: float = 0.95) -> tuple[float, float, float]:
    """The mean of `values` and its t interval (a zero-width interval for one value)."""
    from coatsearch.analysis.stats import one_sample

    t = one_sample(values, 1 - level)
    return (t.mean, *t.ci) if t.ci is not None else (t.mean, t.mean, t.mean)


@dataclass(frozen=True)
class Network:
    """One network of a measured space: how many of the space's admitted points build it, its values by seed."""

    name: str
    weight: int
    values: tuple[float, ...]

    @property
    def mean(self) -> float:
        return statistics.fmean(self.values)


def networks(points: Mapping[tuple, str], values: Mapping[tuple, Sequence[float]]) -> list[Network]:
    """The networks of a table: point -> network name and point -> its values (twins share one network)."""
    weight: dict[str, int] = {}
    vals: dict[str, Sequence[float]] = {}
    for point, v in values.items():
        name = points.get(point) or repr(point)
        weight[name] = weight.get(name, 0) + 1
        vals.setdefault(name, v)
    return [Network(n, weight[n], tuple(float(x) for x in vals[n])) for n in sorted(weight)]


def random_baseline(nets: Sequence[Network], k: int, maximize: bool, draws: int = _RANDOM_DRAWS,
                    seed: int = 0) -> RandomBaseline:  # fmt: skip
    """The expected result of random search with `k` trials on the table (the module docstring's model), its
    interval over `draws` simulated searches, and its regret against the best network."""
    if not nets or k < 1:
        raise ValueError("a random baseline needs at least one network and one trial")
    rng = random.Random(seed)
    sign = 1.0 if maximize else -1.0
    found = [_one_search(nets, k, sign, rng) for _ in range(draws)]
    mean, lo, hi = mean_ci(found)
    q = statistics.quantiles(found, n=10, method="inclusive") if len(found) > 1 else [mean] * 9
    best = max(n.mean * sign for n in nets) * sign
    return RandomBaseline(k, len(nets), mean, (lo, hi), (q[0], q[-1]), best, abs(best - mean))


def _one_search(nets: Sequence[Network], k: int, sign: float, rng: random.Random) -> float:
    left = list(nets)
    incumbent: tuple[float, Network] | None = None
    for _ in range(min(k, len(nets))):
        pick = rng.choices(range(len(left)), weights=[n.weight for n in left])[0]
        net = left.pop(pick)
        seen = rng.choice(net.values)
        if incumbent is None or sign * seen > sign * incumbent[0]:
            incumbent = (seen, net)
    assert incumbent is not None
    return incumbent[1].mean


def kendall(first: Mapping[str, float], second: Mapping[str, float]) -> Tau | None:
    """Kendall's tau between two values of the networks both measured (None under 3 of them, or no spread)."""
    from scipy import stats as st

    common = sorted(set(first) & set(second))
    if len(common) < 3:
        return None
    x, y = [first[n] for n in common], [second[n] for n in common]
    if len(set(x)) < 2 or len(set(y)) < 2:
        return None
    res = st.kendalltau(x, y)
    tau, p = float(res.statistic), float(res.pvalue)
    ci = None
    if len(common) > 4:
        z, se = math.atanh(max(-0.999999, min(0.999999, tau))), math.sqrt(0.437 / (len(common) - 4))
        ci = (math.tanh(z - 1.96 * se), math.tanh(z + 1.96 * se))
    return Tau(len(common), tau, ci, p)
