"""Noise, power and regime per claim before a study runs; the statistics are analysis.stats' and the rules verdicts'.

Noise per measure comes from the first source that exists: an earlier study of the same space on disk (its
storage, read by the report's own functions, else its report's summary.json), a pilot study of a few seeds
(`--pilot-seeds`), or the stated prior PRIOR_SD_DIFF. For each claim the measure that decides it is the first
of `Claim.measures` that two of its resolved models measure; its key relations are the strict ones (> ≫)
between neighbouring measured models, tested at Holm's first level α / relations, as the report tests them.
"""

from __future__ import annotations

import dataclasses
import math
import os
import statistics
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scipy.stats import linregress

from coatsearch.analysis import constants as CS
from coatsearch.analysis import stats as S
from coatsearch.analysis.table_rows import CandidateRow
from coatsearch.errors import UserError
from coatsearch.papers import claims as C
from coatsearch.papers import stem, summary_file
from coatsearch.papers import verdicts as V
from coatsearch.scores import METRICS
from coatsearch.scores.base import ACC_SCALE
from coatsearch.storage.record import TrialRecord

# sd of a paired difference assumed without any measurement, by display unit. Accuracies: the pooled noise of
# the shipped reports at b1c4749 ran 1.3 (capacity.eval_acc) to 6.1 points (generalization.matched_acc) on
# paper_layouts and 4.2 points (accuracy.eval_acc) on vit_stems; losses 0.04-0.13 nats.
PRIOR_SD_DIFF = {"%": 4.0, "points": 4.0, "nats": 0.1}
REGIME_LOSS = C.FIT_LOSS  # nats: the train-loss level claim (a)'s key runs must reach (the verdict rule's own)


def regime_loss(space: Any) -> float:
    """The level claim (a)'s key runs of `space` (a loaded Space) must reach: its generalization score's `fit_loss`
    (the verdict reads the same field: papers.paper.fit_of), else REGIME_LOSS."""
    gen = getattr(space.scores, C.GEN_SCORE, None)
    return float(getattr(gen, "fit_loss", None) or REGIME_LOSS)


_EXTRAPOLATE_MAX = 10  # a curve is extrapolated to at most this many times its length (beyond: not expected)


@dataclass(frozen=True)
class Earlier:
    """What an earlier study of the space shows: candidate rows (analysis.tables), mean curves per score, where from."""

    source: str  # "study" | "report" | "pilot"
    where: str
    rows: Sequence[CandidateRow]
    curves: dict  # score -> report.paper.mean_curves rows (candidate, step, train_loss, eval_acc)
    steps: dict = dataclasses.field(default_factory=dict)  # candidate -> run phase -> median steps (from storage)
    stem: StemNoise | None = None  # claim (f)'s gap contrast, when the earlier study tested it


@dataclass(frozen=True)
class ModelRow:
    """A space's candidate before it runs, as the verdict rules resolve its name (verdicts.resolve), with its
    optimizer and whether it samples dimensions (planner.model_rows)."""

    candidate: str
    model_label: str
    layout: str
    optimizer: str
    sampled: bool  # it has search dimensions: its trials sample them


@dataclass(frozen=True)
class StemNoise:
    """Claim (f)'s optimizer-gap contrast in an earlier study: per-seed sd, seeds, and its regime findings."""

    sd: float  # points
    seeds: int
    out_of_regime: tuple[str, ...]  # papers.stem.below_linear's lines (empty: every cell above the linear baseline)


