"""Simulated studies of the shipped profiles, as trial records the report judges (lab.calibration).

A profile is read through the project's loader (api.load_space): its candidates, which scores each runs, its seeds,
and each run's measurement schedule as training.fit makes it: the regular points (schedule.curve_steps at the steps of
schedule.run_steps), the dense points of a matched-loss run placed by curves.Dense's rule on a simulated running
batch loss, and the stop (the first point after step 0 at or below `stop_at_loss`, one rung below the ladder). Only
the scores that the claims a profile decides read are simulated.

A generalization run's loss falls log-linearly to FIT_LOSS at its model's fit speed (_FIT_STEPS, from the committed
paper_layouts report) down to a floor; the probe loss measured at a point scatters around it by the model's own
_PROBE_SD (fast conv models' probes jump 2-5x between neighbouring points), so brackets can start at step 0 or span
more than measures.MAX_SPAN and are censored as the report censors them. Eval accuracy saturates in log loss
(acc = chance + (top − chance)(1 − (L/L0)^_ACC_POWER)), so an interpolated reading is not exact. A run's value of a
measure (for the matched reading: its eval accuracy at FIT_LOSS) is `level + order effect + seed effect + noise`,
with σ per measure from the committed reports (_SIGMA) and a noise sd that differs per candidate. Baselines sit where
the committed reports put them relative to the models (Scenario "real") or below every model ("in regime").
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from coatsearch import scores
from coatsearch.analysis import constants as CS
from coatsearch.analysis import tables
from coatsearch.analysis.tables import METRICS
from coatsearch.errors import UserError
from coatsearch.papers import claims as C
from coatsearch.papers.paper import GEN, MATCHED_KEY
from coatsearch.scores.base import Measured
from coatsearch.space.objects import Baseline, Candidate, Space, load_space
from coatsearch.storage import record as R
from coatsearch.storage.record import TrialRecord
from coatsearch.storage.trials import space_record
from coatsearch.training.schedule import DENSE_RATIO, DENSE_WINDOW, curve_steps, run_steps, subset_optim
from coatsearch.vocab import specs
from coatsearch.vocab.specs import model_label

ACC = C.REL_CLAIM.measures[0]  # the recipe accuracy that decides (d) and (e): the accuracy runs' guard accuracy
ACC_SCORE = ACC.partition(".")[0]
GEN_ACC = next(g.acc for g in scores.guards() if g.group == GEN)  # the generalization run's final eval accuracy

ROOT = Path(__file__).resolve().parents[1]  # the repository: lab/ and spaces/ live here (a checkout)
PROFILES = {
    "layouts": ("spaces/paper_layouts.yaml", "default"),
    "stems": ("spaces/vit_stems.yaml", "default"),
    "layouts-full": ("spaces/paper_layouts.yaml", "full"),
    "layouts-capacity": ("spaces/paper_layouts.yaml", C.CAPACITY_SCORE),  # the profile named after (b)'s score
}  # appended, never reordered: a profile's replicates draw from its index (calibration.replicate_rng). The depth
# profile is not simulated: gen_curve's accuracy keeps rising past FIT_LOSS, so its end-of-schedule reading of V0
# fails the convergence guard in every simulated study, where the real 10-epoch runs rose 0.3-0.6 points
DECIDES = {"layouts": "a", "stems": "f", "layouts-full": "c", "layouts-capacity": "b"}  # the claims each simulated
# profile calibrates
_DRAWN = {"layouts-full": "bc"}  # the claims whose runs a profile draws, where more than it calibrates: the full
# profile calibrated (b) before the capacity profile did, and keeps drawing its runs so that its (c) replicates stay
# Profiles the refutation paths (calibration.PATHS) also edit, never in the calibration table: every layout of
# paper_layouts at its full profile, judged on (a), (d) and (e), whose paths need the models the CPU default lacks.
PATH_PROFILES = {"layouts-all": ("spaces/paper_layouts.yaml", "full", "ade")}
_FULL_PER_CLASS = 6000  # Fashion-MNIST's training images per class: a subset with per_class null takes them all
L0, CHANCE = 2.45, 10.0  # an untrained model's train loss (nats) and eval accuracy (%), as the committed curves start
# Steps to fit the paper_layouts default's 12,000 images to FIT_LOSS at batch 64, as its committed report measured
# them (median step at which the probe loss reaches 0.1 nats, interpolated in log loss, over 5 runs each:
# `python benchmarks/sim_constants.py paper_layouts`): C-C-C-C, C-C-C-T, ViT_REL. C-C-T-T and C-T-T-T, which the
# default does not train, keep their measured ratio to C-C-C-C (1.84 and 4.32: the pilot spaces/pilots/regime_a.yaml
# against the earlier default). Other subsets and batches scale with images / batch. The linear baseline and the
# small CNN level off above FIT_LOSS (_FLOOR). Models not listed fit like C-C-T-T.
_FIT_STEPS = {"C-C-C-C": 1076, "C-C-C-T": 1316, "C-C-T-T": 1976, "C-T-T-T": 4648, "ViT_REL": 3409,
             "linear baseline": 3000, "cnn baseline": 3000}  # fmt: skip
_FLOOR = {
    "linear baseline": 0.36,
    "cnn baseline": 0.28,
}  # nats: where a model's train loss levels off, the committed default's baseline ends (others: FIT_LOSS / 10)
# Log-sd of the probe loss around a log-linear fit of each run's curve down to FIT_LOSS, median of its 5 runs in
# the committed paper_layouts default report (C-C-C-C, C-C-C-T, ViT_REL, both baselines: its 2,000-image probe);
# C-C-T-T and C-T-T-T from the earlier 10.5M-MAC report, whose 500-image probe jumped more.
_PROBE_SD = {"C-C-C-C": 0.105, "C-C-C-T": 0.11, "C-C-T-T": 0.32, "C-T-T-T": 0.25, "ViT_REL": 0.084,
            "linear baseline": 0.059, "cnn baseline": 0.15}  # fmt: skip
# Log-sd of one run's fit speed (steps to FIT_LOSS) around its model's: 0.02-0.05 across the 5 seeds of each model
# in the committed paper_layouts default and replicate reports (benchmarks/sim_constants.py); the largest is used.
_FIT_JITTER = 0.05
_BATCH_SD = 0.35  # log-sd of one batch's loss around the curve: curves.Dense reads the mean of DENSE_WINDOW of them
FIT_IMAGES, FIT_BATCH = 12000, 64  # the subset and batch _FIT_STEPS were measured at
# One run's noise sd σ, in display units: the committed reports' pooled sd_diff / √2 — paper_layouts' default
# (3M MACs, 12,000 images, 4,000 test images a reading): matched reading 0.636 (df 8); the earlier 10.5M-MAC default:
# gen. eval acc 2.12 (df 12), recipe accuracy 0.86 (df 9); vit_stems' default (18,000 images, unregularized, 4,000
# test images a seed): gap contrast sd 0.625 per seed over 4 cells (/2). Measures no committed report has (capacity,
# transfer): 1 point, 0.02 nats (assumed).
_SIGMA = {MATCHED_KEY: 0.636 / math.sqrt(2), GEN_ACC: 2.12 / math.sqrt(2), ACC: 0.86 / math.sqrt(2)}
STEM_SIGMA = 0.625 / 2
_UNIT_SIGMA = {"%": 1.0, "points": 1.0, "nats": 0.02}
_LEVEL = {"%": 86.7, "points": 3.0, "nats": 0.3}  # the models' mean level per unit (paper_layouts reads 85.2-87.5%)
# (f)'s cells in the committed vit_stems default report (ViT_P AdamW / SGD 85.9 / 84.1%, ViT_C 87.9 / 87.8%), minus
# their mean (86.4%): the optimizer's main effect (AdamW +0.95 points) is kept in every study; the stem's main effect
# (measured +2.85) is set by the study's peak difference (Setting.stem_peak: 0 in a null study, the paper's 2.4 in a
# power study) and the interaction by `stem_effect` (0, or the paper's 4.6 points).
_OPT_MAIN = 0.95
_STEM_MAIN = {"adamw": _OPT_MAIN / 2, "sgd": -_OPT_MAIN / 2}
_STEMS = ("ViT_P", "ViT_C")
_STEM_LEVEL = 86.425
_SEED_SD = 1.0  # sd of the shared seed effect, in σ: pairing removes it
_NOISE_SPREAD = (0.7, 1.4)  # each candidate's noise sd, uniform in this range (× σ)
P_FAIL, P_MISSING, P_UNFIT = 0.02, 0.1, 0.05
_POINT_SD = 0.5  # points: eval noise of one curve point around its run's curve
_ACC_POWER = 1.5  # eval acc = chance + (top − chance)(1 − (L/L0)^1.5): the committed ViT_REL mean curve (60.3, 65.7,
# 67.1, 68.1% at 0.83, 0.43, 0.19, 0.12 nats) against 56, 64, 67, 68 here


@dataclass(frozen=True)
class Scenario:
    """Where the linear baseline sits relative to the models' mean, per measure (points), and the share of accuracy
    runs that still rise over the last third of their curve."""

    name: str
    linear: Mapping[str, float]
    rising: float
    default: float = -15.0  # a measure not listed: the baseline 15 points below the models
    effect: float | None = None  # σ per key relation in its power studies (None: calibration.EFFECT)


# "real": the committed paper_layouts default report (3M MACs, 12,000 images): at its matched level, 0.07 nats, the
# fair linear floor reads 83.6% against the models' 85.2-87.5% (mean 86.7): 3.1 points below; the same floor serves
# the final gen. eval acc. Its power studies move the models apart by the effect the pilot measured: C-C-C-T 2.2
# points above ViT_REL at 0.07 nats (spaces/pilots/regime_a4.yaml, validation images), over the two key steps of
# (a)'s chain: 1.1 points a step. vit_stems' default: the fair linear floor read 83.7% against the cells' mean 86.4
# (2.7 points below). Capacity and transfer were not run: their baseline stays below.
_PILOT_STEP = 2.2 / 2  # points per key step of claim (a) that the pilot measured
REAL = Scenario("real", MappingProxyType({MATCHED_KEY: -3.1, GEN_ACC: -3.1, "stems": -2.7}), 0.0,
                effect=_PILOT_STEP / _SIGMA[MATCHED_KEY])  # fmt: skip
IN_REGIME = Scenario("in regime", MappingProxyType({}), 0.0)
SCENARIOS = (IN_REGIME, REAL)


@dataclass(frozen=True)
class Grid:
    """One run's measurement schedule: regular curve points, stop target and the train-loss ladder (dense points)."""

    points: tuple[int, ...]
    stop_loss: float | None = None
    levels: tuple[float, ...] | None = None

    def taken(self, losses: Any) -> int:
        """How many regular points a run with these losses (one per point) measures: to the first point after
        step 0 at or below the stop target (training.fit never stops at step 0), else all of them."""
        if self.stop_loss is not None:
            for i, (step, loss) in enumerate(zip(self.points, losses, strict=False)):
                if step > 0 and loss <= self.stop_loss:
                    return i + 1
        return len(self.points)


