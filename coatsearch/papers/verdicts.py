"""Verdicts on the claims of papers.md §3 from differences paired by seed (analysis.stats), and the rankings."""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, cast

from scipy import stats as st

from coatsearch.analysis import constants as CS
from coatsearch.analysis import stats as S
from coatsearch.analysis.results import Evidence, Judgement, MeasureRanking, Member, Pair, Power, Relation
from coatsearch.analysis.table_rows import CandidateRow
from coatsearch.analysis.tables import METRICS, Metric, floor_key, group_of
from coatsearch.papers import categories as K
from coatsearch.papers import claim_results as CR
from coatsearch.papers import claims as C
from coatsearch.papers.claim_results import ClaimVerdict, Named, StemTables
from coatsearch.papers.paper import MATCHED_KEY, NOT_TESTED
from coatsearch.papers.stem import STEM_RULE, stem_claim
from coatsearch.scores import SCORES, ranked, v_accs


def gain() -> str:
    """The transfer gain's key (fine-tune − scratch: out of regime when no key candidate gains), from the registry."""
    return SCORES[C.TRANSFER_SCORE].role("gain")


Rows = Sequence[CandidateRow]  # tables.candidate_rows
_STRENGTH = {"≈": 0, "≥": 1, ">": 2, "≫": 3}

METHOD = (
    f"Differences are paired by seed (only seeds both candidates have count) and taken in the better direction. "
    f"The noise of each measure is pooled over every candidate from the residuals of value ~ candidate + seed, so "
    f"a difference of n paired seeds has se = sd_diff/√n with the residual degrees of freedom (Student t, "
    f"scipy.stats). {S.PAIR_NOISE_RULE} Family-wise α = {CS.VERDICT_ALPHA} per claim (intervals at "
    f"{100 * (1 - CS.ALPHA):g}%), Holm step-down across the claim's relations."
)
RELATION_RULE = (
    "Neighbours are compared by their mean paired difference with a 95% Student-t interval (description only, "
    "no correction): '>' the interval excludes 0; '≈' the 90% interval lies within ± the equivalence margin "
    f"(1 point; {C.LOSS_MARGIN} nats for losses); '?' neither, or fewer than 2 paired seeds."
)
FLOOR_RULE = (
    "A model that must learn (the names the paper ranks first; for claim (f), each stem at its better optimizer) "
    "is in regime on an accuracy measure only where it beats the fair linear floor on the same seeds: the one-sided "
    f"{100 * (1 - CS.ALPHA):g}% lower bound of its mean paired difference to the floor (Student t, n − 1 df) lies "
    "above 0. The fair floor is the best linear classifier on that score's own training images, chosen on the "
    "validation images among an L2 path of logistic regressions without augmentation and the space's recipe run "
    "(training.floor); where the linear model cannot reach a matched-loss level, the matched reading is held "
    "against that floor, its best accuracy."
)
VERDICT_RULE = (
    "A claim's strict relations (> or ≫ in the paper's order, between neighbouring measured models) are its key "
    "relations; its '≈' and '≥' relations are tested for violation beyond the margin (one-sided t: '≥' violated "
    "when a − b is significantly below −margin, '≈' when |a − b| is significantly above the margin, both "
    "directions Bonferroni-split). Key and violation tests form one Holm family per claim and measure, so the "
    f"family-wise error stays ≤ α = {CS.VERDICT_ALPHA}. **supported**: every key relation holds in the paper's "
    f"direction at Holm-adjusted p < {CS.VERDICT_ALPHA} and no '≈'/'≥' relation is violated. **not supported**: a "
    "key relation is significantly reversed or a '≈'/'≥' relation is significantly violated (the report names it). "
    "A run with fewer than 2 paired seeds is never tested, so n = 1 is never firm. **out of regime**: a model "
    "that must learn (the names the paper ranks first; never a predicted loser) failed to train (every run within "
    f"{CS.CHANCE_POINTS:g} points of chance); on every accuracy measure (%), the matched-loss reading "
    "included, a model that must learn not shown above the fair linear floor on the same seeds (the floor rule "
    "below; no linear-baseline value there: not checkable, so out of regime); one that still rises (> "
    f"{CS.PLATEAU_POINTS:g} point over the last third of its curve), or whose convergence cannot be checked (curve "
    "too short or missing), where the claim needs convergence; for "
    "transfer, pretraining that helped no key candidate (mean fine-tune − scratch gain ≤ 0); for claim (a), a "
    "model that must learn with a run that never fits to the fit level (the profile's "
    f"`scores.generalization.fit_loss`, else {C.FIT_LOSS:g} nats; the matched level is chosen over claim (a)'s key "
    "candidates only, at or below the fit level, where train accuracy exceeds eval accuracy). "
    "A claim some of whose models the study has is never dropped: with fewer than two of them measured it is "
    "'not tested at this scale', with the reason. "
    "Spearman rho with its exact permutation p-value is description only. "
    "The first measure decides; a second measure with the opposite firm verdict makes the claim unresolved. "
    f"{K.CATEGORY_RULE} Claim (f) (report.stem): {STEM_RULE} "
    f"Floor rule: {FLOOR_RULE}"
)


