"""Markdown for the verdict, optimizability and failure sections, and the short dashboard note."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from coatsearch.analysis import constants as CS
from coatsearch.analysis.measure_results import HyperSamples
from coatsearch.analysis.results import Power
from coatsearch.papers import claims as C
from coatsearch.papers.claim_results import StemPart
from coatsearch.report.markdown import fmt_num, fmt_stat, table
from coatsearch.report.markdown_answer import DOCS_LINK, VERDICT_MARK, detectable, estimate
from coatsearch.report.view_claims import (
    Aa,
    Calibrated,
    ClaimInfo,
    Edf,
    EvidenceInfo,
    Failures,
    Gap,
    Length,
    Optimizability,
    Run,
    Verdicts,
)


def verdicts(vs: Verdicts) -> str:
    """Each claim's details: its verdict, reason, estimate, power, what would decide it, then its evidence."""
    out = ["## Claim details", "", "Method, rule and calibration: see the appendix at the end."]
    for c in vs.claims:
        out += ["", f"### ({c.id}) {c.title}", "", f"Paper: {c.chain} — {c.source}.", "", f"- Verdict: {mark(c)}"]
        if c.reason:
            out += [
                f"- Reason: {c.reason}",
                f"- Estimate: {estimate(c.estimate)}",
                f"- Detectable (80% power): {detectable(c.detectable)}",
                f"- What would decide it: {c.decide}",
            ]
        out += [f"- Detail: {c.why}", *(f"- Note: {n}" for n in c.notes)]
        for e in c.evidence:
            out += ["", *_evidence(e)]
        if c.parts:
            out += ["", _parts(c.parts)]
    return "\n".join(out)


def appendix(vs: Verdicts) -> str:
    """The appendix: the method, the verdict rule and its calibration."""
    return "\n".join(["## Appendix: method, rule and calibration", "", f"Method: {vs.method}", "",
                      f"Rule (also {DOCS_LINK}): {vs.rule}", "", _calibration(vs)])  # fmt: skip


def mark(c: ClaimInfo) -> str:
    """A verdict with the parts it rests on and, when firm, the proxy scale it was reached at."""
    text = VERDICT_MARK.get(c.verdict, c.verdict) + (f" ({c.scope})" if c.scope else "")
    text += f", {c.scale}" if c.scale else ""
    return text + (f"; **{c.status}**" + (f" ({c.status_why})" if c.status_why else "") if c.status else "")


def _calibration(vs: Verdicts) -> str:
    if vs.calibration is None:
        return "Calibration: not measured for this rule version (run `python -m lab.calibration`)." + (
            "\n\n" + _aa_line(vs.aa) if vs.aa else ""
        )
    head = ["claim", "null studies: firm verdicts", "95% upper bound", "power: supported", "effect (σ of one run)",
            "A/A through the trainer: firm (exact 95% CI)"]  # fmt: skip
    body = [[f"({c.claim})", f"{100 * c.null_firm:.1f}% of {c.null_n}", f"{100 * c.null_firm_upper95:.1f}%",
             _power_cell(c), f"{c.effect_sigma:g}", _aa(vs.aa, c.claim)] for c in vs.calibration]  # fmt: skip
    text = (
        f"Calibration of this rule (`lab.calibration`, rule version {vs.rule_version}): simulated "
        "studies of the shipped profiles built as trial records (their step grids, dense points and stops, readings "
        "from step 0 censored, σ and seeds from the committed reports, per-candidate noise; in null studies also "
        f"failed runs, missing and never-fitting candidates; n = {vs.n_seeds} seeds; baselines below the models here, "
        "where the committed reports put them in the docs' second table) and judged by the report's own path. "
        "Target: a 95% upper bound ≤ 5% on firm verdicts in null studies (no model better than another); power: "
        "'supported' with the paper's order at the effect, at the failure rate the committed studies measured (no "
        "failed run), and in brackets with 2% of runs failed and candidates missing or never fitting."
    )
    return "\n\n".join([text, _aa_line(vs.aa), table(head, body)])


def _power_cell(c: Calibrated) -> str:
    """'p% of n', and the power under stress in brackets where the table has it."""
    if c.power is None:
        return "–"
    stressed = "" if c.power_stressed is None else f" ({100 * c.power_stressed:.0f}% under stress)"
    return f"{100 * c.power:.0f}% of {c.power_n}{stressed}"


