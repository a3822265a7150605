"""Calibration of the verdict rule through the whole pipeline: simulated studies as trial records, judged per claim.

A simulated study mirrors the shipped ones: the five layouts, V1/V2 and a no-rel-pos twin run generalization
(a step curve of train loss against eval accuracy, read at claim (a)'s matched level) and capacity; only
C-C-T-T and C-T-T-T run transfer (so claim (c) has the 2 residual df it has in reality); the linear baseline
runs beside them; ViT_P / ViT_C × AdamW / SGD run a fixed recipe per seed plus random lr/wd samples (claim f).
A run's value is `order effect + seed effect + noise`, with a shared seed effect (SEED_SD σ) and a noise sd
that differs per candidate (NOISE_SPREAD). Stress that real studies have: a run that fails at chance
(P_FAIL), a missing optional candidate (P_MISSING), a key candidate of (a) that never fits (P_UNFIT).
Null studies have no order effect; paper-order studies move the models `effect` σ apart at every key relation
and leave ≈ / ≥ neighbours within half a margin. They are judged by report.judging.judge_records, the
report's own path. The committed table (calibration.json) is keyed by RULE_VERSION; tests regenerate it.
The measures simulated are the claims' own (claims.py), placed in the score registry (`measures`): a claim whose
measure changes is simulated on the new one.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import Any, cast

import numpy as np
from scipy import stats as st

from coatsearch import record as R
from coatsearch import scores
from coatsearch.record import TrialRecord
from coatsearch.report import claims as C
from coatsearch.report import judging
from coatsearch.report import verdicts as V
from coatsearch.report.info import METRICS
from coatsearch.report.paper import NOT_TESTED

RULE_VERSION = "2026-12-02.readings"  # bump when the verdict rule changes; the table below must be regenerated
TABLE = Path(__file__).with_name("calibration.json")
AA_TABLE = Path(__file__).with_name("aa.json")  # A/A studies through the real trainer (benchmarks/bench_aa.py)
SEED_SD = 2.0  # sd of the shared seed effect, in σ: pairing removes it
NOISE_SPREAD = (0.7, 1.4)  # each candidate's noise sd, uniform in this range (× σ)
P_FAIL, P_MISSING, P_UNFIT = 0.02, 0.1, 0.05
SIGMA = {"%": 1.0, "points": 1.0, "nats": 0.02}  # one run's noise sd σ per unit (accuracy points, nats)
BASE = {"%": 80.0, "points": 3.0, "nats": 0.3}
FIRM = ("supported", "not supported")
LAYOUTS = ("C-C-C-C", "C-C-C-T", "C-C-T-T", "C-T-T-T", "ViT_REL")
OPTIONAL = ("V1", "V2", f"C-C-T-T-{C.NOREL_TAG}", "ViT_REL")
ONLY = "c"  # the claim whose measures only its chain's candidates record (so that it has the df it has in reality)
OBJECTIVE = scores.FALLBACK[0]  # the study's: the registry's first objective fallback, the recipe accuracy (f) reads
SPACE = {"input": [32, 1, 10], "study": {"objective": OBJECTIVE}, "candidates": []}
SAMPLES = 1  # random lr/wd samples per (model, optimizer) and seed, as spaces/vit_stems.yaml
EFFECT = 6.0  # σ per key relation of claims (a)-(e) in the power studies
STEM_EFFECT = 10.0  # σ: ViT_P's extra SGD loss in claim (f)'s power studies (a 4-cell contrast: sd 2σ per seed)
CLAIMS = "abcdef"


@dataclass(frozen=True)
class Measures:
    """What a simulated study records, taken from the claims (claims.py) and the score registry."""

    recipe: str  # the study's OBJECTIVE: claim (f)'s runs record it, the layouts do not
    matched: str  # claim (a)'s measure: a metric the report derives from the step curve `curve`
    curve: str  # the curve attribute (`curves.<name>`) of the score that derives `matched`
    trained: str  # that score's guard accuracy: what a failed run sets, and the curve's level without `matched`
    recorded: tuple[str, ...]  # every other claim measure, in registry order, but the recipe and claim ONLY's
    floor: tuple[str, ...]  # the accuracies among `recorded`: what the linear baseline records
    only: tuple[str, ...]  # claim ONLY's measures, recorded by `only_by` alone
    only_by: tuple[str, ...]  # claim ONLY's chain

    def first(self, claim: C.Claim) -> str:
        """The first of a claim's measures that the simulated layouts record: the one that decides it here."""
        return next(k for k in claim.measures if k != self.recipe)

    def runs(self, name: str) -> tuple[str, ...]:
        """The measures a simulated candidate records, in the order its values are drawn."""
        if name == C.BASELINES[0]:
            return self.floor
        return (*self.recorded, self.matched, *(self.only if name in self.only_by else ()))