def margin(metric: Metric, claim_margin: float = 1.0) -> float:
    """Equivalence margin of a measure: the claim's (points), or LOSS_MARGIN for losses."""
    return C.LOSS_MARGIN if metric.unit == "nats" else claim_margin


def _sign(metric: Metric) -> float:
    return 1.0 if metric.better == "higher" else -1.0


def noises(rows: Rows) -> S.MeasureNoises:
    """Pooled noise per measure, over every candidate but the baselines."""
    rows = [r for r in rows if r.candidate not in CS.BASELINES]
    keys = dict.fromkeys(k for r in rows for k in r.by_seed)
    return S.MeasureNoises(tuple((k, S.noise({r.candidate: r.by_seed[k] for r in rows if k in r.by_seed}))
                               for k in keys))  # fmt: skip


def compare(a: CandidateRow, b: CandidateRow, key: str, noise: S.Noise | None) -> Relation:
    """Ranking relation of row a to row b on one measure under RELATION_RULE (description, no correction)."""
    metric = METRICS[key]
    res = S.paired(a.by_seed[key], b.by_seed[key], _sign(metric), noise, CS.ALPHA)
    m = margin(metric)
    if res.ci is None or res.ci_equiv is None:
        symbol = "?"
    elif res.ci[0] > 0 or res.ci[1] < 0:
        symbol = ">" if res.d > 0 else "<"
    else:
        symbol = "≈" if -m < res.ci_equiv[0] and res.ci_equiv[1] < m else "?"
    return Relation(symbol, res)


def ranking(rows: Rows, key: str, noise: S.Noise | None = None) -> MeasureRanking | None:
    """Candidates ordered best first on one measure, with the relation between each pair of neighbours."""
    metric = METRICS[key]
    items = [r for r in rows if key in r.metrics]
    if not items:
        return None
    items.sort(key=lambda r: -_sign(metric) * r.metrics[key].mean)
    rel = [compare(a, b, key, noise) for a, b in zip(items, items[1:], strict=False)]
    text = _fmt_item(items[0], key, metric)
    for r, x in zip(items[1:], rel, strict=True):
        text += f" {x.symbol} {_fmt_item(r, key, metric)}"
    order = tuple((r.candidate, r.metrics[key]) for r in items)
    return MeasureRanking(key, metric.label, metric.unit, metric.better, order, tuple(rel), text)


def _fmt_item(row: CandidateRow, key: str, metric: Metric) -> str:
    s = row.metrics[key]
    spread = f" ± {s.sd:.{metric.digits}f}" if s.sd is not None else ", n=1"
    return f"{row.candidate} ({s.mean:.{metric.digits}f}{spread})"


