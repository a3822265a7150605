"""The run record: what one trial produced, typed and versioned; the one place a record's fields are named.

A trial builds a `RunRecord` (`completed` / `failed`); the store writes it as ONE user attribute (`ATTR`, JSON)
and reads it back through `read`, the one migration-on-read function: journals written before the record
(version 1: one flat attribute per field and metric, as at 7eb0683 and b1c4749) open as the same record
(record_flat.py turns their attributes into the record's JSON data).
Everything downstream (the report, `api.results()`, the dashboard view) reads `TrialRecord`s only.
Metric keys (`generalization.eval_acc`) are the score registry's names, not record fields.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from coatsearch.scores.base import Measured
from coatsearch.space.search import architecture
from coatsearch.storage import record_flat
from coatsearch.training.point import RUN_CURVE_KEYS, Curve, RunCurve

VERSION = 2  # 1: flat attributes (before the record); 2: one `record` attribute
ATTR = record_flat.ATTR  # the user attribute holding the record
CLAIM_ATTRS = ("key", "run_id", "backend", "worker", "killed_by", "interrupted", "told")  # the claim protocol's
_MODEL_METRICS = ("params", "macs", "budget_error", "budget_params_error")  # metric keys that are model fields
_EMPTY: Mapping[str, Any] = MappingProxyType({})


def _none() -> Mapping[str, Any]:
    return _EMPTY


@dataclass(frozen=True)
class Identity:
    """Which planned trial this is: candidate, seed, sample and the plan key."""

    candidate: str = "?"
    seed: int | None = None
    sample: int | None = None
    key: str | None = None


@dataclass(frozen=True)
class Model:
    """The matched model a trial trained: what the papers call it, its stages, size and budget error."""

    label: str = ""  # ViT_P, ViT_C, ViT_REL or the stage layout
    arch: str = ""
    layout: str = ""
    stem: str = ""
    stages: str = ""  # e.g. 'C1x32/1 C3x64/2 T7x128/2 T1x256/1'
    depths: tuple[int, ...] = ()
    widths: tuple[int, ...] = ()
    tokens: tuple[str, ...] = ()
    params: int | None = None
    macs: int | None = None
    budget_macs: int | None = None
    budget_error: float | None = None  # relative MACs error against the budget
    budget_params_error: float | None = None  # joint budgets only
    multiplier: float | None = None
    structure: str | None = (
        None  # the solved model's identity (space.admission.structure): what makes two trials one architecture
    )


@dataclass(frozen=True)
class Optimizer:
    """The trial's optimizer settings (the space's `train`, with any sampled values)."""

    name: str = "?"
    lr: float | None = None
    weight_decay: float | None = None
    settings: Mapping[str, Any] = field(default_factory=_none)  # every setting, as the spec has them


@dataclass(frozen=True)
class Environment:
    """Where the trial ran: device, host, hardware and library versions."""

    device: str | None = None
    host: str | None = None
    pid: int | None = None
    python: str | None = None
    platform: str | None = None
    cpu: str | None = None
    cpu_count: int | None = None
    torch_threads: int | None = None
    gpu: str | None = None
    versions: Mapping[str, str] = field(default_factory=_none)
    cpu_kernels: str | None = None  # the instruction set torch's CPU kernels dispatch to (AVX2, AVX512, ...)


@dataclass(frozen=True)
class RunRecord:
    """What one trial produced: identity, model, metrics and curves per score, optimizer, timing, environment."""

    version: int = VERSION
    state: str = "COMPLETE"  # COMPLETE | FAIL | PRUNED | REJECTED | REUSED | RUNNING | WAITING (as told, or as stored)
    identity: Identity = Identity()
    model: Model | None = None  # None: the trial failed before its model was matched
    metrics: Mapping[str, Mapping[str, Any]] = field(
        default_factory=_none
    )  # score (key prefix) -> metric name -> value
    # curve name -> a training run's curve (a RunCurve: its step points, typed), or other JSON data (robustness's
    # accuracy per severity, curves recorded before RunCurve's form): see _curves
    curves: Mapping[str, RunCurve | Mapping[str, Any]] = field(default_factory=_none)
    optimizer: Optimizer | None = None
    wall_s: float | None = None  # the trial's wall time
    environment: Environment | None = None
    objective: str | None = None  # the metric the trial's value is (the study objective or its fallback)
    objectives: tuple[str, ...] = ()  # a multi-objective study's objectives
    # which images served which purpose: {validation: fingerprint, test: fingerprint, test_draw: k} (`images_of`);
    # empty in records made before the split (one eval set served choices and verdicts)
    images: Mapping[str, Any] = field(default_factory=_none)
    fail_reason: str | None = None
    extra: Mapping[str, Any] = field(
        default_factory=_none
    )  # what a backend adds (e.g. `ray`), and unknown attributes of older journals

    def __post_init__(self) -> None:
        object.__setattr__(self, "curves", _curves(self.curves))

    def value(self, key: str) -> Any:
        """A metric by its registry key (`generalization.eval_acc`, or a model metric: `params`, `wall_s`)."""
        if key == "wall_s":
            return self.wall_s
        if key in _MODEL_METRICS:
            return getattr(self.model, key, None)
        score, _, name = key.partition(".")
        return self.metrics.get(score, _EMPTY).get(name)

    def number(self, key: str) -> float | None:
        """A metric as a finite number, or None (missing, not a number, a bool or not finite)."""
        v = self.value(key)
        ok = isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
        return float(v) if ok else None

    def curve(self, name: str) -> Curve | None:
        """The training run's curve `name` (training.point.Curve): a RunCurve's points, or a per-epoch curve recorded
        before steps were (its lists, no steps); None for none or another kind (robustness's per severity)."""
        c = self.curves.get(name)
        if isinstance(c, RunCurve):
            return c.points
        return Curve.from_json(c) if isinstance(c, Mapping) and ("eval_acc" in c or "train_loss" in c) else None

    def keys(self) -> tuple[str, ...]:
        """Every measured metric key, score by score."""
        return tuple(f"{s}.{n}" for s, per in self.metrics.items() for n in per)

    @property
    def label(self) -> str:
        """What the papers call the trial's model (its candidate name when no model was recorded)."""
        return (self.model.label if self.model else "") or self.identity.candidate

    @property
    def optimizer_name(self) -> str:
        """The optimizer's name ('?' when unrecorded)."""
        return self.optimizer.name if self.optimizer else "?"


@dataclass(frozen=True)
class TrialRecord:
    """One stored trial as everything downstream reads it: storage facts plus its run record. Frozen, a copy."""

    number: int
    value: float | None
    params: Mapping[str, Any]  # the trial's Optuna params (candidate, seed, sampled dimensions)
    start: str | None  # ISO datetimes
    complete: str | None
    run: RunRecord

    @property
    def state(self) -> str:
        """COMPLETE | PRUNED | FAIL | RUNNING | WAITING."""
        return self.run.state

    @property
    def candidate(self) -> str:
        """The candidate's name ('?' when unknown)."""
        return self.run.identity.candidate

    @property
    def seed(self) -> int | None:
        """The trial's seed."""
        return self.run.identity.seed

    @property
    def interrupted(self) -> bool:
        """A FAIL without a reason: its worker died or the run stopped (the key is free again)."""
        return self.state == "FAIL" and self.run.fail_reason is None

    def searched(self) -> dict[str, Any]:
        """The sampled search dimensions (params other than candidate and seed)."""
        return {k: v for k, v in self.params.items() if k not in ("candidate", "seed")}


def completed(identity: Identity, model: Model, measured: Measured, optimizer: Optimizer, **kw: Any) -> RunRecord:
    """The record of a COMPLETE trial from what `scores.measure` returned: its metrics nested per score, its curves
    as measured.

    `kw`: wall_s, environment, objective, objectives, images, extra. The trial and the calibration's simulated
    studies both build their records here."""
    metrics, _ = split(measured.metrics)
    return RunRecord(VERSION, "COMPLETE", identity, model, metrics, measured.curves, optimizer, **kw)


def _curves(curves: Mapping[str, Any]) -> Mapping[str, RunCurve | Mapping[str, Any]]:
    """A record's curves, read-only: a training run's curve as a RunCurve (JSON data in RunCurve's form is read as
    one), other JSON data frozen as stored (robustness's per severity, and curves recorded before RunCurve's form,
    which `RunRecord.curve` reads and which are written back as they were read)."""

    def one(c: Any) -> RunCurve | Mapping[str, Any]:
        if isinstance(c, RunCurve):
            return c
        return RunCurve.from_json(c) if isinstance(c, Mapping) and set(c) == RUN_CURVE_KEYS else _frozen(c)

    return MappingProxyType({name: one(c) for name, c in curves.items()})


_VALIDATION = "val_"  # the name prefix of a metric measured on the validation images (subsets.split)


def twin(key: str) -> str:
    """The validation twin of a metric key read on the test images: `accuracy.eval_acc` -> `accuracy.val_acc`,
    `transfer.gain` -> `transfer.val_gain` (the key itself when it is a validation key)."""
    score, _, name = key.partition(".")
    if name.startswith(_VALIDATION):
        return key
    return f"{score}.{_VALIDATION}{name.removeprefix('eval_')}"


def selection_key(key: str, measured: Mapping[str, Any]) -> str:
    """The key a choice (objective, pruning) reads for `key`: its validation twin when the run measured one."""
    return twin(key) if twin(key) in measured else key


def on_test(run: RunRecord) -> tuple[str, ...]:
    """The objectives of a record with a split that read its test images: keys whose validation twin it measured
    (a trial value computed on the images that decide verdicts)."""
    if not run.images:
        return ()
    keys = [k for k in (run.objective, *run.objectives) if k]
    return tuple(dict.fromkeys(k for k in keys if twin(k) != k and run.value(twin(k)) is not None))


def validation_view(trial: TrialRecord) -> TrialRecord:
    """The trial as its validation images saw it: each metric and curve read on the test images replaced by its
    validation twin where it has one (what a planner's pilot reads: choices never see test images)."""
    run = trial.run
    if not run.images:
        return trial
    metrics = {s: {n: per.get(twin(f"{s}.{n}").partition(".")[2], v) for n, v in per.items()}
               for s, per in run.metrics.items()}  # fmt: skip

    def val(k: str) -> str:
        return _VALIDATION + k.removeprefix("eval_")

    def seen(cur: RunCurve | Mapping[str, Any]) -> RunCurve | Mapping[str, Any]:
        if isinstance(cur, RunCurve):
            p = cur.points
            points = dataclasses.replace(p, eval_acc=p.val_acc or p.eval_acc, eval_loss=p.val_loss or p.eval_loss)
            return dataclasses.replace(cur, points=points)
        return {**cur, **{k: cur[val(k)] for k in ("eval_acc", "eval_loss") if cur.get(val(k))}}

    curves = {c: seen(cur) for c, cur in run.curves.items()}
    return dataclasses.replace(trial, run=dataclasses.replace(run, metrics=_frozen(metrics), curves=curves))


def images_of(measured: Mapping[str, Any], test_draw: int, sampling: str = "shared") -> dict[str, Any]:
    """Which images served which purpose in a trial's runs: one fingerprint each for its validation and its
    test images (a run's own when all its score runs share one, else a hash of theirs in order), the draw, and
    `test_sampling: per_seed` when each trial seed sampled its own test images (DataSpec.test_sampling)."""
    import hashlib

    def one(suffix: str) -> str | None:
        prints = list(dict.fromkeys(str(v) for k, v in measured.items() if k.endswith(suffix)))
        if len(prints) <= 1:
            return prints[0] if prints else None
        return hashlib.sha1(" ".join(prints).encode()).hexdigest()[:12]

    validation, test = one(f".{_VALIDATION}fingerprint"), one(".eval_fingerprint")
    if validation is None or test is None:
        return {}
    out = {"validation": validation, "test": test, "test_draw": test_draw}
    return out if sampling == "shared" else {**out, "test_sampling": sampling}


def failed(
    identity: Identity, reason: str | None, environment: Environment | None = None, state: str = "FAIL"
) -> RunRecord:
    """The record of a trial that produced no result: FAIL with its reason (None: interrupted), or PRUNED."""
    return RunRecord(VERSION, state, identity, fail_reason=reason, environment=environment)


def split(measured: Mapping[str, Any]) -> tuple[Mapping[str, Mapping[str, Any]], Mapping[str, Mapping[str, Any]]]:
    """Flat measured keys (`score.name`, `curves.<name>`) as (metrics per score, curves per name), read-only."""
    metrics, curves = record_flat.split(measured)
    return _frozen(metrics), _frozen(curves)


def measured(run: RunRecord) -> dict[str, Any]:
    """The flat measured form of a record's metrics and curves (the inverse of `split`), as plain data."""
    return record_flat.join(_plain(run.metrics), _plain(run.curves))


def with_measured(run: RunRecord, flat: Mapping[str, Any]) -> RunRecord:
    """The record with its metrics and curves replaced by `flat` (measured form)."""
    metrics, curves = split(flat)
    return dataclasses.replace(run, metrics=metrics, curves=curves)


def to_json(run: RunRecord) -> dict[str, Any]:
    """The record as JSON data (what the store writes as the one `record` attribute)."""
    return _plain(run)


def from_json(data: Mapping[str, Any]) -> RunRecord:
    """The record `to_json` wrote (unknown fields are kept in `extra`, so a newer writer loses nothing)."""
    d = dict(data)
    model, optim, env = d.pop("model", None), d.pop("optimizer", None), d.pop("environment", None)
    identity = _build(Identity, d.pop("identity", None) or {})
    known = {f.name for f in dataclasses.fields(RunRecord)}
    extra = {**(d.pop("extra", None) or {}), **{k: d.pop(k) for k in list(d) if k not in known}}
    return RunRecord(
        **{k: _frozen(v) for k, v in d.items()},
        identity=identity,
        model=None if model is None else _build(Model, model),
        optimizer=None if optim is None else _build(Optimizer, optim),
        environment=None if env is None else _build(Environment, env),
        extra=_frozen(extra),
    )


_SHAPES = {"identity": Mapping, "model": Mapping, "optimizer": Mapping, "environment": Mapping,
           "metrics": Mapping, "curves": Mapping, "extra": Mapping, "objectives": list,
           "images": Mapping}  # fmt: skip


def problem(data: Any) -> str:
    """Why a stored `record` attribute is not one this module wrote ("" when it is): its first mistyped part."""
    if not isinstance(data, Mapping):
        return f"attribute {ATTR} is a {type(data).__name__}, expected a mapping"
    for name, kind in _SHAPES.items():
        if data.get(name) is not None and not isinstance(data[name], kind):
            return f"attribute {ATTR}: {name} is a {type(data[name]).__name__}, expected a {kind.__name__.lower()}"
    for name in ("metrics", "curves"):
        bad = [k for k, v in (data.get(name) or {}).items() if not isinstance(v, Mapping)]
        if bad:
            return f"attribute {ATTR}: {name}.{bad[0]} is not a mapping"
    if not isinstance(data.get("version"), int) or isinstance(data.get("version"), bool):
        return f"attribute {ATTR}: version is missing or not an integer"
    return ""


def read(attrs: Mapping[str, Any], state: str, params: Mapping[str, Any]) -> RunRecord:
    """The one migration-on-read: a stored trial's user attributes (any version) as its RunRecord.

    Version 2 holds the record under `ATTR`; older journals hold one flat attribute per field and metric.
    The storage's state wins (a trial can be RUNNING or interrupted), and params name a failed trial's candidate.
    """
    stored = attrs.get(ATTR)
    run = from_json(stored if isinstance(stored, Mapping) else record_flat.to_data(attrs, _FLAT_MODEL, CLAIM_ATTRS))
    ident = run.identity
    candidate = str(params.get("candidate") or ident.candidate or "?")
    seed = params.get("seed", ident.seed)
    key = ident.key if ident.key is not None else attrs.get("key")
    reason = run.fail_reason if run.fail_reason is not None else attrs.get("fail_reason")
    ident = dataclasses.replace(ident, candidate=candidate, seed=seed, key=key)
    return dataclasses.replace(run, state=state, identity=ident, fail_reason=reason)


_FLAT_MODEL = {f.name for f in dataclasses.fields(Model)} - {"label"} | {"model_label"}  # version 1's model keys


def flat(run: RunRecord) -> dict[str, Any]:
    """The record in version 1's form, one flat key per field and metric (the migration's inverse), plain data."""
    return record_flat.from_data(to_json(run))


def optimizer(settings: Any) -> Optimizer:
    """The Optimizer of an optimizer spec (`vocab.specs.OptimSpec`) or of its settings as a mapping."""
    return _build(
        Optimizer, record_flat.optimizer(settings if isinstance(settings, Mapping) else dataclasses.asdict(settings))
    )


def _build(cls: type, data: Mapping[str, Any]) -> Any:
    """A frozen dataclass from JSON data: known fields only, lists as tuples, mappings read-only."""
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: _frozen(v) for k, v in data.items() if k in names})