def claims() -> dict[str, C.Claim]:
    """Claims (a)-(e) by id; claim (f) reads the study's objective."""
    return {c.id: c for c in (*C.CHAIN_CLAIMS, C.REL_CLAIM)}


def measures() -> Measures:
    """The simulated measures, from the claims and the score registry as they are now."""
    by_id, recipe = claims(), OBJECTIVE
    matched, only = by_id["a"].measures[0], by_id[ONLY].measures
    gen = next(s for s in scores.SCORES.values() if matched in {m.key for m in s.derived})
    wanted = {k for c in by_id.values() for k in c.measures} - {recipe, matched, *only}
    odd = sorted(k for k in wanted if k not in scores.METRICS or k in scores.derived())
    if odd:
        raise ValueError(f"the calibration simulates recorded metrics and claim (a)'s derived one, not: {odd}")
    recorded = tuple(k for k in scores.METRICS if k in wanted)
    return Measures(
        recipe, matched, f"curves.{gen.name}", next(g.acc for g in gen.guards if g.group == gen.name), recorded,
        tuple(k for k in recorded if METRICS[k].unit == "%"), only, tuple(V.parse_chain(by_id[ONLY].chain)[0]),
    )  # fmt: skip


def places() -> dict[str, dict[str, float]]:
    """Per measure: each candidate's place in its claim's order, in key-relation steps (≈ / ≥ share a step)."""
    out: dict[str, dict[str, float]] = {}
    ms = measures()
    for claim in C.CHAIN_CLAIMS:
        names, syms = V.parse_chain(claim.chain)
        step, mine = 0, {(C.V0_STANDIN if names[0] == "V0" else names[0]): 0}
        for name, sym in zip(names[1:], syms, strict=True):
            step += sym in (">", "≫")
            mine[C.V0_STANDIN if name == "V0" else name] = step
        for key in claim.measures:
            if key != ms.recipe:  # claims (d), (e): no layout runs the recipe here, their next measure decides
                out.setdefault(key, {}).update({n: v for n, v in mine.items() if n not in out.get(key, {})})
    rel = ms.first(C.REL_CLAIM)  # claim (e): the no-rel-pos twin one step below C-C-T-T on its deciding measure
    out[rel][f"C-C-T-T-{C.NOREL_TAG}"] = out[rel]["C-C-T-T"] + 1
    return out


def _value(
    rng: np.random.Generator, key: str, place: float, effect: float, seed_eff: float, sd: float, jitter: float
) -> float:
    """One run's value of a measure in display units (better direction down the order)."""
    unit = METRICS[key].unit
    sign = 1.0 if METRICS[key].better == "higher" else -1.0
    s = SIGMA[unit]
    return BASE[unit] - sign * s * (effect * place + jitter) + s * (seed_eff + sd * rng.normal())


def _curve(matched: float, fits: bool) -> dict:
    """A generalization curve whose eval accuracy is linear in log loss and reads `matched` (%) at FIT_LOSS."""
    end = 0.03 if fits else 0.3
    loss = [2.3 * (end / 2.3) ** min(t / 8, 1.0) for t in range(12)]
    acc = [(matched - 5.0 * math.log(x / C.FIT_LOSS)) / 100 for x in loss]
    return {"step": list(range(12)), "train_loss": loss, "train_acc": [0.9] * 12, "eval_loss": [1.0] * 12,
            "eval_acc": acc}  # fmt: skip


def _record(number: int, cand: str, seed: int, attrs: dict, label: str, optimizer: str = "adamw",
            params: dict | None = None) -> TrialRecord:  # fmt: skip
    """A simulated COMPLETE trial, built by the constructor the trial uses (record.completed)."""
    params = {"candidate": cand, "seed": seed, **(params or {})}
    optim = R.optimizer({"optimizer": optimizer, "lr": attrs.pop("lr", 1e-3), "weight_decay": 0.05})
    run = R.completed(R.Identity(cand, seed), R.Model(label=label, layout=label), attrs, optim)
    return TrialRecord(number, 0.5, MappingProxyType(params), None, None, run)


