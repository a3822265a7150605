"""Ray Tune, for more than one machine: the driver claims trials from the Optuna study, Ray runs them.

The study stays the one store of record, written only by the driver: a `Searcher` claims planned keys
through the store exactly as the optuna backend does (`store.claim` + `sampling.suggest` under the claim lock, the
study's sampler): first a
wave as wide as the cluster, then one per finished trial, so TPE sees earlier results. Each Ray trial calls
`run_item` through `trial.attempt` and reports its outcome as one JSON record; the searcher tells it back
(`store.tell`).
Workers never open the storage, so only the driver needs the study folder. Early stopping comes from Ray's
ASHA scheduler on the per-epoch objective score (Ray stops the trial; it is told PRUNED). A crashed worker is
retried (`MAX_FAILURES`); an ordinary trial failure is a record, not a crash. Resuming is the study's: a
rerun claims only keys not yet taken; trials of a driver that died are freed as in the optuna backend.
Per-trial CPUs/GPUs come from the command line only (the space schema has no field for them).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import asdict, replace
from pathlib import Path
from types import MappingProxyType

import optuna
import ray
from ray import tune
from ray.tune.schedulers import ASHAScheduler
from ray.tune.search import Searcher

from coatsearch import fsafe
from coatsearch.errors import UserError
from coatsearch.runner import environment
from coatsearch.space.objects import Space
from coatsearch.storage import record as R
from coatsearch.storage import store
from coatsearch.storage import trials as P

GPU_FRACTION = 0.25  # default GPU share of a CUDA trial: these models (about 1M parameters, 32x32 images) need a
# fraction of a GPU, so four trials share each (tuning.cuda_processes sizes the optuna backend's the same way)
MAX_FAILURES = 2  # retries of a trial whose worker process died (not of trials that fail on their own)
SCORE, STEP = "score", "epochs_done"  # what ASHA reads: objective score after STEP epochs
_SAVED = "checkpoint_step"  # a result that carries a checkpoint: the step it holds (ASHA and the searcher skip it)


def run(
    space: Space,
    studies_dir: Path,
    name: str,
    *,
    trials: int | None = None,
    device: str = "auto",
    address: str | None = None,
    cpus: float | None = None,
    gpus: float | None = None,
    progress: bool = True,
    prepared: tuple[optuna.Study, dict] | None = None,
) -> P.RunSummary:
    """Run every planned trial not yet taken on Ray (a local one when no address); a rerun resumes.

    `prepared`: the study and its matched candidates when the caller made them (`coatsearch.api.run`).
    """
    start = time.perf_counter()
    _resources(device, cpus, gpus, 0.0)  # a bad count stops here, before Ray starts
    _check_address(address)
    folder = store.folder(Path(studies_dir).resolve(), name)
    study, matched = prepared or store.prepare(space, Path(studies_dir), name)  # shipped to the workers once
    run_id = uuid.uuid4().hex[:12]
    searcher = StudySearcher(space, study, folder, run_id, trials)
    with _connected(address), _bar(study, searcher.items, progress) as bar:
        cpus, gpus = _resources(device, cpus, gpus, ray.cluster_resources().get("GPU", 0))
        slots = _slots(cpus, gpus)
        searcher.bar = bar
        try:
            with _legacy_output():
                _tuner(space, searcher, fsafe.owned(folder, "ray"), run_id, device, (cpus, gpus, slots), matched).fit()
        finally:
            interrupted = searcher.close()
    if interrupted:
        raise KeyboardInterrupt
    return store.summary(space, studies_dir, name, store.ran_by(study, run_id), time.perf_counter() - start)


def _bar(study: optuna.Study, items: dict, progress: bool) -> AbstractContextManager[Callable[[int], None]]:
    """The study-level progress bar of the driver."""
    from coatsearch.runner.trial import progress_bar

    return progress_bar(store.counts(study)["finished"], len(items), progress)


def _resources(device: str, cpus: float | None, gpus: float | None, cluster_gpus: float) -> tuple[float, float]:
    """Per-trial CPUs and GPUs unless given: 1 CPU, and GPU_FRACTION of a GPU for a CUDA device, which "auto" is
    when the cluster has GPUs (`cluster_gpus`): the driver's own machine, often without one, does not decide."""
    from coatsearch.training.fit import parse_device

    if device == "auto":
        kind = "cuda" if cluster_gpus > 0 else "cpu"
    else:
        kind = parse_device(device).type
    cpus = 1.0 if cpus is None else float(cpus)
    gpus = (GPU_FRACTION if kind == "cuda" else 0.0) if gpus is None else float(gpus)
    if cpus <= 0 or gpus < 0:
        raise UserError(f"--cpus-per-trial must be > 0 and --gpus-per-trial >= 0 (got {cpus:g}, {gpus:g})")
    return cpus, gpus


