"""Markdown of the search section (view_search.SearchInfo over analysis.search_results): only formatting, every
number comes from the Info."""

from __future__ import annotations

from coatsearch.analysis.constants import ALPHA, VERDICT_ALPHA
from coatsearch.analysis.search_results import NOT_SHOWN, SAME
from coatsearch.analysis.search_types import Arch, Mapped, Random, Searched, SearchResults, Tau
from coatsearch.analysis.stats import MAX_SEEDS
from coatsearch.report import escape
from coatsearch.report.markdown import table
from coatsearch.report.view_search import Fresh, Lead, SearchAnswer, SearchedView, SearchInfo

UNDEFINED = "undefined (never varied)"  # the importance of a dimension the trials held at one value


def lead(a: SearchAnswer) -> str:
    """The search's answer, which a search study's report opens with: per searched candidate, its best against the
    best named candidate on fresh seeds, what that could resolve, and the random baseline's expected result."""
    return "**The search's answer.** " + "\n\n".join(_lead(a, one) for one in a.leads)


def _lead(a: SearchAnswer, one: Lead) -> str:
    head = f"The search over `{escape.cell(one.candidate)}` ({a.sampler}, {one.trials} trials)"
    if one.best is None:
        return head + " found no architecture."
    text = head + f" ranks `{escape.cell(one.best.name)}` ({one.best.stages}) first."
    if one.twin is not None:
        text += f" It builds the named candidate `{escape.cell(one.twin)}`: the search found a named layout again."
    if one.fresh is not None:
        text += _fresh(a, one.fresh, one.best.name)
    elif one.twin is not None:
        text += " Nothing else was compared on fresh seeds."
    elif one.planned:
        text += (f" `study.reevaluate` asks for {one.planned} fresh seeds, but no re-evaluated architecture is on "
                 "record beside a named candidate on them: there is no comparison on fresh seeds.")  # fmt: skip
    else:
        text += (" No re-evaluation ran (`study.reevaluate` is not set): nothing was retrained on fresh seeds, so "
                 "nothing here tests the search's best against the named layouts.")  # fmt: skip
    if one.fresh is None and one.named is not None and one.selected is not None:
        text += (f" On the seeds it selected on: {one.best.mean:.2f}{a.unit} against the best named candidate "
                 f"`{escape.cell(one.named.name)}` {one.named.mean:.2f}{a.unit}, {one.selected:+.2f} points (a "
                 "selection-biased figure).")  # fmt: skip
    if one.random is not None:
        text += " " + _random_lead(a, one.random)
    return text


def _fresh(a: SearchAnswer, f: Fresh, best: str) -> str:
    """The paired comparison on fresh seeds and what it could resolve."""
    p, u = f.pair, a.unit
    d = f"{p.d:+.2f} [{p.ci[0]:+.2f}, {p.ci[1]:+.2f}] points" if p.ci else f"{p.d:+.2f} points, no interval"
    test = (f"paired t test on this pair's own noise, p = {p.p:.3g}, Holm {p.p_holm:.3g}"
            if p.p is not None and p.p_holm is not None else "no paired test")  # fmt: skip
    more = f"; {f.others} more re-evaluated under Search" if f.others else ""
    which = "it" if p.found == best else f"its best-ranked architecture re-evaluated, `{escape.cell(p.found)}`,"
    text = (f" On {p.n} fresh {'seed' if p.n == 1 else 'seeds'} the search never saw, {which} is **{p.verdict}** "
            f"the best named candidate `{escape.cell(p.named)}`: {p.found_mean:.2f}{u} vs {p.named_mean:.2f}{u}, "
            f"d = {d} ({test}{more}).")  # fmt: skip
    if p.detectable is None or p.sd_diff is None:
        return text + (" With no paired noise (fewer than 2 fresh seeds, or no spread) nothing is tested, and the "
                       "fresh seeds a difference needs cannot be sized from it.")  # fmt: skip
    text += (f" The smallest difference it could detect at 80% power is {p.detectable:.2f} points (paired sd "
             f"{p.sd_diff:.2f} points, {p.df} df)")  # fmt: skip
    res = f"{a.resolution:g}-point"
    if f.resolves is None:
        return text + "."
    if f.resolves:
        return text + f": it could detect a {res} difference."
    need = (f"it would need {f.needed} fresh seeds at this paired sd" if f.needed is not None
            else f"it would need more than {MAX_SEEDS} fresh seeds at this paired sd")  # fmt: skip
    machinery = "this profile demonstrates the machinery; " if f.machinery else ""
    return text + f": {machinery}it cannot detect a {res} difference; {need} (`study.reevaluate.seeds`)."


