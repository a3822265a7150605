"""Study storage → plain tables: pure functions over trial records (`coatsearch.storage.record.TrialRecord`), no Optuna.

Values in tables are in display units (accuracies in %, MACs and params in millions), as the metric table says.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, is_dataclass
from datetime import datetime
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from coatsearch import scores
from coatsearch.analysis import json_form
from coatsearch.analysis.constants import CHANCE_POINTS, LENGTH_SCORE, PLATEAU_POINTS, ROBUSTNESS_SCORE
from coatsearch.analysis.measure_results import Reading
from coatsearch.analysis.results import Stat
from coatsearch.analysis.table_rows import (
    CandidateRow,
    CandidateRuns,
    EpochCurve,
    GuardCounts,
    LengthStability,
    SeverityCurve,
    StoppedTrial,
    SubsetUse,
)
from coatsearch.scores import Metric
from coatsearch.scores.base import points
from coatsearch.storage.record import RunRecord, TrialRecord, count
from coatsearch.training.point import Curve

__all__ = ["METRICS", "Metric", "Stat", "candidate_rows", "curve_scores", "stat"]

METRICS = scores.METRICS  # key -> Metric (label, unit, scale, better, noise floor), from the score registry


def curve_scores() -> tuple[str, ...]:
    """Single-run scores with per-epoch curves, read from the score registry when called."""
    return scores.curve_scores()


def stat(values: Iterable[float | None]) -> Stat | None:
    """Mean ± sample standard deviation of the finite values (pandas); None when there are none."""
    vals = pd.Series([v for v in values if v is not None], dtype=float)
    vals = vals[vals.map(math.isfinite)]
    if vals.empty:
        return None
    return Stat(float(vals.mean()), float(vals.std()) if len(vals) >= 2 else None, len(vals))


Records = Sequence[TrialRecord]


def _stat(values: Iterable[float]) -> Stat:
    """`stat` of values known to hold a finite one."""
    s = stat(values)
    assert s is not None
    return s


def complete(records: Records) -> list[TrialRecord]:
    """The COMPLETE trial records."""
    return [r for r in records if r.state == "COMPLETE"]


def order(space: dict, records: Records) -> list[str]:
    """Candidate names: the space's order, then any others found in the records."""
    names = list(space.get("candidates") or [])
    for r in records:
        if (c := r.candidate) not in names and c != "?":
            names.append(c)
    return names


def groups(space: dict, records: Records) -> tuple[CandidateRuns, ...]:
    """Complete records per candidate, in candidate order (candidates without a complete run left out)."""
    done = complete(records)
    out = (CandidateRuns(c, tuple(r for r in done if r.candidate == c)) for c in order(space, records))
    return tuple(g for g in out if g.runs)


def group_acc() -> Mapping[str, str]:
    """Group (one training run of a trial; its curve has the name) -> the accuracy that says whether it trained,
    from the score registry's guards (read at call time, so a score registered later is guarded too)."""
    return {g.group: g.acc for g in scores.guards()}


def group_of(key: str) -> str:
    """The group (one training run inside a trial) a metric belongs to: its guard's group, else its score."""
    return {g.acc: g.group for g in scores.guards()}.get(key, key.split(".")[0])


def shape(space: dict) -> tuple[int | None, int | None, int | None]:
    """The space record's input (image size, channels, classes); Nones when it is not recorded."""
    size, channels, classes = (list(space.get("input") or []) + [None] * 3)[:3]
    return size, channels, classes


def chance(space: dict, group: str) -> float | None:
    """Chance accuracy (%) of a group's classifier: 100 / its classes (the space's, or the subset's own)."""
    sub = space.get("scores") or {}
    for part in {g.group: g.subset for g in scores.guards()}.get(group, (group,)):
        sub = sub.get(part) or {}
    classes = len(sub["classes"]) if sub.get("classes") else shape(space)[2]
    return 100.0 / classes if classes else None


