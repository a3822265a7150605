"""Calibration of the verdict rule: simulated studies judged by the report's own code (info rows → verdicts).

A simulated study has every model of claims (a)–(e) on each claim's deciding measure, n seeds each. A run's value
is `order effect + seed effect + noise`: the seed effect (sd SEED_SD σ) is shared by every candidate of a seed,
as the same data subset and eval set are; σ is the sd of one run's noise (a paired difference has sd σ√2).
Every candidate runs every score. Null studies have no order effect; paper-order studies move the models
`effect` σ apart at every key relation (> or ≫) of each claim and leave ≈ / ≥ neighbours equal.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pandas as pd

from coatsearch.report import claims as C
from coatsearch.report import info
from coatsearch.report import verdicts as V

SEED_SD = 2.0  # sd of the shared seed effect, in σ: pairing removes it
BASE = 80.0  # level of every measure (far from chance and from 0)
FIRM = ("supported", "not supported")


def levels() -> dict[str, dict[str, int]]:
    """Per deciding measure: each simulated candidate's place in its claim's order, in key-relation steps."""
    out: dict[str, dict[str, int]] = {}
    for claim in C.CHAIN_CLAIMS:
        names, syms = V.parse_chain(claim.chain)
        step, mine = 0, {names[0]: 0}
        for name, sym in zip(names[1:], syms, strict=True):
            step += sym in (">", "≫")
            mine[name] = step
        mine = {(C.V0_STANDIN if n == "V0" else n): lv for n, lv in mine.items()}
        out.setdefault(claim.measures[0], {}).update(mine)
    acc = out.setdefault(C.REL_CLAIM.measures[0], {})
    on = C.V0_STANDIN
    acc[f"{on}-{C.NOREL_TAG}"] = acc.setdefault(on, 0) + 1
    return out


def study(rng: np.random.Generator, effect: float, n_seeds: int) -> list[dict]:
    """One simulated study's candidate rows (display units, σ = 1)."""
    recs, idents = [], {}
    places_by_key = levels()
    names = list(dict.fromkeys(n for places in places_by_key.values() for n in places))
    for key, places in places_by_key.items():  # every candidate runs every score, as in a real study
        sign = 1.0 if info.METRICS[key].better == "higher" else -1.0
        seed_effect = rng.normal(0.0, SEED_SD, n_seeds)
        for name in names:
            place = places.get(name, 0)
            values = BASE - sign * effect * place + seed_effect + rng.normal(0.0, 1.0, n_seeds)
            recs += [(name, s, 0, key, float(v), "", False, None) for s, v in enumerate(values)]
            idents[name] = {"candidate": name, "model_label": name, "layout": name, "stages": "", "depths": [],
                            "optimizers": [], "n": n_seeds}  # fmt: skip
    cols = ["candidate", "seed", "number", "key", "value", "group", "failed", "converged"]
    return info.rows_from_frame(pd.DataFrame(recs, columns=cols), idents)


def simulate(effect: float, replicates: int, n_seeds: int = 3, seed: int = 0) -> dict:
    """Verdict counts per claim over simulated studies with key relations `effect` σ apart (0 = null)."""
    rng = np.random.default_rng(seed)
    counts: dict[str, dict[str, int]] = {}
    for _ in range(replicates):
        for claim in V.all_claims(study(rng, effect, n_seeds), [], [], describe=False):
            per = counts.setdefault(claim["id"], dict.fromkeys(("supported", "not supported", "inconclusive"), 0))
            per[claim["verdict"]] += 1
    total = sum(sum(c.values()) for c in counts.values())
    return {
        "effect_sigma": effect,
        "replicates": replicates,
        "n_seeds": n_seeds,
        "per_claim": counts,
        "firm_rate": sum(c[v] for c in counts.values() for v in FIRM) / total,
        "supported_rate": sum(c["supported"] for c in counts.values()) / total,
    }


@lru_cache(maxsize=4)
def calibrate(replicates: int = 200, n_seeds: int = 3, effect: float = 3.0, seed: int = 0) -> dict:
    """The rule's measured false-verdict rate (null studies) and power (paper order at `effect` σ), once a process."""
    null, alt = simulate(0.0, replicates, n_seeds, seed), simulate(effect, replicates, n_seeds, seed + 1)
    return {
        "replicates": replicates,
        "n_seeds": n_seeds,
        "effect_sigma": effect,
        "false_verdict_rate": null["firm_rate"],
        "power": alt["supported_rate"],
        "null": null,
        "alternative": alt,
    }