def measured(g: Grid, batch: np.ndarray, probe: np.ndarray) -> list[int]:
    """The steps training.fit measures: every regular point, and curves.Dense's points where the ladder is crossed.

    batch[t], probe[t]: the running mean of the last DENSE_WINDOW batch losses after t steps, and the probe loss a
    point measured at step t would read. A dense point is due once the estimate is at or below the ladder's top ×
    DENSE_RATIO² and has fallen DENSE_RATIO since the previous point, while the previous probe is above one rung
    below the ladder / DENSE_RATIO; the run ends at the first point after step 0 at or below the stop target.
    """
    total = g.points[-1]
    top = max(g.levels) * DENSE_RATIO**2 if g.levels else 0.0
    bottom = specs.rung_below(g.levels) / DENSE_RATIO if g.levels else math.inf
    est = batch.copy()
    est[:DENSE_WINDOW] = math.inf  # the window is not full yet
    out, last, step = [0], math.inf, 0
    while step < total:
        nxt = next(p for p in g.points if p > step)
        if g.levels and probe[step] > bottom:
            due = np.flatnonzero(est[step + 1 : nxt] <= min(top, last / DENSE_RATIO))
            nxt = step + 1 + int(due[0]) if len(due) else nxt
        step, last = nxt, est[nxt]
        out.append(step)
        if g.stop_loss is not None and probe[step] <= g.stop_loss:
            break
    return out


