"""A judged claim's typed result and what it is made of: claim (f)'s tables and parts, the study's image purposes.

Frozen, like analysis.results: judging tags a claim with `dataclasses.replace` (judging.with_status), never edits
one. Each `to_json` gives the dict summary.json held before these types, key order kept, so a report is
byte-identical for the same records.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from coatsearch.analysis import json_form
from coatsearch.analysis.measure_results import Detectable, EdfRow, OptimizerGap
from coatsearch.analysis.results import Estimate, Evidence, Judgement, Stat
from coatsearch.analysis.table_rows import CandidateRow, HasNames

Row = TypeVar("Row", bound=HasNames)  # a candidate row, or a planned model (the planner resolves names too)


@dataclass(frozen=True)
class Resolved(Generic[Row]):
    """The row a paper name refers to (verdicts.resolve), and how, when not by its own name."""

    row: Row | None  # None: no candidate is it
    note: str = ""  # e.g. the V0 stand-in


@dataclass(frozen=True)
class Named:
    """A measured model of a claim: the name the paper (or the pair) gives it and its candidate row."""

    name: str
    row: CandidateRow


@dataclass(frozen=True)
class RelPair(Generic[Row]):
    """Claim (e)'s pair (verdicts.rel_pairs): a candidate with relative attention and its 'norel' twin."""

    on: Row
    off: Row


@dataclass(frozen=True)
class DepthSplit:
    """One row of the V0/V1/V2 table (verdicts.v_table, CoAtNet Table 7): the candidate's figures and the paper's."""

    variant: str
    candidate: str
    note: str  # how V0 was resolved ('' for its own name)
    depths: Sequence[int]  # the candidate row's depths, as recorded
    scores: tuple[tuple[str, Stat | None], ...]  # params, MACs and the single-run scores' headlines, in that order
    paper_blocks: Sequence[int]
    paper_top1: float

    def score(self, key: str) -> Stat | None:
        """One of the row's figures (None: not measured)."""
        return dict(self.scores).get(key)

    def to_json(self) -> dict[str, Any]:
        """The row as summary.json's `v_table` holds it."""
        return {"variant": self.variant, "candidate": self.candidate, "note": self.note, "depths": self.depths,
                **dict(self.scores), "paper_blocks": self.paper_blocks, "paper_top1": self.paper_top1}  # fmt: skip


@dataclass(frozen=True)
class StemPart:
    """One part of claim (f) (stem.gap_contrast, stem.edf_parts): what it measures, its test and status."""

    what: str
    short: str
    d: float | None
    n: int  # seeds, or runs per curve
    ci: tuple[float, float] | None
    p: float | None  # Holm-adjusted once judged (stem.stem_claim)
    needed: str
    status: str  # tested / not tested / not run, then holds / reversed / unresolved once judged
    reason: str
    per_seed: Mapping[str, float] | None = None  # the gap contrast per seed (None: not computed)
    p_last: bool = False  # summary.json's key order: p after `needed` (an EDF part that was computed)

    def to_json(self) -> dict[str, Any]:
        """The part as summary.json holds it."""
        ci = None if self.ci is None else list(self.ci)
        out: dict[str, Any] = {"what": self.what, "short": self.short, "d": self.d, "n": self.n, "ci": ci}
        out.update({"needed": self.needed, "p": self.p} if self.p_last else {"p": self.p, "needed": self.needed})
        out.update({} if self.per_seed is None else {"per_seed": dict(self.per_seed)})
        return {**out, "status": self.status, "reason": self.reason}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> StemPart:
        """The part `to_json` wrote (its key order tells `p_last`)."""
        jf, n, per_seed = json_form, data.get("n"), data.get("per_seed")
        return cls(str(data.get("what") or ""), str(data.get("short") or ""), jf.maybe(data.get("d")),
                   int(n or 0), jf.interval(data.get("ci")), jf.maybe(data.get("p")), str(data.get("needed") or ""),
                   str(data.get("status") or ""), str(data.get("reason") or ""),
                   None if per_seed is None else {k: jf.number(v) for k, v in jf.mapping(per_seed).items()},
                   jf.before(data, "needed", "p"))  # fmt: skip


