"""Markdown rendering of a computed report summary: only formatting, every number comes from the tables."""

from __future__ import annotations

import pandas as pd

from coatsearch.report import escape
from coatsearch.report.budget import Sizes
from coatsearch.report.claims import BASELINES, CHANCE_POINTS, PLATEAU_POINTS
from coatsearch.report.info import METRICS, Metric, Stat
from coatsearch.report.plots import FIGURES
from coatsearch.scores import table_keys, v_accs


def fmt_stat(s: Stat | None, m: Metric) -> str:
    """'84.1 ± 0.3' (sd over runs), '84.1 (n=1)', or '–'."""
    if s is None:
        return "–"
    spread = f" ± {s.sd:.{m.digits}f}" if s.sd is not None else " (n=1)"
    return f"{s.mean:.{m.digits}f}{spread}"


def _num(s: Stat | None, m: Metric, signed: bool = False) -> str:
    if s is None:
        return "–"
    return f"{s.mean:+.{m.digits}f}{m.unit}" if signed else f"{s.mean:.{m.digits}f}{m.unit}"


def table(head: list[str], body: list[list]) -> str:
    """A GitHub Markdown table rendered from a pandas frame (tabulate), cells as given."""
    cells = [[escape.cell(c) for c in row] for row in body]  # names and reasons: one line, no pipes
    head = [escape.cell(h) for h in head]
    return pd.DataFrame(cells, columns=head).to_markdown(index=False, tablefmt="github", disable_numparse=True)


def _f(x: float | None, digits: int = 1, signed: bool = False) -> str:
    if x is None:
        return "–"
    return f"{x:+.{digits}f}" if signed else f"{x:.{digits}f}"


def header(s: dict) -> str:
    """Title, description and proxy scale."""
    sp = s["space"]
    out = [f"# coatsearch report: {s['study']}", ""]
    if sp.get("description"):
        out += [escape.block(sp["description"].strip()), ""]
    if sp.get("scale"):
        out += [f"**Proxy scale.** {escape.block(sp['scale'].strip())}", ""]
    if sp.get("space"):
        out += [f"Space `{sp['space']}` (profile `{sp.get('profile')}`), from `{sp.get('source')}`.", ""]
    return "\n".join(out)


def setup(s: dict) -> str:
    """Data, subsets, seeds, hardware, versions, wall time and trial counts."""
    e, c = s["environment"], s["environment"]["counts"]
    data, study = e["data"], e["study"]
    out = ["## Setup", ""]
    if data:
        root = f" (root `{data.get('root')}`)" if data.get("root") else ""
        out.append(f"- Data set: `{data.get('dataset')}`{root}; {data.get('eval_size')} held-out eval images")
    if e["image_size"]:
        out.append(f"- Input: {e['image_size']}×{e['image_size']}, {e['channels']} channel(s), {e['classes']} classes")
    seeds = ", ".join(map(str, e["seeds"])) or "–"
    plan = f"; {study.get('samples')} sample(s) per searched candidate and seed" if study else ""
    out.append(f"- Seeds: {seeds}{plan}")
    if study:
        goal = f"`{study.get('objective')}` ({study.get('direction')})"
        if study.get("objectives"):  # multi-objective (issue 23)
            goal = ", ".join(f"`{k}` ({d})" for k, d in zip(study["objectives"], study["directions"], strict=False))
        out.append(f"- Objective: {goal}; sampler {study.get('sampler')}, pruner {study.get('pruner')}")
    out.append(
        f"- Trials: {c['total']} — {c['complete']} complete, {c['failed']} failed, {c['interrupted']} interrupted, "
        f"{c['pruned']} pruned, {c['running']} running/waiting"
    )
    out += _wall(e) + _hardware(e) + ["", *_subsets(e)]
    return "\n".join(out)


def _wall(e: dict) -> list[str]:
    per = e["wall_per_trial"]
    if per is None:
        return []
    spread = f" ± {per.sd:.0f}" if per.sd is not None else ""
    line = f"- Wall time: {e['wall_total_s']:.0f} s of trials in total; {per.mean:.0f}{spread} s per trial"
    if e["elapsed_s"] is not None:
        line += f"; {e['elapsed_s']:.0f} s from the first trial's start to the last one's end"
    return [line]


def _hardware(e: dict) -> list[str]:
    out = []
    for h in e["hardware"]:
        gpu = h.get("gpu") or "none"
        out.append(
            f"- Hardware: {h.get('cpu')} ({h.get('cpu_count')} cores, {h.get('torch_threads')} torch threads), "
            f"GPU {gpu}, device `{h.get('device')}`, host `{h.get('host')}`"
        )
    for v in e["versions"]:
        out.append("- Versions: " + ", ".join(f"{k} {val}" for k, val in v.items()))
    return out


def _subsets(e: dict) -> list[str]:
    if not e["subsets"]:
        return []
    body = []
    for r in e["subsets"]:
        classes = "all" if r["classes"] is None else ",".join(map(str, r["classes"]))
        epochs = r["epochs"] if not isinstance(r["epochs"], list) else "/".join(map(str, r["epochs"]))
        used = ", ".join(map(str, r["images"])) or "–"
        body.append([r["score"], r["per_class"], classes, used, epochs, r["dataset"] or "same"])
    head = ["score", "images per class", "classes", "training images used", "epochs", "data set"]
    return ["Subsets per score:", "", table(head, body)]


