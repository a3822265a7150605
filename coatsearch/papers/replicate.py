"""A replicate's claims beside the original's: each claim's estimates in the original, the replicate and both
pooled, and whether the replicate replicated it (REPLICATION_RULE): the replication protocol, judged here; the
report's markdown_replication only renders it.

Every verdict and estimate comes from the report's own judging path (judging.judge_records: differences paired by
seed, analysis.stats). The pooled estimate judges both studies' records together: their seeds are disjoint, so each
seed still pairs every candidate on one training subset and one test draw, and the seed effect of the additive
noise model absorbs the draw.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from coatsearch.papers.claim_results import (
    ClaimReplication,
    ClaimVerdict,
    RelationEstimate,
    Replication,
    Side,
)
from coatsearch.papers.judging import FIRM, Judged, judge_records
from coatsearch.papers.standing import Standing

REPLICATED = "replicated"
NOT_REPLICATED = "not replicated"
NOTHING = "original not firm: nothing to replicate"


def outcome(original: str | None, replicate: str | None, fresh: str = "") -> tuple[str, str]:
    """(outcome, why) of one claim under REPLICATION_RULE from the two verdicts; `fresh`: what the studies share."""
    if original not in FIRM:
        return NOTHING, f"the original is {original or 'not judged on this claim'}"
    if fresh:
        return NOT_REPLICATED, f"the replicate is not fresh ({fresh})"
    if replicate == original:
        return REPLICATED, f"the replicate's own test is {replicate}, as the original's"
    if replicate in FIRM:
        return NOT_REPLICATED, f"the replicate's own test is {replicate}: firm the other way"
    return NOT_REPLICATED, f"the replicate's own test is {replicate or 'not judged on this claim'}: not firm"


def compute(
    study: str, space: dict, records: Sequence, judged: Judged, original: str, original_space: dict,
    original_records: Sequence, original_registered: Standing | None,
) -> Replication:  # fmt: skip
    """The section from the replicate's judged records (`judged`, the report's own) and the original's records."""
    theirs = judge_records(original_space, original_records, registered=original_registered)
    pooled = judge_records(space, [*original_records, *_renumbered(records, original_records)])
    seeds, their_seeds = _seeds(records), _seeds(original_records)
    draws, their_draws = judged.images.draws, theirs.images.draws
    shared = [f"seed(s) {', '.join(map(str, s))}" for s in [sorted(set(seeds) & set(their_seeds))] if s]
    shared += [f"test draw(s) {', '.join(map(str, d))}" for d in [sorted(set(draws) & set(their_draws))] if d]
    fresh = "; ".join(shared)
    by = [{c.id: c for c in j.claims} for j in (theirs, judged, pooled)]
    ids = list(dict.fromkeys([*by[0], *by[1], *by[2]]))
    claims = tuple(_claim(i, by[0].get(i), by[1].get(i), by[2].get(i), fresh) for i in ids)
    claims = tuple(dataclasses.replace(c, pooled=c.pooled and dataclasses.replace(c.pooled, status=""))
                   for c in claims)  # fmt: skip  # the pooled judgement is no study: no analysis status
    return Replication(study, original, their_seeds, seeds, their_draws, draws, fresh, claims)


def missing(study: str, original: str, why: str) -> Replication:
    """The section when the original study cannot be read: it says why, and judges nothing."""
    return Replication(study, original, (), (), (), (), "", (), missing=why)


def _claim(cid: str, orig: ClaimVerdict | None, rep: ClaimVerdict | None, pool: ClaimVerdict | None,
           fresh: str) -> ClaimReplication:  # fmt: skip
    head = next(c for c in (orig, rep, pool) if c is not None)
    key = _key(orig)
    verdict, why = outcome(orig.verdict if orig else None, rep.verdict if rep else None, fresh)
    return ClaimReplication(cid, head.title, head.chain, _side(orig, key), _side(rep, key), _side(pool, key),
                            verdict, why)  # fmt: skip


def _key(claim: ClaimVerdict | None) -> str | None:
    """The measure that decided a claim (its first evidence), None for claim (f) and unjudged claims."""
    return claim.evidence[0].key if claim and claim.evidence else None


def _side(claim: ClaimVerdict | None, key: str | None) -> Side | None:
    """One study's judgement of a claim, its estimates on the original's deciding measure (else its own)."""
    if claim is None:
        return None
    from coatsearch.analysis.tables import METRICS

    evidence = claim.evidence
    chosen = next((e for e in evidence if e.key == key), evidence[0] if evidence else None)
    status = str(claim.status or "")
    if chosen is None:  # claim (f): its parts, else nothing measured
        parts = tuple(_estimate(p.short or p.what, p.to_json()) for p in claim.parts or ())
        return Side(claim.verdict, claim.why, status, "", 2, parts)
    pairs = tuple(_estimate(f"{p.a} vs {p.b}", p.to_json()) for p in chosen.pairs)
    metric = METRICS.get(chosen.key)
    return Side(claim.verdict, claim.why, status, chosen.label, (metric.digits if metric else 1) + 1, pairs)


def _estimate(relation: str, p: Mapping[str, Any]) -> RelationEstimate:
    ci = p.get("ci")
    interval = None if ci is None else (float(ci[0]), float(ci[1]))
    return RelationEstimate(relation, int(p.get("n") or 0), p.get("d"), interval, str(p.get("status") or ""))


def _seeds(records: Sequence) -> tuple[int, ...]:
    return tuple(sorted({r.seed for r in records if r.state == "COMPLETE" and r.seed is not None}))


def _renumbered(records: Sequence, before: Sequence) -> list:
    """The replicate's records numbered after the original's, so pooled trial numbers stay distinct."""
    start = max((r.number for r in before), default=-1) + 1
    return [dataclasses.replace(r, number=start + r.number) for r in records]