def _frozen(value: Any) -> Any:
    """JSON data made immutable: lists as tuples, dicts as read-only mappings (deep)."""
    if isinstance(value, Mapping):
        return MappingProxyType({k: _frozen(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return tuple(_frozen(v) for v in value)
    return value


def _plain(value: Any) -> Any:
    """Frozen data back to plain JSON data: a RunCurve as its JSON form, records and mappings as dicts, tuples as
    lists (deep)."""
    if isinstance(value, RunCurve):
        return value.to_json()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def count(trials: Iterable[TrialRecord]) -> dict[str, int]:
    """Trials by outcome (the one state counter); `failed` has a reason, `interrupted` has none."""
    ts = list(trials)
    return {
        "total": len(ts),
        "complete": sum(t.state == "COMPLETE" for t in ts),
        "failed": sum(t.state == "FAIL" and not t.interrupted for t in ts),
        "interrupted": sum(t.interrupted for t in ts),
        "pruned": sum(t.state == "PRUNED" for t in ts),
        "rejected": sum(t.state == "REJECTED" for t in ts),  # sampled points refused before training
        "reused": sum(t.state == "REUSED" for t in ts),  # sampled points whose network was measured on that seed
        "running": sum(t.state == "RUNNING" for t in ts),
        "waiting": sum(t.state == "WAITING" for t in ts),
    }


def row(t: TrialRecord) -> dict[str, Any]:
    """One trial as a flat table row (the one trial-to-row converter): storage facts, identity, model, metrics."""
    run = t.run
    row: dict[str, Any] = {
        "number": t.number,
        "state": t.state,
        "value": t.value,
        "candidate": t.candidate,
        "seed": t.seed,
        "sample": run.identity.sample,
        "start": t.start,
        "complete": t.complete,
        "fail_reason": run.fail_reason,
        "key": run.identity.key,
        "architecture": architecture(run),  # its row name (space.search.arch_name), "" without a structure
    }
    if run.extra.get("reuse") is not None:  # a sampled point whose network another trial measured (store.reuse)
        row["reuse_of"] = run.extra["reuse"]
    if run.model is not None:
        m = _plain(run.model)
        row.update({"model_label": m.pop("label"), **{k: _cell(v) for k, v in m.items()}})
    row.update({k: _cell(v) for k, v in measured(run).items() if not k.startswith("curves.")})
    row.update({k: v for k, v in t.params.items() if k not in row})
    if run.optimizer is not None:
        row.update({f"optim.{k}": _cell(v) for k, v in run.optimizer.settings.items()})
    row.update(wall_s=run.wall_s, objective=run.objective)
    if run.environment is not None:
        env = _plain(run.environment)
        row["device"] = env.pop("device")
        versions = env.pop("versions") or {}
        row.update({f"env.{k}": v for k, v in env.items()})
        row.update({f"env.versions.{k}": v for k, v in versions.items()})
    return row


def _cell(value: Any) -> Any:
    """A table cell: lists of scalars joined with ', ' (floats to 4 significant digits), other values as they are."""
    if isinstance(value, list | tuple):
        return ", ".join(f"{v:.4g}" if isinstance(v, float) else str(v) for v in value)
    return value