def _aa(aa: Aa | None, claim: str) -> str:
    """One claim's A/A cell: 'x.x% of n [lo, hi], k out of regime', or '–' where no A/A study judged it."""
    f = aa.families.get(claim) if aa else None
    if f is None or not f.n or f.rate is None or f.ci95 is None:
        return "–"
    lo, hi = f.ci95
    return f"{100 * f.rate:.1f}% of {f.n} [{100 * lo:.1f}%, {100 * hi:.1f}%], {f.out_of_regime} out of regime"


def _aa_line(aa: Aa | None) -> str:
    """What the A/A column is: studies with one architecture under every name, trained and reported for real."""
    if not aa:
        return ("A/A through the real trainer: not measured for this rule version "
                "(run `python benchmarks/bench_aa.py --write`).")  # fmt: skip
    return (
        f"A/A column: {aa.studies} studies standing one architecture under every name a claim reads (each "
        f"name its own initialization, {aa.seeds_per_study} seeds a study), trained by `coatsearch run` and "
        f"judged by `coatsearch report` (`python benchmarks/bench_aa.py`, {aa.runs} run(s), each later one "
        f"`--resume` on fresh seeds; {aa.date}): every firm verdict there is false; out-of-regime studies count as "
        "not firm."
    )


def _evidence(info: EvidenceInfo) -> list[str]:
    e, metric = info.evidence, info.metric
    better = "smaller is better" if metric.better == "lower" else "larger is better"
    rho = "n/a (pairs only)" if e.rho is None else f"{e.rho:+.2f}"
    rho += f" (exact permutation p = {e.rho_p:.3f}, description only)" if e.rho_p is not None else ""
    out = [f"**{e.label}** ({e.unit}, {better}): {e.verdict} — {e.found.why}. "
           f"Spearman rho vs the paper's order = {rho}.", ""]  # fmt: skip
    body = [[m.name, m.candidate, fmt_stat(m.stat, metric), m.stat.n] for m in e.members]
    out += [table(["paper name", "candidate", "mean ± sd", "runs"], body), ""]
    digits = metric.digits + 1
    body = [
        [f"{p.a} vs {p.b}", p.paper, p.n, fmt_num(p.d, digits, signed=True), fmt_num(p.test.sd, digits),
         _ci(p.ci, digits) + (" (own sd)" if p.test.own_noise else ""), _p(p.p_holm), p.status]
        for p in e.pairs
    ]  # fmt: skip
    head = ["pair", "paper", "paired seeds", "mean diff (a − b, better direction)", "own sd",
            "95% CI (pooled sd, or own)", "Holm p", "relation"]  # fmt: skip
    out += [table(head, body), "", _power(e.power, metric), "", _regime(info)]
    out += ["", "Equivalence: " + e.equivalence] if e.equivalence else []
    return out


def _p(p: float | None) -> str:
    return "–" if p is None else "< 0.001" if p < 0.001 else f"{p:.3f}"


def _ci(ci: Sequence[float] | None, digits: int) -> str:
    return "–" if ci is None else f"[{ci[0]:+.{digits}f}, {ci[1]:+.{digits}f}]"


def _power(p: Power | None, metric: Any) -> str:
    if p is None:
        return "Power: not stated (fewer than 2 paired seeds, or no noise estimate)."
    unit = "points" if metric.unit == "%" else metric.unit
    text = (
        f"Power: smallest detectable difference {p.mdd:.{metric.digits + 1}f} {unit} at n = {p.n} paired "
        f"seeds, sd of a paired difference {p.sd_diff:.{metric.digits + 1}f} (pooled over {p.k} candidates, "
        f"{p.df} df), α = {p.alpha:.3g} (Holm's first step), {100 * p.power:.0f}% power. "
    )
    if p.effect is None:
        return text + f"Paper's effect: no number in accuracy points for this measure — {p.effect_note}."
    need = f"about {p.seeds_needed} seeds would" if p.seeds_needed else "more than 1000 seeds would be needed"
    verdict = "the study can resolve it" if p.resolvable else f"the study cannot resolve it; {need}"
    return text + f"Paper's effect: {p.effect:g} points ({p.effect_note}): {verdict}."


def _regime(info: EvidenceInfo) -> str:
    def runs(field: str) -> str:
        return ", ".join(info.fired[field]) or "none"

    conv = "needed" if info.evidence.needs_convergence else "not needed by this claim"
    text = (
        f"Regime checks: failed to train (within {CS.CHANCE_POINTS:g} points of chance; shown, left out of means "
        f"and pairs): {runs('failed')}; not converged (convergence {conv}): {runs('not_converged')}; "
        f"convergence not checkable (curve too short or missing): {runs('unchecked')}."
    )
    return text + (
        " Out of regime: " + "; ".join(info.evidence.out_of_regime) + "." if info.evidence.out_of_regime else ""
    )