@dataclass(frozen=True)
class ClaimPlan:
    """One claim at the planned seeds: the measure deciding it, its power, and whether its key runs are in regime."""

    claim: str
    title: str
    measure: str | None  # metric key; None when the space cannot test the claim
    models: tuple[str, ...]  # the chain's models this space has
    relations: int  # key (strict) relations tested
    seeds: int
    sd_diff: float | None
    noise_source: str
    alpha: float | None
    mdd: float | None  # smallest detectable paired difference at the planned seeds (display units)
    paper_effect: float | None
    seeds_for_paper: int | None
    effect: float | None  # --effect, in points
    seeds_for_effect: int | None
    regime: tuple[str, ...]  # one line per finding: in regime, out of regime, or unknown
    note: str = ""
    k: int = 2  # candidates measured on `measure` (the t test's df is (k - 1)(n - 1))
    family: int = 1  # tests in the claim's Holm family


def from_study(studies_dir: Path, name: str, source: str = "study") -> Earlier | None:
    """An earlier study's rows and curves read through the store and the report's functions; None when absent."""
    from coatsearch.analysis import tables as TB
    from coatsearch.papers import frames, paper
    from coatsearch.storage import store
    from coatsearch.storage.record import validation_view

    if not store.storage_file(studies_dir, name).exists():
        return None
    space, records = store.read(store.load_study(studies_dir, name))
    records = [validation_view(r) for r in records]  # an earlier look informs choices: its validation images only
    fr = frames.build(space, records)
    rows = TB.candidate_rows(space, fr.records, paper.readings(fr.matched.readings, fr.matched.level))
    curves = {s: [dataclasses.asdict(c) for c in paper.mean_curves(space, fr.curves[s], fr.complete)]
              for s in TB.curve_scores()}  # fmt: skip  # as the summary holds them: candidate, label, runs
    steps = _steps_taken(fr.complete)
    gap = None
    if fr.runs is not None:
        tables = stem.stem_tables(fr.complete, fr.runs, fr.acc)
        part = stem.gap_contrast(tables.cells)
        if (sd := stem.contrast_sd(part.ci, part.n)) is not None:
            gap = StemNoise(sd, part.n, tuple(stem.below_linear(tables.cells, tables.linear)))
    measured = rows and fr.complete  # a study with no complete trial (just registered, or interrupted) measured nothing
    return Earlier(source, str(store.folder(studies_dir, name)), rows, curves, steps, gap) if measured else None


def earlier(studies_dir: Path, reports_dir: Path, *names: str) -> Earlier | None:
    """The noise source of the first of the studies `names` measured: its trials, else its report. Callers name the
    study, then the space's own study (its default profile), whose measures on the same proxy are the closest
    measured noise for a profile not yet run. None when none was measured."""
    return next((e for n in dict.fromkeys(names) if (e := from_study(studies_dir, n) or from_report(reports_dir, n))),
                None)  # fmt: skip


def sources(studies_dir: Path, reports_dir: Path, space: str, *own: str) -> tuple[Earlier | None, tuple[Earlier, ...]]:
    """(earlier, siblings) for plan_claims, each study read once: the first of the profile's own studies `own` that
    measured (its name, then the original a replicate repeats), with no siblings; else the space's default study
    `space` and every other report of the space as siblings (a claim takes the first that ran its models)."""
    mine = earlier(studies_dir, reports_dir, *own)
    if mine is not None:
        return mine, ()
    return earlier(studies_dir, reports_dir, space), siblings(reports_dir, space, *own, space)


def _steps_taken(done: Iterable[TrialRecord]) -> dict[str, dict[str, float]]:
    """candidate -> run phase -> median optimizer steps its complete runs took: `<score>.steps` is the score's
    run, `<score>.<phase>_steps` a named run of it (transfer's pretrain and finetune)."""
    seen: dict[str, dict[str, list[float]]] = {}
    for r in done:
        for key in r.run.keys():
            score, _, name = key.partition(".")
            phase = score if name == "steps" else name[: -len("_steps")] if name.endswith("_steps") else None
            if phase and (v := r.run.number(key)) is not None:
                seen.setdefault(r.candidate, {}).setdefault(phase, []).append(v)
    return {c: {p: statistics.median(v) for p, v in by.items()} for c, by in seen.items()}