def images(space: Space, subset: specs.SubsetSpec) -> int:
    """Training images of a run on `subset` (per class × classes; every image of the class when per_class is null)."""
    classes = len(subset.classes) if subset.classes else space.classes
    return (subset.per_class or _FULL_PER_CLASS) * classes


def grid(space: Space, optim: specs.OptimSpec, subset: specs.SubsetSpec, levels: bool = False) -> Grid:
    """The schedule of one run on `subset`: the step budget and regular points training.fit measures, its stop and,
    for a matched-loss run (`levels`), the ladder whose crossings get dense points."""
    batch = subset_optim(optim, subset).batch_size
    total = run_steps(subset, images(space, subset), batch)
    ladder = tuple(subset.loss_levels or specs.DEFAULT_LEVELS) if levels else None
    return Grid(tuple(sorted(curve_steps(total, subset.eval_every))), subset.stop_at_loss, ladder)


@dataclass(frozen=True)
class Profile:
    """A shipped profile as the simulation needs it: the loaded space, its space record and the decided claims."""

    key: str
    space: Space
    record: dict = field(hash=False)
    claims: str

    @property
    def seeds(self) -> tuple[int, ...]:
        """The profile's seeds."""
        return tuple(self.space.study.seeds)


def need_checkout() -> None:
    """A one-line UserError unless the shipped space files lie beside the lab (a checkout)."""
    missing = [p for p in dict.fromkeys(v[0] for v in (*PROFILES.values(), *PATH_PROFILES.values()))
               if not (ROOT / p).is_file()]  # fmt: skip
    if missing:
        raise UserError(f"the calibration simulator reads the shipped space files of a coatsearch checkout "
                        f"({', '.join(missing)} not under {ROOT}): run it from a checkout")  # fmt: skip


