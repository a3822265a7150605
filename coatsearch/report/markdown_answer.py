"""Markdown of the report's opening: the plain-words answer, the verdict table and the regime table."""

from __future__ import annotations

from coatsearch.analysis.measure_results import Detectable
from coatsearch.papers import categories as K
from coatsearch.report.markdown import fmt_num, table
from coatsearch.report.summary import RegimeRow
from coatsearch.report.view_answer import Answer, Estimate, Regime, Verdict

_ICON = {K.SUPPORTED: "✅", K.NOT_SUPPORTED: "❌", K.OUT_OF_REGIME: "⛔", K.UNDERPOWERED: "🔍", K.UNRESOLVED: "❔",
        K.NOT_TESTED: "➖"}  # fmt: skip
VERDICT_MARK = {c: f"{_ICON[c]} {c}" for c in (*K.CATEGORIES, K.NOT_TESTED)}  # every category, and only those
_DOCS = "docs/verdicts.md"  # where the rule, the categories and the calibration are explained
DOCS_LINK = f"[{_DOCS}](../../{_DOCS})"  # from reports/<study>/report.md


def estimate(e: Estimate | None) -> str:
    """'A − B = +1.23 points [+0.40, +2.06], 4 paired seeds', or '–'."""
    if e is None:
        return "–"
    ci = f" [{e.ci[0]:+.2f}, {e.ci[1]:+.2f}]" if e.ci else " (no interval)"
    return f"{e.what} = {e.d:+.2f} {e.unit}{ci}, {e.n} paired seed(s)"


def detectable(d: Detectable | None) -> str:
    """'2.96 vs the paper's 0.6 points', or what is missing."""
    if d is None:
        return "–"
    mdd = "none (fewer than 2 paired seeds)" if d.mdd is None else f"{d.mdd:.2f} {d.unit}"
    return f"{mdd}; the paper gives no number" if d.effect is None else f"{mdd} vs the paper's {d.effect:g} points"


def _short(title: str) -> str:
    return title.split(":")[0]


def _sentence(r: Verdict) -> str:
    """One claim in plain words: its category, estimate and reason, and what would decide it when not firm."""
    est = f": {estimate(r.estimate)}" if r.estimate else ""
    text = f"claim ({r.id}) {_short(r.title)} is **{r.category}**{est} — {r.reason}"
    if r.category not in K.FIRM and r.decide:
        text += f" (to decide it: {r.decide})"
    return text


def answer(a: Answer) -> str:
    """The answer paragraph, then the verdict table."""
    at = f"At this proxy scale ({a.scale}), " if a.scale else "In this study, "
    said = "; ".join(_sentence(r) for r in a.rows)
    text = at + (said + "." if said else "no claim of the papers is judged.")
    if a.untested:
        text += f" Not tested at this scale: {', '.join(f'({c})' for c, _ in a.untested)} (see below)."
    out = [("**The papers' claims.** " if a.after_search else "**Answer.** ") + text]
    if a.rows:
        head = ["claim", "verdict", "estimate [95% CI]", "detectable (80% power) vs paper's effect", "reason",
                "what would decide it", "analysis"]  # fmt: skip
        body = [[f"({r.id}) {_short(r.title)}", VERDICT_MARK.get(r.category, r.category), estimate(r.estimate),
                 detectable(r.detectable), r.reason, r.decide, r.status or "–"] for r in a.rows]  # fmt: skip
        out += ["## Verdicts", table(head, body), f"Categories and rule: {DOCS_LINK} and the appendix at the end."]
    return "\n\n".join(out)


def _values(values: tuple, digits: int = 0) -> str:
    if not values:
        return "–"
    lo, hi = values[0], values[-1]
    return f"{lo:,.{digits}f}" if lo == hi else f"{lo:,.{digits}f}–{hi:,.{digits}f}"


def _value(x: float | None, r: RegimeRow) -> str:
    return "–" if x is None else fmt_num(x, r.digits) + ("%" if r.unit == "%" else f" {r.unit}")


def regime(g: Regime) -> str:
    """The regime table: per claim, the data a run saw, its best network, the floors and whether it is in regime."""
    head = ["claim", "measure", "training images", "images processed (steps × batch)", "epochs", "best network",
            "linear floor", "small CNN", "in regime"]  # fmt: skip
    body = [[r.claim, r.measure, _values(r.images), _values(r.processed), _values(r.epochs, 1),
             f"{r.best} ({_value(r.best_value, r)})" if r.best else "–", _value(r.floor, r), _value(r.cnn, r),
             "yes" if r.in_regime else f"no: {r.why}"] for r in g.rows]  # fmt: skip
    return "\n\n".join(["## Regime", table(head, body)])