def from_report(reports_dir: Path, name: str) -> Earlier | None:
    """An earlier study's rows, curves and run steps from its report's summary.json; None when absent, and None with a
    note line when unreadable or damaged (summary_file.read: fsafe's bounds, the types' from_json).

    Its steps per candidate and curve score are the last step of the mean curve: the longest of its runs.
    """
    path = Path(reports_dir) / name / "summary.json"
    if not os.path.lexists(path):
        return None
    try:
        return _earlier_of(summary_file.read(path), path)
    except UserError as exc:
        why = str(exc)
    except (AttributeError, TypeError, KeyError, ValueError, IndexError) as exc:  # a curve that is not a curve
        why = f"{path}: a damaged summary ({type(exc).__name__}: {exc})"
    print(f"coatsearch: note: {why}; the plan does not use its noise", file=sys.stderr)
    return None


def _earlier_of(summary: summary_file.Summary, path: Path) -> Earlier | None:
    """The Earlier of a report's summary (None without candidate rows)."""
    rows, curves = summary.candidates, dict(summary.curves)
    steps: dict[str, dict[str, float]] = {}
    for score, means in curves.items():  # a candidate's longest run: an upper estimate
        for m in means or []:
            for run in m.get("runs") or [m]:
                if run.get("step"):
                    mine = steps.setdefault(m["candidate"], {})
                    mine[score] = max(mine.get(score, 0.0), float(run["step"][-1]))
    return Earlier("report", str(path), rows, curves, steps, _stem_of(summary)) if rows else None


def _stem_of(summary: summary_file.Summary) -> StemNoise | None:
    """Claim (f)'s gap-contrast noise from a report's summary: its first part's t interval."""
    found = next((c for c in summary.claims if c.id == C.STEM_CLAIM.id), None)
    parts = (found.parts or ()) if found else ()
    sd = stem.contrast_sd(parts[0].ci, parts[0].n) if parts else None
    if found is None or sd is None:
        return None
    low = found.why.partition("out of regime — ")[2].partition(" (")[0]
    return StemNoise(sd, parts[0].n, tuple(low.split("; ")) if low else ())


def measured_keys(scores: object) -> set[str]:
    """The metric keys a candidate with these scores records (the report adds generalization.matched_acc)."""
    on = {name for name in vars(scores) if getattr(scores, name) is not None}
    return {k for k in METRICS if k.split(".", 1)[0] in on}


def _deciding(claim: C.Claim, rows: Sequence[ModelRow], keys: dict[str, set[str]]) -> tuple[str | None, list[str], int]:
    """(measure, models measured on it in chain order, key relations) the report would decide the claim on."""
    names, syms = V.parse_chain(claim.chain)
    resolved = {n: r.candidate for n in names if (r := V.resolve(n, rows).row) is not None}
    for key in claim.measures:
        idx = [(i, n) for i, n in enumerate(names) if n in resolved and key in keys[resolved[n]]]
        if len(idx) >= 2:
            strict = [max(syms[i:j], key=V._STRENGTH.get) for (i, _), (j, _) in zip(idx, idx[1:], strict=False)]  # type: ignore[arg-type]  # every symbol is in _STRENGTH
            return key, [resolved[n] for _, n in idx], sum(V._STRENGTH[s] >= 2 for s in strict)
    return None, [resolved[n] for n in names if n in resolved], 0


@dataclass(frozen=True)
class ClaimPower:
    """The report's power numbers for one claim (planner.power.claim_power)."""

    alpha: float  # the strictest Holm level: the verdict's α over the family's size
    mdd: float  # smallest detectable paired difference (inf: fewer than 2 seeds or candidates)
    seeds: int | None  # seeds that detect the effect (None: no effect given)


