"""Markdown for the paper-measure sections: matched-loss generalization, capacity, transfer, untested claims, edges."""

from __future__ import annotations

from coatsearch.analysis.tables import Metric
from coatsearch.papers.measures import MAX_SPAN
from coatsearch.report.markdown import fmt_num, fmt_stat, table
from coatsearch.report.view_measures import Capacity, Edges, Matched, Sized, Transfer, Untested


def _matched_rule(fit: float) -> str:
    """How the matched-loss reading is taken, at claim (a)'s fit level `fit` (nats)."""
    return (
        "CoAtNet §2.2: *if two models have the same training loss, the one with higher evaluation accuracy "
        "generalizes better*. Each run's eval accuracy is read off its step-level curve (clean train loss on a fixed "
        "probe of the training subset against accuracy on the fixed eval set) where its train loss first reaches a "
        "ladder level, interpolated in log loss between the two measured points around it. A reading is censored, "
        "never interpolated, when that bracket starts at the untrained model (step 0) or spans more than "
        f"{MAX_SPAN:g}x in train loss. The lr phase (lr / peak lr of the cosine schedule) at each reading is shown: "
        "a model read at its peak lr and one read late in the decay are not at the same point of training. "
        "The common level is the lowest ladder level at or below "
        f"{fit:g} nats (the profile's fit level, where train accuracy exceeds eval accuracy) that every run of every "
        "key candidate of claim (a) reached; other candidates are read there too. A run that never reaches a level is "
        "censored there (shown, never credited); a key candidate that never fits that low puts claim (a) out of regime."
    )


def _size(at: Sized, metrics: tuple[Metric, ...]) -> list[str]:
    """Params (M) and MACs (M) of a candidate: the means, at the metric's digits."""
    return [f"{s.mean:.{m.digits}f}" if s else "–" for s, m in zip(at.size, metrics, strict=True)]


def _phase(lo_hi: tuple[float | None, float | None]) -> str:
    """The lr phase range at a candidate's readings, in % of the peak lr ('–' without one)."""
    lo, hi = lo_hi
    if lo is None or hi is None:
        return "–"
    return f"{100 * lo:.0f}%" if f"{100 * lo:.0f}" == f"{100 * hi:.0f}" else f"{100 * lo:.0f}–{100 * hi:.0f}%"


def matched(g: Matched) -> str:
    """Generalization at matched training loss: the common level, the table with censoring, the figure."""
    at = "no common level: " + ("no candidate reached the ladder" if not g.reached else
                                f"a key candidate's runs stop above {g.fit:g} nats")  # fmt: skip
    head = ["candidate", "params (M)", "MACs (M)", "runs", "eval acc at the common level (%)", "censored there",
            "lr phase there", "lowest level all runs reached", "lowest level any run reached"]  # fmt: skip
    body = []
    for r in g.rows:
        acc = "–" if r.eval_acc is None else f"{r.eval_acc:.1f}" + (f" ± {r.sd:.1f}" if r.sd else "")
        cens = "–" if r.censored_runs is None else f"{r.censored_runs}/{r.runs}"
        body.append([r.at.candidate, *_size(r.at, g.size_metrics), r.runs, acc, cens, _phase(r.lr_phase),
                     fmt_num(r.lowest_level, 3), fmt_num(r.lowest_any, 3)])  # fmt: skip
    body += [[c.candidate, *_size(c, g.size_metrics), "–", "censored at every level", "all", "–", "–", "–"]
             for c in g.never]  # fmt: skip
    ladder = ", ".join(f"{v:.3g}" for v in g.levels)
    common = f"**{g.level:.3g} nats**." if g.level is not None else at + "."
    out = ["## Generalization at matched training loss", "", _matched_rule(g.fit), "",
           f"Ladder (nats): {ladder}. Common level: " + common, "", table(head, body)]  # fmt: skip
    if g.key:
        out += ["", f"Key candidates of claim (a): {', '.join(g.key)}."]
    if g.censored:
        out += ["", "Censored at the common level (reached, but no measured pair brackets the reading): "
                + "; ".join(g.censored) + "."]  # fmt: skip
    if g.out_of_regime:
        out += ["", "Out of regime for claim (a): " + "; ".join(g.out_of_regime) + "."]
    if g.never:
        out += ["", f"Never reached the highest level ({g.levels[0]:.3g} nats), so left out of the common "
                f"level: {', '.join(c.candidate for c in g.never)}."]  # fmt: skip
    out += ["", "The end-of-schedule gap (train − eval accuracy) stays in the candidate table as a secondary "
            "column; it rewards models that never fit. Figure: `matched_loss.png`."]  # fmt: skip
    return "\n".join(out)