def _parts(parts: tuple[StemPart, ...]) -> str:
    body = [[p.what, p.n, fmt_num(p.d, 2, signed=True), _ci(p.ci, 2), p.needed, _p(p.p),
             p.status + (f" — {p.reason}" if p.reason else "")] for p in parts]  # fmt: skip
    head = ["part", "n (seeds / runs per curve)", "measured difference", "95% CI", "needed", "Holm p", "status"]
    return table(head, body)


def optimizability(o: Optimizability) -> str:
    """ViT_C paper measures: optimizer gap, EDF, training length, peak performance and samples used."""
    blocks = [_gap(o.gap), _edf(o.edf), _length(o.length), _peak(o.peak), _samples(o.samples)]
    acc = f"Accuracy used: {o.acc[0]} (`{o.acc[1]}`)." if o.acc else ""
    return "\n\n".join(["## Optimizability (ViT_C paper §4)", acc, *(b for b in blocks if b)])


def _run(r: Run | None) -> str:
    if r is None:
        return "–"
    given = (f"{k} {v:.3g}" if v is not None else "" for k, v in (("lr", r.lr), ("wd", r.weight_decay)))
    hp = ", ".join(h for h in given if h)
    return f"{r.acc:.1f} ({hp + '; ' if hp else ''}trial {r.number})"


def _gap(gap: Gap | None) -> str:
    if gap is None:
        return ""
    body = [
        [
            g.model_label,
            _run(g.adamw),
            _run(g.sgd),
            fmt_num(g.gap, 1, signed=True),
            g.n_adamw,
            g.n_sgd,
        ]
        for g in gap.rows
    ]
    ref = "; ".join(f"{k}: {v['adamw_err']} / {v['sgd_err']} error, Δ {v['gap']}" for k, v in C.OPTIMIZER_GAP.items())
    head = ["model", "best AdamW acc (%)", "best SGD acc (%)", "gap AdamW − SGD (points)", "AdamW runs", "SGD runs"]
    return "\n\n".join(["### Optimizer gap", table(head, body), f"Paper (Table 3, 4GF, 50 epochs): {ref}."])


def _edf(edf: Edf | None) -> str:
    if edf is None:
        return ""
    k = edf.k
    body = [[e.label, e.model_label, e.optimizer, e.n, f"{100 * e.within_k:.0f}%"] for e in edf.rows]
    head = ["curve", "model", "optimizer", "runs", f"runs within {k:g} points of the best run"]
    text = (
        f"Sampled: {', '.join(edf.dims)}. Steepness = share of runs within {k:g} points of top-1 error of "
        "the best run of the same model and optimizer (the AdamW − SGD offset is the optimizer gap above); "
        f"the paper uses 4 points at ImageNet scale ({C.EDF_PAPER})."
    )
    return "\n\n".join(["### Hyperparameter stability (EDF)", text, table(head, body), "Figure: `edf.png`."])


def _length(length: Length | None) -> str:
    if length is None:
        return ""
    head = ["candidate", "runs", *[f"acc @{e} (%)" for e in length.epochs], *[f"Δerr @{e}" for e in length.epochs]]
    body = [[r.candidate, r.runs, *[fmt_num(a.mean) if a is not None else "–" for a in r.accs],
             *[fmt_num(d, 1, signed=True) for d in r.deltas]] for r in length.rows]  # fmt: skip
    text = f"Δerr = top-1 error at that length minus at the longest (points). Paper: {C.LENGTH_PAPER}."
    return "\n\n".join(["### Training-length stability", text, table(head, body)])


def _peak(peak: tuple[Run, ...] | None) -> str:
    if peak is None:
        return ""
    body = [[p.model_label, p.candidate, p.optimizer, _run(p)] for p in peak]
    return "\n\n".join(["### Peak performance", table(["model", "candidate", "optimizer", "best acc (%)"], body)])


def _samples(samples: tuple[HyperSamples, ...] | None) -> str:
    if samples is None:
        return ""
    body = [[r.candidate, r.model_label, r.optimizer, r.complete, r.not_complete, ", ".join(r.dims) or "–"]
            for r in samples]  # fmt: skip
    head = ["candidate", "model", "optimizer", "complete runs", "not complete", "sampled"]
    return "\n\n".join(["### Hyperparameter samples used", table(head, body)])


def failures(f: Failures) -> str:
    """Failed, interrupted, pruned and unfinished trials with their reasons."""
    body = [[r.number, r.candidate, r.seed, r.state, r.reason] for r in f.rows]
    return "\n\n".join(["## Failed and pruned trials", table(["trial", "candidate", "seed", "state", "reason"], body)])