def rankings(rows: Rows, noise_by_key: S.MeasureNoises | None = None) -> list[MeasureRanking]:
    """A ranking for every ranked measure the study has."""
    nz = noises(rows) if noise_by_key is None else noise_by_key
    return [r for key in ranked() if (r := ranking(rows, key, nz.of(key))) is not None]


def parse_chain(chain: str) -> tuple[list[str], list[str]]:
    """'A ≈ B > C' → (['A', 'B', 'C'], ['≈', '>'])."""
    tokens = chain.split()
    return tokens[0::2], tokens[1::2]


def resolve(name: str, rows: Sequence[CR.Row]) -> CR.Resolved[CR.Row]:
    """The row a paper name refers to (exact name, V0 stand-in, or the one row with that model label)."""
    by_name = {r.candidate: r for r in rows}
    if name in by_name:
        return CR.Resolved(by_name[name])
    if name == "V0" and (r := by_name.get(C.V0_STANDIN)) and r.layout == C.V0_STANDIN:
        return CR.Resolved(r, f"'{C.V0_STANDIN}' stands in for V0 (no candidate named V0)")
    same = [r for r in rows if r.model_label == name]
    return CR.Resolved(same[0] if len(same) == 1 else None)


def _pair(a: Named, b: Named, paper: str, key: str, noise: Any, claim: C.Claim) -> Pair:
    """One relation of the paper's order, measured: paired difference a − b (better direction) and its interval."""
    metric = METRICS[key]
    res = S.paired(a.row.by_seed[key], b.row.by_seed[key], _sign(metric), noise, CS.ALPHA)
    return Pair(a.name, b.name, paper, _STRENGTH[paper] >= 2, margin(metric, claim.margin), res)


def violation_p(p: Pair) -> float | None:
    """One-sided p that a '≥' relation is violated (a − b < −margin) or a '≈' one (|a − b| > margin, ×2)."""
    se, df = p.test.se, p.test.df
    if se is None:
        return None
    low = float(st.t.cdf((p.d + p.margin) / se, df))
    if p.paper == "≥":
        return low
    high = float(st.t.sf((p.d - p.margin) / se, df))
    return min(1.0, 2 * min(low, high))


def judge(pairs: Sequence[Pair]) -> tuple[Pair, ...]:
    """One Holm family: key relations (two-sided) and ≈ / ≥ violations (one-sided) → the pairs with their status."""
    tests = [p.test.p if p.key else violation_p(p) for p in pairs]
    return tuple(dataclasses.replace(p, p_test=t, p_holm=q, status=_status(p, q))
                 for p, t, q in zip(pairs, tests, S.holm(tests), strict=True))  # fmt: skip


def _status(p: Pair, q: float | None) -> str:
    """A pair's status from its Holm-adjusted p."""
    firm = q is not None and q < CS.VERDICT_ALPHA
    if p.key:
        return "holds" if firm and p.d > 0 else "reversed" if firm else "unresolved"
    lo_hi, m = p.ci_equiv, p.margin
    if firm:
        return "violated"
    if p.paper == "≈":
        return "equivalent" if lo_hi and -m < lo_hi[0] and lo_hi[1] < m else "not resolved"
    return "non-inferior" if lo_hi and lo_hi[0] > -m else "not resolved"


def power(claim: C.Claim, key: str, pairs: Sequence[Pair], noise: S.Noise | None, need: bool = True) -> Power | None:
    """Smallest detectable difference of the key relations at the study's n, noise and α; the paper's effect
    (need=False leaves out the seeds the effect needs: the category needs only the detectable difference)."""
    key_pairs = [p for p in pairs if p.key]
    n = min((p.n for p in key_pairs), default=0)
    if noise is None or n < 2:
        return None
    alpha = CS.VERDICT_ALPHA / len(
        pairs
    )  # Holm's first step: the strictest level a relation of the family is tested at
    mdd = S.detectable(noise.sd_diff, n, noise.df, alpha, CS.POWER)
    effect = claim.paper_effect if METRICS[key].unit in ("%", "points") else None
    seeds = S.seeds_needed(noise.sd_diff, effect, noise.k, alpha, CS.POWER) if effect and need else None
    return Power(
        n,
        noise.sd_diff,
        noise.df,
        noise.k,
        alpha,
        mdd,
        effect,
        seeds,
        claim.effect_note,
        need,
        None if effect is None else mdd <= effect,
    )


