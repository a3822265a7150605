"""Verdict categories: the five a judged claim can be, the rule that picks one, and what each verdict carries.

A verdict carries its category (`verdict`), a one-line `reason`, the deciding `estimate` with its interval, the
smallest detectable difference beside the paper's effect (`detectable`) and what would decide it (`decide`); the
longer `why` stays as detail. docs/verdicts.md states CATEGORY_RULE word for word (a test holds it to this text).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, Literal, get_args

from coatsearch.analysis import constants as CS
from coatsearch.analysis import stats as S
from coatsearch.analysis.results import Estimate, Judgement, Pair, Power

Category = Literal["supported", "not supported", "out of regime", "underpowered", "unresolved"]
SUPPORTED, NOT_SUPPORTED, OUT_OF_REGIME, UNDERPOWERED, UNRESOLVED = get_args(Category)
CATEGORIES: tuple[str, ...] = get_args(Category)
FIRM = (SUPPORTED, NOT_SUPPORTED)  # what the calibration and the A/A studies count
NOT_FIRM = (OUT_OF_REGIME, UNDERPOWERED, UNRESOLVED)
POSSIBLE = (*FIRM, UNRESOLVED)  # a firm verdict was possible: the only categories a registration confirms
NOT_TESTED = "not tested at this scale"  # a claim the space marks untestable: never judged
REGISTERED_ONLY = "registered (no firm verdict possible)"
DECIDED = "decided (a replicate on fresh seeds checks it)"
NEEDS_RELATION = "candidates that measure a strict ('>' or '≫') relation of the paper's order"
_REGIME_NEED = ("key models that train, converge where the claim needs it, and beat the fair linear floor on the "
               "deciding measure")  # fmt: skip
CATEGORY_RULE = (
    "Each judged claim is exactly one of: **supported** (every key relation holds at the Holm-adjusted level, "
    "nothing is violated, and the claim holds after the looks correction); **not supported** (a key relation is "
    "significantly reversed or a '≈'/'≥' relation significantly violated); **out of regime** (a regime guard fired: "
    "the reading cannot speak to the paper, whatever its p); **underpowered** (not firm, and the study could not "
    "have detected the paper's effect: its smallest detectable difference exceeds the effect, fewer than 2 paired "
    "seeds, or no noise estimate); **unresolved** (not firm, though the study could have detected the paper's "
    "effect, or the paper states no effect in these units). Out of regime comes first, then firm, then underpowered, "
    "then unresolved. Each verdict states a one-line reason, the deciding estimate with its interval, the smallest "
    "detectable difference beside the paper's effect, and what would decide it. A registered study is called "
    "confirmatory only for claims where a firm verdict was possible (supported, not supported or unresolved); "
    f"elsewhere it is '{REGISTERED_ONLY}'."
)


def category(firm: str | None, out_of_regime: bool, power: Power | None) -> str:
    """The category under CATEGORY_RULE: firm is 'supported' / 'not supported' or None; power: `blind`'s input."""
    if out_of_regime:
        return OUT_OF_REGIME
    if firm in FIRM:
        return str(firm)
    return UNDERPOWERED if blind(power) else UNRESOLVED


def blind(power: Power | None) -> str:
    """Why the study could not have detected the paper's effect ('' when it could, or there is no effect).

    power: verdicts.power (None: fewer than 2 paired seeds or no noise estimate).
    """
    if power is None or power.n < 2:
        return "fewer than 2 paired seeds, or no noise estimate: no test"
    effect = power.effect
    if effect is not None and power.mdd > effect:
        return (f"the smallest detectable difference {power.mdd:.2f} at n = {power.n} exceeds the paper's "
                f"{effect:g} points")  # fmt: skip
    return ""


def decide(cat: str, power: Power | None, estimate: Estimate | None) -> str:
    """What would decide the claim: nothing (firm), a profile in regime, or about how many paired seeds."""
    if cat in FIRM:
        return DECIDED
    if cat == OUT_OF_REGIME:
        return f"a profile in regime: {_REGIME_NEED}"
    if power is None or power.n < 2:
        need = power.seeds_needed if power else None
        return "at least 2 paired seeds on the deciding models" + (f" (about {need} for the paper's effect)"
                                                                    if need else "")  # fmt: skip
    size = power.effect if cat == UNDERPOWERED else abs(estimate.d if estimate else 0.0)
    what = "the paper's effect" if cat == UNDERPOWERED else "the measured difference"
    need = power.seeds_needed if cat == UNDERPOWERED else None
    if need is None and size:
        need = S.seeds_needed(power.sd_diff, size, power.k or 2, power.alpha, CS.POWER)
    if not size:
        return "a larger effect than this study measured, or a less noisy measure: more seeds alone will not"
    if need is None:
        return f"more than {S.MAX_SEEDS} paired seeds at {what} ({size:.2f}): a less noisy measure"
    return f"about {need} paired seeds ({100 * CS.POWER:.0f}% power at {what}, {size:.2f})"


