"""What `api.run` does once its options are known: check everything, then, holding the study's run lock, prepare the
study, pilot, run the engine and write the report (coatsearch.api.run is this, for a space and a RunOptions)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coatsearch.errors import UserError
from coatsearch.space.objects import Candidate, Space
from coatsearch.storage.trials import RunSummary
from coatsearch.vocab import bounds
from coatsearch.vocab.bounds import RayOptions
from coatsearch.vocab.run_options import RunOptions


@dataclass(frozen=True)
class ReportPaths:
    """The files `write_report` wrote: the Markdown report, its JSON tables and PNG figures."""

    markdown: Path
    summary: Path
    figures: tuple[Path, ...]


def check_matched(space: Space) -> None:
    """A space none of whose candidates meets its budget is one line (before anything is written): no study."""
    from coatsearch.space.load import where

    named = [c for c in space.candidates if isinstance(c, Candidate)]
    if not named or any(c.dims or c.prepared.ok for c in named):
        return
    misses = "; ".join(f"{c.name}: {c.prepared.reason}" for c in named[:3]) + ("; ..." if len(named) > 3 else "")
    raise UserError(
        f"{where(space.source, ('candidates',))}: no candidate meets the budget ({misses}); allowed: a space with "
        "at least one matched candidate (`coatsearch show` lists them); nothing was planned or written"
    )


def run(sp: Space, name: str, o: RunOptions) -> tuple[RunSummary, ReportPaths | None]:
    """Train and score every planned trial of study `name` not yet in it, then write the report (`o.report`): the
    study's counts and the report's files. Every check comes first (nothing is written on bad input); the rest runs
    under the study's run lock (storage.lock.running: a second run of the study at once is one line)."""
    from coatsearch.planner.runs import check_decides, eta_first
    from coatsearch.runner import tracking
    from coatsearch.runner.workers import processes
    from coatsearch.storage.lock import running
    from coatsearch.storage.paths import study_folder
    from coatsearch.storage.store import counts as store_counts

    tracking.check(sp.log if o.log is None else o.log, f"{sp.source}: log" if o.log is None else "--log")
    sp = sp if o.log is None else dataclasses.replace(sp, log=o.log)
    sp = sp if o.tracking_uri is None else dataclasses.replace(sp, tracking_uri=o.tracking_uri)
    if o.keep_top is not None:
        from coatsearch.vocab import numbers
        from coatsearch.vocab.bounds import TRIALS_MAX, checked

        sp = dataclasses.replace(sp, keep_top=checked("keep_top", numbers.count, o.keep_top, 0, TRIALS_MAX))
    studies, reports = Path(o.studies_dir), Path(o.reports_dir)
    _check_run(sp, name, studies, reports if o.report else None, o)
    registration(sp, studies, name).check()  # a registration of another space stops here, before anything is written
    check_decides(sp, studies, name, reports, allow=o.allow_undecided)  # a profile that cannot decide
    with running(study_folder(studies, name)):  # one run of a study at a time: a second is one line
        prepared = _prepare_study(sp, studies, name, o.force_new_space)
        registration(sp, studies, name).register(len(prepared[0].get_trials(deepcopy=False)), o.replicate_of)
        done = store_counts(prepared[0])["finished"]
        optuna = o.backend == "optuna"
        procs = processes(sp, o.workers, o.trials, o.device, o.progress, done) if optuna else (1, None)
        if o.plan_first and optuna:
            eta_first(sp, studies, name, procs, o.device, reports)
        common = {"trials": o.trials, "device": o.device, "progress": o.progress, "prepared": prepared}
        sp = tracking.prepare(sp, study_folder(studies, name))  # the MLflow store and experiment (or no tracking)
        s = _engine(sp, studies, name, o.backend, procs, common, o.ray)
        if sp.keep_top:
            from coatsearch.runner import kept

            kept.prune(prepared[0], study_folder(studies, name), sp.keep_top, sp.study.direction)
        written = report_paths(name, studies, reports) if o.report else None
        if written is not None:
            tracking.log_report(sp, study_folder(studies, name), [written.markdown, written.summary, *written.figures])
    return s, written