@lru_cache(maxsize=8)
def profile(key: str) -> Profile:
    """A shipped profile (PROFILES or PATH_PROFILES), loaded by api.load_space."""
    need_checkout()
    path, name, claims = (*PROFILES[key], DECIDES[key]) if key in PROFILES else PATH_PROFILES[key]
    space = load_space(ROOT / path, name)
    return Profile(key, space, space_record(space), claims)


def optim_of(cand: Candidate | Baseline) -> specs.OptimSpec:
    """A candidate's training settings as its trials resolve them."""
    return cand.resolve()[1]


def _label_of(cand: Candidate | Baseline) -> str:
    """What the papers call a candidate's model (specs.model_label of its resolved, unmatched model)."""
    return model_label(cand.resolve()[0])


def sigma(key: str) -> float:
    """One run's noise sd σ of a measure (_SIGMA, else by unit)."""
    return _SIGMA.get(key, _UNIT_SIGMA[METRICS[key].unit])


def lr_phase(steps: np.ndarray, total: int, warmup: int) -> np.ndarray:
    """lr / peak lr after each step: linear warmup, then cosine to the end of the budget (0 at step 0)."""
    cos = 0.5 * (1 + np.cos(math.pi * np.clip(steps - warmup, 0, None) / max(1, total - warmup)))
    return np.where(steps < warmup, steps / max(1, warmup), cos)


def gen_curve(rng: np.random.Generator, g: Grid, matched: float, steps: float, fits: bool, probe_sd: float = 0.25,
              floor: float | None = None, warmup: int = 16) -> dict:  # fmt: skip
    """A generalization curve on schedule `g` that fits to FIT_LOSS in about `steps` steps (never, unless `fits`),
    measured where training.fit measures it (dense points included) and cut at its stop; its eval accuracy reads
    `matched` (%) at FIT_LOSS and saturates in log loss."""
    total = g.points[-1]
    t = np.arange(total + 1, dtype=float)
    t_fit = steps * math.exp(rng.normal(0.0, _FIT_JITTER))
    low = (floor or C.FIT_LOSS / 10) if fits else 3 * C.FIT_LOSS
    smooth = np.maximum(L0 * np.exp(-(t / t_fit) * math.log(L0 / C.FIT_LOSS)), low)
    batch = smooth * np.exp(rng.normal(0.0, _BATCH_SD, len(t)))
    window = np.convolve(batch, np.ones(DENSE_WINDOW) / DENSE_WINDOW)[: len(t)]
    probe = smooth * np.exp(rng.normal(0.0, probe_sd, len(t)) * (t > 0))
    probe[0] = L0 * math.exp(rng.normal(0.0, 0.03))
    pts = np.asarray(measured(g, window, probe))
    loss = probe[pts]
    top = CHANCE + (matched - CHANCE) / (1 - (C.FIT_LOSS / L0) ** _ACC_POWER)
    acc = CHANCE + (top - CHANCE) * (1 - (np.minimum(loss, L0) / L0) ** _ACC_POWER)
    acc = acc + _POINT_SD * rng.normal(size=len(pts)) * (pts > 0)
    train_acc = np.clip(1 - 0.4 * loss, 0.1, 1.0)
    return {"step": [int(p) for p in pts], "train_loss": loss.tolist(), "train_acc": train_acc.tolist(),
            "eval_loss": [1.0] * len(pts), "eval_acc": (acc / 100).tolist(),
            "lr_phase": lr_phase(pts.astype(float), total, warmup).tolist()}  # fmt: skip


