"""Markdown rendering of a computed report summary: only formatting, every number comes from the tables."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tabulate import tabulate

from coatsearch.analysis.constants import CHANCE_POINTS, PLATEAU_POINTS
from coatsearch.analysis.spread import Sizes
from coatsearch.analysis.tables import Metric, Stat
from coatsearch.report import escape
from coatsearch.report.view_study import Candidates, Figures, Header, Images, Rankings, Setup, Splits


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
    """A GitHub Markdown table (tabulate), cells as given."""
    cells = [[escape.cell(c) for c in row] for row in body]  # names and reasons: one line, no pipes
    head = [escape.cell(h) for h in head]
    return tabulate(cells, headers=head, tablefmt="github", disable_numparse=True)


def fmt_num(x: float | None, digits: int = 1, signed: bool = False) -> str:
    """A number with `digits` decimals (signed: with its sign), '–' for None."""
    if x is None:
        return "–"
    return f"{x:+.{digits}f}" if signed else f"{x:.{digits}f}"


def header(h: Header) -> str:
    """The title."""
    return f"# coatsearch report: {h.study}"


def about(h: Header) -> str:
    """Description, proxy scale and the space it ran."""
    out = ["## About this study", ""]
    if h.description is not None:
        out += [escape.block(h.description), ""]
    if h.scale is not None:
        out += [f"**Proxy scale.** {escape.block(h.scale)}", ""]
    if h.space is not None:
        out += [f"Space `{h.space}` (profile `{h.profile}`), from `{h.source}`.", ""]
    return "\n".join(out)


def _images(images: Images | None) -> list[str]:
    """The setup's lines on which images served which purpose."""
    if images is None:
        return []
    if images.state == "exploratory" and not images.runs:
        return [f"- Images: {images.line} (the runs record no validation/test split)"]
    draws = ", ".join(map(str, images.draws)) or "–"
    out = [f"- Images ({images.state}, test draw {draws}): {images.line}"]
    out += [f"- Test sampling: {images.sampling}."] if images.sampling else []
    for r in images.runs:
        out.append(f"  - `{r.run}`: validation {_part(r.validation, r.validation_fp)}, test "
                   f"{_part(r.test, r.test_fp)}")  # fmt: skip
    return out


def _part(n: tuple[Any, ...], fp: tuple[Any, ...]) -> str:
    count = "/".join(map(str, n)) if n else "?"
    return f"{count} (`{'`, `'.join(map(str, fp))}`)"


def setup(e: Setup) -> str:
    """Data, subsets, seeds, hardware, versions, wall time and trial counts."""
    c, data, study = e.counts, e.data, e.study
    out = ["## Setup", ""]
    source, profile, sha = e.space_file
    if source:
        digest = f"sha256 `{sha}`" if sha else "no hash recorded (a run before space hashes)"
        out.append(f"- Space file: `{source}`, profile `{profile}`, {digest}")
    if data:
        root = f" (root `{data.get('root')}`)" if data.get("root") else ""
        out.append(f"- Data set: `{data.get('dataset')}`{root}; eval_size {data.get('eval_size')}")
    out += _images(e.images)
    out += [f"- Analysis: {e.registration}"] if e.registration else []
    if e.image_size:
        out.append(f"- Input: {e.image_size}×{e.image_size}, {e.channels} channel(s), {e.classes} classes")
    seeds = ", ".join(map(str, e.seeds)) or "–"
    plan = f"; {study.get('samples')} sample(s) per searched candidate and seed" if study else ""
    out.append(f"- Seeds: {seeds}{plan}")
    if study:
        goal = ", ".join(f"`{k}` ({d})" for k, d in e.objectives)
        out.append(f"- Objective: {goal}; sampler {study.get('sampler')}, pruner {study.get('pruner')}")
    out.append(
        f"- Trials: {c.total} — {c.complete} complete, {c.failed} failed, {c.interrupted} interrupted, "
        f"{c.pruned} pruned, {c.running} running/waiting"
    )
    out += _wall(e) + _hardware(e) + ["", *_subsets(e)]
    return "\n".join(out)


def _wall(e: Setup) -> list[str]:
    per = e.wall_per_trial
    if per is None:
        return []
    spread = f" ± {per.sd:.0f}" if per.sd is not None else ""
    line = f"- Wall time: {e.wall_total_s:.0f} s of trials in total; {per.mean:.0f}{spread} s per trial"
    if e.elapsed_s is not None:
        line += f"; {e.elapsed_s:.0f} s from the first trial's start to the last one's end"
    return [line]


def _hardware(e: Setup) -> list[str]:
    out = []
    for h in e.hardware:
        kernels = f", {h.cpu_kernels} kernels" if h.cpu_kernels else ""
        out.append(
            f"- Hardware: {h.cpu} ({h.cpu_count} cores, {h.torch_threads} torch threads{kernels}), "
            f"GPU {h.gpu or 'none'}, device `{h.device}`"
        )
    for v in e.versions:
        out.append("- Versions: " + ", ".join(f"{k} {val}" for k, val in v.items()))
    return out


def _subsets(e: Setup) -> list[str]:
    if not e.subsets:
        return []
    body = []
    for r in e.subsets:
        classes = "all" if r.classes is None else ",".join(map(str, r.classes))
        used = ", ".join(map(str, r.images)) or "–"
        body.append([r.score, r.per_class, classes, used, "/".join(map(str, r.epochs)), r.dataset or "same"])
    head = ["score", "images per class", "classes", "training images used", "epochs", "data set"]
    return ["Subsets per score:", "", table(head, body)]


