"""The verdict path's typed results: a ranking relation, a judged pair, power, a measure's verdict and evidence.

Frozen, like the run records (storage.record): judging returns new values (verdicts.judge), never edits one.
Each has `to_json`, the data summary.json holds: the dict the verdict path built before these types, key order
kept, so a report is byte-identical for the same records; and `from_json`, which reads that data back (an older
summary's missing keys as their defaults), so `X.from_json(x.to_json())` gives x's summary again.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from coatsearch.analysis import constants as CS
from coatsearch.analysis import json_form
from coatsearch.analysis.stats import PairTest


@dataclass(frozen=True)
class Stat:
    """Mean and spread over runs, in display units; sd is None with fewer than 2 runs."""

    mean: float
    sd: float | None
    n: int

    @property
    def se(self) -> float | None:
        """Standard error of the mean (None with fewer than 2 runs)."""
        return None if self.sd is None else self.sd / math.sqrt(self.n)

    def to_json(self) -> dict[str, Any]:
        """JSON form, with the standard error."""
        return {**asdict(self), "se": self.se}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Stat:
        """The stat `to_json` wrote (its `se` is derived, so not read)."""
        return cls(json_form.number(data.get("mean")), json_form.maybe(data.get("sd")), int(data.get("n") or 0))


@dataclass(frozen=True)
class Relation:
    """How one ranked row stands to the next on a measure (verdicts.compare): a symbol and its paired test."""

    symbol: str  # '>' '<' (the interval excludes 0), '≈' (within the margin), '?' (neither)
    test: PairTest

    def to_json(self) -> dict[str, Any]:
        """{symbol, then the test's fields}."""
        return {"symbol": self.symbol, **self.test.to_json()}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Relation:
        """The relation `to_json` wrote."""
        return cls(str(data["symbol"]), PairTest.from_json(data))


@dataclass(frozen=True)
class Pair:
    """One relation of the paper's order, measured: a − b in the better direction; judged once `status` is set."""

    a: str
    b: str
    paper: str  # the paper's symbol between them: ≈ ≥ > ≫
    key: bool  # a strict relation (> or ≫): the claim's verdict rests on it
    margin: float  # the equivalence margin of '≈' / '≥'
    test: PairTest
    p_test: float | None = None  # the relation's own p (key: two-sided; '≈'/'≥': of a violation)
    p_holm: float | None = None  # Holm-adjusted over the claim's family
    status: str = ""  # '' until judged: holds / reversed / unresolved / violated / equivalent / non-inferior / ...

    @property
    def n(self) -> int:
        """Paired seeds."""
        return self.test.n

    @property
    def d(self) -> float:
        """Mean paired difference (better direction)."""
        return self.test.d

    @property
    def ci(self) -> tuple[float, float] | None:
        """The 95% interval."""
        return self.test.ci

    @property
    def ci_equiv(self) -> tuple[float, float] | None:
        """The 90% interval (the equivalence check's)."""
        return self.test.ci_equiv

    def to_json(self) -> dict[str, Any]:
        """{a, b, paper, key, margin, the test's fields, and p_test, p_holm, status once judged}."""
        out = {"a": self.a, "b": self.b, "paper": self.paper, "key": self.key, "margin": self.margin,
               **self.test.to_json()}  # fmt: skip
        return {**out, "p_test": self.p_test, "p_holm": self.p_holm, "status": self.status} if self.status else out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Pair:
        """The pair `to_json` wrote, judged when it holds a status."""
        jf = json_form
        return cls(str(data["a"]), str(data["b"]), str(data.get("paper", "")), bool(data.get("key")),
                   jf.number(data.get("margin"), 0.0), PairTest.from_json(data), jf.maybe(data.get("p_test")),
                   jf.maybe(data.get("p_holm")), str(data.get("status") or ""))  # fmt: skip


@dataclass(frozen=True)
class Power:
    """The smallest detectable difference of a claim's key relations at the study's n, noise and α (verdicts.power,
    stem._gap_power), beside the paper's effect."""

    n: int
    sd_diff: float
    df: int
    k: int  # candidates the noise was pooled over
    alpha: float  # the level tested at (Holm's first step)
    mdd: float  # inf when no difference is detectable
    effect: float | None  # the paper's effect in these units (None: it states none)
    seeds_needed: int | None  # paired seeds at which the effect is detectable (None: not sized, or beyond MAX_SEEDS)
    effect_note: str = ""
    sized: bool = True  # False: seeds_needed was not computed (description left out)
    resolvable: bool | None = None  # mdd ≤ effect (None without an effect)
    power: float = CS.POWER

    def to_json(self) -> dict[str, Any]:
        """The power as summary.json holds it."""
        return {"n": self.n, "sd_diff": self.sd_diff, "df": self.df, "k": self.k, "alpha": self.alpha,
                "power": self.power, "mdd": self.mdd, "effect": self.effect, "effect_note": self.effect_note,
                "seeds_needed": self.seeds_needed, "sized": self.sized, "resolvable": self.resolvable}  # fmt: skip

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Power:
        """The power `to_json` wrote (a null detectable difference: none is detectable, inf)."""
        jf, need = json_form, data.get("seeds_needed")
        return cls(
            int(data["n"]),
            jf.number(data.get("sd_diff")),
            int(data.get("df") or 0),
            int(data.get("k") or 0),
            jf.number(data.get("alpha")),
            jf.number(data.get("mdd"), math.inf),
            jf.maybe(data.get("effect")),
            None if need is None else int(need),
            str(data.get("effect_note") or ""),
            bool(data.get("sized", True)),
            data.get("resolvable"),
            jf.number(data.get("power"), CS.POWER),
        )


@dataclass(frozen=True)
class Estimate:
    """The estimate a verdict rests on (categories.estimate): what it compares, the difference, its 95% interval,
    paired seeds, unit."""

    what: str
    d: float
    ci: tuple[float, float] | None
    n: int
    unit: str

    def to_json(self) -> dict[str, Any]:
        """{what, d, ci, n, unit}, the interval as a list."""
        ci = None if self.ci is None else [self.ci[0], self.ci[1]]
        return {"what": self.what, "d": self.d, "ci": ci, "n": self.n, "unit": self.unit}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Estimate:
        """The estimate `to_json` wrote."""
        return cls(str(data["what"]), json_form.number(data.get("d")), json_form.interval(data.get("ci")),
                   int(data.get("n") or 0), str(data.get("unit") or ""))  # fmt: skip


@dataclass(frozen=True)
class Judgement:
    """A category under categories.CATEGORY_RULE and what it carries: reason, deciding estimate, detectable
    difference, what would decide it, and the longer `why`."""

    verdict: str
    reason: str
    estimate: Estimate | None  # categories.estimate
    detectable: Mapping[str, Any] | None  # the smallest detectable difference beside the paper's effect (None: a
    # claim not tested)
    decide: str
    why: str = ""

    def to_json(self) -> dict[str, Any]:
        """{verdict, reason, estimate, detectable, decide, why}."""
        est = None if self.estimate is None else self.estimate.to_json()
        return {"verdict": self.verdict, "reason": self.reason, "estimate": est,
                "detectable": self.detectable, "decide": self.decide, "why": self.why}  # fmt: skip

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Judgement:
        """The judgement a claim's or evidence's `to_json` wrote among its keys (an older summary's missing keys
        read as empty)."""
        est, det = data.get("estimate"), data.get("detectable")
        return cls(str(data.get("verdict") or ""), str(data.get("reason") or ""),
                   None if est is None else Estimate.from_json(json_form.mapping(est)),
                   None if det is None else json_form.mapping(det), str(data.get("decide") or ""),
                   str(data.get("why") or ""))  # fmt: skip


@dataclass(frozen=True)
class Member:
    """A model of the claim measured on the evidence's measure: the paper's name, the candidate and its stat."""

    name: str
    candidate: str
    stat: Stat

    def to_json(self) -> dict[str, Any]:
        """{name, candidate, stat}."""
        return {"name": self.name, "candidate": self.candidate, "stat": self.stat}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Member:
        """The member `to_json` wrote."""
        return cls(str(data["name"]), str(data["candidate"]), Stat.from_json(json_form.mapping(data["stat"])))


@dataclass(frozen=True)
class Evidence:
    """One measure's evidence on a claim (verdicts.evidence): members, judged pairs, power, regime, verdict."""

    key: str
    label: str
    unit: str
    rho: float | None  # Spearman rho of the measured against the paper's order (description)
    rho_p: float | None
    members: tuple[Member, ...]
    pairs: tuple[Pair, ...]  # judged
    power: Power | None  # None: skipped (describe=False), or fewer than 2 paired seeds or no noise
    guards: tuple[Mapping[str, Any], ...]  # per member: its regime guard counts (name first)
    out_of_regime: tuple[str, ...]
    needs_convergence: bool
    found: Judgement  # the measure's category and what it carries
    equivalence: str  # verdicts.equivalence_note

    @property
    def verdict(self) -> str:
        """The measure's category."""
        return self.found.verdict

    def to_json(self) -> dict[str, Any]:
        """The evidence as summary.json holds it."""
        return {"key": self.key, "label": self.label, "unit": self.unit, "rho": self.rho, "rho_p": self.rho_p,
                "members": [m.to_json() for m in self.members], "pairs": [p.to_json() for p in self.pairs],
                "power": None if self.power is None else self.power.to_json(), "guards": [dict(g) for g in self.guards],
                "out_of_regime": list(self.out_of_regime), "needs_convergence": self.needs_convergence,
                **self.found.to_json(), "equivalence": self.equivalence}  # fmt: skip

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Evidence:
        """The evidence `to_json` wrote."""
        jf, power = json_form, data.get("power")
        return cls(
            str(data["key"]),
            str(data.get("label") or ""),
            str(data.get("unit") or ""),
            jf.maybe(data.get("rho")),
            jf.maybe(data.get("rho_p")),
            tuple(Member.from_json(m) for m in jf.items(data.get("members"))),
            tuple(Pair.from_json(p) for p in jf.items(data.get("pairs"))),
            None if power is None else Power.from_json(jf.mapping(power)),
            tuple(jf.mapping(g) for g in jf.items(data.get("guards"))),
            tuple(str(x) for x in jf.items(data.get("out_of_regime"))),
            bool(data.get("needs_convergence")),
            Judgement.from_json(data),
            str(data.get("equivalence") or ""),
        )


@dataclass(frozen=True)
class MeasureRanking:
    """Candidates ordered best first on one measure (verdicts.ranking), with the relation of each to the next."""

    key: str
    label: str
    unit: str
    better: str | None  # 'higher' or 'lower'
    order: tuple[tuple[str, Stat], ...]  # (candidate, its stat), best first
    relations: tuple[Relation, ...]  # between neighbours
    text: str  # 'A (81.2 ± 0.4) > B (...) ≈ C (...)'

    def to_json(self) -> dict[str, Any]:
        """The ranking as summary.json holds it."""
        return {"key": self.key, "label": self.label, "unit": self.unit, "better": self.better,
                "order": [{"candidate": c, "stat": s} for c, s in self.order],
                "relations": [r.to_json() for r in self.relations], "text": self.text}  # fmt: skip

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> MeasureRanking:
        """The ranking `to_json` wrote."""
        jf = json_form
        order = tuple((str(o["candidate"]), Stat.from_json(jf.mapping(o["stat"]))) for o in jf.items(data.get("order")))
        return cls(str(data["key"]), str(data.get("label") or ""), str(data.get("unit") or ""), data.get("better"),
                   order, tuple(Relation.from_json(r) for r in jf.items(data.get("relations"))),
                   str(data.get("text") or ""))  # fmt: skip
