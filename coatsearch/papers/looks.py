"""Every look at a claim on record, and this study's look adjusted over them (docs/verdicts.md, "Earlier looks").

A look is one reading of one claim of one space (its `name`): a study's verdict and p. Its p is the p of the
claim's order holding, the intersection-union test of the chain: the largest Holm-adjusted p of the key relations
on the deciding (first measured) measure, 1 for a key relation measured the wrong way (claim (f): its tested
parts). The earlier looks come from `papers/looks_found.py` (the studies and reports folders; when asked for,
the committed reports' git history); looks with the same space hash, profile and seeds are one look (a regenerated
report is not another), and so are an earlier reading on this study's profile and seeds and this one when their
verdict and p agree to every digit: the same data re-read (a rerun that trained bit for bit alike after an edit of
the space file's comments, say), which gives a false verdict no second chance.

A look spends test α when it read test images: its records split validation from test images (a look without a
split read the eval draw, which is a prefix of the validation images when it had no more images than this study's
validation set of the same dataset: it spends none), and its space does not pilot the claim (`pilots:`). The looks
that spend test α and have a p, this one included, are one Holm family per claim (analysis.stats.holm), and the
verdict counts them (LOOKS_RULE, `counted`): a claim is supported only where it holds after that correction.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from coatsearch.analysis import stats as S
from coatsearch.analysis.constants import VERDICT_ALPHA
from coatsearch.papers import categories as K
from coatsearch.papers.claim_results import ClaimVerdict
from coatsearch.space.identity import space_hash

DECIDE = "a replicate on fresh seeds and fresh test images, its look counted with these"  # a demoted claim's
SPLIT = ("split", "refused")  # a claim's `images` (judging.judge_records) when its measures read test images
LOOKS_RULE = (
    "A claim is supported only where it holds after the looks correction: when this look spends test α, its p (the "
    "claim's order holding) is Holm-adjusted over every look at the claim that spends test α, and a supported "
    f"verdict whose adjusted p is not below α = {VERDICT_ALPHA} is unresolved, with both p values in its reason. "
    "The looks are those on record in the reports folder's looks record (reports/looks.json, written with every "
    "report and committed with them), the reports' summaries and the studies folder, one look per space hash, "
    "profile and seeds."
)


@dataclass(frozen=True)
class Ident:
    """What makes two readings the same look, and what says which images a look read."""

    space: str | None  # the space's `name`
    sha256: str | None  # the space's identity as run (space.identity.space_hash)
    profile: str
    seeds: tuple[Any, ...] | None  # the study's registered seeds (None: not recorded)
    pilots: tuple[str, ...] = ()  # the claims its space pilots
    dataset: str | None = None
    eval_size: int | None = None  # the eval draw (the validation images, with a split); None: the whole split


def ident(record: Mapping[str, Any], sha256: str | None = None) -> Ident:
    """The Ident of a space record (storage.trials.space_record, or a summary's space + environment)."""
    study, data = record.get("study") or {}, record.get("data") or {}
    seeds = study.get("seeds")
    size = data.get("eval_size")
    return Ident(str(record.get("space")) if record.get("space") else None, sha256 or space_hash(record),
                 str(record.get("profile") or "default"), tuple(seeds) if isinstance(seeds, list | tuple) else None,
                 tuple(str(c) for c in record.get("pilots") or ()), data.get("dataset"),
                 size if isinstance(size, int) else None)  # fmt: skip


@dataclass(frozen=True)
class Look:
    """One reading of one claim: where it is on record, its space version, verdict, p and which images it read."""

    source: str  # where first found: "study" (the studies folder), "report" (a summary.json), "report history" (git)
    where: str  # the study's name, "<folder>/summary.json", or a committed version (looks_found.committed)
    space: str | None
    sha256: str | None
    profile: str
    seeds: tuple[Any, ...] | None
    claim: str
    verdict: str | None
    p: float | None
    images: str  # "test" or "validation"
    pilot: bool  # its space pilots this claim
    spends: bool  # spends test α: a test (it has a p) on test images, not from a pilot of the claim

    def to_json(self) -> dict[str, Any]:
        """The look as summary.json and the looks record hold it."""
        return {**vars(self), "seeds": None if self.seeds is None else list(self.seeds)}


def claim_p(claim: ClaimVerdict) -> float | None:
    """The p of the claim's order holding: the largest Holm p of its deciding measure's key relations (a relation
    measured the wrong way: 1); claim (f): of its tested parts. None when nothing was tested."""
    tested: list[tuple[float | None, float | None]]
    if claim.evidence:
        tested = [(q.p_holm, q.d) for q in claim.evidence[0].pairs if q.key]
    else:
        tested = [(q.p, q.d) for q in claim.parts or () if q.status != "not run"]
    if not tested or any(p is None for p, _ in tested):
        return None
    return max(float(p or 0.0) if (d or 0) > 0 else 1.0 for p, d in tested)  # p is never None here


def images(claim: ClaimVerdict, of: Ident, this: Ident) -> str:
    """Which images a look read, seen from this study: "test" unless it had no split and its eval draw lies
    within this study's validation images (same dataset, no more images: draws are nested)."""
    if claim.images in SPLIT:
        return "test"
    inside = of.dataset == this.dataset and None not in (of.eval_size, this.eval_size)
    return "validation" if inside and int(of.eval_size or 0) <= int(this.eval_size or 0) else "test"


def looks_of(source: str, where: str, of: Ident, claims: Sequence[ClaimVerdict], this: Ident) -> list[Look]:
    """One study's (or one committed report's) looks at the claims: those of the same space, and a pilot
    space's looks at the claims it pilots."""
    out = []
    for c in claims:
        if of.space != this.space and c.id not in of.pilots:
            continue
        seen, pilot, p = images(c, of, this), c.id in of.pilots, claim_p(c)
        verdict = c.before_looks or c.verdict  # the study's own verdict: the same data re-read reads the same
        out.append(Look(source, where, of.space, of.sha256, of.profile, of.seeds, c.id, verdict, p, seen,
                        pilot, seen == "test" and not pilot and p is not None))  # fmt: skip
    return out


def relevant(x: Look, this: Ident) -> bool:
    """Whether a look on record is one at this study's claims: of its space, or a pilot's look (looks_of's rule)."""
    return x.space == this.space or x.pilot


def key(x: Look | Ident) -> tuple:
    """What makes readings the same look: space hash, profile and seeds."""
    return (x.sha256, x.profile, x.seeds)


def _same_reading(x: Look, this: Ident, readings: Mapping[str, tuple[Any, float | None]]) -> bool:
    """Whether `x` read this study's data: a reading of this study's space (not a pilot), profile and seeds whose
    verdict and p (`readings`: claim -> this look's (verdict, p)) equal this look's to every digit."""
    mine = readings.get(x.claim)
    return (
        mine is not None
        and mine[1] is not None
        and not x.pilot
        and (x.space, x.profile, x.seeds) == (this.space, this.profile, this.seeds)
        and (x.verdict, x.p) == mine
    )


def unique(looks: Sequence[Look], this: Ident, readings: Mapping[str, tuple[Any, float | None]] | None = None
           ) -> list[Look]:  # fmt: skip
    """One look per (space hash, profile, seeds, claim), the first found; this study's own readings left out: those
    of its space hash, profile and seeds, and every look of a (space hash, profile, seeds) one of whose readings
    is this study's reading of the claim (_same_reading)."""
    same = {(*key(x), x.claim) for x in looks if _same_reading(x, this, readings or {})}
    seen, out = {key(this)}, []
    done: set[tuple] = set()
    for x in looks:
        k = (*key(x), x.claim)
        if key(x) in seen or k in done or k in same:
            continue
        done.add(k)
        out.append(x)
    return out


@dataclass(frozen=True)
class Found:
    """The earlier looks found (any order, duplicates allowed) and one note per source that could not be read."""

    looks: tuple[Look, ...]
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class ClaimLooks:
    """One claim: this look, the earlier ones, and this look's p adjusted over every look that spends test α."""

    claim: str
    verdict: str | None
    p: float | None  # this look's (claim_p)
    spends: bool  # this look spends test α (Look.spends)
    earlier: tuple[Look, ...]
    looks: int  # this one and the earlier ones
    spending: int  # of those, the ones that spend test α: Holm's family when this look is one of them
    holm_p: float | None  # this look's Holm-adjusted p over that family; None when this look spends none
    line: str  # the adjusted line the report prints


@dataclass(frozen=True)
class Looks:
    """The report's earlier-looks table (summary.json `looks`): this study's Ident, notes, one entry per claim."""

    this: Ident
    notes: tuple[str, ...]
    claims: tuple[ClaimLooks, ...]


def adjust(claim: ClaimVerdict, this: Ident, earlier: Sequence[Look]) -> ClaimLooks:
    """This study's look at one claim, the earlier looks at it, and this look's Holm-adjusted p."""
    cid, p = claim.id, claim_p(claim)
    mine = tuple(x for x in earlier if x.claim == cid)
    spends = claim.images in SPLIT and cid not in this.pilots and p is not None  # its verdict read test images
    family = [p, *(x.p for x in mine if x.spends)] if spends else []
    holm_p = S.holm(family)[0] if family else None
    n = int(spends) + sum(x.spends for x in mine)
    row = ClaimLooks(cid, claim.verdict, p, spends, mine, 1 + len(mine), n, holm_p, "")
    return ClaimLooks(**{**vars(row), "line": line(row, this)})


def idle(x: Look) -> str:
    """Why an earlier look spends no test α."""
    return "from a pilot" if x.pilot else "on validation images" if x.images == "validation" else "with no test"


def line(row: ClaimLooks, this: Ident) -> str:
    """'3 looks at this claim (2 spend test α; 1 spends none: 1 on validation images); Holm-adjusted p 0.045 over
    the 2 that spend test α (this look's p 0.0225; ≥ α 0.03)'."""
    n, k = row.looks, row.spending
    text = f"{n} look{'s' if n != 1 else ''} at this claim"
    if n - k:
        why = Counter(idle(x) for x in row.earlier if not x.spends)
        text += f" ({k} spend{'s' if k == 1 else ''} test α; {n - k} spend{'s' if n - k == 1 else ''} none"
        text += (": " + ", ".join(f"{v} {r}" for r, v in why.items()) + (", and this one" if not row.spends else "")
                 if why else "") + ")"  # fmt: skip
    if not row.spends:
        why_not = (f"its space pilots ({row.claim})" if row.claim in this.pilots else "no key relation tested"
                   if row.p is None else "its verdict read no separate test images")  # fmt: skip
        return f"{text}; this look spends no test α ({why_not}): no adjusted p"
    state = "<" if (row.holm_p or 0) < VERDICT_ALPHA else "≥"
    return (f"{text}; Holm-adjusted p {row.holm_p:.3g} over the {k} that spend test α (this look's p "
            f"{row.p:.3g}; {state} α {VERDICT_ALPHA:g})")  # fmt: skip


def table(space: Mapping[str, Any], judged: Sequence[ClaimVerdict], found: Found | None) -> Looks | None:
    """The earlier-looks table of a study with space record `space` and `judged` claims; None when no looks
    were gathered (a report computed without its studies folder)."""
    if found is None:
        return None
    this = ident(space)
    earlier = unique(found.looks, this, {c.id: (c.before_looks or c.verdict, claim_p(c)) for c in judged})
    return Looks(this, found.notes, tuple(adjust(c, this, earlier) for c in judged))


def counted(claims: Sequence[ClaimVerdict], info: Looks | None) -> list[ClaimVerdict]:
    """The claims under LOOKS_RULE: a supported claim whose look spends test α and whose Holm-adjusted p over the
    looks is not below α becomes unresolved, with both p values; every spending claim notes both (info None: no
    looks gathered, claims unchanged)."""
    rows = {r.claim: r for r in info.claims} if info is not None else {}
    out = []
    for c in claims:
        row = rows.get(c.id)
        if row is None or not row.spends or row.holm_p is None or row.p is None:
            out.append(c)
            continue
        both = (f"this look's p {row.p:.3g}, Holm-adjusted p {row.holm_p:.3g} over the {row.spending} look"
                f"{'s' if row.spending != 1 else ''} at this claim that spend test α")  # fmt: skip
        if c.verdict != K.SUPPORTED or row.holm_p < VERDICT_ALPHA:
            out.append(replace(c, notes=(*c.notes, f"Looks: {both}.")))
            continue
        reason = f"holds on its own (p {row.p:.3g}), not after the looks correction ({both}; ≥ α {VERDICT_ALPHA:g})"
        found = replace(c.found, verdict=K.UNRESOLVED, reason=reason, why=f"{reason}. {c.found.why}", decide=DECIDE)
        out.append(replace(c, found=found, scale=None, before_looks=c.verdict, notes=(*c.notes, f"Looks: {both}.")))
    return out