def _floor_by_seed(key: str, rows: Rows) -> Mapping[int, float] | None:
    """The linear baseline's floor on an accuracy measure per seed (%): its fair floor where recorded, else its own
    value on the measure; None without one."""
    if METRICS[key].unit != "%":
        return None
    base = next((r for r in rows if r.candidate == CS.BASELINES[0]), None)
    if base is None:
        return None
    fk = floor_key(key)
    got = base.by_seed.get(fk) if fk else None
    return got or base.by_seed.get(key)


def floor_of(key: str, rows: Rows) -> float | None:
    """The linear baseline's mean floor on an accuracy measure (%), the matched-loss reading included; else None."""
    by_seed = _floor_by_seed(key, rows)
    return float(sum(by_seed.values()) / len(by_seed)) if by_seed else None


def must_learn(claim: C.Claim, named: Sequence[Named]) -> tuple[Named, ...]:
    """The measured models a claim's regime is gated on: the paper's top group (claims.top_group), else its best
    measured name."""
    top = C.top_group(claim.chain)
    return tuple(m for m in named if m.name in top) or tuple(named[:1])


def _below_floor(named: Sequence[Named], key: str, rows: Rows, where: str) -> list[str]:
    """The regime guard against the fair linear floor on the claim's own measure, by interval (FLOOR_RULE)."""
    metric = METRICS[key]
    if metric.unit != "%":
        return []
    floor, label = _floor_by_seed(key, rows), metric.label + (f" {where}" if where else "")
    have = [(m.name, m.row.by_seed[key]) for m in named if key in m.row.by_seed]
    if not floor:
        ran = any(r.candidate == CS.BASELINES[0] for r in rows)
        return [f"regime not checkable: no linear-baseline value on {label}"] if ran and have else []
    out = []
    for name, by_seed in have:
        test = S.above_floor(by_seed, floor, CS.ALPHA)
        if test.above:
            continue
        out.append(f"{name} not shown above the fair linear floor on {label} ({test.d:+.1f} points over "
                   f"{test.n} seed(s), {test.bound})")  # fmt: skip
    return out


def regime(claim: C.Claim, named: Sequence[Named], key: str, rows: Rows, where: str = "") -> list[str]:
    """Why the claim is out of regime on a measure: key candidates at chance, not above the linear baseline on
    the same measure and reading (`where`, e.g. 'at 0.1 nats'), not converged or not checkably converged."""
    group, out = group_of(key), []
    for name, row in ((m.name, m.row) for m in named):
        g = row.guards.get(group)
        if g and g.runs and g.failed == g.runs:
            out.append(f"{name}: every run failed to train (within {CS.CHANCE_POINTS:g} points of chance)")
        if claim.needs_convergence and g and g.not_converged:
            out.append(f"{name}: {g.not_converged} of {g.runs} run(s) not converged")
        if claim.needs_convergence and key in row.metrics and (g is None or g.unchecked):
            runs = f"{g.unchecked} of {g.runs} run(s)" if g else "its runs"
            out.append(f"{name}: convergence not checkable for {runs} (curve too short or missing)")
    out += _below_floor(named, claim.floor_on if METRICS[key].unit != "%" and claim.floor_on else key, rows, where)
    up = gain()
    gains = [m.row.metrics[up].mean for m in named if up in m.row.metrics] if group == group_of(up) else []
    if gains and max(gains) <= 0:
        out.append(
            f"pretraining helped no key candidate (mean {METRICS[up].label} {max(gains):+.1f} points at best: "
            "fine-tuning never beat training from scratch)"
        )
    return out


