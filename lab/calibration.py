"""Calibration of the verdict rule through the whole pipeline: simulated studies of the shipped profiles, as trial
records, judged per claim by the report's own path (report.judging).

The studies (lab.simulate) follow each shipped profile that decides a claim: its candidates, the scores each
runs, its seeds, its schedules as training.fit measures them (regular points, curves.Dense's points where the ladder is
crossed, the stop one rung below it; readings from step 0 and wide brackets censored), curves whose accuracy is not
linear in log loss, σ from the committed reports, and the baselines either below every model ("in regime") or
where the committed default reports put them ("real": the fair floor 3.1 points below paper_layouts' models at the
matched reading, 2.7 below vit_stems' cells). Null studies have no order effect and carry the simulated stress;
power studies move the models EFFECT σ apart at every key relation of (a)-(e) (≈ / ≥ neighbours within a quarter
of a margin; "real": the pilot's 2.2 points for (a)) and give (f) the paper's gap interaction (4.6 points), at the
committed studies' failure rate and again under the stress (CASES). A claim's figures come from the profile that
decides it (simulate.DECIDES).
The committed table (calibration.json) is keyed by RULE_VERSION and carries every constant a report prints beside
its figures (constants()); reports read it through papers/rule_tables.py and never import this generator or the
simulator. Tests rerun a stride of it. The simulator reads the shipped spaces/ of a checkout: from an installed
wheel, `python -m lab.calibration` says so in one line (simulate.need_checkout).
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Callable, Mapping
from concurrent.futures import ProcessPoolExecutor
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats as st

from coatsearch.analysis import constants as CS
from coatsearch.analysis.tables import METRICS
from coatsearch.errors import UserError
from coatsearch.papers import categories as K
from coatsearch.papers import claims as C
from coatsearch.papers import judging
from coatsearch.papers import verdicts as V
from coatsearch.papers.paper import GEN, MATCHED_KEY, NOT_TESTED
from coatsearch.papers.rule_tables import RULE_VERSION, TABLE
from coatsearch.storage import record as R
from coatsearch.storage.record import TrialRecord
from lab import simulate as Sim

FIRM = K.FIRM
CODE = {K.SUPPORTED: "s", K.NOT_SUPPORTED: "n", **dict.fromkeys(K.NOT_FIRM, "i"), NOT_TESTED: "t"}  # i: not firm
CLAIMS = "abcdef"
EFFECT = 6.0  # σ per key relation of claims (a)-(e) in the power studies
STEM_EFFECT = float(C.STEM_CLAIM.paper_effect or 0.0)  # points: (f)'s gap interaction in the power studies
STEM_PEAK = C.PEAK_EFFECT  # points: (f)'s peak difference in the power studies (0 in the null)
REPLICATES, POWER_REPLICATES = 1000, 100
_N_SEEDS = "4-10"  # the seeds per candidate of the simulated profiles, as a report prints them
# The profiles each scenario simulates: "real" moves only what the committed paper_layouts default report measured.
SCENARIO_PROFILES = {Sim.IN_REGIME.name: tuple(Sim.PROFILES), Sim.REAL.name: ("layouts", "stems")}
# Null studies carry the simulated stress (failed runs, missing and never-fitting candidates): a verdict must stay
# right on a broken study. Power studies run at the failure rates the committed default studies measured (none of
# their 110 runs at chance, no candidate missing or unfit: `python benchmarks/sim_constants.py --failures`); the same
# studies with the stress give `power_stressed`, the power if 2% of runs failed (that rate's 95% upper bound is 2.7%).
CASES = ("null", "power", "stressed")


def setting(case: str, scenario: Sim.Scenario) -> Sim.Setting:
    """The simulation setting of a case (CASES) in a scenario."""
    if case == "null":
        return Sim.Setting(scenario=scenario)
    effect = EFFECT if scenario.effect is None else scenario.effect
    return Sim.Setting(effect=effect, stem_effect=STEM_EFFECT, stem_peak=STEM_PEAK, scenario=scenario,
                       stress=case == "stressed")  # fmt: skip


def verdicts(space: dict, records: list[TrialRecord]) -> Mapping[str, str]:
    """Claim id → verdict, judged by the report's own path (report.judging)."""
    return {c.id: c.verdict for c in judging.judge_records(space, records, describe=False).claims}