def converged(curve: Curve | None) -> bool | None:
    """False when eval accuracy still rises > PLATEAU_POINTS over the last third of the curve (linear fit)."""
    ys = [points(y) for y in (curve.eval_acc if curve else ()) if y is not None]
    if curve is None or len(ys) < 3:
        return None
    xs = list(curve.step or range(len(ys)))[: len(ys)]
    m = max(2, math.ceil(len(ys) / 3))
    slope = np.polyfit(np.asarray(xs[-m:], dtype=float), np.asarray(ys[-m:], dtype=float), 1)[0]  # least squares
    return bool(slope * (xs[-1] - xs[-m]) <= PLATEAU_POINTS)


class RunValue(NamedTuple):
    """One metric of one run, in display units: what a candidate row's Stat and per-seed means are made from."""

    key: str
    seed: int | None
    value: float


Derived = Mapping[int, Mapping[str, Reading]]  # trial number -> derived key -> its reading (papers.paper.readings)


def _flags(space: dict, run: RunRecord, guarded: Mapping[str, str]) -> dict[str, tuple[bool, bool | None]]:
    """Per guarded group: (the run failed: within CHANCE_POINTS of chance, its curve converged or None)."""
    flags = {}
    for group, acc in guarded.items():
        low, value = chance(space, group), run.number(acc)
        failed = value is not None and low is not None and points(value) - low <= CHANCE_POINTS
        flags[group] = (failed, converged(run.curve(group)))
    return flags


def _row(space: dict, g: CandidateRuns, derived: Derived | None) -> CandidateRow:
    """One candidate's row: a Stat and per-seed means of every metric over its runs that did not fail (display
    units), and per guarded group its runs' guard counts.

    `derived`: trial number -> the report's derived readings (scores.derived() keys; the value is the reading's eval
    accuracy); given, a recorded derived value is ignored (None: records the report derived nothing for, e.g.
    without step curves, keep theirs).
    """
    guarded, derives = group_acc(), scores.derived()
    values: list[RunValue] = []  # every metric of the runs that did not fail
    guards: dict[str, list[int]] = {}  # group -> runs, failed, not converged, unchecked
    for r in g.runs:
        flags, mine = _flags(space, r.run, guarded), (derived or {}).get(r.number, {})
        seen = set()
        for key, m in METRICS.items():
            read = mine[key].eval_acc if key in mine else None
            if (v := read if key in derives and derived is not None else r.run.number(key)) is None:
                continue
            group = group_of(key) if group_of(key) in guarded else ""
            failed, conv = flags.get(group, (False, None))
            if group and group not in seen:
                seen.add(group)
                counts = guards.setdefault(group, [0, 0, 0, 0])
                for i, flag in enumerate((True, failed, conv is False, conv is None)):
                    counts[i] += int(flag)
            if not failed:
                values.append(RunValue(key, r.seed, v * m.scale))
    metrics, by_seed = _aggregate(values)
    return CandidateRow(**_identity(g), metrics=metrics, by_seed=by_seed,
                        guards={k: GuardCounts(*c) for k, c in guards.items()})  # fmt: skip


def _aggregate(values: list[RunValue]) -> tuple[dict[str, Stat], dict[str, dict[int, float]]]:
    """(key -> Stat over the values, key -> seed -> mean of that seed's values), keys and seeds in the order first
    seen; pandas' grouped mean (compensated sum) and sample sd, the arithmetic every committed summary was made with."""
    ok = pd.DataFrame(values, columns=["key", "seed", "value"])
    agg = ok.groupby("key", sort=False)["value"].agg(["mean", "std", "count"])
    metrics = {k: Stat(float(mean), None if n < 2 else float(sd), int(n)) for k, mean, sd, n in agg.itertuples()}
    by_seed: dict[str, dict[int, float]] = {k: {} for k in metrics}
    for (k, seed), v in ok.groupby(["key", "seed"], sort=False)["value"].mean().items():
        by_seed[k][int(seed)] = float(v)
    return metrics, by_seed


def _identity(g: CandidateRuns) -> dict[str, Any]:
    """A candidate row's identity fields, from its first run."""
    runs, model = g.runs, g.runs[0].run.model
    return {
        "candidate": g.candidate,
        "model_label": runs[0].run.label,
        "layout": model.layout if model else "",
        "stages": model.stages if model else "",
        "depths": tuple(model.depths) if model else (),
        "budget_macs": model.budget_macs if model else None,
        "optimizers": tuple(sorted({r.run.optimizer_name for r in runs})),
        "n": len(runs),
    }


