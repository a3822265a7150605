"""Markdown for the paper-measure sections: matched-loss generalization, capacity, transfer, untested claims, edges."""

from __future__ import annotations

from coatsearch.report.claims import FIT_LOSS
from coatsearch.report.info import METRICS
from coatsearch.report.markdown import _f, fmt_stat, table

MATCHED = (
    "CoAtNet §2.2: *if two models have the same training loss, the one with higher evaluation accuracy "
    "generalizes better*. Each run's eval accuracy is read off its step-level curve (clean train loss on a fixed "
    "probe of the training subset against accuracy on the fixed eval set) where its train loss first reaches a "
    "ladder level, interpolated in log loss. The common level is the lowest ladder level at or below "
    f"{FIT_LOSS:g} nats (where train accuracy exceeds eval accuracy) that every run of every key candidate of "
    "claim (a) reached; other candidates are read there too. A run that never reaches a level is censored there "
    "(shown, never credited); a key candidate that never fits that low puts claim (a) out of regime."
)


def _size(row: dict | None) -> list[str]:
    """Params (M) and MACs (M) of a candidate row: the means, at the metric's digits."""
    m = (row or {}).get("metrics", {})
    return [f"{m[k].mean:.{METRICS[k].digits}f}" if m.get(k) else "–" for k in ("params", "macs")]


def _rows(s: dict) -> dict[str, dict]:
    return {r["candidate"]: r for r in s["candidates"]}


def matched(s: dict) -> str:
    """Generalization at matched training loss: the common level, the table with censoring, the figure."""
    g = s.get("matched") or {}
    if not g.get("table") and not g.get("never"):
        return ""
    level, rows = g["level"], _rows(s)
    at = "no common level: " + ("no candidate reached the ladder" if not g["table"] else
                                f"a key candidate's runs stop above {FIT_LOSS:g} nats")  # fmt: skip
    head = ["candidate", "params (M)", "MACs (M)", "runs", "eval acc at the common level (%)", "censored there",
            "lowest level all runs reached", "lowest level any run reached"]  # fmt: skip
    body = []
    for r in g["table"]:
        acc = "–" if r["eval_acc"] is None else f"{r['eval_acc']:.1f}" + (f" ± {r['sd']:.1f}" if r["sd"] else "")
        cens = "–" if r["censored_runs"] is None else f"{r['censored_runs']}/{r['runs']}"
        body.append([r["candidate"], *_size(rows.get(r["candidate"])), r["runs"], acc, cens,
                     _f(r["lowest_level"], 3), _f(r["lowest_any"], 3)])  # fmt: skip
    body += [[c, *_size(rows.get(c)), "–", "censored at every level", "all", "–", "–"] for c in g["never"]]
    ladder = ", ".join(f"{v:.3g}" for v in g["levels"])
    out = ["## Generalization at matched training loss", "", MATCHED, "",
           f"Ladder (nats): {ladder}. Common level: " + (f"**{level:.3g} nats**." if level is not None else at + "."),
           "", table(head, body)]  # fmt: skip
    if g.get("key"):
        out += ["", f"Key candidates of claim (a): {', '.join(g['key'])}."]
    if g.get("out_of_regime"):
        out += ["", "Out of regime for claim (a): " + "; ".join(g["out_of_regime"]) + "."]
    if g["never"]:
        out += ["", f"Never reached the highest level ({g['levels'][0]:.3g} nats), so left out of the common "
                f"level: {', '.join(g['never'])}."]  # fmt: skip
    out += ["", "The end-of-schedule gap (train − eval accuracy) stays in the candidate table as a secondary "
            "column; it rewards models that never fit. Figure: `matched_loss.png`."]  # fmt: skip
    return "\n".join(out)