def _rising_curve(rng: np.random.Generator, g: Grid, final: float, converged: bool) -> dict:
    """A curve on grid `g` rising from chance to `final` (%): flat over its last third, or still rising."""
    pts = np.asarray(g.points, dtype=float)
    tau = pts[-1] / (8.0 if converged else 1.5)
    shape = (1 - np.exp(-pts / tau)) / (1 - math.exp(-pts[-1] / tau))
    noise = (0.1 if converged else 0.3) * rng.normal(size=len(pts)) * (pts > 0) * (pts < pts[-1])
    acc = CHANCE + (final - CHANCE) * shape + noise
    loss = L0 * (1 - 0.9 * shape)
    return {"step": [int(p) for p in pts], "train_loss": loss.tolist(), "train_acc": (acc / 100 + 0.05).tolist(),
            "eval_loss": [1.0] * len(pts), "eval_acc": (acc / 100).tolist()}  # fmt: skip


def record(number: int, cand: Candidate | Baseline, seed: int, attrs: dict) -> TrialRecord:
    """A simulated COMPLETE trial of `cand`, built by the constructor the trial uses (record.completed)."""
    model = cand.resolve()[0]
    optim = R.optimizer(optim_of(cand))
    run = R.completed(
        R.Identity(cand.name, seed),
        R.Model(label=_label_of(cand), layout=model.layout),
        Measured.from_json(attrs),
        optim,
    )
    return TrialRecord(number, 0.5, MappingProxyType({"candidate": cand.name, "seed": seed}), None, None, run)


def claims() -> Mapping[str, C.Claim]:
    """Claims (a)-(f) by id."""
    return {c.id: c for c in (*C.CHAIN_CLAIMS, C.REL_CLAIM, C.STEM_CLAIM)}


def places() -> Mapping[str, Mapping[str, float]]:
    """Per measure: each model's place in its claim's order, in key-relation steps (≈ / ≥ share a step)."""
    out: dict[str, dict[str, float]] = {}
    for claim in C.CHAIN_CLAIMS:
        names, syms = claim.chain.split()[0::2], claim.chain.split()[1::2]
        step, mine = 0, {(C.V0_STANDIN if names[0] == "V0" else names[0]): 0}
        for name, sym in zip(names[1:], syms, strict=True):
            step += sym in (">", "≫")
            mine[C.V0_STANDIN if name == "V0" else name] = step
        for key in claim.measures:
            out.setdefault(key, {}).update({n: v for n, v in mine.items() if n not in out.get(key, {})})
    for key in C.REL_CLAIM.measures:  # claim (e): each no-rel-pos twin one step below its rel-pos candidate
        per = out.setdefault(key, {})
        per[f"C-C-T-T-{C.NOREL_TAG}"] = per.get("C-C-T-T", 0) + 1
    return out


def measures(prof: Profile) -> Mapping[str, tuple[str, ...]]:
    """Score → the measures a run of it records here: the decided claims' measures, the score's guard accuracies,
    and claim (f)'s study objective."""
    by_id = claims()
    wanted = {k for c in _DRAWN.get(prof.key, prof.claims) for k in by_id[c].measures}
    if "f" in prof.claims:
        wanted.add(prof.space.study.objective)
    wanted |= {g.acc for g in scores.guards() if g.acc.split(".")[0] in {k.split(".")[0] for k in wanted}}
    out: dict[str, tuple[str, ...]] = {}
    for key in sorted(wanted):
        out.setdefault(key.split(".")[0], ())
        out[key.split(".")[0]] += (key,)
    return out