def candidate_rows(space: dict, records: Records, derived: Derived | None = None) -> tuple[CandidateRow, ...]:
    """One row per candidate with a complete run, in candidate order (_row)."""
    return tuple(_row(space, g, derived) for g in groups(space, records))


@dataclass(frozen=True)
class Counts:
    """Trials by outcome; `running` counts the waiting ones too."""

    total: int
    complete: int
    failed: int
    interrupted: int  # a FAIL without a reason: its worker died
    pruned: int
    running: int

    def to_json(self) -> dict[str, int]:
        """The summary's form: the fields in order."""
        return dict(vars(self))

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Counts:
        """The counts `to_json` wrote."""
        names = ("total", "complete", "failed", "interrupted", "pruned", "running")
        return cls(*(int(data.get(f) or 0) for f in names))


def counts(records: Records) -> Counts:
    """Trials by outcome (record.count); a FAIL without a reason is a trial whose worker died (interrupted)."""
    n = count(records)
    return Counts(n["total"], n["complete"], n["failed"], n["interrupted"], n["pruned"], n["running"] + n["waiting"])


def failures(records: Records) -> tuple[StoppedTrial, ...]:
    """Failed, interrupted, pruned and unfinished trials, each with its reason."""
    done = {r.run.identity.key: r.number for r in complete(records)}
    rows = []
    for r in records:
        if r.state != "COMPLETE":
            key = r.run.identity.key
            rows.append(StoppedTrial(r.number, r.candidate, r.seed, key, r.state, _reason(r, done.get(key))))
    return tuple(rows)


def _reason(r: TrialRecord, rerun: int | None) -> str:
    if r.state == "PRUNED":
        return "pruned by the pruner (stopped early, not a failure)"
    if r.state in ("RUNNING", "WAITING"):
        return f"{r.state.lower()} when the report was written"
    if r.run.fail_reason is not None:
        return str(r.run.fail_reason)
    later = f"; rerun completed as trial {rerun}" if rerun is not None else "; rerun resumes it"
    return "interrupted (worker died)" + later


@dataclass(frozen=True)
class Hardware:
    """Where trials ran: CPU, cores, torch threads, GPU and device (None where not recorded); never a host name."""

    cpu: str | None
    cpu_count: int | None
    torch_threads: int | None
    gpu: str | None
    device: str | None
    cpu_kernels: str | None = None  # torch's CPU kernel instruction set (not recorded by older studies)

    def to_json(self) -> dict[str, Any]:
        """The summary's form: `cpu_kernels` only where recorded (older records' form kept)."""
        out = {k: getattr(self, k) for k in ("cpu", "cpu_count", "torch_threads", "gpu", "device")}
        return {**out, "cpu_kernels": self.cpu_kernels} if self.cpu_kernels else out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Hardware:
        """The hardware `to_json` wrote (an older summary's host name is not read)."""
        count, threads = data.get("cpu_count"), data.get("torch_threads")
        return cls(data.get("cpu"), None if count is None else int(count), None if threads is None else int(threads),
                   data.get("gpu"), data.get("device"), data.get("cpu_kernels"))  # fmt: skip


