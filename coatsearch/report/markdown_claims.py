"""Markdown for the verdict, optimizability and failure sections, and the short dashboard note."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from coatsearch.report import claims as C
from coatsearch.report.info import METRICS
from coatsearch.report.markdown import _f, fmt_stat, table

VERDICT_MARK = {"supported": "✅ supported", "not supported": "❌ not supported", "inconclusive": "❔ inconclusive",
                "not tested at this scale": "➖ not tested at this scale"}  # fmt: skip


def verdicts(s: dict) -> str:
    """Claim verdicts: the method, rule and its calibration, a summary table, then the evidence of each claim."""
    if not s["claims"]:
        return ""
    head = ["claim", "paper", "verdict", "why"]
    body = [[f"({v['id']}) {v['title']}", v["chain"], VERDICT_MARK[v["verdict"]], v["why"]] for v in s["claims"]]
    rules = s["rules"]
    out = ["## Claim verdicts", "", f"Method: {rules['method']}", "", f"Rule: {rules['verdict']}", ""]
    out += [_calibration(rules.get("calibration")), "", table(head, body)]
    for v in s["claims"]:
        out += ["", f"### ({v['id']}) {v['title']}", "", f"Paper: {v['chain']} — {v['source']}."]
        out += [f"Note: {n}." for n in v["notes"]]
        for e in v["evidence"]:
            out += ["", *_evidence(e)]
        if v.get("parts"):
            out += ["", _parts(v["parts"])]
    return "\n".join(out)


def _calibration(c: dict | None) -> str:
    if not c:
        return "Calibration: not measured for this rule version (run `python -m coatsearch.report.calibration`)."
    head = ["claim", "null studies: firm verdicts", "95% upper bound", "power: supported", "effect (σ of one run)"]
    body = [[f"({k})", f"{100 * v['null_firm']:.1f}% of {v['null_n']}", f"{100 * v['null_firm_upper95']:.1f}%",
             "–" if v["power"] is None else f"{100 * v['power']:.0f}% of {v['power_n']}",
             f"{c['stem_effect_sigma'] if k == 'f' else c['effect_sigma']:g}"]
            for k, v in sorted(c["per_claim"].items())]  # fmt: skip
    text = (
        f"Calibration of this rule (`coatsearch.report.calibration`, rule version {c['rule_version']}): simulated "
        f"studies built as trial records (curves with censoring, baselines, per-candidate noise, failed runs, "
        f"missing and never-fitting candidates, claim (f)'s fixed-recipe and sampled runs; n = {c['n_seeds']} "
        "seeds) and judged by the report's own path. Targets: ≤ 5% firm verdicts on null studies (no model "
        "better than another), 95% upper bound ≤ 6.5%; ≥ 80% 'supported' with the paper's order at the effect."
    )
    return "\n\n".join([text, table(head, body)])


def _evidence(e: dict) -> list[str]:
    metric = METRICS[e["key"]]
    better = "smaller is better" if metric.better == "lower" else "larger is better"
    rho = "n/a (pairs only)" if e["rho"] is None else f"{e['rho']:+.2f}"
    rho += f" (exact permutation p = {e['rho_p']:.3f}, description only)" if e.get("rho_p") is not None else ""
    out = [f"**{e['label']}** ({e['unit']}, {better}): {e['verdict']} — {e['why']}. "
           f"Spearman rho vs the paper's order = {rho}.", ""]  # fmt: skip
    body = [[m["name"], m["candidate"], fmt_stat(m["stat"], metric), m["stat"].n] for m in e["members"]]
    out += [table(["paper name", "candidate", "mean ± sd", "runs"], body), ""]
    digits = metric.digits + 1
    body = [
        [f"{p['a']} vs {p['b']}", p["paper"], p["n"], _f(p["d"], digits, signed=True), _f(p["sd"], digits),
         _ci(p["ci"], digits), _p(p["p_holm"]), p["status"]]
        for p in e["pairs"]
    ]  # fmt: skip
    head = ["pair", "paper", "paired seeds", "mean diff (a − b, better direction)", "own sd", "95% CI (pooled)",
            "Holm p", "relation"]  # fmt: skip
    out += [table(head, body), "", _power(e.get("power"), metric), "", _regime(e)]
    return out


def _p(p: float | None) -> str:
    return "–" if p is None else "< 0.001" if p < 0.001 else f"{p:.3f}"


def _ci(ci: Sequence[float] | None, digits: int) -> str:
    return "–" if ci is None else f"[{ci[0]:+.{digits}f}, {ci[1]:+.{digits}f}]"


def _power(p: dict | None, metric: Any) -> str:
    if p is None:
        return "Power: not stated (fewer than 2 paired seeds, or no noise estimate)."
    unit = "points" if metric.unit == "%" else metric.unit
    text = (
        f"Power: smallest detectable difference {p['mdd']:.{metric.digits + 1}f} {unit} at n = {p['n']} paired "
        f"seeds, sd of a paired difference {p['sd_diff']:.{metric.digits + 1}f} (pooled over {p['k']} candidates, "
        f"{p['df']} df), α = {p['alpha']:.3g} (Holm's first step), {100 * p['power']:.0f}% power. "
    )
    if p["effect"] is None:
        return text + f"Paper's effect: no number in accuracy points for this measure — {p['effect_note']}."
    need = f"about {p['seeds_needed']} seeds would" if p["seeds_needed"] else "more than 1000 seeds would be needed"
    verdict = "the study can resolve it" if p["resolvable"] else f"the study cannot resolve it; {need}"
    return text + f"Paper's effect: {p['effect']:g} points ({p['effect_note']}): {verdict}."


def _regime(e: dict) -> str:
    def runs(field: str) -> str:
        return ", ".join(f"{g['name']} {g[field]}/{g['runs']}" for g in e["guards"] if g[field]) or "none"

    conv = "needed" if e["needs_convergence"] else "not needed by this claim"
    text = (
        f"Regime checks: failed to train (within {C.CHANCE_POINTS:g} points of chance; shown, left out of means "
        f"and pairs): {runs('failed')}; not converged (convergence {conv}): {runs('not_converged')}; "
        f"convergence not checkable (curve too short or missing): {runs('unchecked')}."
    )
    return text + (" Out of regime: " + "; ".join(e["out_of_regime"]) + "." if e["out_of_regime"] else "")


def _parts(parts: list[dict]) -> str:
    body = [[p["what"], p.get("n", "–"), _f(p["d"], 2, signed=True), _ci(p.get("ci"), 2), p["needed"], _p(p["p"]),
             p["status"] + (f" — {p['reason']}" if p.get("reason") else "")] for p in parts]  # fmt: skip
    head = ["part", "n (seeds / runs per curve)", "measured difference", "95% CI", "needed", "Holm p", "status"]
    return table(head, body)


def optimizability(s: dict) -> str:
    """ViT_C paper measures: optimizer gap, EDF, training length, peak performance and samples used."""
    blocks = [_gap(s), _edf(s), _length(s), _peak(s), _samples(s)]
    blocks = [b for b in blocks if b]
    if not blocks or not (s["has_vit"] or s["search_dims"] or s["length"]):
        return ""
    acc = f"Accuracy used: {s['primary_label']} (`{s['primary_acc']}`)." if s["primary_acc"] else ""
    return "\n\n".join(["## Optimizability (ViT_C paper §4)", acc, *blocks])


def _run(r: dict | None) -> str:
    if r is None:
        return "–"
    hp = ", ".join(f"{k} {r[key]:.3g}" for k, key in (("lr", "lr"), ("wd", "weight_decay")) if r[key] is not None)
    return f"{r['acc']:.1f} ({hp + '; ' if hp else ''}trial {r['number']})"


def _gap(s: dict) -> str:
    rows = s["optimizer_gap"]
    if not rows or not any(g["n_sgd"] and g["n_adamw"] for g in rows):
        return ""
    body = [
        [g["model_label"], _run(g["adamw"]), _run(g["sgd"]), _f(g["gap"], 1, signed=True), g["n_adamw"], g["n_sgd"]]
        for g in rows
    ]
    ref = "; ".join(f"{k}: {v['adamw_err']} / {v['sgd_err']} error, Δ {v['gap']}" for k, v in C.OPTIMIZER_GAP.items())
    head = ["model", "best AdamW acc (%)", "best SGD acc (%)", "gap AdamW − SGD (points)", "AdamW runs", "SGD runs"]
    return "\n\n".join(["### Optimizer gap", table(head, body), f"Paper (Table 3, 4GF, 50 epochs): {ref}."])


def _edf(s: dict) -> str:
    if not s["edf"] or not s["search_dims"]:
        return ""
    k = s["edf_k"]
    body = [[e["label"], e["model_label"], e["optimizer"], e["n"], f"{100 * e['within_k']:.0f}%"] for e in s["edf"]]
    head = ["curve", "model", "optimizer", "runs", f"runs within {k:g} points of the best run"]
    text = (
        f"Sampled: {', '.join(s['search_dims'])}. Steepness = share of runs within {k:g} points of top-1 error of "
        "the best run of the same model and optimizer (the AdamW − SGD offset is the optimizer gap above); "
        f"the paper uses 4 points at ImageNet scale ({C.EDF_PAPER})."
    )
    return "\n\n".join(["### Hyperparameter stability (EDF)", text, table(head, body), "Figure: `edf.png`."])


def _length(s: dict) -> str:
    if not s["length"]:
        return ""
    epochs = sorted({e for r in s["length"] for e in r["epochs"]})
    head = ["candidate", "runs", *[f"acc @{e} (%)" for e in epochs], *[f"Δerr @{e}" for e in epochs]]
    body = []
    for r in s["length"]:
        acc = {e: a for e, a in zip(r["epochs"], r["eval_acc"], strict=True)}
        dlt = {e: d for e, d in zip(r["epochs"], r["delta_error"], strict=True)}
        body.append(
            [r["candidate"], r["runs"], *[_f(acc[e].mean) if e in acc else "–" for e in epochs]]
            + [_f(dlt[e], 1, signed=True) if e in dlt else "–" for e in epochs]
        )
    text = f"Δerr = top-1 error at that length minus at the longest (points). Paper: {C.LENGTH_PAPER}."
    return "\n\n".join(["### Training-length stability", text, table(head, body)])


def _peak(s: dict) -> str:
    if not s["peak"] or not (s["has_vit"] or s["search_dims"]):
        return ""
    body = [[p["model_label"], p["candidate"], p["optimizer"], _run(p)] for p in s["peak"]]
    return "\n\n".join(["### Peak performance", table(["model", "candidate", "optimizer", "best acc (%)"], body)])


def _samples(s: dict) -> str:
    if not s["samples"]:
        return ""
    body = [
        [
            r["candidate"],
            r["model_label"],
            r["optimizer"],
            r["complete"],
            r["not_complete"],
            ", ".join(r["dims"]) or "–",
        ]
        for r in s["samples"]
    ]
    head = ["candidate", "model", "optimizer", "complete runs", "not complete", "sampled"]
    return "\n\n".join(["### Hyperparameter samples used", table(head, body)])


def failures(s: dict) -> str:
    """Failed, interrupted, pruned and unfinished trials with their reasons."""
    if not s["failures"]:
        return ""
    body = [[f["number"], f["candidate"], f["seed"], f["state"], f["reason"]] for f in s["failures"]]
    return "\n\n".join(["## Failed and pruned trials", table(["trial", "candidate", "seed", "state", "reason"], body)])
