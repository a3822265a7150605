"""Live tracking of trials in TensorBoard or MLflow (`run --log tensorboard|mlflow`, or `log:` in the space file).

Each trial is one run, named `<candidate>-seed<seed>[-s<sample>]-t<trial number>` and grouped by study: a folder
under `<study>/tensorboard/`, or a run of the MLflow experiment named after the study. MLflow's store is the
first of: `--tracking-uri` (`run(tracking_uri=)`), the standard `MLFLOW_TRACKING_URI`, else SQLite in the study
folder (`sqlite:///<study>/mlflow.db`), which the plain MLflow client opens with no extra setting (`mlflow ui
--backend-store-uri sqlite:///studies/<study>/mlflow.db`); a local store keeps artifacts in `<study>/mlartifacts`.
After the report is written, a run named `report` in the same experiment holds report.md, summary.json and the
PNG figures.
While the trial trains, each curve point of each training run (score phase) is written as it is measured
(`listener(tracker)`, passed to `attempt(listener=)`, training.listeners): `<phase>/train_loss`, `train_acc`,
`eval_loss`, `eval_acc`, `val_acc` and `lr` (the trial's peak lr times the schedule's phase) at its step.
When it ends: its hyperparameters (candidate, seed, sampled values, optimizer), architecture (layout, stages, params,
MACs), final scalar metrics and state.
Tracking never fails a trial: an error of the tracker is one note line, and the trial goes on untracked; a store that
cannot start before the run (a damaged `mlflow.db`) is one note line, and the run is not tracked (`prepare`).
The extras: `pip install "coatsearch[tensorboard]"` or `"coatsearch[mlflow]"` (mlflow-skinny: the client and
the SQLite store, not the server); `tensorboard --logdir studies/<study>/tensorboard` opens those. A file store
URI (`file:...`) still works: MLflow keeps it behind `MLFLOW_ALLOW_FILE_STORE`, which this module then sets (unless
set already) in the processes that track, and a reader needs it set too.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import math
import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

from coatsearch import fsafe
from coatsearch.errors import UserError
from coatsearch.space.objects import Space
from coatsearch.storage import record as R
from coatsearch.storage.trials import PlanItem
from coatsearch.training import listeners
from coatsearch.training.point import Point

CHOICES = ("none", "tensorboard", "mlflow")
_EXTRAS = {"tensorboard": "tensorboard", "mlflow": "mlflow"}  # backend -> the module it needs (and its extra's name)
_FOLDERS = {"tensorboard": "tensorboard"}  # backend -> its folder inside the study folder
MLFLOW_DB, MLFLOW_ARTIFACTS = "mlflow.db", "mlartifacts"  # the default MLflow store inside the study folder
REPORT_RUN = "report"  # the MLflow run that holds the study's report and figures


class Tracker(Protocol):
    """One trial's run in a tracking backend."""

    def point(self, phase: str, step: int, p: Point) -> None: ...
    def finish(self, state: str, run: R.RunRecord | None, value: Any) -> None: ...


def check(log: str, what: str = "--log") -> None:
    """A one-line UserError for an unknown backend or one whose extra is not installed."""
    if log not in CHOICES:
        raise UserError(f"{what}: {log!r} is not a tracking backend; allowed: {', '.join(CHOICES)}")
    if log != "none" and importlib.util.find_spec(_EXTRAS[log]) is None:
        raise UserError(f"{what} {log}: needs the {log} extra: pip install 'coatsearch[{_EXTRAS[log]}]'")


def run_name(item: PlanItem, number: int | None) -> str:
    """A trial's run name: candidate, seed, sample (when sampled) and trial number."""
    sample = f"-s{item.sample}" if item.sample else ""
    return f"{item.candidate}-seed{item.seed}{sample}" + (f"-t{number}" if number is not None else "")


@contextmanager
def tracked(
    space: Space, folder: Path, item: PlanItem, params: Mapping[str, Any], number: int | None
) -> Iterator[Tracker | None]:
    """Around one trial: its tracker (None with `log: none`); `listener(tracker)` is what its training runs call."""
    yield _open(space, Path(folder), item, params, number) if space.log != "none" else None


def listener(tracker: Tracker | None) -> listeners.Listener | None:
    """The tracker's `point` as the trial's curve-point listener (`attempt(listener=)`), whose errors are a note once,
    never the trial's failure; None without a tracker."""
    if tracker is None:
        return None
    told: list[bool] = []

    def point(phase: str, step: int, p: Point) -> None:
        try:
            tracker.point(phase, step, p)
        except Exception as exc:  # noqa: BLE001 - tracking is a by-product of training, never its end
            if not told:
                told.append(True)
                print(f"coatsearch: note: tracking: {said(exc)}", file=sys.stderr)

    return point