@dataclass(frozen=True)
class StudyEnvironment:
    """Data set, subsets per score, image size, seeds, hardware, versions, wall time and trial counts of a study."""

    study: Mapping[str, Any]  # the space's study block ({} when none)
    data: Mapping[str, Any]  # dataset, root, eval_size ({} when the space names none)
    image_size: int | None
    channels: int | None
    classes: int | None
    subsets: tuple[SubsetUse, ...]  # per score: subsets()
    seeds: tuple[int, ...]
    hardware: tuple[Hardware, ...]  # each distinct one, in trial order
    versions: tuple[Mapping[str, Any], ...]  # each distinct package -> version set, in trial order
    wall_total_s: float
    wall_per_trial: Stat | None
    elapsed_s: float | None  # first trial's start to the last one's end
    counts: Counts

    def to_json(self) -> dict[str, Any]:
        """The summary's form: the fields in order (jsonable renders the typed ones)."""
        return dict(vars(self))

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> StudyEnvironment:
        """The environment `to_json` wrote."""
        jf, wall, ints = json_form, data.get("wall_per_trial"), ("image_size", "channels", "classes")
        size, chans, classes = (None if data.get(k) is None else int(data[k]) for k in ints)
        return cls(
            jf.mapping(data.get("study")),
            jf.mapping(data.get("data")),
            size,
            chans,
            classes,
            tuple(SubsetUse.from_json(jf.mapping(x)) for x in jf.items(data.get("subsets"))),
            tuple(int(x) for x in jf.items(data.get("seeds"))),
            tuple(Hardware.from_json(h) for h in jf.items(data.get("hardware"))),
            tuple(jf.mapping(v) for v in jf.items(data.get("versions"))),
            jf.number(data.get("wall_total_s"), 0.0),
            None if wall is None else Stat.from_json(jf.mapping(wall)),
            jf.maybe(data.get("elapsed_s")),
            Counts.from_json(jf.mapping(data.get("counts"))),
        )


def environment(space: dict, records: Records) -> StudyEnvironment:
    """Data set, subsets per score, image size, seeds, hardware, versions and wall time of the study."""
    done = complete(records)
    size, chans, classes = shape(space)
    walls = [w for r in done if (w := r.run.number("wall_s")) is not None]
    versions: list[Mapping[str, Any]] = []
    for r in done:
        if r.run.environment and (v := dict(r.run.environment.versions)) and v not in versions:
            versions.append(v)
    hardware: list[Hardware] = []
    for r in done:
        if (h := _hardware(r)) not in hardware:
            hardware.append(h)
    return StudyEnvironment(
        space.get("study") or {},
        space.get("data") or {},
        size,
        chans,
        classes,
        subsets(space, done),
        tuple(sorted({r.seed for r in done if r.seed is not None})),
        tuple(hardware),
        tuple(versions),
        sum(walls),
        stat(walls),
        _elapsed(records),
        counts(records),
    )


def _hardware(r: TrialRecord) -> Hardware:
    env = r.run.environment
    if env is None:
        return Hardware(None, None, None, None, None)
    return Hardware(env.cpu, env.cpu_count, env.torch_threads, env.gpu, env.device, env.cpu_kernels or None)


def _elapsed(records: Records) -> float | None:
    starts = [datetime.fromisoformat(r.start) for r in records if r.start]
    ends = [datetime.fromisoformat(r.complete) for r in records if r.complete]
    return (max(ends) - min(starts)).total_seconds() if starts and ends else None


def subsets(space: dict, done: Records) -> tuple[SubsetUse, ...]:
    """Per score: images per class, classes, epochs, data set, and the images a run actually used."""
    images = {s: f"{s}.images" for s in curve_scores()}
    rows = []
    for score, sub in _subset_records(space.get("scores") or {}):
        key = images.get(score)
        used = sorted({v for r in done if key and (v := r.run.value(key)) is not None})
        data, classes = sub.get("dataset") or {}, sub.get("classes")
        rows.append(SubsetUse(score, sub.get("per_class"), None if classes is None else tuple(classes),
                              sub.get("epochs"), data.get("dataset") if data else None, tuple(used)))  # fmt: skip
    return tuple(rows)


def _subset_records(node: dict) -> Iterator[tuple[str, dict]]:
    """(name, subset) for each recorded subset (a mapping with `per_class`), at any depth: `transfer.pretrain` is
    named `pretrain` as older records, which stored it flat, named it."""
    for name, sub in node.items():
        if isinstance(sub, dict) and "per_class" in sub:
            yield name, sub
        elif isinstance(sub, dict):
            yield from _subset_records(sub)


