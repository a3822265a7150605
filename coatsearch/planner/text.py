"""The plan as text: what `coatsearch plan` prints, and the one ETA line `coatsearch run` starts with."""

from __future__ import annotations

from coatsearch.papers.categories import REGISTERED_ONLY
from coatsearch.planner import Plan, power, predict
from coatsearch.planner.pilot import FitTiming
from coatsearch.planner.power import ClaimPlan
from coatsearch.scores import METRICS


def duration(seconds: float) -> str:
    """Seconds as '1 h 02 min', '3 min 05 s' or '42 s'."""
    s = round(seconds)
    if s >= 3600:
        return f"{s // 3600} h {s % 3600 // 60:02d} min"
    return f"{s // 60} min {s % 60:02d} s" if s >= 60 else f"{s} s"


def eta_line(plan: Plan) -> str:
    """One line: trials, workers, the predicted wall time and peak memory."""
    threads = "" if plan.threads is None else f" x {plan.threads} thread(s)"
    return (f"plan: {plan.trials} trials on {plan.device}, {plan.processes} process(es){threads}: predicted "
            f"{duration(plan.study_s)} (ETA), peak memory {plan.peak_mb / 1024:.1f} GB")  # fmt: skip


def _expected(fit: FitTiming) -> str:
    """' (~N in the earlier study)' for a stop-at-target run whose steps an earlier study gave, else ''."""
    return f" (~{predict.run_steps(fit):.0f} in the earlier study)" if fit.stops_early and fit.expected_steps else ""


def render(plan: Plan) -> str:
    """The whole plan: the ETA line, time and memory per trial and run, each claim's power and regime, the budget."""
    head = (f"plan of {plan.space} (profile {plan.profile}), study {plan.study}: {plan.trials} trials at "
            f"{plan.seeds} seed(s); planned in {plan.planning_s:.0f} s")  # fmt: skip
    lines = [head, eta_line(plan), f"worker start-up (data, kernels): {plan.start_s:.0f} s once per worker", "",
             "trial time per candidate (one seed; runs: steps, predicted seconds):"]  # fmt: skip
    for t in plan.timings:
        runs = "; ".join(
            f"{f.phase} {'<=' if f.stops_early else ''}{f.steps} steps x {f.batch}{_expected(f)} "
            f"{predict.fit_seconds(f):.0f} s{' compiled' if predict.compiles(f) else ''}"
            for f in t.fits
        )
        lines.append(f"  {t.candidate}: {plan.trial_s[t.candidate]:.0f} s, {t.peak_mb:.0f} MB ({runs}; rest "
                     f"{t.other_s:.0f} s)")  # fmt: skip
    lines += [
        "",
        f"claims (noise from {plan.noise} where a power line names no other source; power at the verdict α over "
        "the claim's Holm family, 80% power; "
        "regime of the key models):",
    ]
    lines += [line for c in plan.claims for line in _claim_lines(c)]
    if plan.budget_s is not None:
        lines += ["", _budget_line(plan)]
    if plan.registration:
        lines += ["", *registration_lines(plan)]
    return "\n".join(lines)


def registration_lines(plan: Plan) -> tuple[str, ...]:
    """The registration block, its last line 'confirmatory' only when some claim could reach a firm verdict at the
    planned seeds (papers.categories): with one seed, or every claim underpowered or out of regime, it reads
    'registered (no firm verdict possible)'."""
    *head, last = plan.registration
    could = plan.seeds >= 2 and any(power.decidable(c, plan.seeds) is not False for c in plan.claims if c.measure)
    if last.startswith("confirmatory") and not could:
        last = REGISTERED_ONLY + last.removeprefix("confirmatory")
    return (*head, last)


def _num(x: float | None, unit: str) -> str:
    return "-" if x is None else ("not detectable" if x == float("inf") else f"{x:.2f} {unit}")


def _claim_lines(c: ClaimPlan) -> list[str]:
    """A claim's lines: deciding measure and models, power numbers, then its regime findings."""
    title = f"claim ({c.claim}) {c.title}"
    if c.measure is None:
        return [f"{title}: {c.note}"]
    unit = METRICS[c.measure].unit
    unit = "points" if unit == "%" else unit
    out = [f"{title}: decided on {c.measure} over {', '.join(c.models)} ({c.relations} key relation(s))"]
    if c.alpha is None:
        out.append(f"  power: {c.note}")
    else:
        paper = "no number" if c.paper_effect is None else f"{c.paper_effect:g} points"
        paper += "" if c.paper_effect is None else f" needs {_seeds(c.seeds_for_paper)}"
        mine = f"; --effect {c.effect:g} needs {_seeds(c.seeds_for_effect)}" if c.effect is not None else ""
        noise = f"noise sd {c.sd_diff:.2f} {unit} ({c.noise_source})"
        mdd = f"at {c.seeds} seeds the smallest detectable difference is {_num(c.mdd, unit)} (α {c.alpha:.4f})"
        out.append(f"  power: {noise}; {mdd}; paper's effect: {paper}{mine}")
    out += [f"  regime: {line}" for line in c.regime]
    return out


def _seeds(n: int | None) -> str:
    return f"{n} seeds" if n else "more than 1000 seeds"


def _budget_line(plan: Plan) -> str:
    """How many seeds fit the budget and which claims they decide."""
    b = duration(plan.budget_s or 0)
    if not plan.budget_seeds:
        return f"budget {b}: not even one seed fits (one seed is predicted to take {duration(_min_study(plan))})"
    decides = ", ".join(f"({c})" for c in plan.budget_decides) or "none of the claims"
    return f"budget {b}: at most {plan.budget_seeds} seed(s) fit; they decide {decides}"


def _min_study(plan: Plan) -> float:
    """Predicted wall seconds of the study at one seed."""
    return predict.makespan(predict.study_durations(plan.trial_s, plan.samples, 1), plan.processes, plan.start_s)