def candidates(s: dict) -> str:
    """The candidates table: identity, size and every measured score as mean ± sd over runs."""
    rows = s["candidates"]
    if not rows:
        return "## Candidates\n\nNo trial completed, so there is nothing to tabulate yet."
    keys = [k for k in table_keys() if any(k in r["metrics"] for r in rows)]  # the registry as it is now
    head = ["candidate", "layout", "stages", "params", "MACs", "budget err", "n"]
    head += [f"{METRICS[k].label} ({METRICS[k].unit})" for k in keys]
    body = []
    for r in rows:
        m = r["metrics"]
        layout = r["layout"] + (f" ({r['model_label']})" if r["model_label"] != r["layout"] else "")
        size = [_num(m.get(k), METRICS[k]) for k in ("params", "macs")]
        err = _num(m.get("budget_error"), METRICS["budget_error"], signed=True)
        body.append(
            [r["candidate"], layout, r["stages"], *size, err, r["n"], *(fmt_stat(m.get(k), METRICS[k]) for k in keys)]
        )
    note = "Scores are mean ± sd over the runs of each candidate (n runs; '(n=1)' = a single run, no spread)."
    if s["search_dims"]:
        note += " Runs include sampled hyperparameters (" + ", ".join(s["search_dims"]) + ")."
    parts = ["## Candidates", note + baselines_note(rows), table(head, body), size_note(s.get("size")), guards(rows)]
    return "\n\n".join(p for p in parts if p)


def size_note(z: Sizes | None) -> str:
    """How far apart the budget-matched candidates are in MACs and in params (a MACs-only or a joint budget)."""
    if z is None:
        return ""
    (small, lo), (big, hi) = z.small, z.big
    if z.params_err is not None:
        return (
            f"Size: MACs and params are both matched (a joint budget): MACs errors {z.macs_err[0]:+.1f}% to "
            f"{z.macs_err[1]:+.1f}%, params errors {z.params_err[0]:+.1f}% to {z.params_err[1]:+.1f}%; params "
            f"span {lo:.3f}M ({small}) to {hi:.3f}M ({big}), {hi / lo:.2f}x. As in CoAtNet, layouts are "
            "compared at similar parameter size and computational cost."
        )
    return (
        f"Size: MACs are matched (budget errors {z.macs_err[0]:+.1f}% to {z.macs_err[1]:+.1f}%); params are not: "
        f"the budget-matched candidates span {lo:.3f}M ({small}) to {hi:.3f}M ({big}), "
        f"{hi / lo:.1f}x. CoAtNet compares layouts at similar params and FLOPs; here they are equal in MACs only, "
        "so a result reflects the layout and its parameter count together."
    )


BASELINE_TEXT = {
    "baseline-linear": "a linear classifier on the pixels; its accuracy is the floor of the regime guards",
    "baseline-cnn": "a small plain CNN (3 conv-BN-ReLU layers, global average pool, linear head)",
}


def baselines_note(rows: list[dict]) -> str:
    """What the regime baselines among the rows are (empty when the study has none)."""
    found = [r["candidate"] for r in rows if r["candidate"] in BASELINES]
    if not found:
        return ""
    what = "; ".join(f"**{n}** is {BASELINE_TEXT[n]}" for n in found)
    return f" Regime baselines (same subsets and seeds, not budget-matched, never in a claim): {what}."


def guards(rows: list[dict]) -> str:
    """Every regime guard that fired: runs that failed to train (left out of means) and runs not converged."""
    fired: dict[str, list[str]] = {"failed": [], "not_converged": [], "unchecked": []}
    for r in rows:
        for group, g in r.get("guards", {}).items():
            for field, names in fired.items():
                names += [f"{r['candidate']} {group} {g[field]}/{g['runs']}"] if g[field] else []
    return (
        f"Regime guards: failed to train (final accuracy within {CHANCE_POINTS:g} points of chance; counted in n, "
        f"left out of means and pairs): {', '.join(fired['failed']) or 'none'}. Not converged (eval accuracy rose "
        f"> {PLATEAU_POINTS:g} point over the last third of the curve): {', '.join(fired['not_converged']) or 'none'}."
        f" Convergence not checkable (fewer than 3 curve points): {', '.join(fired['unchecked']) or 'none'}."
    )


def figures(figs: dict[str, str]) -> str:
    """Links to the figures written beside the report."""
    if not figs:
        return ""
    out = ["## Figures", ""]
    for name, file in figs.items():
        out += [f"![{name}]({file})", "", f"*{file}*: {FIGURES[name].caption}", ""]
    return "\n".join(out)


def rankings(s: dict) -> str:
    """One ranking line per score, with the relation rule."""
    if not s["rankings"]:
        return ""
    out = ["## Rankings", "", f"Rule: {s['rules']['relation']}", ""]
    for r in s["rankings"]:
        better = "smaller is better" if r["better"] == "lower" else "larger is better"
        out.append(f"- **{r['label']}** ({r['unit']}, {better}): {r['text']}")
    return "\n".join(out)


def v_table(s: dict) -> str:
    """CoAtNet Table 7: the three C-C-T-T depth splits against the paper."""
    if not s["v_table"]:
        return ""
    accs = [k for k in v_accs() if any(v.get(k) is not None for v in s["v_table"])]
    head = ["variant", "candidate", "depths (S1..S4)", "params", "MACs"]
    head += [f"{METRICS[k].label} (%)" for k in accs] + ["paper blocks (S0..S4)", "paper top-1 (%)"]
    body = []
    for v in s["v_table"]:
        size = [_num(v[k], METRICS[k]) for k in ("params", "macs")]
        scores = [fmt_stat(v[k], METRICS[k]) for k in accs]
        body.append([v["variant"], v["candidate"], v["depths"], *size, *scores, v["paper_blocks"], v["paper_top1"]])
    notes = [f"Note: {v['note']}." for v in s["v_table"] if v["note"]]
    return "\n\n".join(["## Depth splits V0/V1/V2 (CoAtNet Table 7)", table(head, body), *notes])