def overfits(claim: C.Claim, named: Sequence[Named]) -> list[str]:
    """Why a claim premised on "no overfitting" (claims.Claim.overfit) is out of regime: every measured member,
    the paper's predicted losers included, whose mean held-out loss lies more than OVERFIT_NATS above its final
    clean train loss; a member without both losses is not checkable."""
    if claim.overfit is None:
        return []
    fit, held = claim.overfit
    out = []
    for name, m in ((x.name, x.row.metrics) for x in named):
        if fit not in m and held not in m:
            continue
        if fit not in m or held not in m:
            out.append(f"{name}: overfitting not checkable (no {METRICS[held].label})")
            continue
        gap = m[held].mean - m[fit].mean
        if gap > C.OVERFIT_NATS:
            out.append(f"{name} overfits: {METRICS[held].label} {m[held].mean:.3f} is {gap:.3f} nats above its "
                       f"{METRICS[fit].label} {m[fit].mean:.3f} (at most {C.OVERFIT_NATS:g})")  # fmt: skip
    return out


def evidence(claim: C.Claim, key: str, measured: Sequence[Pair], named: Sequence[Named], rows: Rows, noise: Any,
             rho: Any, extra: tuple[str, ...] = (), where: str = "", gate: Sequence[Named] | None = None
             ) -> Evidence:  # fmt: skip
    """One measure's evidence on a claim: members, judged pairs, power (rho None: skipped), regime, verdict.

    `gate`: the models the regime guards read (default: must_learn of the claim), never the predicted losers."""
    metric = METRICS[key]
    pairs = judge(measured)
    pw = power(claim, key, pairs, noise, need=rho is not None)
    gated = must_learn(claim, named) if gate is None else gate
    reasons = [*extra, *regime(claim, gated, key, rows, where if key == MATCHED_KEY else ""), *overfits(claim, named)]
    found = K.measure_verdict(pairs, pw, reasons, "points" if metric.unit == "%" else metric.unit)
    pw = pw if rho is not None else None
    equiv = equivalence_note(pairs, claim)
    group = group_of(key)
    guards = tuple({"name": m.name, **vars(m.row.guards[group])} for m in named if group in m.row.guards)
    members = tuple(Member(m.name, m.row.candidate, m.row.metrics[key]) for m in named if key in m.row.metrics)
    rho = rho or (None, None)
    return Evidence(key, metric.label, metric.unit, rho[0], rho[1], members, pairs, pw, guards, tuple(reasons),
                    claim.needs_convergence, found, equiv)  # fmt: skip


def equivalence_note(pairs: Sequence[Pair], claim: C.Claim) -> str:
    """Whether the study's n can confirm its '≈'/'≥' relations at the claim's margin; '' without any.

    A '≈' is confirmed when the 90% interval lies within ± the margin; when its half-width alone reaches the
    margin, no outcome can confirm it at this n and the relation can only be refuted (violated).
    """
    soft = [(p, p.ci_equiv) for p in pairs if not p.key and p.ci_equiv]
    if not soft:
        return ""
    wide = [(p, (ci[1] - ci[0]) / 2) for p, ci in soft]
    wide = [(p, h) for p, h in wide if h >= p.margin]
    derived = f"margin {soft[0][0].margin:g} ({claim.margin_note})"
    if not wide:
        return f"'≈'/'≥' relations can be confirmed at this n: every 90% half-width is below the {derived}."
    need = max(math.ceil(p.n * (h / p.margin) ** 2) + 1 for p, h in wide)
    each = "; ".join(f"{p.a} {p.paper} {p.b}: 90% half-width {h:.2f} at n = {p.n}" for p, h in wide)
    return (
        f"'≈'/'≥' cannot be confirmed at this n, only refuted: {each}, not below the {derived}; about "
        f"{need} paired seeds would confirm a true difference of 0."
    )