@dataclass(frozen=True)
class Setting:
    """What a simulated study draws: the order effect (σ per key step of (a)-(e)), (f)'s gap interaction (points),
    where the baselines sit, random stress, and optionally one fit speed (steps to FIT_LOSS) and one probe noise
    (log-sd) for every model."""

    effect: float = 0.0
    stem_effect: float = 0.0
    stem_peak: float = 0.0  # (f)'s peak part: ViT_C − ViT_P, each at its better optimizer (points)
    scenario: Scenario = IN_REGIME
    stress: bool = True
    fit_steps: float | None = None
    probe_sd: float | None = None


def _subset_of(cand: Candidate | Baseline, score: str) -> Any:
    """The candidate's section of a score (None when it does not run it)."""
    return getattr(cand.scores, score, None)


def _model_means(key: str, names: list[str], st: Setting, rng: np.random.Generator) -> dict:
    """Each model's mean of a measure (display units): the level, moved down its claim's order by `effect` σ."""
    sign, s, where = (1.0 if METRICS[key].better == "higher" else -1.0), sigma(key), places().get(key, {})
    out = {}
    for n in names:
        jitter = rng.uniform(-0.25, 0.25) * (C.LOSS_MARGIN if METRICS[key].unit == "nats" else 1.0) if st.effect else 0
        out[n] = _LEVEL[METRICS[key].unit] - sign * (s * st.effect * where.get(n, 0) + jitter)
    return out


def _stem_mean(label: str, opt: str, st: Setting) -> float:
    """A (model, optimizer) cell's mean recipe accuracy: the optimizer's measured main effect, ± half the stem's main
    effect, ± a quarter of the interaction. The stem's main effect m is what makes ViT_C's better cell exceed ViT_P's
    by `stem_peak`: ViT_P's better cell is AdamW (o/2 + I/4), ViT_C's is |o/2 − I/4|, so m = peak − |o/2 − I/4| +
    o/2 + I/4."""
    o, i = _OPT_MAIN, st.stem_effect
    main = st.stem_peak - abs(o / 2 - i / 4) + o / 2 + i / 4
    inter = i / 4 * (1 if (label == "ViT_P") == (opt == "adamw") else -1)
    return _STEM_LEVEL + main / 2 * (1 if label == "ViT_C" else -1) + _STEM_MAIN[opt] + inter


def means(prof: Profile, rng: np.random.Generator, st: Setting) -> Mapping[tuple[str, str], tuple[float, float, float]]:
    """(candidate, measure) → (mean in display units, noise sd, σ) for every measure a candidate records here."""
    ms, out = measures(prof), {}
    cands = [c for c in prof.space.candidates if not isinstance(c, Baseline)]
    spread = {c.name: rng.uniform(*_NOISE_SPREAD) for c in prof.space.candidates}
    for score, keys in ms.items():
        mine = [c for c in cands if _subset_of(c, score) is not None]
        for key in keys:
            stems = [c for c in mine if _label_of(c) in _STEMS and key == prof.space.study.objective]
            mu = _model_means(key, [c.name for c in mine], st, rng)
            mu.update({c.name: _stem_mean(_label_of(c), optim_of(c).optimizer, st) for c in stems})
            for c in mine:
                s = STEM_SIGMA if c in stems else sigma(key)
                out[(c.name, key)] = (mu[c.name], spread[c.name] * s, s)
            if not mu:
                continue
            off, mean = st.scenario.linear.get("stems" if stems else key), float(np.mean(list(mu.values())))
            floor = mean + off if off is not None else min(mu.values()) + st.scenario.default
            for b in (x for x in prof.space.candidates if isinstance(x, Baseline) and _subset_of(x, score) is not None):
                level = floor if b.name == CS.BASELINES[0] and METRICS[key].unit == "%" else mean
                s = STEM_SIGMA if stems else sigma(key)
                out[(b.name, key)] = (level, 0.7 * s, s)
    return out