def claim_power(sd: float, n: int, k: int, family: int, effect: float | None) -> ClaimPower:
    """The report's power numbers (stats.detectable, stats.seeds_needed) at n seeds, k candidates, α / family.

    As verdicts.power: every neighbouring relation of the chain (strict, ≥ and ≈ alike) is one test of the
    claim's Holm family, so the strictest level is the verdict's α over the family's size.
    """
    alpha = CS.VERDICT_ALPHA / family
    mdd = S.detectable(sd, n, (k - 1) * (n - 1), alpha, CS.POWER) if n >= 2 and k >= 2 else math.inf
    need = S.seeds_needed(sd, effect, k, alpha, CS.POWER) if effect and k >= 2 else None
    return ClaimPower(alpha, mdd, need)


def _noise_of(key: str, earlier: Earlier | None) -> tuple[float | None, str]:
    """(sd of a paired difference, where it comes from) for one measure: the earlier study's, else the prior."""
    if earlier is not None:
        found = V.noises(earlier.rows).of(key)
        if found is not None:
            return found.sd_diff, f"{earlier.source} {earlier.where} (df {found.df})"
    prior = PRIOR_SD_DIFF.get(METRICS[key].unit)
    return prior, "stated prior (planner.power.PRIOR_SD_DIFF)" if prior is not None else "none"