def replicate_rng(case: str, scenario: Sim.Scenario, key: str, i: int, seed: int = 0) -> np.random.Generator:
    """The generator of replicate i of a case and scenario for one simulated profile: every (profile, replicate)
    has its own seed, so any one can be rerun alone; a stressed power study draws the power study's seed, so the two
    differ by the stress alone."""
    n = list(Sim.PROFILES).index(key)
    return np.random.default_rng([seed, 0 if case == "null" else 1, Sim.SCENARIOS.index(scenario), n, i])


def replicate(case: str, scenario: Sim.Scenario, i: int, seed: int = 0,
              keys: tuple[str, ...] | None = None) -> Mapping[str, str]:  # fmt: skip
    """Verdicts of replicate i of a case and scenario, each claim from the profile that decides it (`keys`: only
    those simulated profiles, as benchmarks/calibration_extend.py adds one to the table)."""
    out = {}
    for key in SCENARIO_PROFILES[scenario.name] if keys is None else keys:
        prof = Sim.profile(key)
        got = verdicts(
            prof.record, Sim.study(replicate_rng(case, scenario, key, i, seed), prof, setting(case, scenario))
        )
        out.update({c: v for c, v in got.items() if c in prof.claims})
    return out


def code(row: Mapping[str, str]) -> str:
    """One letter per claim a-f: s / n / i / t (not tested) / - (absent)."""
    return "".join(CODE[row[c]] if c in row else "-" for c in CLAIMS)


def _codes(args: tuple[str, str, range, int]) -> list[str]:
    case, name, idx, seed = args
    return [code(replicate(case, scenario(name), i, seed)) for i in idx]