def capacity(s: dict) -> str:
    """Capacity on abundant data: final clean train loss and eval accuracy, and whether the ranking held."""
    cap = s.get("capacity")
    if not cap:
        return ""
    rows = _rows(s)
    keys = ("capacity.train_loss", "capacity.eval_acc")
    head = ["candidate", "params (M)", "MACs (M)", "images", "steps", "final train loss (nats)", "eval acc (%)"]
    body = []
    for name in cap["order"]:
        m, facts = rows.get(name, {}).get("metrics", {}), cap["facts"].get(name, {})
        counts = [", ".join(map(str, facts.get(k, []))) or "–" for k in ("images", "steps")]
        body.append([name, *_size(rows.get(name)), *counts, *(fmt_stat(m.get(k), METRICS[k]) for k in keys)])
    if cap["stable"]:
        line = f"**Ranking held over the last third of the steps**: {' > '.join(cap['order'])}."
    else:
        crossed = "; ".join(f"{a} passed {b} only after step {step:.0f}" for a, b, step in cap["crossings"])
        line = f"**Provisional**: {cap['note']}" + (f" ({crossed})" if crossed else "") + "."
    text = ("CoAtNet §2.2: *when training data is abundant and there is no overfitting, after a reasonable number "
            "of training steps, the model with higher capacity has better final performance*. Order by final eval "
            "accuracy (mean curve over runs).")  # fmt: skip
    return "\n\n".join(["## Capacity on abundant data", text, table(head, body), line])


def transfer(s: dict) -> str:
    """Transfer from equal footing: fine-tune vs from-scratch vs linear probe, and how pretraining stopped."""
    if not s.get("transfer"):
        return ""
    rows = _rows(s)
    keys = ("transfer.pretrain_acc", "transfer.finetune_acc", "transfer.scratch_acc", "transfer.gain",
            "transfer.probe_acc")  # fmt: skip
    head = ["candidate", "params (M)", "MACs (M)", *(f"{METRICS[k].label} ({METRICS[k].unit})" for k in keys),
            "pretraining stopped at", "fine-tune steps"]  # fmt: skip
    body = []
    for t in s["transfer"]:
        m = rows.get(t["candidate"], {}).get("metrics", {})
        stop = f"target {t['target']}, cap {t['cap']}"
        steps = ", ".join(map(str, t["finetune_steps"]))
        body.append([t["candidate"], *_size(rows.get(t["candidate"])), *(fmt_stat(m.get(k), METRICS[k]) for k in keys),
                     stop, steps])  # fmt: skip
    text = ("CoAtNet Table 2 compares models pretrained to comparable quality (JFT P@1 34.40 vs 34.36). Each "
            "candidate pretrains on A to a common eval-accuracy target or a step cap (runs per outcome shown), then "
            "fine-tunes every weight on B at a reduced learning rate; baselines on the same B data and seed: the "
            "same architecture from scratch for the same steps, and a linear probe on the frozen pretrained "
            "features. Gain = fine-tune − scratch.")  # fmt: skip
    return "\n\n".join(["## Transfer from equal footing", text, table(head, body)])


def untested(s: dict) -> str:
    """Claims the space marks untestable at its scale: 'not tested at this scale' and why, never a verdict."""
    if not s.get("untested"):
        return ""
    body = [[f"({u['id']}) {u['title']}", u["verdict"], u["reason"]] for u in s["untested"]]
    return "\n\n".join(["## Claims not tested at this scale", table(["claim", "verdict", "why"], body)])


def edges(s: dict) -> str:
    """Paired-data check and warnings where a best lr or weight decay sits at the edge of its sampled range."""
    out = []
    for p in s.get("pairing") or []:
        same = "the same training subset for every candidate" if p["paired"] else "DIFFERENT subsets across candidates"
        out.append(f"- `{p['score']}`: {p['eval_sets']} eval set(s) across all runs; per seed ({p['seeds']} seeds), "
                   f"{same} (recorded fingerprints).")  # fmt: skip
    warn = [f"- ⚠ {w['message']}" for w in s.get("edge_warnings") or []]
    parts = []
    if out:
        parts += ["## Paired data", "\n".join(out)]
    if warn:
        parts += ["## Hyperparameter range warnings", "\n".join(warn)]
    return "\n\n".join(parts)