def _open(space: Space, folder: Path, item: PlanItem, params: Mapping[str, Any], number: int | None) -> Tracker | None:
    """The backend's tracker for one trial; None (with a note) when it cannot start."""
    name = run_name(item, number)
    hparams = {"candidate": item.candidate, "seed": item.seed, "sample": item.sample, "study": folder.name}
    hparams |= {k: v for k, v in params.items() if k not in hparams}
    peak = float(params.get("train.lr") or _peak_lr(space, item.candidate))
    try:
        if space.log == "tensorboard":
            where = fsafe.owned(folder, _FOLDERS["tensorboard"], name)
            return TensorBoard(where, hparams, peak)
        return MLflow(mlflow_uri(folder, space.tracking_uri), folder, name, hparams, peak)
    except Exception as exc:  # noqa: BLE001 - see listener
        print(f"coatsearch: note: tracking {name} in {space.log} failed to start: {said(exc)}", file=sys.stderr)
        return None


def _peak_lr(space: Space, candidate: str) -> float:
    """The candidate's peak learning rate (its `train.lr`), which the curve points' lr phase scales."""
    train = getattr(space.candidate(candidate).definition, "train", None)
    return float(getattr(train, "lr", 0.0) or 0.0)


def _values(p: Point, peak: float) -> dict[str, float]:
    """A curve point's scalars by name (the measured ones, finite)."""
    out = {"train_loss": p.train_loss, "train_acc": p.train_acc, "eval_loss": p.eval_loss, "eval_acc": p.eval_acc,
           "val_acc": p.val_acc, "lr": p.lr_phase * peak}  # fmt: skip
    return {k: float(v) for k, v in out.items() if isinstance(v, int | float) and math.isfinite(v)}


def _scalar(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _final(state: str, run: R.RunRecord | None, value: Any) -> tuple[dict[str, Any], dict[str, float]]:
    """(architecture and optimizer as hyperparameters, final scalar metrics) of a finished trial."""
    arch: dict[str, Any] = {}
    metrics: dict[str, float] = {}
    if run is not None and run.model is not None:
        m = run.model
        arch = {"layout": m.layout, "stages": m.stages, "model_params": m.params, "macs": m.macs, "label": m.label}
    if run is not None and run.optimizer is not None:
        o = run.optimizer
        arch |= {f"optim.{k}": v for k, v in {"name": o.name, **o.settings}.items() if _scalar(v) or isinstance(v, str)}
    if run is not None:
        metrics = {f"{s}.{k}": float(v) for s, group in run.metrics.items() for k, v in group.items() if _scalar(v)}
    values = value if isinstance(value, list) else [value]
    metrics |= {f"value{i or ''}": float(v) for i, v in enumerate(values) if _scalar(v)}
    return arch, metrics


class TensorBoard:
    """A trial's event files in `<study>/tensorboard/<run>/` (torch.utils.tensorboard's SummaryWriter)."""

    def __init__(self, logdir: Path, hparams: dict[str, Any], peak: float) -> None:
        from torch.utils.tensorboard import SummaryWriter

        self.writer, self.hparams, self.peak = SummaryWriter(log_dir=str(logdir)), hparams, peak

    def point(self, phase: str, step: int, p: Point) -> None:
        for key, v in _values(p, self.peak).items():
            self.writer.add_scalar(f"{phase}/{key}", v, step)
        self.writer.flush()  # written while the trial trains, not when it ends

    def finish(self, state: str, run: R.RunRecord | None, value: Any) -> None:
        arch, metrics = _final(state, run, value)
        hp = {k: v if _scalar(v) or isinstance(v, str) else str(v) for k, v in {**self.hparams, **arch}.items()}
        self.writer.add_text("architecture", "\n".join(f"{k}: {v}" for k, v in arch.items()) or "-")
        self.writer.add_text("state", state)
        self.writer.add_hparams(hp, {f"final/{k}": v for k, v in metrics.items()}, run_name=".")
        self.writer.close()


def mlflow_uri(folder: Path, given: str | None = None) -> str:
    """The MLflow tracking URI of a study: `given` (--tracking-uri), else MLFLOW_TRACKING_URI, else its SQLite file."""
    return given or os.environ.get("MLFLOW_TRACKING_URI") or _sqlite(folder)


def _sqlite(folder: Path) -> str:
    """The default MLflow store: SQLite in the study folder."""
    return f"sqlite:///{Path(os.path.abspath(fsafe.owned(Path(folder), MLFLOW_DB)))}"  # checked, never resolved


def mlflow_client(uri: str) -> Any:
    """An MlflowClient on `uri`; a file store is allowed for this process (MLflow 3 keeps it behind a setting)."""
    if uri.startswith("file:") or "://" not in uri:
        os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri=uri)