def _simulate(case: str, sc: Sim.Scenario, replicates: int, seed: int = 0, workers: int = 1) -> dict:
    """Verdicts per replicate (as codes) and counts per claim; `workers` processes share the replicates."""
    parts = [(case, sc.name, range(w, replicates, workers), seed) for w in range(workers)]
    if workers > 1:
        with ProcessPoolExecutor(workers) as pool:
            done = list(pool.map(_codes, parts))
    else:
        done = [_codes(parts[0])]
    return counted([done[i % workers][i // workers] for i in range(replicates)])


def counted(codes: list[str]) -> dict:
    """A case's table entry from its replicates' codes: the codes and the count of each verdict per claim."""
    counts: dict[str, dict[str, int]] = {}
    word = {"s": K.SUPPORTED, "n": K.NOT_SUPPORTED, "i": "not firm", "t": NOT_TESTED}  # CODE's letters, read back
    for row in codes:
        for cid, letter in zip(CLAIMS, row, strict=True):
            if letter != "-":
                per = counts.setdefault(cid, {})
                per[word[letter]] = per.get(word[letter], 0) + 1
    return {"replicates": len(codes), "per_claim": dict(sorted(counts.items())), "codes": codes}


def upper(k: int, n: int, conf: float = 0.95) -> float:
    """One-sided Clopper-Pearson upper bound of a rate k / n."""
    return 1.0 if k >= n else float(st.beta.ppf(conf, k + 1, n - k))


def rates(null: dict, alt: dict, stressed: dict) -> dict[str, dict]:
    """Per claim: firm rate on null studies with its 95% upper bound, the supported rate at the effect, and that
    rate on the same power studies under stress."""
    out = {}
    for cid, per in null["per_claim"].items():
        n, firm = sum(per.values()), sum(per.get(v, 0) for v in FIRM)
        a, b = alt["per_claim"].get(cid, {}), stressed["per_claim"].get(cid, {})
        m, mb = sum(a.values()), sum(b.values())
        out[cid] = {"null_firm": firm / n, "null_firm_upper95": upper(firm, n), "null_n": n,
                    "power": a.get("supported", 0) / m if m else None, "power_n": m,
                    "power_stressed": b.get("supported", 0) / mb if mb else None,
                    "alt_not_supported": a.get("not supported", 0)}  # fmt: skip
    return out


def _profiles() -> dict[str, dict]:
    """The simulated profiles: space file, profile, seeds and the claims each decides."""
    return {k: {"space": p, "profile": n, "seeds": list(Sim.profile(k).seeds), "claims": Sim.DECIDES[k]}
            for k, (p, n) in Sim.PROFILES.items()}  # fmt: skip


@lru_cache(maxsize=2)
def _calibrate(replicates: int = REPLICATES, power_replicates: int = POWER_REPLICATES, seed: int = 0,
              workers: int = 1) -> dict:  # fmt: skip
    """Per scenario and claim: the false-verdict rate on null studies and the power at the effect."""
    out: dict[str, Any] = {"rule_version": RULE_VERSION, "replicates": replicates, "seed": seed,
                           "power_replicates": power_replicates, "effect_sigma": EFFECT,
                           "stem_effect_points": STEM_EFFECT, "profiles": _profiles(),
                           "scenario_profiles": {k: list(v) for k, v in SCENARIO_PROFILES.items()},
                           **constants(), "scenarios": {}}  # fmt: skip
    for sc in Sim.SCENARIOS:
        null = _simulate("null", sc, replicates, seed, workers)
        alt = _simulate("power", sc, power_replicates, seed, workers)
        stressed = _simulate("stressed", sc, power_replicates, seed, workers)
        effect = EFFECT if sc.effect is None else sc.effect
        out["scenarios"][sc.name] = {"per_claim": rates(null, alt, stressed), "null": null, "power": alt,
                                     "stressed": stressed, "effect_sigma": effect}  # fmt: skip
    return out


def constants() -> dict[str, Any]:
    """The constants a report prints beside the table's figures (rule_tables.CITED), written into the table so
    that reading it needs no simulator: the scenario a report cites, the seed counts, (f)'s effect in its σ."""
    return {"in_regime": Sim.IN_REGIME.name, "n_seeds": _N_SEEDS, "stem_effect_sigma": STEM_EFFECT / Sim.STEM_SIGMA}


def scenario(name: str) -> Sim.Scenario:
    """The scenario of that name."""
    return next(s for s in Sim.SCENARIOS if s.name == name)


def summary(data: dict) -> str:
    """Every scenario's null firm rate, its 95% upper bound and power, per claim, one line per scenario."""

    def one(k: str, v: dict) -> str:
        null = f"null {100 * v['null_firm']:.1f}% of {v['null_n']} (95% upper {100 * v['null_firm_upper95']:.1f}%)"
        power = "–" if v["power"] is None else f"{100 * v['power']:.0f}% of {v['power_n']}"
        return f"({k}) {null}, power {power}"

    return "\n".join(f"{name}: " + "; ".join(one(k, v) for k, v in sorted(sc["per_claim"].items()))
                     for name, sc in data["scenarios"].items())  # fmt: skip


def _write_table(workers: int = 3) -> Path:
    """Regenerate calibration.json for RULE_VERSION (python -m lab.calibration)."""
    Sim.need_checkout()
    TABLE.write_text(json.dumps(_calibrate(workers=workers), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return TABLE


# ---------------------------------------------------------------------------------------------- refutation paths

_PATH_FIT_STEPS = 1000.0  # the paths' studies: every model fits in 1,000 steps with quiet probes, so readings are read
_PATH_PROBE_SD = 0.1


def edit(records: list[TrialRecord], names: tuple[str, ...], fn: Callable[[dict], object]) -> list[TrialRecord]:
    """Records with fn(measured) applied to every run of the candidates `names` ('*': every candidate);
    `measured` is the run's flat metrics and curves (record.measured) plus its `candidate`."""
    out = []
    for r in records:
        if "*" in names or r.candidate in names:
            flat = {**R.measured(r.run), "candidate": r.candidate}
            fn(flat)
            flat.pop("candidate")
            r = dataclasses.replace(r, run=R.with_measured(r.run, flat))
        out.append(r)
    return out


def _shift_curve(attrs: dict, points: float) -> None:
    """Every trained point of the generalization curve `points` higher in eval accuracy."""
    c = attrs[f"curves.{GEN}"]
    moved = [a + (points / 100 if s else 0) for s, a in zip(c["step"], c["eval_acc"], strict=True)]
    attrs[f"curves.{GEN}"] = {**c, "eval_acc": moved}


def _from_step0(attrs: dict) -> None:
    """The generalization curve measured only at step 0 and at its stop: the reading's bracket starts untrained."""
    c = attrs[f"curves.{GEN}"]
    attrs[f"curves.{GEN}"] = {k: [v[0], v[-1]] if isinstance(v, list) else v for k, v in c.items()}


def shift(attrs: dict, keys: str | tuple[str, ...], points: float) -> None:
    """Recorded measures `points` higher (display units)."""
    for key in (keys,) if isinstance(keys, str) else keys:
        if key in attrs:
            attrs[key] += points / METRICS[key].scale


def _cut_curve(attrs: dict, group: str, points: int) -> None:
    """A run's curve of `group` cut to its first `points` points (too short to check convergence)."""
    c = attrs[f"curves.{group}"]
    attrs[f"curves.{group}"] = {k: v[:points] if isinstance(v, list) else v for k, v in c.items()}


def rising(attrs: dict, group: str) -> None:
    """A run's curve of `group` still rising 10 points over its last third."""
    c = attrs[f"curves.{group}"]
    n = len(c["eval_acc"])
    lower = [a - 0.1 * (n - 1 - i) / (n - 1) for i, a in enumerate(c["eval_acc"])]
    attrs[f"curves.{group}"] = {**c, "eval_acc": lower}


def reverse(attrs: dict, key: str) -> None:
    """A measure moved two key steps against its claim's order, per the run's place (its claim reads it reversed)."""
    if key in attrs:
        place = Sim.places()[key].get(attrs.get("candidate", ""), 0)
        shift(attrs, key, 2 * EFFECT * Sim.sigma(key) * place)


def _paths() -> dict[str, tuple]:
    """Refutation paths: name → (profile, candidates, edit of their runs, claim, verdict, words of the reason),
    applied to a paper-order study (EFFECT σ, the paper's (f) interaction, no random stress, every model fitting
    in _PATH_FIT_STEPS). Each must fire through judge_records."""
    m, acc, gain = Sim.sigma(MATCHED_KEY), Sim.ACC, V.gain()
    big = 2 * EFFECT * m  # points: two key steps of (a)
    fail, transfer, clash = "every run failed to train", C.CHAIN_CLAIMS[2].measures, C.CHAIN_CLAIMS[1].measures[1]
    linear, out, overfit = CS.BASELINES[0], K.OUT_OF_REGIME, C.CHAIN_CLAIMS[1].overfit
    assert overfit is not None  # claim (b) names its train and eval measures
    return {
        "(a) ≈ violated": ("layouts-all", ("C-C-C-C",), lambda a: _shift_curve(a, -big / 2), "a", "not supported",
                           "'≈' relation violated"),
        "(a) ≥ violated": ("layouts-all", ("C-C-C-C", "C-C-C-T"), lambda a: _shift_curve(a, -big / 2), "a",
                           "not supported", "'≥' relation violated"),
        "(a) key reversed": ("layouts-all", ("C-T-T-T",), lambda a: _shift_curve(a, big), "a", "not supported",
                             "key relation significantly reversed: C-C-T-T vs C-T-T-T"),
        "(a) extremes reversed": ("layouts", ("ViT_REL",), lambda a: _shift_curve(a, 2 * big), "a", "not supported",
                                  "key relation significantly reversed: C-C-C-T vs ViT_REL"),
        "(c) key reversed": ("layouts-full", ("C-T-T-T",), lambda a: shift(a, transfer, 12.0), "c",
                             "not supported", "key relation significantly reversed"),
        # (b)'s clash on the full profile's 10 seeds: at the capacity profile's 3 seeds the deciding measure itself
        # is underpowered under the pair-noise rule (23% at EFFECT σ), so no clash could show there
        "(b) second-measure clash": ("layouts-full", ("*",), lambda a: reverse(a, clash), "b", K.UNRESOLVED,
                                     f"{METRICS[clash].label} says not supported"),
        "(f) reversed": ("stems", ("ViT_C-sgd-fixed",), lambda a: shift(a, acc, -3 * STEM_EFFECT), "f",
                         "not supported", "1 part(s) significantly reversed (gap contrast)"),
        "(f) peak reversed": ("stems", ("ViT_C-adamw-fixed", "ViT_C-sgd-fixed"), lambda a: shift(a, acc,
                              -2 * STEM_PEAK), "f", "not supported", "1 part(s) significantly reversed (peak)"),
        "guard (a): failed to train": ("layouts", ("C-C-C-C",), lambda a: a.update({Sim.GEN_ACC: 0.105}), "a", out,
                                       f"C-C-C-C: {fail}"),
        "guard (a): never fits": ("layouts", ("C-C-C-T",), lambda a: a[f"curves.{GEN}"].update(
            train_loss=[max(x, 0.3) for x in a[f"curves.{GEN}"]["train_loss"]]), "a", out, "C-C-C-T never fit below"),
        "guard (a): step-0 brackets censored": ("layouts", ("C-C-C-C",), _from_step0, "a", out,
                                                "C-C-C-C: 5 of 5 readings at 0.07 nats censored (bracket starts"),
        "guard (a): below the fair linear floor at the matched reading": (
            "layouts", (linear,), lambda a: a.update({f"{GEN}.floor_acc": 0.99}), "a", out,
            f"C-C-C-C not shown above the fair linear floor on {METRICS[MATCHED_KEY].label} at 0.07 nats"),
        "guard (d): below the linear baseline": ("layouts-all", (linear,), lambda a: shift(a, acc, 20.0), "d", out,
                                                 f"V0 not shown above the fair linear floor on {METRICS[acc].label}"),
        "guard (d): convergence not checkable": ("layouts-all", ("C-C-T-T",), lambda a: _cut_curve(a, Sim.ACC_SCORE,
                                                 2), "d", out, "out of regime — V0: convergence not checkable"),
        "guard (e): convergence not checkable": ("layouts-all", ("C-C-T-T",), lambda a: _cut_curve(a, Sim.ACC_SCORE,
                                                 2), "e", out, "out of regime — C-C-T-T: convergence not checkable"),
        "guard (b): a model overfits": ("layouts-capacity", ("C-C-C-C",), lambda a: a.update(
            {overfit[1]: a[overfit[0]] + 0.5}), "b", out, "C-C-C-C overfits"),
        "guard (c): pretraining helped none": ("layouts-full", ("*",), lambda a: a.update({gain: -0.05}) if gain in a
                                               else None, "c", out, "pretraining helped no key candidate"),
        "guard (f): below the linear baseline": ("stems", (linear,), lambda a: shift(a, acc, 30.0), "f", out,
                                                 "not shown above the fair linear floor"),
    }  # fmt: skip


PATHS = _paths()


def _path_study(key: str, seed: int = 0) -> list[TrialRecord]:
    """The paper-order study the refutation paths edit, for one profile."""
    st = Sim.Setting(effect=EFFECT, stem_effect=STEM_EFFECT, stem_peak=STEM_PEAK, stress=False,
                     fit_steps=_PATH_FIT_STEPS, probe_sd=_PATH_PROBE_SD)  # fmt: skip
    index = [*Sim.PROFILES, *Sim.PATH_PROFILES].index(key)
    return Sim.study(np.random.default_rng([seed, 2, index]), Sim.profile(key), st)


def paths(seed: int = 0) -> dict[str, Mapping[str, Any]]:
    """Each refutation path's claim verdict and reason on its edited paper-order study (and each profile's
    unedited verdicts under the name of the profile)."""
    base = {key: _path_study(key, seed) for key in (*Sim.PROFILES, *Sim.PATH_PROFILES)}
    out = {key: verdicts(Sim.profile(key).record, recs) for key, recs in base.items()}
    for name, (key, names, fn, cid, _, _) in PATHS.items():
        found = judging.judge_records(Sim.profile(key).record, edit(base[key], names, fn), describe=False).claims
        c = next(c for c in found if c.id == cid)
        out[name] = {"claim": cid, "verdict": c.verdict, "why": c.why}
    return out


if __name__ == "__main__":
    try:
        print(_write_table())
    except UserError as exc:
        sys.exit(f"coatsearch: error: {exc}")