def preflight(device: str, address: str | None, cpus: float | None, gpus: float | None) -> None:
    """Every check `run` makes before it writes: the trial resources and the cluster address (`api.run` calls it
    before the study's journal, lock and registration exist)."""
    _resources(device, cpus, gpus, 0.0)  # the counts alone: the cluster's GPUs are not known before Ray starts
    _check_address(address)


def _check_address(address: str | None) -> None:
    """Fail fast on a HOST:PORT nobody listens on (ray.init would retry it for minutes)."""
    if address in (None, "auto"):
        return
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not host or not port.isdigit():
        raise UserError(f"--address must be auto or HOST:PORT, not {address!r}")
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except OSError as exc:
        raise UserError(
            f"no Ray cluster at {address} ({exc}); start one with `ray start --head` there, "
            "or leave out --address to run on a local Ray"
        ) from None


@contextmanager
def _connected(address: str | None) -> Iterator[None]:
    """Join the cluster at `address`, or start a local Ray; an already initialized Ray is used as it is."""
    if ray.is_initialized():
        yield
        return
    handlers = _handlers()
    try:
        if address:
            ray.init(address=address)
        else:
            ray.init(num_cpus=os.cpu_count() or 1, include_dashboard=False)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        hint = "; a cluster with token authentication also needs RAY_AUTH_MODE=token and its token" if address else ""
        _restore(handlers)
        raise UserError(f"cannot start or join Ray (--address {address}): {exc}{hint}") from None
    try:
        yield
    finally:
        ray.shutdown()
        _restore(handlers)


def _handlers() -> dict:
    """The process's SIGINT and SIGTERM handlers, which a local ray.init replaces and ray.shutdown leaves replaced."""
    return {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}


def _restore(handlers: dict) -> None:
    """Give the caller its signal handlers back (only the main thread may set them)."""
    if threading.current_thread() is threading.main_thread():
        for sig, handler in handlers.items():
            if handler is not None:
                signal.signal(sig, handler)