def _order_evidence(claim: C.Claim, resolved: dict[str, CandidateRow], key: str, rows: Rows, noise: Any,
                    describe: bool = True, extra: tuple[str, ...] = (), where: str = "",
                    ) -> Evidence | None:  # fmt: skip
    """Measured vs paper order on one measure, between neighbouring measured models of the chain.

    describe=False leaves out rho and power (description only): the verdicts are the same, computed faster.
    """
    names, syms = parse_chain(claim.chain)
    idx = [(i, n) for i, n in enumerate(names) if n in resolved and key in resolved[n].by_seed]
    if len(idx) < 2:
        return None
    pairs = []
    for (i, a), (j, b) in zip(idx, idx[1:], strict=False):
        paper = max(syms[i:j], key=lambda s: _STRENGTH[s])
        pairs.append(_pair(Named(a, resolved[a]), Named(b, resolved[b]), paper, key, noise, claim))
    level = [0]
    for s in syms:
        level.append(level[-1] + (s != "≈"))
    sign = _sign(METRICS[key])
    claimed, measured = [-level[i] for i, _ in idx], [sign * resolved[n].metrics[key].mean for _, n in idx]
    rho = S.spearman([float(v) for v in claimed], measured) if describe else None
    named = [Named(n, resolved[n]) for n in names if n in resolved]
    return evidence(claim, key, pairs, named, rows, noise, rho, extra, where)


def _head(claim: C.Claim, found: Judgement, evidence: Sequence[Evidence], notes: list[str],
          why_first: bool = True) -> ClaimVerdict:  # fmt: skip
    return ClaimVerdict(claim.id, claim.title, claim.chain, claim.source, found, tuple(evidence), tuple(notes),
                        why_first=why_first)  # fmt: skip


def _combine(claim: C.Claim, found: list[Evidence], notes: list[str]) -> ClaimVerdict | None:
    """The claim's verdict: the first measure decides; an opposite firm verdict on another makes it unresolved."""
    if not found:
        return None
    first = found[0]
    verdict = first.found
    clash = [e for e in found[1:] if e.verdict in K.FIRM and first.verdict in K.FIRM and e.verdict != first.verdict]
    if clash:
        why = f"{first.label} says {first.verdict}, {clash[0].label} says {clash[0].verdict}"
        verdict = dataclasses.replace(verdict, verdict=K.UNRESOLVED, why=why, reason=f"its measures disagree: {why}",
                                      decide=f"a replicate on fresh seeds, or a registered choice of measure "
                                             f"({first.label} decides as registered)")  # fmt: skip
    return _head(claim, verdict, found, notes)


def _unjudged(claim: C.Claim, resolved: dict, extra: tuple[str, ...], notes: list[str]) -> ClaimVerdict:
    """A claim some of whose models the study has but cannot judge: out of regime, or not tested, with why."""
    if extra:
        why = "out of regime — " + "; ".join(extra)
        return _head(claim, K.fields(K.OUT_OF_REGIME, extra[0], None, None, "points", why), (), notes, False)
    have = ", ".join(resolved) or "none"
    labels = ", ".join(METRICS[k].label for k in claim.measures)
    why = f"fewer than two of its models measured on {labels} (measured models: {have})"
    found = Judgement(NOT_TESTED, why, None, None, f"a study that measures two or more of its models on {labels}", why)
    return _head(claim, found, (), notes)


def chain_claim(claim: C.Claim, rows: Rows, noise_by_key: S.MeasureNoises | None = None, describe: bool = True,
                extra: tuple[str, ...] = (), where: str = "") -> ClaimVerdict | None:  # fmt: skip
    """Verdict on an ordering claim (extra: out-of-regime reasons found upstream; where: the matched reading, e.g.
    'at 0.1 nats'), None without any of its models."""
    nz = noises(rows) if noise_by_key is None else noise_by_key
    resolved, notes = {}, []
    for n in parse_chain(claim.chain)[0]:
        found = resolve(n, rows)
        if found.row is not None:
            resolved[n] = found.row
            notes += [found.note] if found.note else []
    if not resolved:
        return None
    evidences = [e for k in claim.measures
                 if (e := _order_evidence(claim, resolved, k, rows, nz.of(k), describe, extra, where))]  # fmt: skip
    return _combine(claim, evidences, notes) or _unjudged(claim, resolved, extra, notes)