def curves(space: dict, records: Records, score: str) -> tuple[EpochCurve, ...]:
    """Per candidate: mean per-epoch train loss and eval accuracy (%) over its runs of one score."""
    out = []
    for g in groups(space, records):
        cs = [c for r in g.runs if isinstance(c := r.run.curves.get(score), Mapping)]
        cs = [c for c in cs if c.get("train_loss") and c.get("eval_acc")]
        if not cs:
            continue
        n = min(min(len(c["train_loss"]), len(c["eval_acc"])) for c in cs)
        loss = tuple(_mean_at(cs, "train_loss", i) for i in range(n))
        acc = tuple(points(_mean_at(cs, "eval_acc", i)) for i in range(n))
        out.append(EpochCurve(g.candidate, tuple(range(1, n + 1)), loss, acc, len(cs)))
    return tuple(out)


def _mean_at(cs: list[Mapping], key: str, i: int) -> float:
    """Mean of one epoch's value over runs; NaN when no run has it (e.g. a run without evaluation)."""
    vals = pd.Series([c[key][i] for c in cs if c[key][i] is not None], dtype=float)
    return float(vals.mean()) if len(vals) else math.nan


def length_rows(space: dict, records: Records) -> tuple[LengthStability, ...]:
    """Training-length stability per candidate: mean eval acc (%) per schedule length, Δerror vs the longest."""
    sched, acc = (scores.SCORES[LENGTH_SCORE].role(k) for k in ("epochs", "accs"))  # the schedules, eval acc of each
    rows = []
    for g in groups(space, records):
        runs = [r for r in g.runs if r.run.value(sched) and r.run.value(acc)]
        if not runs:
            continue
        epochs = list(runs[0].run.value(sched))
        runs = [r for r in runs if list(r.run.value(sched)) == epochs]
        accs = [_stat(points(r.run.value(acc)[i]) for r in runs) for i in range(len(epochs))]
        longest = accs[epochs.index(max(epochs))].mean
        deltas = tuple(longest - a.mean for a in accs)
        rows.append(LengthStability(g.candidate, runs[0].run.label, tuple(epochs), tuple(accs), deltas, len(runs)))
    return tuple(rows)


def robustness_rows(space: dict, records: Records) -> tuple[SeverityCurve, ...]:
    """Per candidate: eval accuracy (%) against corruption severity (0 = clean), mean over corruptions and runs."""
    rows = []
    for g in groups(space, records):
        cs = [c for r in g.runs if isinstance(c := r.run.curves.get(ROBUSTNESS_SCORE), Mapping)]
        if not cs:
            continue
        severity = list(cs[0]["severity"])
        cs = [c for c in cs if list(c["severity"]) == severity]
        kinds = [k for k in cs[0] if k != "severity"]
        per_run = [[float(pd.Series([c[k][i] for k in kinds]).mean()) for i in range(len(severity))] for c in cs]
        accs = [stat(points(run[i]) for run in per_run) for i in range(len(severity))]
        rows.append(SeverityCurve(g.candidate, tuple(severity), tuple(accs), tuple(kinds), len(cs)))
    return tuple(rows)


def jsonable(x: Any) -> Any:
    """Tables → JSON-ready values: Stats and typed results (their `to_json`) as dicts, NaN/inf as null, tuples as
    lists."""
    to_json = getattr(x, "to_json", None)
    if is_dataclass(x) and callable(to_json):  # a typed analysis result (analysis.results): its summary form
        return jsonable(to_json())
    if isinstance(x, Mapping):  # a dict, or a computed Report (its summary tables)
        return {str(k): jsonable(v) for k, v in x.items()}
    if is_dataclass(x):
        return jsonable(vars(x))
    if isinstance(x, list | tuple):
        return [jsonable(v) for v in x]
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def floor_key(key: str) -> str | None:
    """The fair-floor metric that guards an accuracy measure: its score's `floor_acc` when that is registered."""
    fk = f"{key.split('.', 1)[0]}.floor_acc"
    return fk if fk in METRICS and METRICS[key].unit == "%" else None


def primary_acc(space: dict, done: Records) -> str | None:
    """The accuracy a study is judged by: its objective when that is an accuracy some complete run measured, else
    the first of the objective fallback measured."""
    objective = (space.get("study") or {}).get("objective")
    keys = ([objective] if objective in METRICS and METRICS[objective].unit == "%" else []) + list(scores.FALLBACK)
    return next((k for k in keys if any(r.run.value(k) is not None for r in done)), None)
