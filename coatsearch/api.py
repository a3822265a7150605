"""The public Python API: load a space, build and count its models, run a study, read results, write the report.

Everything here is what the command line does, as functions: `coatsearch run` is `run(load_space(...))`.
Heavy libraries (torch, optuna, pandas) are imported inside the functions, so `import coatsearch` stays cheap.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coatsearch.errors import UserError
from coatsearch.run_study import ReportPaths, check_matched, registration, report_paths
from coatsearch.runner.status import Status, status  # noqa: F401  (public: where a study stands)
from coatsearch.space.objects import Baseline, Candidate, Space
from coatsearch.storage.trials import RunSummary
from coatsearch.vocab import bounds
from coatsearch.vocab.bounds import (  # noqa: F401  (the bounds the CLI shares, re-exported)
    BUDGET_MAX_S,
    EFFECT_MAX,
    ENGINES,
    FORMATS,
    PILOT_SEEDS_MAX,
    TRIALS_MAX,
    WORKERS_MAX,
    RayOptions,
    check_backend_args,
    checked,
)
from coatsearch.vocab.run_options import RunOptions, options_of

if TYPE_CHECKING:
    import pandas
    from torch import nn

    from coatsearch.budget.count import Complexity
    from coatsearch.planner import Plan
    from coatsearch.storage.journal import Repaired
    from coatsearch.storage.store import Study
    from coatsearch.vocab.specs import ModelSpec


@dataclass(frozen=True)
class RunResult(RunSummary):
    """What `run` did: the study's counts after the run (storage.trials.RunSummary), and the report it wrote (None with
    report=False)."""

    report: Path | None = None


def load_space(path: str | Path, profile: str | None = None) -> Space:
    """Read, validate and expand a space file; every candidate solved to the budget (UserError on bad input).

    `path` may name a shipped space (`"paper_layouts"`, coatsearch.shipped) when no such file exists."""
    from coatsearch import shipped
    from coatsearch.space.load import where
    from coatsearch.space.objects import load_space as _load

    if not isinstance(path, str | Path):
        raise UserError(f"space: {path!r} is not allowed; allowed: a space file's path (a str or Path) or a Space")
    if profile is not None and not isinstance(profile, str):
        raise UserError(f"profile: {profile!r} is not allowed; allowed: a profile's name (a str)")
    space = _load(shipped.resolve(path), profile or "default")
    for i, cand in enumerate(space.candidates):
        prep = cand.prepared  # matched now, kept on the candidate: run, plan and show never solve it again
        if prep.params_range is not None:  # a layout that cannot reach the params target at this MACs target
            raise UserError(f"{where(path, ('candidates', i, 'budget', 'params'))}: {prep.name}: {prep.reason}")
    return space


def build(
    spec: ModelSpec | Candidate | Baseline | None = None,
    *,
    study: str | None = None,
    trial: int | None = None,
    studies_dir: str | Path = "studies",
) -> nn.Module:
    """The untrained `nn.Module` of a model spec, a loaded candidate, or trial `trial` of `study` (its model
    rebuilt from the trial's record and the space recorded with the study: coatsearch.storage.found)."""
    from coatsearch.models import build as _build

    if study is not None or trial is not None:
        if spec is not None or study is None or trial is None:
            raise UserError("build takes a spec, or study= and trial= together")
        from coatsearch.storage.found import trial_model
        from coatsearch.storage.paths import check_name
        from coatsearch.vocab import numbers

        trial = checked("trial", numbers.count, trial, 0, TRIALS_MAX)  # `show --trial`'s check: '3' is refused
        return _build(trial_model(check_name(study), trial, studies_dir).prepared.model)
    if spec is None:
        raise UserError("build needs a spec, a candidate, or study= and trial=")
    return _build(spec.spec if isinstance(spec, Candidate | Baseline) else spec)


def count(model_or_spec: nn.Module | ModelSpec | Candidate | Baseline, image_size: int | None = None) -> Complexity:
    """MACs per image (multiply-adds, attention included) and parameters of a spec or a module.

    A spec carries its image size; a module needs `image_size` (its input channels are read from it).
    """
    from coatsearch.budget import count as complexity

    if isinstance(model_or_spec, Candidate | Baseline):
        model_or_spec = model_or_spec.spec
    if not hasattr(model_or_spec, "forward"):
        return complexity.count(model_or_spec)  # type: ignore[arg-type]
    if image_size is None:
        raise ValueError("count(module) needs image_size")
    module: Any = model_or_spec
    first = next((p for p in module.parameters() if p.dim() == 4), None)
    channels = int(first.shape[1]) if first is not None else 3
    return complexity.measure(module, image_size, channels, device=next(module.parameters()).device)


def _space_arg(space: Any, profile: str | None) -> Space:
    """`space` (a Space, or a file loaded under `profile`); a Space loaded under another profile than a given
    `profile` is refused, never run under its own silently."""
    if not isinstance(space, Space):
        return load_space(space, profile)
    if profile is not None and profile != space.profile:
        raise UserError(f"profile: {profile!r}, but the Space was loaded under profile {space.profile!r}; load it "
                        f"with coatsearch.load_space(path, {profile!r}), or leave out profile")  # fmt: skip
    return space


def study_name(space: Space, study: str | None = None) -> str:
    """The study a space runs in: `study`, else the space's name (plus -PROFILE unless default)."""
    if study is not None:
        return study
    return space.name if space.profile == "default" else f"{space.name}-{space.profile}"


def run(space: Space | str | Path, options: RunOptions | None = None, /, **given: Any) -> RunResult:
    """Train and score every planned trial not yet in the study (resumes), then write the report.

    The same engine as `coatsearch run`, whose flags build the same `options` (coatsearch.RunOptions: each option
    declared once, its meaning beside it); keywords set its fields: `run(space, study="s", workers=2)` is
    `run(space, RunOptions(study="s", workers=2))`. `backend` "optuna" runs `workers` local processes ("auto":
    processes x threads from a short probe, cached per machine, its choice printed), "ray" runs Ray Tune (`address`,
    `cpus_per_trial`, `gpus_per_trial`); either writes into studies_dir/<study>/, one run of a study at a time.
    A study keeps the space it was created with: a changed space is a UserError (nothing written) unless
    `force_new_space`, which records the new space and keeps the old trials.
    `plan_first` (optuna backend; `coatsearch run` sets it unless --no-plan): pilot the study first (or reuse
    the plan stored for the same space and workers), print its ETA line and store it as
    studies_dir/<study>/plan.json for `status` and the report.
    Before the first trial the analysis is registered (studies_dir/<study>/registration.json,
    coatsearch.papers.registration; `replicate_of`: the study this one replicates); a resumed run with another
    analysis records the deviation.
    `log` "tensorboard" or "mlflow" (None: the space's `log:`) tracks every trial live (coatsearch.runner.tracking);
    `tracking_uri`: MLflow's store (None: MLFLOW_TRACKING_URI, else SQLite in the study folder), which also gets the
    report and figures as artifacts.
    `keep_top` K (None: the space's `keep_top:`; 0: none) keeps the final weights of the K best trials in
    studies_dir/<study>/weights/kept/ (coatsearch.runner.kept; optuna backend, one objective), which
    `export --best` then uses instead of retraining.
    A profile that declares a claim decided (`decides:`) whose plan cannot decide it is a UserError before anything
    is written, unless `allow_undecided` (planner.runs.check_decides).
    """
    from coatsearch import run_study

    o = options_of(options, given)
    sp = _space_arg(space, o.profile)
    s, written = run_study.run(sp, study_name(sp, o.study), o)
    return RunResult(**dataclasses.asdict(s), report=written.markdown if written is not None else None)


def plan(
    space: Space | str | Path,
    study: str | None = None,
    workers: int | str = "auto",
    device: str = "auto",
    *,
    profile: str | None = None,
    studies_dir: str | Path = "studies",
    reports_dir: str | Path = "reports",
    budget: float | str | None = None,
    effect: float | None = None,
    pilot_seeds: int = 0,
    register: bool = False,
    allow_undecided: bool = False,
) -> Plan:
    """Size a study before it runs: time and memory per trial and in all, power and regime per claim.

    Every distinct trial is piloted for a few steps per training run at the processes x threads `run` would
    use. Noise comes from an earlier study of the space (studies_dir/<study>, else reports_dir/<study>/
    summary.json), else from a pilot study of `pilot_seeds` seeds (run first, into <study>-pilotN), else a
    stated prior. `budget` (seconds, or '30m', '1h30m') finds the most seeds that fit; `effect` (points) the
    seeds a difference of that size needs. The plan lists the analysis `run` registers and whether the study
    matches its registration; `register` writes studies_dir/<study>/registration.json now, without running.
    A claim the profile declares decided (`decides:`) that the plan cannot decide is a UserError, unless
    `allow_undecided`.
    """
    from coatsearch import planner
    from coatsearch.planner import power, predict
    from coatsearch.planner.runs import check_decides, pilot_study, trials_held
    from coatsearch.runner.workers import processes
    from coatsearch.vocab import numbers

    sp = _space_arg(space, profile)
    name, studies, reports = study_name(sp, study), Path(studies_dir), Path(reports_dir)
    budget_s = predict.parse_duration(budget) if isinstance(budget, str) else budget
    if budget_s is not None:
        checked("budget", numbers.real, budget_s, 0.0, BUDGET_MAX_S)
    if effect is not None:
        checked("effect", numbers.real, effect, 0.0, EFFECT_MAX)
    checked("pilot_seeds", numbers.count, pilot_seeds, 0, PILOT_SEEDS_MAX)
    bounds.check_counts(workers, None)
    check_matched(sp)
    registrar = registration(sp, studies, name)
    registrar.check()  # a registration of another space stops here
    procs = processes(sp, workers, None, device, False)
    sibs: tuple[power.Earlier, ...] = ()  # a pilot measured this profile itself: no sibling's noise
    if pilot_seeds:
        pilot = pilot_study(sp, name, pilot_seeds, workers, device, studies, run)
        earlier = power.from_study(studies, pilot, "pilot")
    else:
        earlier, sibs = power.sources(studies, reports, sp.name, name)
    made = planner.make_plan(sp, name, *procs, device=device, earlier=earlier, budget_s=budget_s, effect=effect,
                             siblings=sibs)  # fmt: skip
    check_decides(sp, studies, name, reports, made.claims, allow_undecided)  # before the registration is written
    if register:
        registrar.register(trials_held(studies, name))
    return dataclasses.replace(made, registration=registrar.lines())


def repair(study: str, studies_dir: str | Path = "studies") -> Repaired:
    """Keep every complete record of a damaged study journal; move the damaged tail to a backup beside it."""
    from coatsearch.storage.store import repair as _repair

    return _repair(Path(studies_dir), study)


def write_report(
    study: str,
    studies_dir: str | Path = "studies",
    reports_dir: str | Path = "reports",
    note: bool = False,
    history: bool = False,
) -> ReportPaths:
    """Write reports/<study>/report.md, summary.json and PNG figures from the storage (which it only reads).

    `note`: also save the report as the study's optuna-dashboard note (the one write reporting makes).
    `history`: also read earlier looks from the git history of the reports folder's repository."""
    if not isinstance(history, bool):
        raise UserError(f"history: must be True or False, got {history!r}")
    return report_paths(study, Path(studies_dir), Path(reports_dir), note, history)


def write_answer(space: str | Path, reports_dir: str | Path = "reports") -> Path:
    """Write reports/<space name>/answer.md: every claim of the space taken from the study whose profile decides it,
    one row per relation, from the summaries under `reports_dir` (which it only reads); returns the page's path.
    A missing space file, or no report of the space, is a one-line UserError."""
    from coatsearch.answer.space_answer import write_answer as _write

    if not isinstance(space, str | Path):
        raise UserError(f"space: {space!r} is not allowed; allowed: a space file's path (a str or Path)")
    return _write(Path(space), Path(reports_dir))


def open_study(study: str, studies_dir: str | Path = "studies") -> Study:
    """The study's storage, opened: the one place this API reads trials from (UserError when missing)."""
    from coatsearch.storage.store import load_study

    return load_study(Path(studies_dir), study)


NOT_EXPORTED = ("env.host",)  # a table written to share names no machine (as the report's hardware never does)


def results(study: str, studies_dir: str | Path = "studies") -> pandas.DataFrame:
    """One row per trial (record.row of its run record): number, state, value, candidate, seed, sample, model,
    every scalar metric, optimizer and environment.

    Metric columns keep their registry keys (`generalization.eval_acc`); nested fields are dotted (`optim.lr`,
    `env.versions.torch`); per-step curves are left out (`curves(study)` gives them, one row per point).
    Journals of any version read the same (record.read).
    """
    import pandas as pd

    from coatsearch.storage import record, store

    rows = [record.row(store.record(t)) for t in open_study(study, studies_dir).get_trials(deepcopy=False)]
    head = ["number", "state", "value", "candidate", "seed", "sample", "start", "complete", "fail_reason"]
    frame = pd.DataFrame(rows)
    for col in head:
        if col not in frame:
            frame[col] = None
    for col in ("start", "complete"):
        frame[col] = pd.to_datetime(frame[col])
    return frame[head + [c for c in frame.columns if c not in head]]


def curves(study: str, studies_dir: str | Path = "studies") -> pandas.DataFrame:
    """The per-step curves of every complete trial as one tidy table: a row per measured point, with columns
    study, trial, candidate, seed, phase (the curve: `generalization`, a transfer run's, ...), step, then
    train_loss, train_acc, eval_loss, eval_acc (test images), val_loss, val_acc (validation images), lr_phase.

    A function of its own rather than a `results(..., curves=True)`: `results` is one row per trial and this is
    one row per point, so a flag would change what a row is; `trial` joins the two (`results`' `number`).
    """
    from coatsearch.analysis.run_frames import step_curves
    from coatsearch.storage import store

    records = [store.record(t) for t in open_study(study, studies_dir).get_trials(deepcopy=False)]
    return step_curves(records, study)


def export(
    study: str,
    fmt: str,
    out: str | Path | None = None,
    studies_dir: str | Path = "studies",
    best: int | None = None,
    save_weights: bool = False,
    device: str = "cpu",
    *,
    retrain: bool = False,
) -> Path:
    """Write `results(study)` as csv, parquet or json (default path: <study>.<fmt>); returns the path. With
    `best` K and fmt "yaml": the K best searched architectures as candidate entries (coatsearch.storage.found);
    `save_weights` also saves each one's trained weights beside the YAML, `<stem>.<architecture>.safetensors`
    (coatsearch.runner.weights; `coatsearch.load_weights` loads one back): its best trial's weights kept by
    `run(..., keep_top=K)` when they match that trial's architecture, seed and model (coatsearch.runner.kept), else
    (or with `retrain`) retrained on its seed and values. fmt "timm" with `best` K: the same weights written into
    the study folder for
    `coatsearch.timm_models.register` (returns that folder); with `out`, also a folder per architecture there that
    `timm.create_model("local-dir:...")` loads without the study (`timm_models.save_folder`; returns `out`).

    The file is written atomically (`coatsearch.fsafe`); a path inside any study's folder (`paths.writable`:
    this study's, or any folder holding a journal, lock or plan) or a link is refused before anything is written.
    """
    from coatsearch import fsafe
    from coatsearch.storage.paths import writable

    if fmt not in FORMATS:
        raise UserError(f"unknown format {fmt!r}; formats: {', '.join(FORMATS)}")
    if (fmt in ("yaml", "timm")) != (best is not None):
        raise UserError("--best K goes with --format yaml or timm (architectures); csv, parquet and json are tables")
    if fmt == "timm":
        from coatsearch import timm_models

        if save_weights:
            raise UserError("--format timm writes the weights into the study folder (and folders to --out): "
                            "no --save-weights")  # fmt: skip
        return timm_models.export(study, int(best or 0), studies_dir, device, out, retrain=retrain)
    if retrain and not save_weights:  # the flags' combinations first, before the study is read
        raise UserError("--retrain goes with --save-weights or --format timm (the found architectures' weights)")
    if save_weights and best is None:
        raise UserError("--save-weights goes with --best K --format yaml (the found architectures' weights)")
    path = Path(out) if out is not None else Path(f"{study}.{fmt}")
    frame = results(study, studies_dir) if best is None else None  # a missing study stops here
    frame = None if frame is None else frame.drop(columns=[c for c in NOT_EXPORTED if c in frame])
    text = _best_yaml(study, best, studies_dir) if best is not None else ""
    writable(path, Path(studies_dir), "--out", "the export", study)
    fsafe.check_plain(path)  # a link or special file there: refused before anything is trained or written
    if save_weights:
        assert best is not None
        return _save_weights(study, best, path, text, studies_dir, device, retrain)
    if fmt == "parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise UserError("parquet needs pyarrow: pip install 'coatsearch[parquet]'") from None
    if frame is None:
        fsafe.write(path, text)
        return path
    with fsafe.replacing(path) as tmp:
        if fmt == "csv":
            frame.to_csv(tmp, index=False)
        elif fmt == "parquet":
            frame.to_parquet(tmp, index=False)
        else:
            frame.to_json(tmp, orient="records", date_format="iso", indent=1)
    return path


def _save_weights(
    study: str, best: int, path: Path, text: str, studies_dir: str | Path, device: str, retrain: bool = False
) -> Path:
    """The `best` architectures' weights, kept or retrained (nothing written until all are at hand), then the YAML
    and each one's weights file; a line per file says where the weights came from and the objective."""
    from coatsearch import fsafe
    from coatsearch.runner import kept, weights
    from coatsearch.storage import found
    from coatsearch.storage.paths import writable
    from coatsearch.training.fit import pick_device

    pick_device(device)  # a device this machine lacks: one line before anything is trained
    models = [tm for tm, _, _ in found.best(study, best, studies_dir)]
    targets = [weights.path_for(path, tm.architecture) for tm in models]
    for target in [path, *targets]:  # every file checked before any is written: no half-done export
        writable(target, Path(studies_dir), "--out", "the weights" if target != path else "the export", study)
        fsafe.check_plain(target)
    files = [
        (target, kept.for_export(study, tm, studies_dir, device, retrain))
        for tm, target in zip(models, targets, strict=True)
    ]
    for target, content in files:
        weights.save(target, content)
    fsafe.write(path, text)  # last: the YAML names weights that are all written
    for target, content in files:
        print(f"{target}: trial {content['trial']} ({content['architecture']}) {kept.origin(content)}")
    return path


def load_weights(path: str | Path, device: str = "cpu") -> nn.Module:
    """The trained model of a `export --save-weights` file, in eval mode (coatsearch.runner.weights.load)."""
    from coatsearch.runner import weights

    return weights.load(path, device)


def _best_yaml(study: str, best: int, studies_dir: str | Path) -> str:
    """The `best` architectures' candidate entries (checked before anything is written)."""
    from coatsearch.storage import found
    from coatsearch.vocab import numbers

    best = checked("best", numbers.count, best, 1, TRIALS_MAX)  # `--best`'s check: 1.5 and True are refused
    models = found.best(study, best, studies_dir)
    return found.yaml_text(study, models, "objective")
