"""The planner: what a study will cost and what it can decide, measured before anything is spent.

`make_plan` pilots every distinct trial (planner.pilot), predicts each trial's and the study's wall time and
peak memory (planner.predict), and states per claim the measure deciding it, its power at the planned seeds
and whether its key runs reach the claim's regime (planner.power). `coatsearch plan` prints it;
`coatsearch run` prints its ETA line and stores it beside the study (plan.json), which `status` and the
report read back.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from coatsearch import fsafe
from coatsearch.planner import power, predict
from coatsearch.planner.pilot import FitTiming, TrialTiming, run_pilots
from coatsearch.storage import trials
from coatsearch.storage.planfile import PLAN_FILE, check, load  # noqa: F401  (re-exported: the stored plan, read by the report)

if TYPE_CHECKING:  # types only: the API imports the planner
    from coatsearch.space.objects import Space


@dataclass(frozen=True)
class Plan:
    """A study's plan: workers, predicted wall time and memory per trial and in all, and the claims it can decide."""

    space: str
    profile: str
    study: str
    device: str
    processes: int
    threads: int | None
    seeds: int
    trials: int
    timings: tuple[TrialTiming, ...]
    trial_s: dict  # candidate -> predicted wall seconds of one trial
    samples: dict  # candidate -> trials per seed (the space's samples for candidates with search dimensions)
    start_s: float  # a worker's start-up (data loading, kernel creation), measured by the pilot; once per worker
    study_s: float  # predicted wall seconds of the whole study (the schedule over the processes)
    peak_mb: float  # predicted peak memory: processes x the largest per-process pilot peak
    claims: tuple[power.ClaimPlan, ...]
    noise: str  # where the noise came from: "study PATH", "report PATH", "pilot PATH" or "stated prior"
    budget_s: float | None = None
    budget_seeds: int | None = None  # the most seeds that fit in budget_s
    budget_decides: tuple[str, ...] = ()  # claims decidable at budget_seeds
    planning_s: float = 0.0  # how long making this plan took
    registration: tuple[str, ...] = ()  # the analysis `run` registers, then the confirmatory/exploratory line

    def to_json(self) -> dict:
        """JSON-ready form (what `coatsearch plan --json` prints and plan.json holds)."""
        out = asdict(self)
        out["timings"] = [
            {**asdict(t), "predicted_s": self.trial_s.get(t.candidate), "fits": [_fit_json(f) for f in t.fits]}
            for t in self.timings
        ]
        from coatsearch.analysis.tables import jsonable

        return jsonable(out)  # an infinite smallest detectable difference (no power at all) becomes null


def _fit_json(f: FitTiming) -> dict:
    """One timed fit as plan.json holds it, with its predicted seconds and whether it compiles."""
    return {**asdict(f), "predicted_s": predict.fit_seconds(f), "compiles": predict.compiles(f)}


def make_plan(space: Space, study: str, processes: int, threads: int | None, *, device: str = "auto",
              earlier: power.Earlier | None = None, budget_s: float | None = None, effect: float | None = None,
              level: float | None = None, siblings: tuple[power.Earlier, ...] = ()) -> Plan:  # fmt: skip
    """Pilot `space` (a loaded Space) at `processes` x `threads` and size it against `earlier` (or the prior);
    claim (a)'s regime is judged at `level`, else the space's own fit level (power.regime_loss); a claim `earlier`
    did not measure takes its noise from the first of `siblings` that did (power.plan_claims)."""
    level = power.regime_loss(space) if level is None else level
    began = time.perf_counter()
    preps = matched_preps(space)
    print(f"coatsearch: piloting {len(preps)} candidate(s) of {study} for a few steps each at {processes} "
          f"process(es) (this takes a while; the plan follows)", file=sys.stderr, flush=True)  # fmt: skip
    timings = tuple(run_pilots(space, preps, space.study.seeds[0], device, processes, threads))
    print(f"coatsearch: piloted {len(timings)} candidate(s) in {time.perf_counter() - began:.0f} s", file=sys.stderr,
          flush=True)  # fmt: skip
    timings = tuple(predict.with_earlier(t, earlier.steps) for t in timings) if earlier else timings
    trial_s = {t.candidate: predict.trial_seconds(t) for t in timings}
    samples = {c.name: space.study.samples if c.dims else 1 for c in space.candidates}
    seeds = len(space.study.seeds)
    durations = [trial_s[i.candidate] for i in trials.plan(space) if i.candidate in trial_s]  # re-evaluation too
    models = model_rows(space)
    planned = {t.candidate: {f.phase: f.steps for f in t.fits} for t in timings}
    claims = tuple(power.plan_claims(list(models.rows), dict(models.measures), planned, seeds, earlier, effect, level,
                                     siblings))  # fmt: skip
    start = max((t.warmup_s for t in timings), default=0.0)
    fit = predict.most_seeds(trial_s, samples, processes, budget_s, start) if budget_s else None
    decides = tuple(c.claim for c in claims if fit and power.decidable(c, fit)) if budget_s else ()
    peak = max((t.peak_mb for t in timings), default=0.0) * max(1, min(processes, len(timings)))
    return Plan(space.name, space.profile, study, device, processes, threads, seeds, len(durations), timings, trial_s,
                samples, start, predict.makespan(durations, processes, start), peak, claims,
                f"{earlier.source} {earlier.where}" if earlier else "stated prior", budget_s, fit, decides,
                time.perf_counter() - began)  # fmt: skip


def matched_preps(space: Space) -> list:
    """The candidates a plan pilots: the matched ones; a note line for each unmatched one it leaves out."""
    for c in space.candidates:
        if not c.prepared.ok:
            print(f"coatsearch: note: plan leaves out candidate {c.name}: not matched ({c.prepared.reason}); "
                  "`run` records its trials failed ('budget not met')", file=sys.stderr)  # fmt: skip
    return [c.prepared for c in space.candidates if c.prepared.ok]


@dataclass(frozen=True)
class ModelRows:
    """A space's candidates as the verdict rules resolve names (planner.model_rows), and what each measures."""

    rows: tuple[power.ModelRow, ...]
    measures: Mapping[str, set[str]]  # candidate -> the metric keys it records (power.measured_keys)


def model_rows(space: Space) -> ModelRows:
    """Candidate rows as the verdict rules resolve names (candidate, model label, layout) and what each measures."""
    from coatsearch.vocab.specs import model_label

    rows = tuple(power.ModelRow(c.name, model_label(c.spec), c.layout, c.resolve()[1].optimizer, bool(c.dims))
                 for c in space.candidates)  # fmt: skip
    return ModelRows(rows, {c.name: power.measured_keys(c.scores) for c in space.candidates})


def save(plan: Plan, folder: Path, extra: dict | None = None) -> Path:
    """Write the plan (and `extra` keys) as folder/plan.json, beside the study's journal; returns the path."""
    path = Path(folder) / PLAN_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    return fsafe.write(path, json.dumps({**plan.to_json(), **(extra or {})}, indent=1) + "\n")  # atomic, no link