def _check_run(sp: Space, name: str, studies: Path, reports: Path | None, o: RunOptions) -> None:
    """Every check `run` makes of its arguments, the study's and report's folders, the device and the data before it
    writes anything (`reports`: None without a report)."""
    from coatsearch import fsafe
    from coatsearch.storage.paths import report_folder, study_folder
    from coatsearch.training.datacheck import check_matches
    from coatsearch.training.fit import parse_device, pick_device

    backend, workers, device, ray = o.backend, o.workers, o.device, o.ray
    bounds.check_counts(workers, o.trials)
    bounds.check_backend_args(backend, workers, ray)  # the one check of the backend's arguments (CLI: as flags)
    if backend != "optuna" and sp.study.objectives:
        raise UserError(f"{sp.source}: study.objectives: a multi-objective study runs on --backend optuna only")
    if sp.keep_top and (backend != "optuna" or sp.study.objectives):
        raise UserError(f"--keep-top (keep_top: {sp.keep_top}): keeps the best trials' weights of a study with one "
                        "objective on --backend optuna only")  # fmt: skip
    fsafe.check_owned(study_folder(studies, name))  # a bad name, folder, or a link in it stops here, before any write
    if reports is not None:
        report_folder(reports, name, studies)
    if backend == "optuna":
        pick_device(device)  # this machine must have it
    else:  # Ray: the cluster's nodes must have the device (ray_backend checks its GPUs); its resources and cluster
        from coatsearch.runner import ray_backend  # address are checked before the journal, lock or registration exist

        if device != "auto":
            parse_device(device)
        ray_backend.preflight(device, ray.address, ray.cpus_per_trial, ray.gpus_per_trial)
    d = sp  # a missing dataset, or one that does not match the space, stops here
    check_matches(d.classes, d.data, d.image_size, d.channels, [c.scores for c in d.candidates], source=d.source)
    check_matched(sp)


def _engine(space: Space, studies: Path, name: str, backend: str, procs: tuple, common: dict, ray: RayOptions) -> Any:
    """Run the study on the chosen engine; its RunSummary."""
    if backend == "ray":
        from coatsearch.runner import ray_backend

        return ray_backend.run(
            space, studies, name, **common, address=ray.address, cpus=ray.cpus_per_trial, gpus=ray.gpus_per_trial
        )
    from coatsearch.runner import optuna_backend

    return optuna_backend.run(space, studies, name, workers=procs[0], threads=procs[1], **common)


def registration(space: Space, studies: Path, name: str) -> Any:
    """The study's registration, against this space's analysis (coatsearch.papers.registration.Registrar)."""
    from coatsearch.papers.registration import Registrar
    from coatsearch.storage.store import folder
    from coatsearch.storage.trials import space_record

    return Registrar(space_record(space), folder(studies, name), name)


def _prepare_study(space: Space, studies_dir: Path, name: str, force_new_space: bool) -> tuple[Any, dict]:
    """Create (or reopen) the study and store its matched candidates before any trial runs: once per run."""
    from coatsearch.storage import store

    return store.prepare(space, studies_dir, name, force_new_space)


def report_paths(
    study: str, studies_dir: Path, reports_dir: Path, note: bool = False, history: bool = False
) -> ReportPaths:
    """Write the study's report (and, with `note`, its dashboard note); the files written."""
    from coatsearch import dashboard, report

    markdown = report.write_report(study, Path(studies_dir), Path(reports_dir), history=history)
    if note:
        dashboard.save_report_note(study, Path(studies_dir), markdown)
    folder = markdown.parent
    return ReportPaths(markdown, folder / "summary.json", tuple(sorted(folder.glob("*.png"))))