@dataclass(frozen=True)
class StemTables:
    """Claim (f)'s inputs (stem.stem_tables): best-run gaps, fixed-recipe cells per seed, the EDF of sampled runs
    and the linear floor per seed."""

    gaps: tuple[OptimizerGap, ...]  # optim.optimizer_gap rows (description)
    cells: Mapping[str, Mapping[str, Any]]  # 'model/optimizer' -> lr, wd, by_seed, val_by_seed
    edf: tuple[EdfRow, ...]  # measures.edf rows of the sampled runs
    linear: Mapping[Any, float]  # seed -> the linear floor (%)
    length: Mapping[str, Mapping[Any, Mapping[int, float]]] = field(default_factory=dict)  # stem -> seed -> epochs -> %


@dataclass(frozen=True)
class Purposes:
    """Which images served which purpose in a study's complete runs (judging.purposes) and what that makes of its
    verdicts: state 'split', 'exploratory' or 'refused', the line that says so, test draws, per-run images."""

    state: str
    line: str
    draws: tuple[int, ...]
    runs: tuple[Mapping[str, Any], ...]  # per run name: validation and test counts and fingerprints
    sampling: str | None  # how the test images were drawn (None: no run with a split)

    def to_json(self) -> dict[str, Any]:
        """{state, line, draws, runs, sampling}."""
        return {"state": self.state, "line": self.line, "draws": list(self.draws), "runs": [dict(r) for r in self.runs],
                "sampling": self.sampling}  # fmt: skip

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Purposes:
        """The purposes `to_json` wrote."""
        jf, sampling = json_form, data.get("sampling")
        return cls(str(data.get("state") or ""), str(data.get("line") or ""),
                   tuple(int(d) for d in jf.items(data.get("draws"))),
                   tuple(jf.mapping(r) for r in jf.items(data.get("runs"))),
                   None if sampling is None else str(sampling))  # fmt: skip


_ANSWER = ("verdict", "why", "reason", "estimate", "detectable", "decide")  # a judged claim's key order


@dataclass(frozen=True)
class ClaimVerdict:
    """One claim of papers.md §3 judged (verdicts.chain_claim, verdicts.rel_claim, stem.stem_claim): the paper's
    chain, the verdict with what it carries, the evidence per measure, and the tags judging adds (images, scale,
    status); a tag that is None is not set."""

    id: str
    title: str
    chain: str
    source: str
    found: Judgement  # category, reason, estimate, detectable difference, what would decide it, why
    evidence: tuple[Evidence, ...] = ()
    notes: tuple[str, ...] = ()
    parts: tuple[StemPart, ...] | None = None  # claim (f) only
    scope: str | None = None  # the parts a firm verdict rests on (claim (f); '' on a refused claim)
    images: str | None = None  # the image rule: split / exploratory / refused (judging._with_purposes)
    scale: str | None = None  # a firm verdict's proxy scale (judging.with_scale)
    status: str | None = None  # confirmatory / registered (no firm verdict possible) / exploratory
    status_why: str | None = None
    why_first: bool = True  # summary.json's key order: `why` after the verdict (_ANSWER), else last (Judgement)
    before_looks: str | None = None  # the study's own verdict where the looks correction changed it (looks.counted)

    @property
    def verdict(self) -> str:
        """The claim's category."""
        return self.found.verdict

    @property
    def why(self) -> str:
        """The longer why."""
        return self.found.why

    @property
    def reason(self) -> str:
        """The one-line reason."""
        return self.found.reason

    @property
    def estimate(self) -> Estimate | None:
        """The deciding estimate."""
        return self.found.estimate

    @property
    def detectable(self) -> Detectable | None:
        """The smallest detectable difference beside the paper's effect (None for a claim not tested)."""
        d = self.found.detectable
        return None if not d else Detectable(d.get("mdd"), d.get("effect"), d.get("unit") or "points", d.get("n"))

    @property
    def decide(self) -> str:
        """What would decide it."""
        return self.found.decide

    def to_json(self) -> dict[str, Any]:
        """The claim as summary.json holds it."""
        found = self.found.to_json()
        out: dict[str, Any] = {"id": self.id, "title": self.title, "chain": self.chain, "source": self.source,
                               **({k: found[k] for k in _ANSWER} if self.why_first else found),
                               "evidence": [e.to_json() for e in self.evidence], "notes": list(self.notes)}  # fmt: skip
        out.update({} if self.parts is None else {"parts": [p.to_json() for p in self.parts]})
        tags = {"scope": self.scope, "images": self.images, "scale": self.scale, "status": self.status,
                "status_why": self.status_why, "before_looks": self.before_looks}  # fmt: skip
        return {**out, **{k: v for k, v in tags.items() if v is not None}}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ClaimVerdict:
        """The claim `to_json` wrote: an older summary's, too (its missing keys read as empty; the key order of
        `why` tells `why_first`)."""
        jf, parts = json_form, data.get("parts")

        def tag(name: str) -> str | None:
            return None if data.get(name) is None else str(data[name])

        return cls(str(data["id"]), str(data.get("title") or ""), str(data.get("chain") or ""),
                   str(data.get("source") or ""), Judgement.from_json(data),
                   tuple(Evidence.from_json(e) for e in jf.items(data.get("evidence"))),
                   tuple(str(n) for n in jf.items(data.get("notes"))),
                   None if parts is None else tuple(StemPart.from_json(p) for p in jf.items(parts)),
                   tag("scope"), tag("images"), tag("scale"), tag("status"), tag("status_why"),
                   not jf.before(data, "reason", "why"), tag("before_looks"))  # fmt: skip