def study(rng: np.random.Generator, effect: float, n_seeds: int = 3, stress: bool = True, edit: Any = None,
          stem_effect: float | None = None) -> list[TrialRecord]:  # fmt: skip
    """One simulated study's trial records (σ per unit in SIGMA); `edit(key, name) -> extra places` for paths."""
    where, recs, ms = places(), cast(list[TrialRecord], []), measures()
    names = [*LAYOUTS, *OPTIONAL[:3], C.BASELINES[0]]
    gone = {str(rng.choice(OPTIONAL))} if stress and rng.random() < P_MISSING else set()
    unfit = {str(rng.choice(LAYOUTS))} if stress and rng.random() < P_UNFIT else set()
    sd = {n: rng.uniform(*NOISE_SPREAD) for n in names}
    jit = {(k, n): rng.uniform(-0.25, 0.25) * (C.LOSS_MARGIN / SIGMA["nats"] if METRICS[k].unit == "nats" else 1.0)
           for k in where for n in names} if effect else {}  # fmt: skip
    keys = [*where, ms.recipe]
    seed_eff = {(k, s): rng.normal(0.0, SEED_SD) for k in keys for s in range(n_seeds)}
    for s in range(n_seeds):
        for n in (x for x in names if x not in gone):
            attrs: dict[str, Any] = {}
            for key in ms.runs(n):
                place = where.get(key, {}).get(n, 0) + (edit(key, n) if edit else 0.0)
                lin = -15.0 if n == C.BASELINES[0] else 0.0
                v = _value(rng, key, place, effect, seed_eff[(key, s)], sd[n], jit.get((key, n), 0.0)) + lin
                attrs[key] = v / METRICS[key].scale
            matched = 100 * attrs.pop(ms.matched, attrs[ms.trained])
            attrs[ms.curve] = _curve(matched, n not in unfit)  # the baseline fits too: read at the same level
            fine = next((k for k in attrs if k.endswith(".finetune_acc")), None)
            if fine is not None:  # the fine-tune run's curve, converged (claim (c) needs it)
                acc = attrs[fine]
                attrs[f"curves.{fine.split('.')[0]}"] = {
                    "step": list(range(6)),
                    "train_loss": [1.0, 0.5, 0.3, 0.2, 0.2, 0.2],
                    "eval_acc": [acc - 0.1, acc - 0.02, acc, acc, acc, acc],
                }
            if stress and rng.random() < P_FAIL:
                attrs[ms.trained] = 0.105  # failed to train: left out, counted in the guards
            recs.append(_record(len(recs), n, s, attrs, "C-C-T-T" if n in OPTIONAL[:3] else n))
    return recs + stem_runs(rng, effect if stem_effect is None else stem_effect, n_seeds, len(recs))


def stem_runs(rng: np.random.Generator, effect: float, n_seeds: int, start: int) -> list[TrialRecord]:
    """Claim (f): a fixed recipe per (model, optimizer) and seed, plus SAMPLES random lr/wd runs each."""
    recs: list[TrialRecord] = []
    cell_sd = {c: rng.uniform(*NOISE_SPREAD) for c in ("ViT_P", "ViT_C")}
    for s in range(n_seeds):
        seed_eff = rng.normal(0.0, SEED_SD)
        for label in ("ViT_P", "ViT_C"):
            for opt in ("adamw", "sgd"):
                drop = effect if (label, opt) == ("ViT_P", "sgd") else 0.0
                for k in range(1 + SAMPLES):
                    lr = 1e-3 if k == 0 else float(rng.uniform(1e-4, 4e-3))  # sample 0: the fixed recipe
                    acc = 80.0 - drop + seed_eff + cell_sd[label] * rng.normal() - (3 * rng.random() if k else 0)
                    attrs = {OBJECTIVE: acc / 100, "lr": lr}
                    params = {"train.lr": lr} if k else {}
                    recs.append(_record(start + len(recs), f"{label}-{opt}", s, attrs, label, opt, params))
        lin = {OBJECTIVE: (65.0 + seed_eff + rng.normal()) / 100}
        recs.append(_record(start + len(recs), C.BASELINES[0], s, lin, "linear baseline"))
    return recs


