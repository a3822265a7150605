"""A claim's relation rows on the answer page, computed from the studies that judge it (answer.space_claims ranks them
and calls this; answer.markdown_space formats the rows).

A claim's relations are the neighbour relations of the paper's chain (`A ≈ B ≥ C` has two; the chain is read through
verdicts.parse_chain). Each is taken from the deciding study's deciding measure, else from another original study
that measured exactly that pair; with fewer than 2 paired seeds it is not tested. A measured pair across names no
study ran (C-C-C-T ≫ ViT_REL over C-C-T-T and C-T-T-T) is its own row: it tests the chain's ends, not the relations
it spans. Claim (f) has a row per part.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from coatsearch.analysis.measure_results import Detectable
from coatsearch.analysis.results import Estimate, Evidence, Pair
from coatsearch.answer.space_studies import Study, judged, pairs, part_tested, tested
from coatsearch.papers import verdicts as V
from coatsearch.papers.claim_results import ClaimVerdict, StemPart

HELD, NOT_HELD, NOT_TESTED = "tested: held", "tested: not held", "not tested"
_HOLDS = ("holds", "equivalent", "non-inferior")  # a judged pair's status that keeps the paper's relation
_SYMBOLS = ("≈", "≥", ">", "≫")


@dataclass(frozen=True)
class RowReplicate:
    """A relation measured again by a replicate of its study: the replicate, its estimate and the pair's status."""

    study: str
    estimate: Estimate | None
    detail: str


@dataclass(frozen=True)
class RelationRow:
    """One row of the page's verdict table: a relation of a claim, whether it was tested and held, its estimate,
    detectable difference and the study it is from ('' when not tested)."""

    claim: str
    relation: str  # 'C-C-T-T > C-T-T-T'
    counts: bool  # one of the claim's relations (False: a measured pair across names no study ran)
    status: str  # HELD / NOT_HELD / NOT_TESTED
    detail: str  # the pair's own status (holds, equivalent, reversed, unresolved, ...) or why it was not tested
    estimate: Estimate | None
    detectable: Detectable | None
    study: str
    replication: tuple[RowReplicate, ...]
    p_holm: float | None = None  # Holm-adjusted within its study's family (a strict relation: held below α)
    strict: bool = False  # a key relation (> or ≫): held only when shown


def chain_relations(chain: str) -> tuple[tuple[str, str, str], ...] | None:
    """'A ≈ B > C' → ((A, ≈, B), (B, >, C)); None when the chain is not names joined by ≈ ≥ > ≫."""
    names, symbols = V.parse_chain(chain)
    if not symbols or len(names) != len(symbols) + 1 or any(s not in _SYMBOLS for s in symbols):
        return None
    return tuple(zip(names[:-1], symbols, names[1:], strict=True))


def _unit(e: Evidence) -> str:
    return "points" if e.unit in ("%", "points") else e.unit


def _row_of(cid: str, rel: str, p: Pair, e: Evidence, study: Study, studies: Sequence[Study],
            counts: bool = True) -> RelationRow:  # fmt: skip
    """A measured pair as a row (not tested below 2 paired seeds), with its replicates' estimates of the same pair."""
    est = Estimate(f"{p.a} − {p.b}", p.d, p.ci, p.n, _unit(e)) if not math.isnan(p.d) else None
    pw = e.power
    det = None if pw is None else Detectable(pw.mdd if math.isfinite(pw.mdd) else None, pw.effect, _unit(e), pw.n)
    reps = tuple(r for s in studies if s.replicate_of == study.folder and (r := _replicate_row(s, cid, p)) is not None)
    if not tested(p):
        why = f"{p.n} paired seed(s) in {study.folder}: no test"
        return RelationRow(cid, rel, counts, NOT_TESTED, why, est, det, study.folder, reps)
    status = HELD if p.status in _HOLDS else NOT_HELD
    return RelationRow(cid, rel, counts, status, p.status or "not judged", est, det, study.folder, reps, p.p_holm,
                       p.key)  # fmt: skip


