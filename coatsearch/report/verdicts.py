"""Rankings with ≈ / ≥ / > from the seed spread, Spearman's rho, and a verdict on each claim of papers.md §3."""

from __future__ import annotations

import math
import re

from coatsearch.report import claims as C
from coatsearch.report.info import METRICS, Metric, Stat
from coatsearch.scores import ranked

RANKED = ranked()  # the ranked metrics, from the score registry
_STRENGTH = {"≈": 0, "≥": 1, ">": 2, "≫": 3}

RELATION_RULE = (
    "Neighbours are compared by their means: d = difference (in the better direction), "
    "se = sqrt(sd1²/n1 + sd2²/n2) over seeds/runs. When either side has fewer than 2 runs, se is replaced "
    "by a fixed noise floor (0.5 points for accuracies and gaps, 0.01 nats for losses). "
    "d < 1·se → ≈; 1·se ≤ d < 2·se → ≥; d ≥ 2·se → >."
)
VERDICT_RULE = (
    f"A claim's strict relations (> or ≫ in the paper's order) are its key relations. **supported**: "
    f"Spearman rho between the measured and the paper's order ≥ {C.RHO_SUPPORT} and every key relation measured "
    f"as > (d ≥ 2·se) in the paper's direction. **not supported**: rho ≤ {C.RHO_AGAINST}, or a key relation "
    "reversed at 2·se. **inconclusive**: anything else, including no key relation measurable. The first measure "
    "decides; a second measure that gives the opposite firm verdict makes the claim inconclusive. "
    "Pair claims (c, e) have no rho beyond ±1: the pair relation decides. Claim (f) holds when ViT_P's "
    f"optimizer gap exceeds ViT_C's by ≥ {C.GAP_MARGIN} point and ViT_C's EDF share within {C.EDF_K:g} points "
    "of its best run exceeds ViT_P's by ≥ 2 binomial standard errors; either reversed → not supported."
)


def compare(a: Stat, b: Stat, metric: Metric) -> dict:
    """Relation of a to b (> ≥ ≈ ≤ <, '>' = a better) under RELATION_RULE, with d and the unit used."""
    sign = 1.0 if metric.better == "higher" else -1.0
    d = sign * (a.mean - b.mean)
    if a.se is not None and b.se is not None:
        unit, floor = math.sqrt(a.se**2 + b.se**2), False
    else:
        unit, floor = float(metric.floor or 0.0), True
    x = abs(d)
    if x == 0 or x < unit:
        symbol = "≈"
    elif x < 2 * unit:
        symbol = "≥" if d > 0 else "≤"
    else:
        symbol = ">" if d > 0 else "<"
    return {"symbol": symbol, "d": d, "se": unit, "floor": floor}


def interval(s: Stat, metric: Metric) -> tuple[float, float]:
    """mean ± 2·se (or ± 2·floor with fewer than 2 runs)."""
    u = s.se if s.se is not None else float(metric.floor or 0.0)
    return s.mean - 2 * u, s.mean + 2 * u


def ranking(rows: list[dict], key: str) -> dict | None:
    """Candidates ordered best first on one metric, with the relation symbol between each pair of neighbours."""
    metric = METRICS[key]
    items = [(r["candidate"], r["metrics"][key]) for r in rows if key in r["metrics"]]
    if not items:
        return None
    items.sort(key=lambda it: -it[1].mean if metric.better == "higher" else it[1].mean)
    rel = [compare(a[1], b[1], metric) for a, b in zip(items, items[1:], strict=False)]
    text = _fmt_item(*items[0], metric)
    for (name, s), r in zip(items[1:], rel, strict=True):
        text += f" {r['symbol']} {_fmt_item(name, s, metric)}"
    return {
        "key": key,
        "label": metric.label,
        "unit": metric.unit,
        "better": metric.better,
        "order": [{"candidate": n, "stat": s} for n, s in items],
        "relations": rel,
        "floor_used": any(r["floor"] for r in rel),
        "text": text,
    }


def _fmt_item(name: str, s: Stat, metric: Metric) -> str:
    spread = f" ± {s.sd:.{metric.digits}f}" if s.sd is not None else ", n=1"
    return f"{name} ({s.mean:.{metric.digits}f}{spread})"