def _set(records: list[TrialRecord], cand: str, fn: Callable[[dict], object]) -> list[TrialRecord]:
    """Records with fn(measured) applied to every run of `cand` ('*' for every candidate); `measured` is the run's
    flat metrics and curves (record.measured) plus its `candidate`."""
    out = []
    for r in records:
        if cand in ("*", r.candidate):
            flat = {**R.measured(r.run), "candidate": r.candidate}
            fn(flat)
            flat.pop("candidate")
            r = dataclasses.replace(r, run=R.with_measured(r.run, flat))
        out.append(r)
    return out


def _shift_curve(attrs: dict, curve: str, points: float) -> None:
    attrs[curve] = {**attrs[curve], "eval_acc": [a + points / 100 for a in attrs[curve]["eval_acc"]]}


def _rising(attrs: dict, curve: str) -> None:
    attrs[curve] = {**attrs[curve], "eval_acc": [a + 0.01 * t for t, a in enumerate(attrs[curve]["eval_acc"])]}


def _unfit(attrs: dict, curve: str) -> None:
    attrs[curve] = {**attrs[curve], "train_loss": _curve(0.0, False)["train_loss"]}


def _reverse(attrs: dict, key: str) -> None:
    place = places()[key].get(attrs["candidate"], 0)
    if key in attrs:
        attrs[key] += 2 * EFFECT * SIGMA["%"] * place / 100


def _paths(ms: Measures, by_id: dict[str, C.Claim]) -> dict[str, tuple]:
    """Refutation paths: name → (candidate, edit of its runs, claim, verdict, words of the reason), applied to a
    paper-order study (EFFECT σ, no random stress). Each must fire through judge_records."""
    d = by_id["d"]
    clash, gain, floor = by_id["b"].measures[1], ms.only[0], ms.first(d)  # gain: what the transfer guard reads
    return {
        "≈ violated": ("C-C-C-C", lambda a: _shift_curve(a, ms.curve, -2 * EFFECT), "a", "not supported",
                       "'≈' relation violated"),
        "≥ violated": ("C-C-T-T", lambda a: a.update({k: a[k] - 0.12 for k in d.measures if k in ms.recorded}),
                       "d", "not supported", "'≥' relation violated"),
        "key reversed": ("C-T-T-T", lambda a: a.update({k: a[k] + 0.12 for k in ms.only}), "c", "not supported",
                         "key relation significantly reversed"),
        "second-measure clash": ("*", lambda a: _reverse(a, clash), "b", "inconclusive",
                                 f"{METRICS[clash].label} says not supported"),
        "guard: failed to train": ("C-T-T-T", lambda a: a.update({ms.trained: 0.105}), "a", "inconclusive",
                                   "C-T-T-T: every run failed to train"),
        "guard: never fits": ("C-T-T-T", lambda a: _unfit(a, ms.curve), "a", "inconclusive",
                              "C-T-T-T never fit below"),
        "guard: below the linear baseline": (C.BASELINES[0], lambda a: a.update(
            {k: 0.99 for k in (floor, ms.recipe) if k in a}), "d", "inconclusive",
            f"below the linear baseline on {METRICS[floor].label}"),
        "guard: not converged": ("V1", lambda a: _rising(a, ms.curve), "d", "inconclusive",
                                 "V1: 3 of 3 run(s) not converged"),
        "guard: pretraining helped none": ("*", lambda a: a.update({gain: -0.05}) if gain in a else None, "c",
                                           "inconclusive", "pretraining helped no key candidate"),
        "guard (f): below the linear baseline": (C.BASELINES[0], lambda a: a.update(
            {ms.recipe: 0.99} if ms.recipe in a else {}), "f", "inconclusive",
            "is not above the linear baseline's 99.0% on the same seeds"),
    }  # fmt: skip


PATHS = _paths(measures(), claims())


def paths(seed: int = 0) -> dict[str, dict]:
    """Each refutation path's claim verdict and reason on an edited paper-order study."""
    base = study(np.random.default_rng([seed, 2]), EFFECT, stress=False, stem_effect=STEM_EFFECT)
    out = {}
    for name, (cand, fn, cid, _, _) in PATHS.items():
        claims = judging.judge_records(SPACE, _set(base, cand, fn), describe=False)["claims"]
        c = next(c for c in claims if c["id"] == cid)
        out[name] = {"claim": cid, "verdict": c["verdict"], "why": c["why"]}
    return out