def candidates(c: Candidates) -> str:
    """The candidates table: identity, size and every measured score as mean ± sd over runs."""
    if not c.rows:
        return "## Candidates\n\nNo trial completed, so there is nothing to tabulate yet."
    head = ["candidate", "layout", "stages", "params", "MACs", "budget err", "n"]
    head += [f"{m.label} ({m.unit})" for m in c.columns]
    params, macs, err = c.size_metrics
    body = [
        [r.candidate, r.layout, r.stages, _num(r.size[0], params), _num(r.size[1], macs),
         _num(r.size[2], err, signed=True), r.n, *(fmt_stat(s, m) for s, m in zip(r.scores, c.columns, strict=True))]
        for r in c.rows
    ]  # fmt: skip
    note = "Scores are mean ± sd over the runs of each candidate (n runs; '(n=1)' = a single run, no spread)."
    if c.search_dims:
        note += " Runs include sampled hyperparameters (" + ", ".join(c.search_dims) + ")."
    parts = ["## Candidates", note + _baselines_note(c.baselines), table(head, body),
             size_note(c.sizes, c.params_ratio), guards(c.fired)]  # fmt: skip
    return "\n\n".join(p for p in parts if p)


def size_note(z: Sizes | None, ratio: float | None) -> str:
    """How far apart the budget-matched candidates are in MACs and in params (a MACs-only or a joint budget)."""
    if z is None or ratio is None:
        return ""
    (small, lo), (big, hi) = z.small, z.big
    if z.budgets:  # a candidate overrides the budget: each is matched to its own, so they are not equal in MACs
        each = ", ".join(f"{n} {m:.2f}M" for n, m in z.budgets)
        return (
            f"Size: MACs are NOT matched across candidates: they were matched to different budgets ({each}; "
            f"errors {z.macs_err[0]:+.1f}% to {z.macs_err[1]:+.1f}% against their own); params span {lo:.3f}M "
            f"({small}) to {hi:.3f}M ({big}), {ratio:.1f}x. A difference between them reflects their size as "
            "much as their layout."
        )
    if z.params_err is not None:
        return (
            f"Size: MACs and params are both matched (a joint budget): MACs errors {z.macs_err[0]:+.1f}% to "
            f"{z.macs_err[1]:+.1f}%, params errors {z.params_err[0]:+.1f}% to {z.params_err[1]:+.1f}%; params "
            f"span {lo:.3f}M ({small}) to {hi:.3f}M ({big}), {ratio:.2f}x. As in CoAtNet, layouts are "
            "compared at similar parameter size and computational cost."
        )
    return (
        f"Size: MACs are matched (budget errors {z.macs_err[0]:+.1f}% to {z.macs_err[1]:+.1f}%); params are not: "
        f"the budget-matched candidates span {lo:.3f}M ({small}) to {hi:.3f}M ({big}), "
        f"{ratio:.1f}x. CoAtNet compares layouts at similar params and FLOPs; here they are equal in MACs only, "
        "so a result reflects the layout and its parameter count together."
    )


_BASELINE_TEXT = {
    "baseline-linear": "a linear classifier on the pixels; its accuracy is the floor of the regime guards",
    "baseline-cnn": "a small plain CNN (3 conv-BN-ReLU layers, global average pool, linear head)",
}


def _baselines_note(found: tuple[str, ...]) -> str:
    """What the regime baselines among the rows are (empty when the study has none)."""
    if not found:
        return ""
    what = "; ".join(f"**{n}** is {_BASELINE_TEXT[n]}" for n in found)
    return f" Regime baselines (same subsets and seeds, not budget-matched, never in a claim): {what}."


def guards(fired: Mapping[str, tuple[str, ...]]) -> str:
    """Every regime guard that fired: runs that failed to train (left out of means) and runs not converged."""
    return (
        f"Regime guards: failed to train (final accuracy within {CHANCE_POINTS:g} points of chance; counted in n, "
        f"left out of means and pairs): {', '.join(fired['failed']) or 'none'}. Not converged (eval accuracy rose "
        f"> {PLATEAU_POINTS:g} point over the last third of the curve): {', '.join(fired['not_converged']) or 'none'}."
        f" Convergence not checkable (fewer than 3 curve points): {', '.join(fired['unchecked']) or 'none'}."
    )


def figures(figs: Figures) -> str:
    """Links to the figures written beside the report, each with its caption."""
    out = ["## Figures", ""]
    for name, file, caption in figs.links:
        out += [f"![{name}]({file})", "", f"*{file}*: {caption}", ""]
    return "\n".join(out)


def rankings(r: Rankings) -> str:
    """One ranking line per score, with the relation rule."""
    out = ["## Rankings", "", f"Rule: {r.rule}", ""]
    for line in r.lines:
        better = "smaller is better" if line.better == "lower" else "larger is better"
        out.append(f"- **{line.label}** ({line.unit}, {better}): {line.text}")
    return "\n".join(out)


def v_table(v: Splits) -> str:
    """CoAtNet Table 7: the three C-C-T-T depth splits against the paper."""
    head = ["variant", "candidate", "depths (S1..S4)", "params", "MACs"]
    head += [f"{m.label} (%)" for m in v.columns] + ["paper blocks (S0..S4)", "paper top-1 (%)"]
    body = []
    for r in v.rows:
        size = [_num(s, m) for s, m in zip(r.size, v.size_metrics, strict=True)]
        scores = [fmt_stat(s, m) for s, m in zip(r.scores, v.columns, strict=True)]
        body.append([r.variant, r.candidate, r.depths, *size, *scores, r.paper_blocks, r.paper_top1])
    notes = [f"Note: {n}." for n in v.notes]
    return "\n\n".join(["## Depth splits V0/V1/V2 (CoAtNet Table 7)", table(head, body), *notes])