def experiment(client: Any, folder: Path, uri: str) -> str:
    """The id of the study's experiment (named after the study folder), made when missing; in a local store (SQLite,
    a file store) its artifacts go to `<study>/mlartifacts` (MLflow's own default: ./mlruns of the working folder);
    a tracking server keeps its own."""
    from mlflow.exceptions import MlflowException

    found = client.get_experiment_by_name(folder.name)
    if found is not None:
        return str(found.experiment_id)
    local = uri.startswith(("sqlite:", "file:")) or "://" not in uri
    where = Path(os.path.abspath(fsafe.owned(Path(folder), MLFLOW_ARTIFACTS))).as_uri() if local else None
    try:
        return str(client.create_experiment(folder.name, artifact_location=where))
    except MlflowException:  # another worker created it meanwhile
        return str(client.get_experiment_by_name(folder.name).experiment_id)


def prepare(space: Space, folder: Path) -> Space:
    """Before the workers start: the MLflow store and the study's experiment exist (SQLite is made once, here,
    not by several workers at once); nothing for other backends. A store that cannot start (a damaged `mlflow.db`,
    a server that does not answer) is one note line, and the space is returned with `log: none`: this run is not
    tracked, and the store is left as it was."""
    if space.log != "mlflow":
        return space
    uri = mlflow_uri(folder, space.tracking_uri)
    try:
        experiment(mlflow_client(uri), Path(folder), uri)
    except Exception as exc:  # noqa: BLE001 - see listener
        print(f"coatsearch: note: tracking in mlflow ({uri}) failed to start: {said(exc)}; this run is not tracked",
              file=sys.stderr)  # fmt: skip
        return dataclasses.replace(space, log="none")
    return space


def said(exc: BaseException) -> str:
    """An error as one short line: its type and the first line of its message (SQLAlchemy's run to several)."""
    first = next((line.strip() for line in str(exc).splitlines() if line.strip()), "")
    return f"{type(exc).__name__}: {first[:300]}" if first else type(exc).__name__


class MLflow:
    """A trial's run in the study's MLflow experiment (MlflowClient on `uri`, see `mlflow_uri`)."""

    def __init__(self, uri: str, folder: Path, name: str, hparams: dict[str, Any], peak: float) -> None:
        self.client, self.peak = mlflow_client(uri), peak
        exp_id = experiment(self.client, folder, uri)
        tags = {k: str(v) for k, v in hparams.items() if k in ("candidate", "seed", "sample", "study")}
        self.run_id = self.client.create_run(exp_id, run_name=name, tags=tags).info.run_id
        _log_batch(self.client, self.run_id, params=hparams)

    def point(self, phase: str, step: int, p: Point) -> None:
        values = {f"{phase}/{key}": v for key, v in _values(p, self.peak).items()}
        _log_batch(self.client, self.run_id, metrics=values, step=step)  # one write per curve point

    def finish(self, state: str, run: R.RunRecord | None, value: Any) -> None:
        arch, metrics = _final(state, run, value)
        _log_batch(self.client, self.run_id, {f"final/{k}": v for k, v in metrics.items()}, params=arch)
        status = {"COMPLETE": "FINISHED", "PRUNED": "KILLED"}.get(state, "FAILED")
        self.client.set_terminated(self.run_id, status)


def _log_batch(
    client: Any, run_id: str, metrics: Mapping[str, float] | None = None, step: int = 0, params: Mapping | None = None
) -> None:
    """Metrics at one step and params (as text) in one MLflow request."""
    import time

    from mlflow.entities import Metric, Param

    now = int(time.time() * 1000)
    ms = [Metric(k, float(v), now, step) for k, v in (metrics or {}).items()]
    ps = [Param(k, str(v)) for k, v in (params or {}).items()]
    client.log_batch(run_id, metrics=ms, params=ps)


def log_report(space: Space, folder: Path, files: list[Path]) -> None:
    """The study's report files as artifacts of its MLflow run `report` (made once, then re-logged in place)."""
    if space.log != "mlflow":
        return
    uri = mlflow_uri(folder, space.tracking_uri)
    try:
        client = mlflow_client(uri)
        exp_id = experiment(client, Path(folder), uri)
        found = client.search_runs([exp_id], filter_string=f"tags.`coatsearch.kind` = '{REPORT_RUN}'", max_results=1)
        tags = {"coatsearch.kind": REPORT_RUN, "study": Path(folder).name}
        run_id = (
            found[0].info.run_id if found else client.create_run(exp_id, run_name=REPORT_RUN, tags=tags).info.run_id
        )
        for path in files:
            client.log_artifact(run_id, str(path))
        client.set_terminated(run_id, "FINISHED")
    except Exception as exc:  # noqa: BLE001 - see listener
        print(f"coatsearch: note: tracking: the report was not logged to mlflow ({uri}): {said(exc)}", file=sys.stderr)


def finish(tracker: Tracker | None, state: str, run: R.RunRecord | None, value: Any) -> None:
    """End a trial's run with its outcome (nothing without a tracker); an error is a note line."""
    if tracker is None:
        return
    try:
        tracker.finish(state, run, value)
    except Exception as exc:  # noqa: BLE001 - see listener
        print(f"coatsearch: note: tracking: {said(exc)}", file=sys.stderr)