def verdicts(records: list[TrialRecord]) -> dict[str, str]:
    """Claim id → verdict, judged by the report's own path (report.judging)."""
    return {c["id"]: c["verdict"] for c in judging.judge_records(SPACE, records, describe=False)["claims"]}


def replicate(case: str, i: int, seed: int = 0) -> dict[str, str]:
    """Verdicts of replicate i of a case ('null' or 'power'), from its own seed: any one can be rerun alone."""
    rng = np.random.default_rng([seed, 0 if case == "null" else 1, i])
    effect, stem_effect = (0.0, 0.0) if case == "null" else (EFFECT, STEM_EFFECT)
    return verdicts(study(rng, effect, stem_effect=stem_effect))


def simulate(case: str, replicates: int, seed: int = 0) -> dict:
    """Verdicts per replicate (one letter per claim a-f: s / n / i / t = not tested / - absent) and counts."""
    rows = [replicate(case, i, seed) for i in range(replicates)]
    code = {"supported": "s", "not supported": "n", "inconclusive": "i", NOT_TESTED: "t"}
    counts: dict[str, dict[str, int]] = {}
    for row in rows:
        for cid, verdict in row.items():
            per = counts.setdefault(cid, {})
            per[verdict] = per.get(verdict, 0) + 1
    codes = ["".join(code[row[c]] if c in row else "-" for c in CLAIMS) for row in rows]
    return {"replicates": replicates, "per_claim": dict(sorted(counts.items())), "codes": codes}


def upper(k: int, n: int, conf: float = 0.95) -> float:
    """One-sided Clopper-Pearson upper bound of a rate k / n."""
    return 1.0 if k >= n else float(st.beta.ppf(conf, k + 1, n - k))


def rates(null: dict, alt: dict) -> dict[str, dict]:
    """Per claim: firm rate on null studies with its 95% upper bound, and the supported rate at the effect."""
    out = {}
    for cid, per in null["per_claim"].items():
        n, firm = sum(per.values()), sum(per.get(v, 0) for v in FIRM)
        a = alt["per_claim"].get(cid, {})
        m = sum(a.values())
        out[cid] = {"null_firm": firm / n, "null_firm_upper95": upper(firm, n), "null_n": n,
                    "power": a.get("supported", 0) / m if m else None, "power_n": m,
                    "alt_not_supported": a.get("not supported", 0)}  # fmt: skip
    return out


@lru_cache(maxsize=2)
def calibrate(replicates: int = 1000, power_replicates: int = 200, seed: int = 0) -> dict:
    """The rule's per-claim false-verdict rates (null studies) and power (paper order at EFFECT / STEM_EFFECT σ)."""
    null, alt = simulate("null", replicates, seed), simulate("power", power_replicates, seed)
    return {"rule_version": RULE_VERSION, "replicates": replicates, "power_replicates": power_replicates,
            "n_seeds": 3, "effect_sigma": EFFECT, "stem_effect_sigma": STEM_EFFECT, "seed": seed,
            "per_claim": rates(null, alt), "null": null, "alternative": alt}  # fmt: skip


def table() -> dict | None:
    """The committed calibration of this rule version (calibration.json), or None when it is stale or missing."""
    try:
        data = json.loads(TABLE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if data.get("rule_version") == RULE_VERSION else None


def figures() -> dict | None:
    """The committed table's per-claim figures and settings, without the per-replicate verdicts (for reports)."""
    data = table()
    return None if data is None else {k: v for k, v in data.items() if k not in ("null", "alternative")}


def aa_figures() -> dict | None:
    """The committed A/A table's per-claim figures (firm share of studies with one architecture under every name,
    trained and reported for real) for this rule version, without its per-study verdicts; None if stale or missing."""
    try:
        data = json.loads(AA_TABLE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if data.get("rule_version") != RULE_VERSION:
        return None
    return {k: v for k, v in data.items() if k not in ("verdicts", "errors")}


def write_table() -> Path:
    """Regenerate calibration.json for RULE_VERSION (python -m coatsearch.report.calibration)."""
    TABLE.write_text(json.dumps(calibrate(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return TABLE


if __name__ == "__main__":
    print(write_table())