def estimate(what: str, d: float | None, ci: Any, n: int, unit: str) -> Estimate | None:
    """The deciding estimate: what it compares, the difference, its 95% interval, paired seeds, unit."""
    if d is None:
        return None
    return Estimate(what, d, None if ci is None else (ci[0], ci[1]), n, unit)


def _detectable(power: Power | None, unit: str) -> dict:
    """The smallest detectable difference beside the paper's effect (None where unknown)."""
    mdd = None if power is None else power.mdd
    effect, n = (None, None) if power is None else (power.effect, power.n)
    return {"mdd": None if mdd is None or mdd == float("inf") else mdd, "effect": effect, "unit": unit, "n": n}


def fields(cat: str, reason: str, est: Estimate | None, power: Power | None, unit: str, why: str = "") -> Judgement:
    """A verdict: its category and the parts every verdict carries (reason, estimate, detectable, decide), `why`."""
    return Judgement(cat, reason, est, _detectable(power, unit), decide(cat, power, est), why)


def status_word(registered: bool, cat: str) -> str:
    """'confirmatory' where a registered study could reach a firm verdict on the claim, else REGISTERED_ONLY."""
    return "confirmatory" if registered and cat in POSSIBLE else REGISTERED_ONLY


def measure_verdict(
    pairs: Sequence[Pair], pw: Power | None, out_of_regime: list[str], unit: str = "points"
) -> Judgement:
    """One measure's category under CATEGORY_RULE from its judged pairs (verdicts.judge), power (verdicts.power)
    and out-of-regime reasons, with its reason, estimate, what would decide it and the longer `why`."""
    key = [p for p in pairs if p.key]
    rev = [f"{p.a} vs {p.b}" for p in key if p.status == "reversed"]
    bad = [f"key relation significantly reversed: {', '.join(rev)}"] if rev else []
    bad += [f"'{p.paper}' relation violated beyond its margin: {p.a} {p.paper} {p.b} "
            f"({p.d:+.2f}, margin {p.margin:g})" for p in pairs if p.status == "violated"]  # fmt: skip
    est = _deciding(pairs, unit)
    held, a = sum(p.status == "holds" for p in key), CS.VERDICT_ALPHA
    if out_of_regime:
        firm, why = None, "out of regime — " + "; ".join(out_of_regime)
        more = f" (and {len(out_of_regime) - 1} more)" if len(out_of_regime) > 1 else ""
        reason = out_of_regime[0] + more
    elif bad:
        firm, why, reason = NOT_SUPPORTED, "; ".join(bad), bad[0]
    elif not key:
        firm, why = None, "no strict relation of the paper's order is measurable with these candidates"
        reason = why
    elif held == len(key):
        firm, why = SUPPORTED, f"all {held} key relation(s) hold at Holm-adjusted p < {a}"
        reason = why
    else:
        firm, why = None, f"{held} of {len(key)} key relation(s) hold at Holm-adjusted p < {a}"
        if min(p.n for p in key) < 2:
            why += "; fewer than 2 paired seeds: no test"
        reason = why
    if firm is None and not out_of_regime and pw and pw.resolvable is False and pw.sized:
        need = f"more than {S.MAX_SEEDS} seeds would"
        need = f"about {pw.seeds_needed} seeds would" if pw.seeds_needed else need
        why += (f"; the study cannot resolve the paper's effect (smallest detectable {pw.mdd:.2f} at n = "
                f"{pw.n} vs the paper's {pw.effect:g} points; {need} resolve it)")  # fmt: skip
    cat = category(firm, bool(out_of_regime), pw if key else None)
    if cat == UNDERPOWERED and key and "fewer than 2" not in reason:
        reason = f"{reason}; {blind(pw)}"
    elif cat == UNRESOLVED:
        reason += "; the study could have detected the paper's effect" if pw and pw.effect else ""
    out = fields(cat, reason, est, pw, unit, why)
    return dataclasses.replace(out, decide=NEEDS_RELATION) if cat == UNDERPOWERED and not key else out


def _deciding(pairs: Sequence[Pair], unit: str) -> Estimate | None:
    """The pair a verdict rests on: a reversed key relation, a violated one, else the weakest key relation (largest
    Holm p)."""
    bad = [p for s in ("reversed", "violated") for p in pairs if p.status == s]
    key = [p for p in pairs if p.key]
    pick = bad or sorted(key, key=lambda p: -1.0 if p.p_holm is None else -p.p_holm) or list(pairs)
    if not pick:
        return None
    p = pick[0]
    return estimate(f"{p.a} − {p.b}", p.d, p.ci, p.n or 0, unit)