def steps_to(level: float, steps: list, losses: list) -> float | None:
    """Steps a curve needs to reach train loss `level`: its first crossing, else a power law fitted to its last half.

    None when the curve does not fall (nothing to extrapolate).
    """
    pts = [(float(s), float(v)) for s, v in zip(steps, losses, strict=False) if s and v is not None and v > 0]
    for (s0, v0), (s1, v1) in zip(pts, pts[1:], strict=False):
        if v1 <= level < v0:  # log-log interpolation between the two points around the crossing
            t = math.log(v0 / level) / math.log(v0 / v1)
            return math.exp(math.log(s0) + t * math.log(s1 / s0))
    if pts and pts[0][1] <= level:
        return pts[0][0]
    tail = pts[len(pts) // 2 :]
    if len(tail) < 2:
        return None
    fit = linregress([math.log(s) for s, _ in tail], [math.log(v) for _, v in tail])
    return math.exp((math.log(level) - fit.intercept) / fit.slope) if fit.slope < 0 else None


def regime(key: str, models: list[str], planned: dict[str, dict[str, int]], earlier: Earlier | None, level: float,
           needs_convergence: bool) -> tuple[str, ...]:  # fmt: skip
    """Whether each key model reaches the claim's regime in its planned steps, judged on the earlier study's curves."""
    score = key.split(".", 1)[0]
    curves = {c["candidate"]: c for c in (earlier.curves.get(score) or [])} if earlier else {}
    if not curves:
        return (f"unknown: no earlier {score} curves of this space (run it once, or plan with --pilot-seeds 2)",)
    out = []
    for name in models:
        curve, have = curves.get(name), planned.get(name, {}).get(score)
        if curve is None:
            out.append(f"{name}: unknown (no earlier {score} curve)")
        elif key == "generalization.matched_acc":
            out.append(_reaches(name, curve, level, have))
        elif needs_convergence:
            out.append(f"{name}: " + _converges(curve, have))
    return tuple(out) or ("in regime: the claim has no regime guard on this measure",)


@dataclass(frozen=True)
class MedianRun:
    """One measured run of an earlier study's curve (planner.power.representative): its steps and readings."""

    step: tuple[float, ...]
    train_loss: tuple[float, ...]  # nats
    eval_acc: tuple[float, ...]  # percent (ACC_SCALE)

    @classmethod
    def of(cls, run: Mapping[str, Any]) -> MedianRun:
        """A run as report.paper.mean_curves writes it (a missing reading: none)."""
        return cls(*(tuple(run.get(k) or ()) for k in ("step", "train_loss", "eval_acc")))


def representative(curve: Mapping[str, Any]) -> MedianRun:
    """One measured run of a candidate's curve entry (report.paper.mean_curves keeps runs apart, each at its own
    steps): the run with the median final train loss; an entry without runs is one curve already."""
    if "runs" not in curve:
        return MedianRun.of(curve)
    runs = [r for r in curve["runs"] or () if r.get("step")]
    if not runs:
        return MedianRun((), (), ())
    runs.sort(key=lambda r: r["train_loss"][-1] if r.get("train_loss") else math.inf)
    return MedianRun.of(runs[(len(runs) - 1) // 2])


def _reaches(name: str, curve: dict, level: float, have: int | None) -> str:
    """Whether a run of `have` steps is expected to reach train loss `level`, from an earlier study's median run."""
    run = representative(curve)
    need = steps_to(level, list(run.step), list(run.train_loss))
    last = int(max(run.step or [0]))
    if need is None or need > _EXTRAPOLATE_MAX * last:
        final = run.train_loss[-1] if run.train_loss else None
        at = "" if final is None else f", where it was at {final:.2f} nats"
        cap = f"{_EXTRAPOLATE_MAX * last:,} steps ({_EXTRAPOLATE_MAX}x the earlier study's {last}{at})"
        return f"{name} is not expected to reach {level:g} nats within {cap}; the profile gives {have} (out of regime)"
    gives = f"the profile gives {have} ({_ok(need <= have)})" if have is not None else "steps not planned (unknown)"
    return f"{name} is expected to need ~{need:,.0f} steps to reach {level:g} nats; {gives}"


def _converges(curve: dict, have: int | None) -> str:
    """Whether a run of `have` steps is expected to converge, from an earlier study's median run
    (analysis.tables.converged)."""
    from coatsearch.analysis.tables import converged
    from coatsearch.training.point import Curve

    run = representative(curve)
    done = converged(Curve(step=tuple(int(s) for s in run.step), eval_acc=tuple(a / ACC_SCALE for a in run.eval_acc)))
    last = int(run.step[-1]) if run.step else 0
    if done is None or have is None:
        why = "the earlier curve has too few points" if done is None else "steps not planned"
        return f"unknown ({why}); the profile gives {have} steps"
    if done and (have or 0) >= last:
        return f"converged by step {last} in the earlier study; the profile gives {have} (in regime)"
    if not done and (have or 0) <= last:
        return f"still rising at step {last} in the earlier study; the profile gives {have} (out of regime)"
    word = "converged" if done else "still rising"
    return f"{word} at step {last} in the earlier study; the profile gives {have} (unknown)"


def _ok(ok: bool) -> str:
    return "in regime" if ok else "out of regime"


@dataclass(frozen=True)
class _Setting:
    """What every claim's plan reads: the space's models, what each measures, planned steps, seeds, the noise."""

    rows: Sequence[ModelRow]
    keys: dict[str, set[str]]
    planned: dict[str, dict[str, int]]
    seeds: int
    earlier: Earlier | None
    effect: float | None
    level: float
    siblings: tuple[Earlier, ...] = ()


def plan_claims(rows: Sequence[ModelRow], keys: dict, planned: dict, seeds: int, earlier: Earlier | None,
                effect: float | None, level: float = REGIME_LOSS, siblings: tuple[Earlier, ...] = ()
                ) -> list[ClaimPlan]:  # fmt: skip
    """Every claim the space's models touch, at `seeds` seeds: its deciding measure, power and regime.

    A chain claim takes its noise and regime from the first of `siblings` (other studies of the space: siblings())
    that measured its deciding measure on every one of its models, else from `earlier`."""
    at = _Setting(rows, keys, planned, seeds, earlier, effect, level, siblings)
    out = [_chain(c, at) for c in C.CHAIN_CLAIMS]
    pairs = V.rel_pairs(rows)
    if pairs:
        members = [r.candidate for p in pairs for r in (p.on, p.off)]
        key = next((k for k in C.REL_CLAIM.measures if all(k in keys[m] for m in members)), None)
        out.append(_claim(C.REL_CLAIM, key, members, len(pairs), at))
    if set(_STEM_MODELS) <= {r.model_label for r in rows}:
        out.append(_stem(at))
    return [c for c in out if c is not None]


STEM_MEASURE = "accuracy.eval_acc"  # the fixed recipes' accuracy (analysis.tables.primary_acc on a vit_stems study)
_STEM_MODELS = tuple(dict.fromkeys(label for label, _ in stem.CELLS))  # ("ViT_P", "ViT_C"): claim (f)'s models


def _stem(at: _Setting) -> ClaimPlan:
    """Claim (f)'s optimizer-gap part, as papers.stem tests it: a t test of the per-seed contrast (n - 1 df) in the
    Holm family of the gap, the peak part (the same fixed recipes) and one EDF part per optimizer with sampled ViT
    runs. Its noise is an earlier study's contrast, else the prior; its regime is that study's cells against the
    linear baseline. The peak and length parts are sized by the report, not here."""
    claim, vit = C.STEM_CLAIM, [r for r in at.rows if r.model_label in _STEM_MODELS]
    family = 2 + len({r.optimizer for r in vit if r.sampled})
    head = (claim.id, claim.title, STEM_MEASURE, _STEM_MODELS, 1, at.seeds)
    earlier = at.earlier
    if earlier is not None and (gap := earlier.stem) is not None:
        sd, source = gap.sd, f"{earlier.source} {earlier.where}: gap contrast over {gap.seeds} seeds"
        zone = tuple(f"out of regime in the earlier study: {line}" for line in gap.out_of_regime) or (
            "in regime in the earlier study: every (model, optimizer) cell's mean run above the linear baseline's",
        )
    else:
        sd, source = PRIOR_SD_DIFF["points"], "stated prior (planner.power.PRIOR_SD_DIFF)"
        zone = ("unknown: no earlier study of the fixed recipes (claim (f) needs every cell above the linear "
                "baseline)",)  # fmt: skip
    pw = claim_power(sd, at.seeds, 2, family, claim.paper_effect)  # k = 2: df = n - 1, as the contrast's t test
    mine = claim_power(sd, at.seeds, 2, family, at.effect).seeds if at.effect else None
    note = ("the optimizer-gap part, in a family with the peak part; the report states the EDF parts' run counts "
            "(papers/stem.py runs_needed) and each seed-paired part's detectable difference")  # fmt: skip
    return ClaimPlan(*head, sd, source, pw.alpha, pw.mdd, claim.paper_effect, pw.seeds, at.effect, mine, zone, note,
                     2, family)  # fmt: skip


def _chain(claim: C.Claim, at: _Setting) -> ClaimPlan | None:
    """A chain claim's plan; None when fewer than two of its models are in the space."""
    key, models, relations = _deciding(claim, at.rows, at.keys)
    if len(models) < 2:
        return None
    return _claim(claim, key, models, relations, at)


def _claim(claim: C.Claim, key: str | None, models: list[str], relations: int, at: _Setting) -> ClaimPlan:
    """Power and regime of one claim decided on `key` over `models` with `relations` key relations."""
    head = (claim.id, claim.title, key, tuple(models), relations, at.seeds)
    if key is None:
        return ClaimPlan(*head, None, "", None, None, claim.paper_effect, None, at.effect, None, (),
                         "no measure of the claim is recorded by two of its models")  # fmt: skip
    earlier = next((e for e in at.siblings if _ran(e, key, models)), at.earlier)
    sd, source = _noise_of(key, earlier)
    points = METRICS[key].unit in ("%", "points")
    paper = claim.paper_effect if points else None
    zone = regime(key, models, at.planned, earlier, at.level, claim.needs_convergence)
    if not relations or sd is None:
        why = "no strict relation to test (≈ and ≥ only)" if not relations else "no noise estimate"
        return ClaimPlan(*head, sd, source, None, None, paper, None, at.effect, None, zone, why)
    k, family = _measured(at.rows, at.keys, key), _family(claim.id, models, relations)
    pw = claim_power(sd, at.seeds, k, family, paper)
    mine = claim_power(sd, at.seeds, k, family, at.effect if points else None).seeds if at.effect else None
    return ClaimPlan(*head, sd, source, pw.alpha, pw.mdd, paper, pw.seeds, at.effect, mine, zone, "", k,
                     family)  # fmt: skip


def _ran(earlier: Earlier, key: str, models: list[str]) -> bool:
    """Whether an earlier study measured `key`'s paired noise on every one of `models` (candidate names)."""
    ran = {r.candidate for r in earlier.rows if len(r.by_seed.get(key) or ()) >= 2}
    return set(models) <= ran and V.noises(earlier.rows).of(key) is not None


def siblings(reports_dir: Path, space: str, *skip: str) -> tuple[Earlier, ...]:
    """The reports of the space's other studies (`reports/<space>-<profile>/summary.json`, by name, less `skip`):
    a profile not yet run takes a claim's noise from one that ran the claim's models (plan_claims)."""
    root = Path(reports_dir)
    found = root.glob(f"{space}-*") if root.is_dir() else ()
    names = sorted(p.name for p in found if p.is_dir() and p.name not in skip)
    return tuple(e for n in names if (e := from_report(root, n)) is not None)


def _measured(rows: Sequence[ModelRow], keys: dict, key: str) -> int:
    """How many candidates (regime baselines left out) measure `key`."""
    return sum(1 for r in rows if r.candidate not in CS.BASELINES and key in keys[r.candidate])


def _family(claim: str, models: tuple | list, relations: int) -> int:
    """Tests in the claim's Holm family: every neighbour relation of a chain; one per pair for claim (e)."""
    return relations if claim == C.REL_CLAIM.id else max(len(models) - 1, 1)


def decidable(c: ClaimPlan, seeds: int) -> bool | None:
    """Whether the claim's effect (--effect, else the paper's) is detectable at `seeds` with no key run out of regime.

    None when there is no effect to size for or no power to state.
    """
    size = c.effect if c.effect is not None else c.paper_effect
    if c.measure is None or c.sd_diff is None or not c.relations or size is None:
        return None
    mdd = claim_power(c.sd_diff, seeds, c.k, c.family, None).mdd
    return mdd <= size and not any("out of regime" in line for line in c.regime)


def undecided(claims: Iterable[ClaimPlan], decides: Mapping[str, float | None], seeds: int) -> list[str]:
    """Why the plan cannot decide a claim the profile declares it decides (`decides:`), one line a claim (empty:
    it can). Sized at the declared effect, else the paper's; a claim with neither, no measure, no key relation or
    no noise estimate cannot be shown decidable; neither can one with a key run out of regime."""
    by_id = {c.claim: c for c in claims}
    out = []
    for claim, declared in sorted(decides.items()):
        c = by_id.get(claim)
        size = declared if declared is not None else (c.paper_effect if c else None)
        if c is None or c.measure is None:
            out.append(f"({claim}): the space has no two models that measure it")
        elif size is None:
            out.append(f"({claim}): no effect to size for (the paper gives none): declare one, e.g. `{claim}: 2.0`")
        elif c.sd_diff is None or not c.relations:
            out.append(f"({claim}): no power to state ({c.note or 'no noise estimate'})")
        elif bad := [line for line in c.regime if "out of regime" in line]:
            out.append(f"({claim}): {bad[0]}")
        elif (mdd := claim_power(c.sd_diff, seeds, c.k, c.family, None).mdd) > size:
            out.append(f"({claim}): smallest detectable difference {mdd:.2f} points at {seeds} seeds (noise from "
                       f"{c.noise_source}) is above the {size:g} points it is sized for")  # fmt: skip
    return out
