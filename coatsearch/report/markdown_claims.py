"""Markdown for the verdict, optimizability and failure sections, and the short dashboard note."""

from __future__ import annotations

from coatsearch.report import claims as C
from coatsearch.report.info import METRICS
from coatsearch.report.markdown import _f, fmt_stat, table

VERDICT_MARK = {"supported": "✅ supported", "not supported": "❌ not supported", "inconclusive": "❔ inconclusive"}


def verdicts(s: dict) -> str:
    """Claim verdicts: the rule, a summary table, then the evidence of each claim."""
    if not s["claims"]:
        return ""
    head = ["claim", "paper", "verdict", "why"]
    body = [[f"({v['id']}) {v['title']}", v["chain"], VERDICT_MARK[v["verdict"]], v["why"]] for v in s["claims"]]
    out = ["## Claim verdicts", "", f"Rule: {s['rules']['verdict']}", "", f"Relations ≈ ≥ >: {s['rules']['relation']}"]
    if s["rankings"]:
        out[-1] = "Relations ≈ ≥ > and se follow the rule stated under Rankings."
    out += ["", table(head, body)]
    for v in s["claims"]:
        out += ["", f"### ({v['id']}) {v['title']}", "", f"Paper: {v['chain']} — {v['source']}."]
        out += [f"Note: {n}." for n in v["notes"]]
        for e in v["evidence"]:
            out += ["", *_evidence(e)]
        if v.get("parts"):
            out += ["", _parts(v["parts"])]
    return "\n".join(out)


def _evidence(e: dict) -> list[str]:
    metric = METRICS[e["key"]]
    better = "smaller is better" if metric.better == "lower" else "larger is better"
    rho = "n/a (pairs only)" if e["rho"] is None else f"{e['rho']:+.2f}"
    out = [f"**{e['label']}** ({e['unit']}, {better}): Spearman rho vs the paper's order = {rho}; "
           f"{e['verdict']} — {e['why']}.", ""]  # fmt: skip
    body = [
        [m["name"], m["candidate"], fmt_stat(m["stat"], metric), m["stat"].n, _interval(m["interval"], metric)]
        for m in e["members"]
    ]
    out += [table(["paper name", "candidate", "mean ± sd", "n", "mean ± 2·se"], body), ""]
    body = [
        [f"{p['a']} vs {p['b']}", p["paper"], p["symbol"], _f(p["d"], metric.digits + 1), _se(p, metric), p["status"]]
        for p in e["pairs"]
    ]
    out.append(table(["pair", "paper", "measured", "d (better direction)", "se", "key relation"], body))
    return out


def _interval(iv: tuple[float, float], metric) -> str:
    return f"[{iv[0]:.{metric.digits}f}, {iv[1]:.{metric.digits}f}]"


def _se(p: dict, metric) -> str:
    return f"{p['se']:.{metric.digits + 1}f}" + (" (floor)" if p["floor"] else "")


def _parts(parts: list[dict]) -> str:
    body = [[p["what"], _f(p["d"], 2, signed=True), _f(p["threshold"], 2), p["status"]] for p in parts]
    return table(["part", "measured difference", "needed (2·se or margin)", "status"], body)


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
    head = ["curve", "model", "optimizer", "runs", f"runs within {k:g} points of the model's best"]
    text = (
        f"Sampled: {', '.join(s['search_dims'])}. Steepness = share of runs within {k:g} points of top-1 error of "
        f"the best run of the same model (any optimizer); the paper uses 4 points at ImageNet scale ({C.EDF_PAPER})."
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