def _random_lead(a: SearchAnswer, r: Random) -> str:
    """The random baseline's expected result and regret, and the search's own regret, in a sentence."""
    if r.baseline is None:
        return f"Random-search baseline: not computed: {r.note}."
    b, u = r.baseline, a.unit
    where = f" by study `{escape.cell(r.table)}`" if r.table else ""
    text = (f"Random search at the same budget ({b.k} trials a seed, on the {b.networks} networks measured "
            f"whole{where}) expects {b.mean:.2f}{u}, a regret of {b.regret:.2f} points against the best network's "
            f"{b.best:.2f}{u}")  # fmt: skip
    if r.found_mean is None or r.regret is None:
        return text + f"; the search's best `{escape.cell(r.found)}` is not in that table."
    return text + f"; the search's best has table mean {r.found_mean:.2f}{u}: regret {r.regret:.2f} points."


def section(info: SearchInfo) -> str:
    """The '## Search' section: per searched candidate, what the search found."""
    s = info.results
    head = (
        f"Sampler `{s.sampler}`; objective {s.label} ({'higher' if s.maximize else 'lower'} is better). "
        "Each architecture is one solved model (layout, per-stage depth × width after the budget solve, stem, "
        "block options); its runs are its seeds and `train.*` samples."
    )
    parts = ["## Search", head]
    for view in info.searched:
        parts += _searched(s, view, info.forest_seeds)
    return "\n\n".join(parts)


def _searched(s: SearchResults, view: SearchedView, forests: int) -> list[str]:
    one = view.found
    out = [f"### Search over candidate `{escape.cell(one.candidate)}`"]
    if one.dims:
        out.append(table(["dimension", "values"], [[f"`{p}`", v] for p, v in one.dims]))
    held = f"holds {one.size} structural points; " if one.size is not None else ""
    out.append(f"The space {held}the search measured {one.measured} distinct architectures in {one.trials} trials.")
    out.append(_rejected(view))
    if one.mapped is not None:
        out.append(_mapped(one.mapped))
    if one.random is not None:
        out.append(_random(s, one.random))
    if one.fidelity is not None:
        out.append(_fidelity(one.fidelity))
    if one.history:
        out.append(_history(s, view))
    if one.top:
        head = "Top architectures found (mean ± sd over their seeds, the runs of one seed averaged first):"
        out.append(_top(s, one.top, head))
    if one.front:
        out.append(_front(s, view))
    if s.named and one.top:
        out.append(_versus(s, one.top[0], s.named[0]))
    if one.reevaluation:
        out.append(_reevaluated(s, one))
    if one.importance:
        body = [
            [f"`{p}`", _pm(m, sd, 2) if m is not None else "undefined (never varied)"] for p, m, sd in one.importance
        ]
        note = f"Importance of each dimension (fANOVA, `optuna.importance`; ± sd over {forests} forest seeds):"
        out.append(note + "\n\n" + table(["dimension", "importance"], body))
    return out


def _reevaluated(s: SearchResults, one: Searched) -> str:
    """The re-evaluation: each architecture against the best named candidate, paired by fresh seed."""
    lines = []
    for p in one.reevaluation:
        if p.verdict == SAME:
            lines.append(f"- search found `{p.found}` ({p.stages}), {SAME} the named candidate `{p.named}` (the "
                         f"options it differs in are read by no block of it): nothing to test")  # fmt: skip
            continue
        ci = f" [{p.ci[0]:+.2f}, {p.ci[1]:+.2f}]" if p.ci else ""
        test = f", p = {p.p:.3g}, Holm {p.p_holm:.3g}" if p.p is not None and p.p_holm is not None else ""
        can = f"; it could detect {p.detectable:.2f} points at 80% power" if p.detectable is not None else ""
        if p.verdict == NOT_SHOWN:
            could = f"could detect {p.detectable:.2f} points" if p.detectable is not None else "too few seeds to test"
            verdict, can = f"{NOT_SHOWN} ({could})", ""
        else:
            verdict = p.verdict
        lines.append(f"- search found `{p.found}` ({p.stages}), {verdict} the best named candidate `{p.named}`: "
                     f"{p.found_mean:.2f}{s.unit} vs {p.named_mean:.2f}{s.unit}, d = {p.d:+.2f}{ci} points over "
                     f"{p.n} fresh seeds (paired t test on this pair's own noise{test}){can}")  # fmt: skip
    head = (
        "Re-evaluation (`study.reevaluate`): the top architectures and every named candidate retrained on fresh "
        "seeds the search never saw, compared paired by seed with the best named candidate on those seeds "
        f"(chosen on the validation images), on the test images the search never selected on ({1 - ALPHA:.0%} t "
        f"interval; verdict at Holm-adjusted p < {VERDICT_ALPHA:g}; the smallest difference it could detect at 80% "
        "power at the first Holm step's level):"
    )
    return head + "\n\n" + "\n".join(lines)


def _front(s: SearchResults, view: SearchedView) -> str:
    """The Pareto front of a multi-objective search: the architectures no other one beats in every objective."""
    goals = ", ".join(f"{lab} ({'higher' if up else 'lower'} is better)" for _, lab, _, up in s.objectives)
    on, one = view.front, view.found
    head = [*(f"{lab} ({unit})" if unit else lab for _, lab, unit, _ in s.objectives)]
    body = [[f"`{p.name}`", p.stages, *(f"{m:.{_digits(m)}f}" for m in p.means), str(p.n)] for p in on]
    text = (
        f"Pareto front over {goals}: {len(on)} of the {len(one.front)} measured architectures, each at its mean "
        "over its runs; no other architecture is at least as good in every objective and better in one "
        "(figure `search_pareto`). Optuna prunes nothing in a multi-objective study, so every sampled "
        "architecture that passed the constraints and the budget trained in full:"
    )
    return text + "\n\n" + table(["architecture", "stages", *head, "runs"], body)