def rankings(rows: list[dict]) -> list[dict]:
    """A ranking for every ranked score the study measured."""
    return [r for key in RANKED if (r := ranking(rows, key)) is not None]


def average_ranks(values: list[float]) -> list[float]:
    """1-based ranks, ties sharing their average rank."""
    idx = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(idx):
        j = i
        while j + 1 < len(idx) and values[idx[j + 1]] == values[idx[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[idx[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def spearman(x: list[float], y: list[float]) -> float | None:
    """Spearman rank correlation (Pearson on average ranks); None with < 2 items or a constant side."""
    if len(x) != len(y) or len(x) < 2:
        return None
    rx, ry = average_ranks(list(x)), average_ranks(list(y))
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    sxy = sum((a - mx) * (b - my) for a, b in zip(rx, ry, strict=True))
    sxx, syy = sum((a - mx) ** 2 for a in rx), sum((b - my) ** 2 for b in ry)
    return None if sxx == 0 or syy == 0 else sxy / math.sqrt(sxx * syy)


def parse_chain(chain: str) -> tuple[list[str], list[str]]:
    """'A ≈ B > C' → (['A', 'B', 'C'], ['≈', '>'])."""
    tokens = chain.split()
    return tokens[0::2], tokens[1::2]


def resolve(name: str, rows: list[dict]) -> tuple[dict | None, str]:
    """The candidate row a paper name refers to (exact name, V0 stand-in, or the one row with that model label)."""
    by_name = {r["candidate"]: r for r in rows}
    if name in by_name:
        return by_name[name], ""
    if name == "V0" and (r := by_name.get(C.V0_STANDIN)) and r["layout"] == C.V0_STANDIN:
        return r, f"'{C.V0_STANDIN}' stands in for V0 (no candidate named V0)"
    same = [r for r in rows if r["model_label"] == name]
    return (same[0], "") if len(same) == 1 else (None, "")


def order_evidence(names: list[str], syms: list[str], resolved: dict, key: str) -> dict | None:
    """Measured vs paper order on one metric: rho, intervals, pairwise relations, and the verdict."""
    metric = METRICS[key]
    members = [(i, n, resolved[n]) for i, n in enumerate(names) if n in resolved and key in resolved[n]["metrics"]]
    if len(members) < 2:
        return None
    group = [0]
    for s in syms:
        group.append(group[-1] + (s != "≈"))
    sign = 1.0 if metric.better == "higher" else -1.0
    stats = {n: r["metrics"][key] for _, n, r in members}
    rho = spearman([-group[i] for i, _, _ in members], [sign * stats[n].mean for _, n, _ in members])
    pairs = [_pair(a, b, syms, stats, metric) for a, b in zip(members, members[1:], strict=False)]
    verdict, why = _order_verdict(rho, pairs)
    return {
        "key": key,
        "label": metric.label,
        "unit": metric.unit,
        "rho": rho,
        "members": [
            {"name": n, "candidate": r["candidate"], "stat": stats[n], "interval": interval(stats[n], metric)}
            for _, n, r in members
        ],
        "pairs": pairs,
        "verdict": verdict,
        "why": why,
    }


def _pair(a: tuple, b: tuple, syms: list[str], stats: dict, metric: Metric) -> dict:
    between = syms[a[0] : b[0]]
    paper = max(between, key=lambda s: _STRENGTH[s])
    rel = compare(stats[a[1]], stats[b[1]], metric)
    key = _STRENGTH[paper] >= 2
    status = {">": "holds", "<": "reversed"}.get(rel["symbol"], "unresolved") if key else "-"
    return {"a": a[1], "b": b[1], "paper": paper, "key": key, "status": status, **rel}


def _order_verdict(rho: float | None, pairs: list[dict]) -> tuple[str, str]:
    key = [p for p in pairs if p["key"]]
    rho_txt = "n/a" if rho is None else f"{rho:+.2f}"
    if not key:
        return "inconclusive", "no strict relation of the paper's order is measurable with these candidates"
    if any(p["status"] == "reversed" for p in key):
        bad = ", ".join(f"{p['a']} vs {p['b']}" for p in key if p["status"] == "reversed")
        return "not supported", f"key relation reversed at 2·se: {bad} (rho {rho_txt})"
    if rho is not None and rho <= C.RHO_AGAINST:
        return "not supported", f"rho {rho_txt} ≤ {C.RHO_AGAINST}"
    if rho is not None and rho >= C.RHO_SUPPORT and all(p["status"] == "holds" for p in key):
        return "supported", f"rho {rho_txt} and all {len(key)} key relation(s) hold at 2·se"
    held = sum(p["status"] == "holds" for p in key)
    return "inconclusive", f"rho {rho_txt}; {held} of {len(key)} key relation(s) hold at 2·se"


def _combine(claim: C.Claim, evidence: list[dict], notes: list[str]) -> dict | None:
    """The claim's verdict: the first measure decides; an opposite firm verdict on another makes it inconclusive."""
    if not evidence:
        return None
    verdict, why = evidence[0]["verdict"], evidence[0]["why"]
    firm = {"supported": "not supported", "not supported": "supported"}
    clash = [e for e in evidence[1:] if firm.get(verdict) == e["verdict"]]
    if clash:
        verdict = "inconclusive"
        why = f"{evidence[0]['label']} says {evidence[0]['verdict']}, {clash[0]['label']} says {clash[0]['verdict']}"
    return {
        "id": claim.id,
        "title": claim.title,
        "chain": claim.chain,
        "source": claim.source,
        "verdict": verdict,
        "why": why,
        "evidence": evidence,
        "notes": notes,
    }


def chain_claim(claim: C.Claim, rows: list[dict]) -> dict | None:
    """Verdict on an ordering claim, or None when fewer than two of its models were measured."""
    names, syms = parse_chain(claim.chain)
    resolved, notes = {}, []
    for n in names:
        row, note = resolve(n, rows)
        if row is not None:
            resolved[n] = row
            notes += [note] if note else []
    evidence = [e for key in claim.measures if (e := order_evidence(names, syms, resolved, key))]
    return _combine(claim, evidence, notes)


def rel_pairs(rows: list[dict]) -> list[tuple[dict, dict]]:
    """(with rel-pos, without) candidate pairs: a name with 'norel' and the same name without it."""

    def base(name: str) -> str:
        """The name without its rel-pos tag, lower case."""
        return re.sub(r"[-_ ]?(no)?rel(pos)?[-_ ]?", "", name.lower())

    pairs = []
    for off in (r for r in rows if C.NOREL_TAG in r["candidate"].lower()):
        twin = base(off["candidate"])
        on = [r for r in rows if C.NOREL_TAG not in r["candidate"].lower() and base(r["candidate"]) == twin]
        if len(on) == 1:
            pairs.append((on[0], off))
    return pairs


def rel_claim(rows: list[dict]) -> dict | None:
    """Verdict on 'relative attention helps' from the with/without pairs, or None when there are none."""
    pairs = rel_pairs(rows)
    evidence = []
    for key in REL_MEASURES:
        metric = METRICS[key]
        rel = [
            {"a": on["candidate"], "b": off["candidate"], "paper": ">", "key": True, **_status(on, off, key, metric)}
            for on, off in pairs
            if key in on["metrics"] and key in off["metrics"]
        ]
        if rel:
            members = [r for pair in pairs for r in pair if key in r["metrics"]]
            verdict, why = _pairs_verdict(rel)
            why += " at 2·se"
            evidence.append(
                {
                    "key": key,
                    "label": metric.label,
                    "unit": metric.unit,
                    "rho": None,
                    "members": [_member(r, key) for r in members],
                    "pairs": rel,
                    "verdict": verdict,
                    "why": why,
                }
            )
    return _combine(C.REL_CLAIM, evidence, [])


REL_MEASURES = C.REL_CLAIM.measures


def _member(row: dict, key: str) -> dict:
    s = row["metrics"][key]
    return {"name": row["candidate"], "candidate": row["candidate"], "stat": s, "interval": interval(s, METRICS[key])}


def _status(a: dict, b: dict, key: str, metric: Metric) -> dict:
    rel = compare(a["metrics"][key], b["metrics"][key], metric)
    return {"status": {">": "holds", "<": "reversed"}.get(rel["symbol"], "unresolved"), **rel}


def _pairs_verdict(pairs: list[dict], noun: str = "pair") -> tuple[str, str]:
    held = sum(p["status"] == "holds" for p in pairs)
    if any(p["status"] == "reversed" for p in pairs):
        bad = sum(p["status"] == "reversed" for p in pairs)
        return "not supported", f"{bad} of {len(pairs)} {noun}(s) reversed"
    if held == len(pairs):
        return "supported", f"all {held} {noun}(s) hold"
    return "inconclusive", f"{held} of {len(pairs)} {noun}(s) hold"


def stem_claim(gaps: list[dict], edf_rows: list[dict]) -> dict | None:
    """Verdict on claim (f) from the optimizer-gap table and the EDF (ViT_P vs ViT_C), or None without both."""
    parts = []
    gap = {g["model_label"]: g["gap"] for g in gaps if g["gap"] is not None}
    if "ViT_P" in gap and "ViT_C" in gap:
        d = gap["ViT_P"] - gap["ViT_C"]
        parts.append(_part("optimizer gap ViT_P − ViT_C (points)", d, C.GAP_MARGIN / 2))
    for opt in sorted({e["optimizer"] for e in edf_rows}):
        share = {lab: _share(edf_rows, lab, opt) for lab in ("ViT_P", "ViT_C")}
        if all(share.values()):
            (pp, n_p), (pc, n_c) = share["ViT_P"], share["ViT_C"]
            se = math.sqrt(pp * (1 - pp) / n_p + pc * (1 - pc) / n_c)
            parts.append(_part(f"EDF share within {C.EDF_K:g} points, ViT_C − ViT_P ({opt})", pc - pp, se))
    if not parts:
        return None
    verdict, why = _pairs_verdict(parts, "part")
    claim = C.STEM_CLAIM
    head = {"id": claim.id, "title": claim.title, "chain": claim.chain, "source": claim.source}
    return {**head, "verdict": verdict, "why": why, "evidence": [], "notes": [], "parts": parts}


def _share(edf_rows: list[dict], label: str, opt: str) -> tuple[float, int] | None:
    deltas = [d for e in edf_rows if (e["model_label"], e["optimizer"]) == (label, opt) for d in e["delta"]]
    if not deltas:
        return None
    return sum(d <= C.EDF_K for d in deltas) / len(deltas), len(deltas)


def _part(what: str, d: float, se: float) -> dict:
    if se > 0:
        status = "holds" if d >= 2 * se else "reversed" if d <= -2 * se else "unresolved"
    else:
        status = "holds" if d > 0 else "reversed" if d < 0 else "unresolved"
    return {"what": what, "d": d, "threshold": 2 * se, "status": status}


V_ACCS = ("generalization.eval_acc", "capacity.eval_acc", "accuracy.eval_acc")


def v_table(rows: list[dict]) -> list[dict]:
    """V0/V1/V2 (Table 7) rows: depths, params, MACs, eval accuracies and the paper's top-1; [] without V1/V2."""
    names = {r["candidate"] for r in rows}
    if not {"V1", "V2"} & names:
        return []
    out = []
    for variant, paper in C.TABLE7.items():
        row, note = resolve(variant, rows) if variant == "V0" else ({r["candidate"]: r for r in rows}.get(variant), "")
        if row is None:
            continue
        m = row["metrics"]
        out.append(
            {
                "variant": variant,
                "candidate": row["candidate"],
                "note": note,
                "depths": row["depths"],
                **{k: m.get(k) for k in ("params", "macs", *V_ACCS)},
                "paper_blocks": paper["blocks"],
                "paper_top1": paper["top1"],
            }
        )
    return out


def all_claims(rows: list[dict], gaps: list[dict], edf_rows: list[dict]) -> list[dict]:
    """Verdicts on every claim of papers.md §3 that the study covers, in the paper's order (a-f)."""
    found = [chain_claim(c, rows) for c in C.CHAIN_CLAIMS]
    found += [rel_claim(rows), stem_claim(gaps, edf_rows)]
    return [v for v in found if v is not None]