def rel_pairs(rows: Sequence[CR.Row]) -> tuple[CR.RelPair[CR.Row], ...]:
    """(with rel-pos, without) candidate pairs: a name with 'norel' and the same name without it."""

    def base(name: str) -> str:
        """The name without its rel-pos tag, lower case."""
        return re.sub(r"[-_ ]?(no)?rel(pos)?[-_ ]?", "", name.lower())

    pairs = []
    for off in (r for r in rows if C.NOREL_TAG in r.candidate.lower()):
        twin = base(off.candidate)
        on = [r for r in rows if C.NOREL_TAG not in r.candidate.lower() and base(r.candidate) == twin]
        if len(on) == 1:
            pairs.append(CR.RelPair(on[0], off))
    return tuple(pairs)


def rel_claim(rows: Rows, noise_by_key: S.MeasureNoises | None = None, describe: bool = True
              ) -> ClaimVerdict | None:  # fmt: skip
    """Verdict on 'relative attention helps' from the with/without pairs, or None when there are none."""
    nz = noises(rows) if noise_by_key is None else noise_by_key
    claim, found = C.REL_CLAIM, []
    for key in claim.measures:
        both = [p for p in rel_pairs(rows) if key in p.on.by_seed and key in p.off.by_seed]
        if not both:
            continue
        pairs = [_pair(_own(p.on), _own(p.off), ">", key, nz.of(key), claim) for p in both]
        named = [_own(r) for p in both for r in (p.on, p.off)]
        gate = [_own(p.on) for p in both]  # the models with relative attention must learn
        found.append(evidence(claim, key, pairs, named, rows, nz.of(key), (None, None) if describe else None,
                              gate=gate))  # fmt: skip
    return _combine(claim, found, [])


def _own(row: CandidateRow) -> Named:
    """A candidate row under its own name."""
    return Named(row.candidate, row)


def v_table(rows: Rows) -> tuple[CR.DepthSplit, ...]:
    """V0/V1/V2 (Table 7) rows: depths, params, MACs, eval accuracies and the paper's top-1; () without V1/V2."""
    by_name = {r.candidate: r for r in rows}
    if not {"V1", "V2"} & set(by_name):
        return ()
    out = []
    for variant, paper in C.TABLE7.items():
        found = resolve(variant, rows) if variant == "V0" else CR.Resolved(by_name.get(variant))
        if (row := found.row) is None:
            continue
        scores = tuple((k, row.stat(k)) for k in ("params", "macs", *v_accs()))  # single-run scores' headlines
        out.append(CR.DepthSplit(variant, row.candidate, found.note, row.depths, scores,
                                 cast(Sequence[int], paper["blocks"]), cast(float, paper["top1"])))  # fmt: skip
    return tuple(out)


def all_claims(
    rows: Rows, stem: StemTables | None, noise_by_key: S.MeasureNoises | None = None, describe: bool = True,
    regime_a: Sequence[str] = (), level_a: float | None = None,
) -> list[ClaimVerdict]:  # fmt: skip
    """Verdicts on every claim of papers.md §3 that the study covers, in the paper's order (a-f).

    stem: claim (f)'s tables (papers.stem.stem_tables); regime_a: claim (a)'s out-of-regime reasons from the
    matched-loss reading (report.paper.matched), level_a its common level (nats).
    """
    nz = noises(rows) if noise_by_key is None else noise_by_key
    where = f"at {level_a:g} nats" if level_a is not None else ""
    found = [chain_claim(c, rows, nz, describe, tuple(regime_a) if c.id == "a" else (), where)
             for c in C.CHAIN_CLAIMS]  # fmt: skip
    found += [rel_claim(rows, nz, describe), stem_claim(stem)]
    return [v for v in found if v is not None]