def _replicate_row(replicate: Study, cid: str, p: Pair) -> RowReplicate | None:
    """The replicate's own measurement of pair p (None: it has none)."""
    claim = judged(replicate, cid)
    got = next((q for q in pairs(claim) if (q.a, q.b) == (p.a, p.b)), None) if claim else None
    if claim is None or got is None:
        return None
    est = None if math.isnan(got.d) else Estimate(f"{got.a} − {got.b}", got.d, got.ci, got.n, _unit(claim.evidence[0]))
    return RowReplicate(replicate.folder, est, got.status if tested(got) else "no test")


def claim_rows(cid: str, claim: ClaimVerdict, study: Study, ranked: Sequence[tuple[Study, ClaimVerdict]],
               studies: Sequence[Study], pending: str) -> tuple[RelationRow, ...]:  # fmt: skip
    """The claim's relation rows: its parts, its chain's neighbour relations (then pairs across them), or its pairs.
    `claim` is the deciding study's, `ranked` every study that tests it (deciding first), `pending` the profiles not
    yet run that would."""
    if claim.parts is not None:
        return tuple(_part_row(cid, p, study) for p in claim.parts)
    links = chain_relations(claim.chain)
    judged_pairs = pairs(claim)
    if links is None or any(p.a not in claim.chain.split() or p.b not in claim.chain.split() for p in judged_pairs):
        named = [(f"{p.a} {p.paper} {p.b}", p) for p in judged_pairs]
        if not named:
            return (RelationRow(cid, claim.chain, True, NOT_TESTED, _why_not(claim, study, (), pending), None, None,
                                "", ()),)  # fmt: skip
        return tuple(_row_of(cid, rel, p, claim.evidence[0], study, studies) for rel, p in named)
    measured = {m.name for _, c in ranked for e in c.evidence[:1] for m in e.members}
    rows = [_link_row(cid, link, ranked, studies, measured, pending) for link in links]
    names = [a for a, _, _ in links] + [links[-1][2]]
    # pairs across names no study ran test the chain's ends, not the relations they span: each from the first study
    # (deciding first) that measured it
    spans: dict[tuple[str, str], tuple[Study, ClaimVerdict, Pair]] = {}
    for s, c in ranked:
        for p in pairs(c):
            if {p.a, p.b} <= set(names) and names.index(p.b) - names.index(p.a) > 1:
                spans.setdefault((p.a, p.b), (s, c, p))
    for s, c, p in spans.values():
        rows.append(_row_of(cid, f"{p.a} {p.paper} {p.b}", p, c.evidence[0], s, studies, counts=False))
    return tuple(rows)


def _link_row(cid: str, link: tuple[str, str, str], ranked: Sequence[tuple[Study, ClaimVerdict]],
              studies: Sequence[Study], measured: set[str], pending: str) -> RelationRow:  # fmt: skip
    """One neighbour relation of the chain: from the first study (deciding first) that tested exactly this pair."""
    a, sym, b = link
    rel = f"{a} {sym} {b}"
    found = [(s, c, p) for s, c in ranked for p in pairs(c) if (p.a, p.b) == (a, b)]
    hit = next((x for x in found if tested(x[2])), found[0] if found else None)
    if hit is not None:
        s, c, p = hit
        return _row_of(cid, rel, p, c.evidence[0], s, studies)
    study, claim = ranked[0]
    missing = tuple(n for n in (a, b) if n not in measured)
    return RelationRow(cid, rel, True, NOT_TESTED, _why_not(claim, study, missing, pending), None, None, "", ())


def _why_not(claim: ClaimVerdict, study: Study, missing: tuple[str, ...], pending: str) -> str:
    """Why a relation of a judged claim was not tested: its models not run, else the deciding study's reason."""
    if missing:
        why = f"{', '.join(missing)} not run by any study that tests ({claim.id})"
    else:
        why = f"{study.folder}: {claim.verdict}: {claim.reason or claim.why}"
    return f"{why}; {pending}" if pending else why


def _part_row(cid: str, part: StemPart, study: Study) -> RelationRow:
    """One part of claim (f) as a row."""
    est = None if part.d is None else Estimate(part.short or part.what, part.d, part.ci, part.n, "points")
    if not part_tested(part):
        return RelationRow(cid, part.what, True, NOT_TESTED, part.reason or part.status or "not run", est, None, "",
                           ())  # fmt: skip
    status = HELD if part.status in _HOLDS else NOT_HELD
    return RelationRow(cid, part.what, True, status, part.status, est, None, study.folder, ())