def _digits(x: float) -> int:
    return 2 if abs(x) >= 1 else 4


def _mapped(m: Mapped) -> str:
    return (f"{m.points} sampled points passed the constraints and the budget; these points mapped to {m.networks} "
            f"networks: {m.trained} trained, {m.reused} reused a network already measured on their seed (nothing "
            "trained twice; a reuse is counted once, in the run it reused).")  # fmt: skip


def _random(s: SearchResults, r: Random) -> str:
    if r.baseline is None:
        return f"Random-search baseline: not computed: {r.note}."
    b = r.baseline
    found = (f" This search's best `{escape.cell(r.found)}` has table mean {r.found_mean:.2f}{s.unit}: regret "
             f"{r.regret:.2f} points." if r.found_mean is not None and r.regret is not None else "")  # fmt: skip
    where = f" by study `{escape.cell(r.table)}`" if r.table else ""
    return (f"Random search at the same budget ({b.k} trials a seed, on the table of all {b.networks} networks "
            f"measured whole{where}): expected best {b.mean:.2f}{s.unit} [{b.ci[0]:.2f}, {b.ci[1]:.2f}] (one random "
            f"search: {b.spread[0]:.2f}–{b.spread[1]:.2f}, 10th–90th percentile); the best network "
            f"{b.best:.2f}{s.unit}, so random search's regret is {b.regret:.2f} points.{found}"
            f"{_by_budget(r, s.unit)}")  # fmt: skip


def _by_budget(r: Random, unit: str) -> str:
    """The baseline at smaller budgets: expected best and regret per trial count."""
    if not r.by_budget:
        return ""
    cells = "; ".join(f"{b.k} {'trial' if b.k == 1 else 'trials'} {b.mean:.2f}{unit} (regret {b.regret:.2f})"
                      for b in r.by_budget)  # fmt: skip
    return f" At fewer trials a seed, random search's expected best: {cells}."


def _fidelity(t: Tau) -> str:
    ci = f" [{t.ci[0]:+.2f}, {t.ci[1]:+.2f}]" if t.ci else " (no interval under 5 networks)"
    p = f", p = {t.p:.3g}" if t.p is not None else ""
    return (f"Fidelity: Kendall's τ between the search's objective and the re-evaluation's on the {t.n} networks "
            f"measured at both: {t.tau:+.2f}{ci}{p} (scipy.stats.kendalltau; 95% interval after Fieller et al. "
            "1957).")  # fmt: skip


def _rejected(view: SearchedView) -> str:
    if not view.found.rejected:
        return "No sampled point was rejected."
    why = "; ".join(f"{n} {kind} (e.g. {escape.cell(example)})" for kind, n, example in view.found.rejected)
    return f"{view.rejected} points rejected before training, none trained or counted as a trial: {why}."


def _history(s: SearchResults, view: SearchedView) -> str:
    """The trials where the best so far improved: trial number, wall time since the search started, value."""
    rows = [[str(n), "–" if t is None else f"{t:.0f} s", f"{v:.2f}{s.unit}"] for n, t, v in view.improved]
    one = view.found
    text = f"Best so far (the trials that improved it; {len(one.history)} trials in all, figure `search_history`):"
    return text + "\n\n" + table(["trial", "wall time", f"{s.label}"], rows)


def _top(s: SearchResults, archs: tuple[Arch, ...], text: str) -> str:
    body = [
        [a.name, a.layout, a.stages, a.block or "–", _m(a.params), _m(a.macs), _pm(a.mean, a.sd, 2, s.unit),
         str(a.n), ", ".join(map(str, a.seeds))]
        for a in archs
    ]  # fmt: skip
    head = ["architecture", "layout", "stages", "block", "params", "MACs", s.label, "runs", "seeds"]
    return text + "\n\n" + table(head, body)


def _versus(s: SearchResults, found: Arch, named: Arch) -> str:
    d = found.mean - named.mean
    better = d > 0 if s.maximize else d < 0
    return (
        f"Best found `{found.name}` ({found.stages}) {found.mean:.2f}{s.unit} against the best named candidate "
        f"`{named.name}` {named.mean:.2f}{s.unit}: {d:+.2f} points, {'above' if better else 'not above'} it on the "
        "images the search selected on (a selection-biased figure; `study.reevaluate` retrains on fresh seeds "
        "for a paired test)."
    )


def _pm(mean: float, sd: float | None, digits: int, unit: str = "") -> str:
    return f"{mean:.{digits}f}{unit}" + (f" ± {sd:.{digits}f}" if sd is not None else " (n=1)")


def _m(x: int | None) -> str:
    return "–" if x is None else f"{x / 1e6:.3f}M"