def _gen_attrs(rng: np.random.Generator, prof: Profile, cand: Candidate | Baseline, sub: specs.SubsetSpec, vals: dict,
               st: Setting, fits: bool) -> dict:  # fmt: skip
    """A generalization run: its curve (read by the report at matched loss) and the final values it records."""
    label = _label_of(cand)
    steps = st.fit_steps or _FIT_STEPS.get(label, _FIT_STEPS[C.V0_STANDIN])
    optim = subset_optim(optim_of(cand), sub)
    steps *= images(prof.space, sub) / FIT_IMAGES * FIT_BATCH / optim.batch_size if st.fit_steps is None else 1.0
    sd = st.probe_sd if st.probe_sd is not None else _PROBE_SD.get(label, _PROBE_SD[C.V0_STANDIN])
    warmup = round(optim.warmup_epochs * images(prof.space, sub) / optim.batch_size)
    g = grid(prof.space, optim_of(cand), sub, levels=True)
    c = gen_curve(rng, g, vals[MATCHED_KEY], steps, fits, sd, _FLOOR.get(label), warmup)
    acc, tr = c["eval_acc"][-1], c["train_acc"][-1]
    out = {GEN_ACC: acc, f"{GEN}.train_loss": c["train_loss"][-1], f"{GEN}.train_acc": tr, f"{GEN}.gap": tr - acc,
           f"curves.{GEN}": c}  # fmt: skip
    kept = {k: v for k, v in out.items() if k.startswith("curves.") or k in vals or k == GEN_ACC}
    if (
        cand.name == CS.BASELINES[0] and MATCHED_KEY in vals
    ):  # its fair floor: where the scenario puts the linear classifier (%, as a fraction)
        kept[f"{GEN}.floor_acc"] = vals[MATCHED_KEY] / 100
    return kept


def _score_attrs(rng: np.random.Generator, prof: Profile, cand: Candidate | Baseline, score: str, vals: dict,
                 st: Setting) -> dict:  # fmt: skip
    """A run of another score: its values, each guard accuracy it lacks (85%), and each guarded run's curve."""
    out: dict[str, Any] = {k: v / METRICS[k].scale for k, v in vals.items()}
    for fit, held in (c.overfit for c in C.CHAIN_CLAIMS if c.overfit and c.overfit[0] in out):
        out.setdefault(held, out[fit] + C.OVERFIT_NATS / 2)  # the premise "no overfitting" holds in every scenario
    for g in (g for g in scores.guards() if g.acc.split(".")[0] == score):
        out.setdefault(g.acc, 0.85)
        sub = _subset_of(cand, score)
        for part in g.subset[1:]:
            sub = getattr(sub, part)
        converged = score != ACC_SCORE or rng.random() >= st.scenario.rising
        out[f"curves.{g.group}"] = _rising_curve(rng, grid(prof.space, optim_of(cand), sub), 100 * out[g.acc],
                                                converged)  # fmt: skip
    return out


def study(rng: np.random.Generator, prof: Profile, st: Setting) -> list[TrialRecord]:
    """One simulated study of a profile: every candidate × seed that runs a score the decided claims read."""
    ms, mu = measures(prof), means(prof, rng, st)
    keys = {k for ks in ms.values() for k in ks}
    seed_eff = {(k, s): rng.normal(0.0, _SEED_SD) for k in sorted(keys) for s in prof.seeds}
    models = [c.name for c in prof.space.candidates if not isinstance(c, Baseline)]
    gone = {str(rng.choice(models))} if st.stress and rng.random() < P_MISSING else set()
    chain = C.CHAIN_CLAIMS[0].chain.split()[0::2]
    keyed = [c.name for c in prof.space.candidates if c.name in chain and _subset_of(c, GEN) is not None]
    unfit = {str(rng.choice(keyed))} if st.stress and keyed and rng.random() < P_UNFIT else set()
    recs: list[TrialRecord] = []
    for seed in prof.seeds:
        for cand in (c for c in prof.space.candidates if c.name not in gone):
            attrs: dict[str, Any] = {}
            for score, ks in ms.items():
                here = {k: mu[(cand.name, k)] for k in ks if (cand.name, k) in mu}
                vals = {k: m + s * seed_eff[(k, seed)] + sd * rng.normal() for k, (m, sd, s) in here.items()}
                if (sub := _subset_of(cand, score)) is None or not vals:
                    continue
                if score == GEN:
                    attrs.update(_gen_attrs(rng, prof, cand, sub, vals, st, cand.name not in unfit))
                else:
                    attrs.update(_score_attrs(rng, prof, cand, score, vals, st))
            if not attrs:
                continue
            if st.stress and rng.random() < P_FAIL:  # a run that failed to train: at chance, counted in the guards
                g = next(g for g in scores.guards() if g.acc in attrs)
                attrs[g.acc] = (tables.chance(prof.record, g.group) or CHANCE) / 100 + 0.005
            recs.append(record(len(recs), cand, seed, attrs))
    return recs
