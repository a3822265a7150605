"""Markdown for a replicate's section: each claim in the original, the replicate and pooled (papers.replicate)."""

from __future__ import annotations

from coatsearch.papers.claim_results import ClaimReplication, RelationEstimate, Replication, Side
from coatsearch.papers.replicate import REPLICATED
from coatsearch.report.markdown import fmt_num, table
from coatsearch.report.markdown_answer import VERDICT_MARK

_OUTCOME_MARK = {REPLICATED: "✅ replicated"}


def section(r: Replication) -> str:
    """The replication section: what was fresh, the rule, a summary table, then each claim's estimates."""
    out = [f"## Replication of {r.original}", ""]
    if r.missing:
        return "\n".join([*out, f"The original study cannot be read: {r.missing}. Nothing is compared."])
    seeds = f"seeds {_list(r.seeds)} (original: {_list(r.original_seeds)})"
    draws = f"test draw: {_list(r.draws)} (original: {_list(r.original_draws)})"
    fresh = f" **Not fresh**: shares {r.fresh} with the original." if r.fresh else ""
    out += [f"This study replicates `{r.original}` on {seeds} and {draws}.{fresh}", "", f"Rule: {r.rule}", ""]
    if not r.claims:
        return "\n".join([*out, "Neither study judged a claim: nothing to replicate."])
    body = [[f"({c.id}) {c.title}", _verdict(c.original), _verdict(c.replicate), _verdict(c.pooled),
             _OUTCOME_MARK.get(c.outcome, c.outcome), c.why] for c in r.claims]  # fmt: skip
    out += [table(["claim", "original", "replicate", "pooled", "outcome", "why"], body)]
    for c in r.claims:
        out += ["", *_estimates(c)]
    return "\n".join(out)


def _verdict(s: Side | None) -> str:
    if s is None:
        return "–"
    return VERDICT_MARK.get(s.verdict, s.verdict) + (f" ({s.status})" if s.status else "")


def _estimates(c: ClaimReplication) -> list[str]:
    """Per relation: the paired difference and its 95% interval in the original, the replicate and pooled."""
    sides = (c.original, c.replicate, c.pooled)
    measure = next((s.measure for s in sides if s is not None and s.measure), "")
    head = f"### ({c.id}) estimates" + (f" on {measure}" if measure else "")
    relations = list(dict.fromkeys(e.relation for s in sides if s is not None for e in s.estimates))
    if not relations:
        return [head, "", "No relation measured."]
    digits = next((s.digits for s in sides if s is not None), 2)
    body = [[rel, *(_cell(s, rel, digits) for s in sides)] for rel in relations]
    note = "Mean paired difference a − b (better direction), 95% CI (pooled noise), paired seeds n."
    return [head, "", note, "", table(["relation", "original", "replicate", "pooled (both studies' seeds)"], body)]


def _cell(s: Side | None, relation: str, digits: int) -> str:
    e: RelationEstimate | None = next((x for x in s.estimates if x.relation == relation), None) if s else None
    if e is None:
        return "–"
    ci = "" if e.ci is None else f" [{e.ci[0]:+.{digits}f}, {e.ci[1]:+.{digits}f}]"
    return f"{fmt_num(e.d, digits, signed=True)}{ci} (n = {e.n}{', ' + e.status if e.status else ''})"


def _list(values: tuple[int, ...]) -> str:
    return ", ".join(map(str, values)) or "none recorded"
