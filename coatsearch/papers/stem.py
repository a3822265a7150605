"""Claim (f), ViT_C paper §2.3: its four optimizability parts, each a test, one Holm family.

- Optimizer gap: per (model, optimizer), one fixed (lr, wd) recipe run on several seeds; the per-seed contrast
  (ViT_P AdamW − ViT_P SGD) − (ViT_C AdamW − ViT_C SGD) cancels the seed, and a fixed recipe keeps the
  hyperparameter draw out of it.
- Hyperparameter stability: the EDF shares of the random lr/wd samples (Fisher's exact test per optimizer).
- Training-length stability: per seed, the error ViT_P adds at the shortest schedule against the longest minus the
  error ViT_C adds (the `length` score's runs).
- Peak accuracy: per seed, ViT_C − ViT_P, each at its better optimizer on that seed's validation images, from
  the fixed recipes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as st

from coatsearch.analysis import constants as CS
from coatsearch.analysis import stats as S
from coatsearch.analysis.measure_results import EdfRow
from coatsearch.analysis.results import Power
from coatsearch.analysis.tables import Records, floor_key
from coatsearch.papers import categories as K
from coatsearch.papers import claims as C
from coatsearch.papers import measures as M
from coatsearch.papers import optim
from coatsearch.papers.claim_results import ClaimVerdict, StemPart, StemTables
from coatsearch.scores import SCORES
from coatsearch.scores.base import points
from coatsearch.vocab.specs import VIT_C, VIT_LABELS, VIT_P

CELLS = ((VIT_P, "adamw"), (VIT_P, "sgd"), (VIT_C, "adamw"), (VIT_C, "sgd"))
_OPT = {"adamw": "AdamW", "sgd": "SGD"}
_GAP = "gap contrast (ViT_P AdamW − SGD) − (ViT_C AdamW − SGD)"  # the gap part's name, as its estimate reads
STEM_RULE = (
    "the optimizer-gap part is the per-seed contrast (ViT_P AdamW − ViT_P SGD) − (ViT_C AdamW − ViT_C SGD), each "
    "cell at the (lr, wd) recipe of that model and optimizer run on the most seeds (≥ 2), with a Student-t "
    "interval (n − 1 df); the EDF parts compare ViT_C's and ViT_P's share of runs within "
    f"{C.EDF_K:g} points of their best (Fisher's exact test); the tested parts form one Holm family at α = "
    f"{CS.VERDICT_ALPHA}. Supported: the gap part and every tested EDF part hold; not supported: a part is "
    "significantly reversed; an EDF part whose most extreme table cannot reach its Holm level is left out of "
    "the verdict and states the runs per curve it would need (power "
    f"{100 * CS.POWER:.0f}% at the paper's shares {C.EDF_SHARES[0]:.0%} vs {C.EDF_SHARES[1]:.0%}, normal "
    "approximation); out of regime when either stem, at its better optimizer (the higher mean validation "
    "accuracy), is not shown above the fair linear floor on the same seeds (the floor rule); the cell the paper "
    "predicts to be bad, ViT_P with SGD, may be as bad as it is. The training-length part is, per seed, the "
    "error ViT_P adds at the shortest schedule against the longest minus the error ViT_C adds (test images; "
    f"paper {C.LENGTH_EFFECT:g} points); the peak part is, per seed, ViT_C − ViT_P, each at the optimizer "
    f"with the higher validation accuracy on that seed (paper {C.PEAK_EFFECT:g} points); both Student-t "
    "(n − 1 df) and in the Holm family where run on ≥ 2 paired seeds. Every tested part must hold for "
    "'supported'; a part not run is named in the verdict's scope, never counted as held; a claim that is not "
    "firm is underpowered when the first part that did not hold could not have detected the paper's effect for "
    "that part."
)


def stem_tables(done: Records, table: pd.DataFrame, acc_key: str | None = None) -> StemTables:
    """Claim (f)'s inputs from the runs table of `acc_key`: best-run gaps (description), fixed-recipe cells per seed,
    the EDF of sampled runs, and the linear floor per seed (its fair floor where recorded, else its run's acc)."""
    sampled = {r.number for r in done if any(k.startswith(optim.SEARCH_PREFIXES) for k in r.params)}
    edf_rows = M.edf(table[table["number"].isin(sampled)].reset_index(drop=True)) if sampled else ()
    runs = table.to_dict("records")
    fair = floor_key(acc_key) if acc_key else None
    fairs = {r.number: points(v) for r in done if fair and (v := r.run.number(fair)) is not None}
    linear = [r for r in runs if r["candidate"] == CS.BASELINES[0] and r["seed"] is not None]
    floor = {s: float(np.mean([fairs.get(r["number"], r["acc"]) for r in linear if r["seed"] == s]))
             for s in {r["seed"] for r in linear}}  # fmt: skip
    return StemTables(optim.optimizer_gap(table), _recipe_cells(runs), edf_rows, floor, _length_runs(done))


def _length_runs(done: Records) -> dict[str, dict[Any, dict[int, float]]]:
    """Per stem, per seed: test accuracy (%) at each schedule length of its `length` runs (mean over runs)."""
    sched, accs = (SCORES[CS.LENGTH_SCORE].role(k) for k in ("epochs", "accs"))
    got: dict[str, dict[Any, dict[int, list[float]]]] = {}
    for r in done:
        epochs, acc = r.run.value(sched), r.run.value(accs)
        if r.run.label in VIT_LABELS and r.seed is not None and epochs and acc:
            by = got.setdefault(r.run.label, {}).setdefault(r.seed, {})
            for e, a in zip(epochs, acc, strict=True):
                by.setdefault(int(e), []).append(points(a))
    return {m: {s: {e: float(np.mean(v)) for e, v in by.items()} for s, by in ss.items()} for m, ss in got.items()}


def _recipe_cells(runs: list[dict]) -> dict[str, dict]:
    """Per 'model/optimizer' cell: the (lr, wd) recipe run on the most seeds and its accuracy (%) per seed."""
    out = {}
    for label, opt in CELLS:
        by_recipe: dict[tuple, dict] = {}
        for r in runs:
            if (r["model_label"], r["optimizer"]) == (label, opt) and r["seed"] is not None:
                recipe = tuple(float(f"{v:.6g}") if v is not None else None for v in (r["lr"], r["weight_decay"]))
                by_recipe.setdefault(recipe, {}).setdefault(r["seed"], []).append((r["acc"], r.get("sel", r["acc"])))
        if by_recipe:
            recipe, seeds = max(by_recipe.items(), key=lambda kv: len(kv[1]))
            test = {s: float(np.mean([a for a, _ in v])) for s, v in seeds.items()}
            val = {s: float(np.mean([b for _, b in v])) for s, v in seeds.items()}
            out[f"{label}/{opt}"] = {"lr": recipe[0], "wd": recipe[1], "by_seed": test, "val_by_seed": val}
    return out


def gap_contrast(cells: Mapping[str, Mapping]) -> StemPart:
    """The per-seed gap contrast over the seeds all four cells share: mean, sd, t interval, two-sided p."""
    what = f"{_GAP}, fixed recipes, paired by seed (points)"
    part = StemPart(what, "gap contrast", None, 0, None, None, "Holm p < α", "not tested", "")
    if len(cells) < len(CELLS):
        return replace(part, reason="no runs for " + ", ".join(f"{a} {b}" for a, b in CELLS if f"{a}/{b}" not in cells))
    by = [cells[f"{a}/{b}"]["by_seed"] for a, b in CELLS]
    seeds = sorted(set.intersection(*(set(b) for b in by)), key=str)
    per_seed = {s: (by[0][s] - by[1][s]) - (by[2][s] - by[3][s]) for s in seeds}
    why = ("one fixed recipe in every cell (needs ≥ 2 with spread; sampled lr/wd confound seed and recipe, so the "
           "best-run gap above is description only)")  # fmt: skip
    return _paired(part, per_seed, why)


def _paired(part: StemPart, per_seed: Mapping[Any, float], why: str) -> StemPart:
    """A part's per-seed differences tested: mean, Student-t interval (n − 1 df), two-sided p; 'not tested' with
    fewer than 2 seeds or no spread (`why` says what a seed needs)."""
    t = S.one_sample(list(per_seed.values()), CS.ALPHA)
    part = replace(part, n=t.n, d=t.mean if t.n else None, per_seed={str(s): float(v) for s, v in per_seed.items()})
    if t.ci is None:
        return replace(part, reason=f"{t.n} seed(s) with {why}")
    return replace(part, ci=t.ci, p=t.p, status="tested")


def peak_part(cells: Mapping[str, Mapping]) -> StemPart:
    """Peak accuracy: per seed, ViT_C − ViT_P, each at its better optimizer on that seed's validation images (the
    cell with the higher validation accuracy; AdamW on a tie), over the seeds all four cells share.

    The choice is per seed so that a wrong choice is seed noise the t test sees: a choice made once per stem over
    all seeds would shift every seed of that stem together, and the test would read the shift as an effect."""
    what = ("peak accuracy ViT_C − ViT_P, each seed at the stem's better optimizer on that seed's validation images, "
            "points")  # fmt: skip
    part = StemPart(what, "peak", None, 0, None, None, "Holm p < α", "not tested", "")
    if len(cells) < len(CELLS):
        return replace(part, status="not run", reason="no fixed-recipe runs of every (model, optimizer) cell")
    seeds = sorted(set.intersection(*(set(cells[f"{a}/{b}"]["by_seed"]) for a, b in CELLS)), key=str)

    def best(label: str, seed: Any) -> float:  # test accuracy of the cell chosen on this seed's validation images
        adamw, sgd = cells[f"{label}/adamw"], cells[f"{label}/sgd"]
        val = [c.get("val_by_seed", c["by_seed"])[seed] for c in (adamw, sgd)]
        return float((sgd if val[1] > val[0] else adamw)["by_seed"][seed])

    return _paired(part, {s: best(VIT_C, s) - best(VIT_P, s) for s in seeds}, "runs of every cell")


def length_part(length: Mapping[str, Mapping[Any, Mapping[int, float]]]) -> StemPart:
    """Training-length stability: per seed, the error ViT_P adds at the shortest schedule against the longest minus
    the error ViT_C adds (test accuracy, points), over the seeds and lengths both stems ran."""
    what = "training-length Δerror ViT_P − ViT_C, shortest vs longest schedule, points"
    why = "no runs of both stems at two lengths"
    part = StemPart(what, "training length", None, 0, None, None, "Holm p < α", "not run", why)
    if not all(length.get(m) for m in (VIT_P, VIT_C)):
        return part
    seeds = sorted(set(length[VIT_P]) & set(length[VIT_C]), key=str)
    common = set.intersection(*(set(length[m][s]) for m in (VIT_P, VIT_C) for s in seeds)) if seeds else set()
    if len(common) < 2:
        return replace(part, status="not tested", reason="no two schedule lengths both stems ran on shared seeds")
    short, long = min(common), max(common)
    part = replace(part, what=f"training-length Δerror ViT_P − ViT_C at {short} vs {long} epochs, points",
                   status="not tested", reason="")  # fmt: skip

    def added(m: str, s: Any) -> float:  # error the short schedule adds (points)
        return length[m][s][long] - length[m][s][short]

    return _paired(part, {s: added(VIT_P, s) - added(VIT_C, s) for s in seeds}, "length runs of both stems")


def contrast_sd(ci: tuple[float, float] | list | None, n: int) -> float | None:
    """The per-seed sd of a tested gap contrast (gap_contrast's part: its interval and seeds), read back from its
    t interval; None untested."""
    if not ci or n < 2:
        return None
    return (ci[1] - ci[0]) / 2 * math.sqrt(n) / float(st.t.ppf(1 - CS.ALPHA / 2, n - 1))


def runs_needed(parts: int) -> int:
    """Runs per EDF curve at which Fisher-like power reaches POWER at the paper's shares (two-proportion z)."""
    p1, p2 = C.EDF_SHARES
    za, zb = st.norm.ppf(1 - CS.VERDICT_ALPHA / parts / 2), st.norm.ppf(CS.POWER)
    bar = (p1 + p2) / 2
    n = (za * math.sqrt(2 * bar * (1 - bar)) + zb * math.sqrt(p1 * (1 - p1) + p2 * (1 - p2))) ** 2 / (p1 - p2) ** 2
    return math.ceil(n)


def edf_parts(edf_rows: Sequence[EdfRow], family: int) -> list[StemPart]:
    """Per optimizer: ViT_C − ViT_P share within EDF_K of the best, with Fisher's p or why it cannot resolve."""
    out = []
    for opt in sorted({e.optimizer for e in edf_rows}):
        vit_p, vit_c = _share(edf_rows, VIT_P, opt), _share(edf_rows, VIT_C, opt)
        if vit_p is None or vit_c is None:
            continue
        (p_in, p_n), (c_in, c_n) = vit_p, vit_c
        what = f"EDF share within {C.EDF_K:g} points, ViT_C − ViT_P ({opt})"
        part = StemPart(what, f"EDF ({opt})", c_in / c_n - p_in / p_n, min(p_n, c_n), None, None, "Holm p < α",
                        "not tested", "", p_last=True)  # fmt: skip
        best_p = st.fisher_exact([[c_n, 0], [0, p_n]]).pvalue  # the most extreme table these counts allow
        if best_p >= CS.VERDICT_ALPHA / family:
            reason = f"cannot be resolved with {min(p_n, c_n)} runs per curve; needs about {runs_needed(family)}"
            out.append(replace(part, reason=reason))
        else:
            p = float(st.fisher_exact([[c_in, c_n - c_in], [p_in, p_n - p_in]]).pvalue)
            out.append(replace(part, p=p, status="tested"))
    return out


def _share(edf_rows: Sequence[EdfRow], label: str, opt: str) -> tuple[int, int] | None:
    deltas = [d for e in edf_rows if (e.model_label, e.optimizer) == (label, opt) for d in e.delta]
    return (sum(d <= C.EDF_K for d in deltas), len(deltas)) if deltas else None


def stem_claim(tables: StemTables | None) -> ClaimVerdict | None:
    """Verdict on claim (f) from stem_tables, or None when the study has no ViT_P / ViT_C runs.

    The verdict names the parts it rests on (`scope`): a study of fixed recipes alone reads 'gap contrast and peak
    parts only; EDF and training length not run', never a plain 'supported' of a claim whose other parts never ran.
    """
    if not tables or not {g.model_label for g in tables.gaps} & set(VIT_LABELS):
        return None
    n_opt = len({e.optimizer for e in tables.edf})
    length, peak = length_part(tables.length), peak_part(tables.cells)
    family = 1 + n_opt + sum(p.status == "tested" for p in (length, peak))
    parts = [gap_contrast(tables.cells), *(edf_parts(tables.edf, family) or [_EDF_NOT_RUN]), length, peak]
    idx = [i for i, p in enumerate(parts) if p.status == "tested"]
    for i, q in zip(idx, S.holm([parts[i].p for i in idx]), strict=True):
        firm, d = q is not None and q < CS.VERDICT_ALPHA, parts[i].d or 0.0
        parts[i] = replace(parts[i], p=q, status="holds" if firm and d > 0 else "reversed" if firm else "unresolved")
    tested = [parts[i] for i in idx]
    decisive = [parts[0], *tested[1:]] if idx and idx[0] == 0 else [parts[0], *tested]
    held, bad = (sum(p.status == s for p in decisive) for s in ("holds", "reversed"))  # EDF parts that
    result = K.NOT_SUPPORTED if bad else K.SUPPORTED if held == len(decisive) else None  # can't resolve: left out
    reversed_ = _and([p.short for p in decisive if p.status == "reversed"]) if bad else ""
    reason = (
        f"{bad} part(s) significantly reversed ({reversed_})"
        if bad
        else f"{held} of {len(decisive)} deciding part(s) hold"
    )
    why = reason + "".join(f"; {p.short}: {p.reason}" for p in parts if p.reason)
    scope = _scope(parts, decisive)
    low = below_linear(tables.cells, tables.linear)
    pw = _power(parts[0], C.STEM_CLAIM.paper_effect, max(len(tested), 1))
    head = parts[0]  # the deciding estimate: the gap, or the first seed-paired part that did not hold
    if result is None:  # not firm: the first deciding part that did not hold says whether the study was blind
        first = next(p for p in decisive if p.status != "holds")
        pw = _power(first, _EFFECTS.get(first.short), max(len(tested), 1)) if first is not parts[0] else pw
        head = first if first.per_seed is not None and first.d is not None else head
    verdict = K.category(result, bool(low), pw)
    if low:
        why = "out of regime — " + "; ".join(low) + f" ({why})"
        reason = low[0] + (f" (and {len(low) - 1} more)" if len(low) > 1 else "")
    elif verdict == K.UNDERPOWERED:
        reason += f"; {K.blind(pw)}"
    elif verdict == K.UNRESOLVED:
        reason += "; the study could have detected the paper's effect"
    what = _GAP if head is parts[0] else head.what.removesuffix(", points")
    est = K.estimate(what, head.d, head.ci, head.n, "points")  # what `decide` sizes, with the same part's power
    claim = C.STEM_CLAIM
    return ClaimVerdict(claim.id, claim.title, claim.chain, claim.source, K.fields(verdict, reason, est, pw, "points",
                        why), notes=(_lr_source(tables.cells),), parts=tuple(parts),
                        scope=scope if verdict in K.FIRM else "", why_first=False)  # fmt: skip


_EFFECTS = {"training length": C.LENGTH_EFFECT, "peak": C.PEAK_EFFECT}  # the paper's effect per part (points)


def _power(part: StemPart, effect: float | None, family: int) -> Power | None:
    """A seed-paired part's smallest detectable difference at its seeds and Holm's first level, beside the paper's
    effect for that part (the gap's 4.6-point interaction, the peak's and length's from Table 2); None with fewer
    than 2 seeds or no spread."""
    values = list((part.per_seed or {}).values())
    n = len(values)
    if n < 2 or float(np.std(values, ddof=1)) == 0.0:
        return None
    sd, alpha = float(np.std(values, ddof=1)), CS.VERDICT_ALPHA / family
    mdd = S.detectable(sd, n, n - 1, alpha, CS.POWER)
    need = S.seeds_needed(sd, effect, 2, alpha, CS.POWER) if effect else None
    return Power(n, sd, n - 1, 2, alpha, mdd, effect, need)


_EDF_NOT_RUN = StemPart(f"EDF share within {C.EDF_K:g} points, ViT_C − ViT_P (sampled lr/wd runs)", "EDF", None, 0,
                       None, None, "Holm p < α", "not run", "no sampled lr/wd runs in this study")  # fmt: skip


def _scope(parts: list[StemPart], decisive: list[StemPart]) -> str:
    """Which parts of the claim a firm verdict rests on, when not all of them: '' when every part decided."""
    left = [p for p in parts if p not in decisive]
    if not left:
        return ""
    not_run = [p.short for p in left if p.status == "not run"]
    unresolvable = [p.short for p in left if p.status != "not run"]
    lines = [f"{_and([p.short for p in decisive])} part{'s' if len(decisive) > 1 else ''} only"]
    lines += [f"{_and(not_run)} not run"] if not_run else []
    lines += [f"{_and(unresolvable)} not resolvable at these runs"] if unresolvable else []
    return "; ".join(lines)


def _and(names: list[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _lr_source(cells: Mapping[str, Mapping]) -> str:
    """Where each (model, optimizer) recipe's lr came from, as the report states it."""
    got = {k: c for k, c in cells.items() if c.get("lr") is not None}
    if not got:
        return "lr of each recipe: not recorded"
    recipes = ", ".join(f"{k.replace('/', ' ')} lr {c['lr']:.3g}" for k, c in got.items())
    by_opt: dict[str, set] = {}
    for k, c in got.items():
        by_opt.setdefault(k.split("/")[1], set()).add(c["lr"])
    shared = [_OPT.get(o, o) for o, lrs in by_opt.items() if len(lrs) == 1 and sum(k.endswith(o) for k in got) > 1]
    how = f"one lr per optimizer ({', '.join(shared)}) shared by both models" if shared else "each model's own lr"
    return (f"lr of each recipe: {recipes}: {how}, fixed in the space file (the most-run recipe of each cell); "
            "the records do not show how it was chosen: each model's best lr belongs to a pilot on validation "
            "images (a space with `pilots: [f]`), never to the test images that decide the verdict")  # fmt: skip


def _better(cells: Mapping[str, Mapping], label: str) -> tuple[str, Mapping] | None:
    """A stem's better optimizer and its cell: the higher mean validation accuracy over its seeds (None: no cell)."""
    mine = [(opt, c) for m, opt in CELLS if m == label and (c := cells.get(f"{m}/{opt}"))]
    if not mine:
        return None
    return max(mine, key=lambda oc: float(np.mean(list(oc[1].get("val_by_seed", oc[1]["by_seed"]).values()))))


def below_linear(cells: Mapping[str, Mapping], linear: Mapping) -> list[str]:
    """Stems that are not shown above the fair linear floor, each at its better optimizer (FLOOR_RULE).

    The better optimizer of a stem is the one with the higher mean validation accuracy over its seeds; it is then
    held against the linear floor on the same seeds by a one-sided interval (stats.above_floor). The other cell,
    ViT_P with SGD above all, is never a gate: the paper predicts it to be bad.
    """
    out = []
    for label in dict.fromkeys(m for m, _ in CELLS):
        if (best := _better(cells, label)) is None:
            continue
        opt, cell = best
        test = S.above_floor(cell["by_seed"], linear, CS.ALPHA)
        if test.above or test.n == 0:  # no linear run on this stem's seeds: nothing to hold it against
            continue
        out.append(f"{label} at its better optimizer ({_OPT[opt]}) not shown above the fair linear floor: "
                   f"{test.d:+.1f} points over {test.n} seed(s), {test.bound}")  # fmt: skip
    return out