REPLICATION_RULE = (
    "A claim is **replicated** only when the original's verdict is firm (supported or not supported) and the "
    "replicate's own test, on fresh seeds and a fresh test draw judged alone by the same rule, reaches the same firm "
    "verdict. A replicate whose own test is not firm, firm the other way, or not fresh (a seed or test draw "
    "shared with the original) does not replicate it. An original that is not firm has nothing to replicate. The "
    "pooled estimate (both studies' seeds, paired by seed) is description: it never decides the outcome."
)


@dataclass(frozen=True)
class RelationEstimate:
    """One relation's paired difference a − b (better direction) in one study: seeds, mean, 95% interval, status."""

    relation: str  # "C-C vs C-T" (a chain claim's pair) or a claim (f) part's name
    n: int
    d: float | None
    ci: tuple[float, float] | None
    status: str  # holds, reversed, unresolved, equivalent, ...


@dataclass(frozen=True)
class Side:
    """A claim as one study (original, replicate or pooled) judged it: verdict, measure and estimates."""

    verdict: str
    why: str
    status: str  # confirmatory | exploratory ("" for the pooled judgement)
    measure: str  # the deciding measure's label ("" for claim (f): its parts)
    digits: int  # decimals the estimates print with
    estimates: tuple[RelationEstimate, ...]


@dataclass(frozen=True)
class ClaimReplication:
    """One claim in the original, the replicate and both pooled, and the outcome under REPLICATION_RULE."""

    id: str
    title: str
    chain: str
    original: Side | None
    replicate: Side | None
    pooled: Side | None
    outcome: str  # REPLICATED | NOT_REPLICATED | NOTHING
    why: str


@dataclass(frozen=True)
class Replication:
    """The replicate's report section: the two studies' seeds and test draws, and every claim's outcome."""

    study: str
    original: str
    original_seeds: tuple[int, ...]
    seeds: tuple[int, ...]
    original_draws: tuple[int, ...]
    draws: tuple[int, ...]
    fresh: str  # "" when seeds and test draws are disjoint, else what the two studies share
    claims: tuple[ClaimReplication, ...]
    rule: str = REPLICATION_RULE
    missing: str = ""  # why the original could not be read (then no claims)