def _slots(cpus: float, gpus: float) -> int:
    """How many trials the cluster runs at once; a trial larger than the whole cluster is a UserError."""
    have_cpu, have_gpu = ray.cluster_resources().get("CPU", 0), ray.cluster_resources().get("GPU", 0)
    slots = min(int(have_cpu // cpus), int(have_gpu // gpus) if gpus else 1 << 30)
    if slots < 1:
        raise UserError(
            f"each trial asks for {cpus:g} CPU and {gpus:g} GPU, but the Ray cluster has "
            f"{have_cpu:g} CPU and {have_gpu:g} GPU; lower --cpus-per-trial/--gpus-per-trial"
        )
    return slots


@contextmanager
def _legacy_output() -> Iterator[None]:
    """Ray's legacy output engine, which verbose=0 silences (the new one prints a header anyway)."""
    old = os.environ.get("RAY_AIR_NEW_OUTPUT")
    os.environ["RAY_AIR_NEW_OUTPUT"] = old or "0"
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("RAY_AIR_NEW_OUTPUT", None)


def _tuner(
    space: Space,
    searcher: StudySearcher,
    storage: Path,
    run_id: str,
    device: str,
    resources: tuple,
    matched: dict | None = None,
) -> tune.Tuner:
    """A Tuner over the searcher's claims, `slots` at a time, results under `storage`/run-<id>.

    The space and the matched specs go into Ray's object store once (`with_parameters`), and trial actors
    are reused, so a worker process loads its dataset once and keeps it for every trial it runs.
    """
    cpus, gpus, slots = resources
    threads = max(1, int(cpus))
    fn = tune.with_parameters(
        _trainable,
        space=space,
        device=device,
        threads=threads,
        cwd=os.getcwd(),
        matched=matched or {},
        folder=str(storage.parent),
    )
    return tune.Tuner(
        tune.with_resources(fn, {"cpu": cpus, "gpu": gpus}),
        tune_config=tune.TuneConfig(
            search_alg=searcher,
            scheduler=scheduler(space),
            num_samples=len(searcher.items),  # at most; the searcher says when nothing is left to claim
            max_concurrent_trials=slots,  # claim a wave as wide as the cluster, then one per finished trial
            reuse_actors=True,  # one process per slot for the whole run: imports and data loaded once
            trial_dirname_creator=lambda t: f"trial-{t.config['number']}",
        ),
        run_config=tune.RunConfig(
            name=f"run-{run_id}",
            storage_path=str(storage),
            failure_config=tune.FailureConfig(max_failures=MAX_FAILURES),
            checkpoint_config=tune.CheckpointConfig(num_to_keep=1),  # a trial's latest checkpoint is all it resumes
            verbose=0,
        ),
    )


def scheduler(space: Space) -> ASHAScheduler | None:
    """ASHA on the per-epoch objective score when the space prunes (Ray stops trials; Optuna's pruner does not)."""
    if space.study.pruner == "none":
        return None
    # The per-epoch score is an eval accuracy, higher is better whatever the study's direction.
    # stop_last_trials=False: a trial at max_t still has its other scores to measure.
    return ASHAScheduler(
        time_attr=STEP,
        metric=SCORE,
        mode="max",
        max_t=_max_epochs(space),
        grace_period=1,
        reduction_factor=3,
        stop_last_trials=False,
    )


def _max_epochs(space: Space) -> int:
    """The longest schedule of any score of any candidate (ASHA's rungs stop below it)."""
    from coatsearch.scores import max_epochs

    return max(max_epochs(c.scores) for c in space.candidates)


class StudySearcher(Searcher):
    """Ray's source of trials: claims planned keys from the study as Ray asks, tells each outcome back."""

    def __init__(self, space: Space, study: optuna.Study, folder: Path, run_id: str, limit: int | None) -> None:
        super().__init__()
        self.space, self.study, self.folder, self.run_id, self.limit = space, study, folder, run_id, limit
        self.items = {i.key: i for i in P.plan(space)}
        self.bar = lambda number: None
        self.open: dict = {}  # Ray trial id -> claimed, not yet told
        self.steps: dict[str, int] = {}  # Ray trial id -> last epoch reported to the study

    def suggest(self, trial_id: str) -> dict | str:  # type: ignore[override]  # Ray documents FINISHED (a str) as a return
        """Claim the next free key (or FINISHED); Ray's trial config names it."""
        taken = store.claim_point(self.study, self.space, self.items, self.run_id, self.limit, self.folder, "ray")
        if taken is None:
            return Searcher.FINISHED
        trial, item, params, _ = taken  # admitted here; the trial admits it again before training (admission.admit)
        self.open[trial_id] = trial
        return {"number": trial.number, "item": asdict(item), "params": json.dumps(params)}

    def on_trial_result(self, trial_id: str, result: dict) -> None:
        """Copy a per-epoch score into the Optuna trial, as the optuna backend's pruner sees it."""
        trial = self.open.get(trial_id)
        if trial is not None and STEP in result and result[STEP] > self.steps.get(trial_id, 0):
            trial.report(result[SCORE], result[STEP] - 1)
            self.steps[trial_id] = result[STEP]

    def on_trial_complete(self, trial_id: str, result: dict | None = None, error: bool = False) -> None:
        """Tell the study how a Ray trial ended."""
        if trial_id not in self.open:
            return
        if result:
            self.on_trial_result(trial_id, result)
        trial = self.open.pop(trial_id)
        store.tell(self.study, trial, *outcome(result, error, self.folder / "ray"))
        if not self.space.checkpoint.keep:  # Ray's copies of the trial's checkpoints go with the trial's own
            for ray_copy in (self.folder / "ray" / f"run-{self.run_id}" / f"trial-{trial.number}").glob("checkpoint_*"):
                try:  # every component checked: never removed through a link
                    fsafe.remove_owned(self.folder, ray_copy.relative_to(self.folder))
                except UserError as exc:
                    print(f"coatsearch: note: {exc}; Ray's copy of the checkpoints was not removed", file=sys.stderr)
        self.bar(trial.number)

    def close(self) -> int:
        """Free the keys of trials Ray never finished (an interrupted run); how many there were."""
        for trial in self.open.values():
            store.tell(self.study, trial, "FAIL", None, None)
        left, self.open = len(self.open), {}
        return left

    def save(self, checkpoint_path: str) -> None:
        """Nothing to save: the study is this searcher's state."""

    def restore(self, checkpoint_path: str) -> None:
        """Nothing to restore: the study is this searcher's state."""

    def __getstate__(self) -> dict:
        """Ray pickles its searcher with the experiment; the study, bar and open trials stay in the driver."""
        return {k: v for k, v in self.__dict__.items() if k not in ("study", "bar", "open")}


def outcome(result: dict | None, error: bool, logs: Path) -> tuple[str, R.RunRecord | None, float | None]:
    """(state, run record, value) of a finished Ray trial, from its last result."""
    if error:
        reason = f"Ray trial failed {MAX_FAILURES + 1} times (worker crash or lost node); its error.txt is under {logs}"
        return "FAIL", R.failed(R.Identity(), reason), None
    if result and "record" in result:
        sent = json.loads(result["record"])
        run = sent["run"] and R.from_json(sent["run"])
        if run is not None:
            run = replace(run, extra=MappingProxyType({**run.extra, "ray": sent["ray"]}))
        return sent["state"], run, sent["value"]
    if result and STEP in result:
        return "PRUNED", None, None  # stopped by the scheduler after an epoch
    return "FAIL", None, None  # never ran (the run stopped first): no reason, so the key is free


def _trainable(
    config: dict, space: Space, device: str, threads: int, cwd: str, matched: dict, folder: str = "."
) -> None:
    """One Ray trial: run the claimed item, report per-epoch scores, then one record of the outcome (tracked live in
    the study `folder` with the space's `log`, runner.tracking)."""
    began = time.time()

    from coatsearch.runner import resume, tracking
    from coatsearch.runner.trial import attempt, epoch_reporter
    from coatsearch.training.fit import pick_device
    from coatsearch.training.tuning import set_worker_threads

    if os.path.isdir(cwd):
        os.chdir(cwd)  # relative paths in the space (data roots) mean what they meant to the driver
    set_worker_threads(threads)  # intra-op and compile threads: the trial's CPUs
    dev = pick_device(device)
    report = epoch_reporter(space, lambda epoch, value: tune.report({STEP: epoch + 1, SCORE: value}))
    item, params = P.PlanItem(**config["item"]), json.loads(config["params"])
    ray_copy = tune.get_checkpoint()  # a trial Ray restored after its worker died: its last checkpoint
    with (
        ray_copy.as_directory() if ray_copy is not None else nullcontext(None) as restored,
        resume.trial(space, Path(folder), item, _to_ray, restored) as (done, saves),
        tracking.tracked(space, Path(folder), item, params, config.get("number")) as tracker,
    ):
        heard = tracking.listener(tracker)
        state, run, value = done(attempt(space, item, params, dev, environment.probe(dev), report=report,
                                         matched=matched, checkpoints=saves, listener=heard))  # fmt: skip
        tracking.finish(tracker, state, run, value)
    where = {"trial_id": tune.get_context().get_trial_id(), "host": socket.gethostname(), "pid": os.getpid()}
    sent = None if run is None else R.to_json(run)
    record = {"state": state, "run": sent, "value": value, "ray": {**where, "start": began, "end": time.time()}}
    tune.report({SCORE: value, "record": json.dumps(record)})


def _to_ray(where: Path, step: int) -> None:
    """Hand a trial's checkpoint folder to Ray (persisted in the run's storage; a retried trial gets it back)."""
    tune.report({_SAVED: step}, checkpoint=tune.Checkpoint.from_directory(str(where)))