def capacity(cap: Capacity) -> str:
    """Capacity on abundant data: final clean train loss and eval accuracy, and whether the ranking held."""
    head = ["candidate", "params (M)", "MACs (M)", "images", "steps", "final train loss (nats)", "eval acc (%)"]
    body = []
    for r in cap.rows:
        counts = [", ".join(map(str, v)) or "–" for v in (r.images, r.steps)]
        scores = [fmt_stat(s, m) for s, m in zip(r.scores, cap.columns, strict=True)]
        body.append([r.at.candidate, *_size(r.at, cap.size_metrics), *counts, *scores])
    if cap.stable:
        line = f"**Ranking held over the last third of the steps**: {' > '.join(cap.order)}."
    else:
        crossed = "; ".join(f"{a} passed {b} only after step {step:.0f}" for a, b, step in cap.crossings)
        line = f"**Provisional**: {cap.note}" + (f" ({crossed})" if crossed else "") + "."
    text = ("CoAtNet §2.2: *when training data is abundant and there is no overfitting, after a reasonable number "
            "of training steps, the model with higher capacity has better final performance*. Order by final eval "
            "accuracy (mean curve over runs).")  # fmt: skip
    return "\n\n".join(["## Capacity on abundant data", text, table(head, body), line])


def transfer(t: Transfer) -> str:
    """Transfer from equal footing: fine-tune vs from-scratch vs linear probe, and how pretraining stopped."""
    head = ["candidate", "params (M)", "MACs (M)", *(f"{m.label} ({m.unit})" for m in t.columns),
            "pretraining stopped at", "fine-tune steps"]  # fmt: skip
    body = []
    for r in t.rows:
        scores = [fmt_stat(s, m) for s, m in zip(r.scores, t.columns, strict=True)]
        stop, steps = f"target {r.target}, cap {r.cap}", ", ".join(map(str, r.finetune_steps))
        body.append([r.at.candidate, *_size(r.at, t.size_metrics), *scores, stop, steps])
    text = ("CoAtNet Table 2 compares models pretrained to comparable quality (JFT P@1 34.40 vs 34.36). Each "
            "candidate pretrains on A to a common eval-accuracy target or a step cap (runs per outcome shown), then "
            "fine-tunes every weight on B at a reduced learning rate; baselines on the same B data and seed: the "
            "same architecture from scratch for the same steps, and a linear probe on the frozen pretrained "
            "features. Gain = fine-tune − scratch.")  # fmt: skip
    return "\n\n".join(["## Transfer from equal footing", text, table(head, body)])


def untested(u: Untested) -> str:
    """Claims the space marks untestable at its scale: 'not tested at this scale' and why, never a verdict."""
    body = [[f"({cid}) {title}", verdict, reason] for cid, title, verdict, reason in u.rows]
    return "\n\n".join(["## Claims not tested at this scale", table(["claim", "verdict", "why"], body)])


def edges(e: Edges) -> str:
    """Paired-data check and warnings where a best lr or weight decay sits at the edge of its sampled range."""
    out = []
    for p in e.pairing:
        same = "the same training subset for every candidate" if p.paired else "DIFFERENT subsets across candidates"
        sets = f"{p.eval_sets} eval set(s) across all runs"
        if p.eval_sets > 1 and p.eval_paired:
            sets += ", one per seed, shared by its candidates"
        out.append(f"- `{p.score}`: {sets}; per seed ({p.seeds} seeds), {same} (recorded fingerprints).")
    warn = [f"- ⚠ {w}" for w in e.warnings]
    parts = []
    if out:
        parts += ["## Paired data", "\n".join(out)]
    if warn:
        parts += ["## Hyperparameter range warnings", "\n".join(warn)]
    return "\n\n".join(parts)
