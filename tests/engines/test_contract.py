"""One contract, two engines: what `coatsearch.run` guarantees on the optuna and the Ray backend alike.

Every test reads one engine's runs of the tiny synthetic study (tests/spaces/tiny.yaml: two candidates, one seed,
seconds a trial), made once per module through the public entry point (`ran`):
1. a variant whose C-C trial fails (lr 1e12), two trials at once (`workers=2`; Ray: a slot per CPU), in a Ray the
   run starts itself, with the caller's own SIGINT/SIGTERM handlers installed;
2. then, in one Ray kept for the rest (starting one takes tens of seconds on a busy CPU): the tiny study for one
   trial (`trials=1`), rerun for the other, and the failing variant rerun.
The tiny study runs with one intra-op thread on either engine (a Ray trial with 1 CPU runs so): docs/ray.md promises
equal metrics for a fixed seed and thread count. The failing run's optuna workers share the cores out, so only the
tiny study's records are compared across engines.

Where the engines legitimately differ (their own files test it: test_optuna_backend.py, test_ray_backend.py):
- a Ray trial's record has a `ray` entry (trial id, host, pid, start, end); an optuna trial's has none;
- `workers` sizes the optuna backend only; Ray refuses any but "auto" (`cpus_per_trial` sizes its trials) and runs
  as many trials at once as the cluster holds;
- pruning is Optuna's pruner on the optuna backend and ASHA on Ray (docs/ray.md);
- a trial whose worker dies is retried by Ray in the same run (`MAX_FAILURES`), by the optuna backend in the next
  run (`storage.lock.KILL_RETRIES`);
- a multi-objective study runs on the optuna backend only.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from optuna.trial import TrialState

import coatsearch
from coatsearch.errors import UserError
from coatsearch.report import write_report
from coatsearch.storage import record as R
from coatsearch.storage import store
from tests.support.engine import trials
from tests.support.hostile import refused
from tests.support.training import one_thread  # noqa: F401  # autouse: one intra-op thread for the module
from tests.tiny import TINY, tiny_variant

pytestmark = pytest.mark.slow  # each engine runs the study end to end (Ray starts twice)

ENGINES = ("optuna", "ray")
KEYS = ["C-C/seed=0/sample=0", "C-T/seed=0/sample=0"]  # the plan: two candidates x one seed
ATTRS = {"key", "run_id", "backend", "worker", "record", "network"}  # what every trial of ours carries
FAILING = ("- {name: C-C, layout: C-C}", "- {name: C-C, layout: C-C, train: {lr: 1.0e+12}}")
SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _caller(signum: int, frame: object) -> None:
    """The caller's own handler, which no engine installs."""


@dataclass(frozen=True)
class Ran:
    """One engine's runs of the module (see the module docstring) and what they left."""

    tiny: Path  # studies folder of the tiny study "s"
    first: Any  # trials=1
    rest: Any  # the rerun
    first_records: dict  # key -> the record (as JSON) after the first run
    failing: Path  # studies folder of the failing variant's study "s"
    failed: Any  # its run, two trials at once
    failed_again: Any  # its rerun
    failed_records: dict  # key -> the record (as JSON) after its first run
    handlers: tuple[dict, dict]  # the caller's SIGINT/SIGTERM handlers before and after the failing run


def _run(backend: str, space: Path, studies: Path, **kw: Any) -> Any:
    """`coatsearch.run` of study "s" on the CPU, no report, quietly; one worker unless told (optuna)."""
    workers = kw.pop("workers", 1)
    workers = workers if backend == "optuna" else "auto"  # Ray sizes its trials itself
    return coatsearch.run(space, study="s", backend=backend, workers=workers, device="cpu", studies_dir=studies,
                          report=False, progress=False, **kw)  # fmt: skip


def _records(studies: Path) -> dict:
    """Key -> the trial's record as JSON, for every trial of study "s"."""
    return {t.user_attrs["key"]: R.to_json(store.record(t).run) for t in trials(studies)}


@contextmanager
def _caller_handlers() -> Iterator[Callable[[], dict]]:
    """Install `_caller` for SIGINT and SIGTERM within the block; yields a reading of them; the previous after."""
    previous = {sig: signal.signal(sig, _caller) for sig in SIGNALS}
    try:
        yield lambda: {sig: signal.getsignal(sig) for sig in SIGNALS}
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextmanager
def _one_session(backend: str) -> Iterator[None]:
    """For Ray, one local Ray for the block (a run uses an initialized Ray as it is); nothing for optuna."""
    if backend != "ray":
        yield
        return
    import ray

    previous = {sig: signal.getsignal(sig) for sig in SIGNALS}
    ray.init(num_cpus=os.cpu_count() or 1, include_dashboard=False)
    try:
        yield
    finally:
        ray.shutdown()
        for sig, handler in previous.items():  # ray.init replaced them and ray.shutdown leaves them so
            signal.signal(sig, handler)


def _scenario(backend: str, folder: Path) -> Ran:
    """The module's runs on one engine (see the module docstring)."""
    failing = tiny_variant(folder, FAILING)
    with _caller_handlers() as handlers:
        before = handlers()
        failed = _run(backend, failing, folder / "failing", workers=2)
        after = handlers()
    failed_records = _records(folder / "failing")
    with _one_session(backend):
        first = _run(backend, TINY, folder / "tiny", trials=1)
        first_records = _records(folder / "tiny")
        rest = _run(backend, TINY, folder / "tiny")
        failed_again = _run(backend, failing, folder / "failing")
    return Ran(folder / "tiny", first, rest, first_records, folder / "failing", failed, failed_again, failed_records,
               (before, after))  # fmt: skip


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Ran]:
    """The engine's runs, made on first use and kept for the module (a failure too: they take minutes)."""
    made: dict[str, Ran | Exception] = {}

    def get(backend: str) -> Ran:
        if backend not in made:
            try:
                made[backend] = _scenario(backend, tmp_path_factory.mktemp(backend))
            except Exception as exc:
                made[backend] = exc
                raise
        got = made[backend]
        if isinstance(got, Exception):
            pytest.fail(f"the {backend} runs failed in an earlier test: {got!r}")
        return got

    return get


@pytest.mark.parametrize("backend", ENGINES)
def test_every_planned_trial_is_recorded_once_with_the_typed_record(ran, backend):
    done = trials(ran(backend).tiny)
    assert sorted(t.user_attrs["key"] for t in done) == KEYS  # each planned (candidate, seed) once
    for t in done:
        rec = store.record(t)
        assert t.state == TrialState.COMPLETE and set(t.user_attrs) == ATTRS and t.user_attrs["backend"] == backend
        assert type(rec.run) is R.RunRecord and rec.run.state == "COMPLETE"
        assert rec.run.identity.key == t.user_attrs["key"] and rec.run.identity.candidate == t.params["candidate"]
        assert rec.run.identity.seed == 0 and rec.run.fail_reason is None
        assert R.from_json(R.to_json(rec.run)) == rec.run  # the stored record round-trips as the typed one
        assert t.value == rec.value == rec.run.value("generalization.val_acc")  # the objective reads validation


@pytest.mark.parametrize("backend", ENGINES)
def test_a_rerun_resumes_without_retraining_completed_trials(ran, backend):
    r = ran(backend)
    assert (r.first.planned, r.first.complete, r.first.ran_now) == (2, 1, 1)
    assert (r.rest.planned, r.rest.complete, r.rest.failed, r.rest.ran_now) == (2, 2, 0, 1)  # only the one left
    after = _records(r.tiny)
    [kept] = r.first_records
    assert after[kept] == r.first_records[kept]  # the first run's trial is kept as it was, not trained again
    assert len({t.user_attrs["run_id"] for t in trials(r.tiny)}) == 2


@pytest.mark.parametrize("backend", ENGINES)
def test_a_failing_trial_is_recorded_failed_and_the_study_goes_on(ran, backend):
    r = ran(backend)
    assert (r.failed.planned, r.failed.complete, r.failed.failed, r.failed.ran_now) == (2, 1, 1, 2)
    by = {t.params["candidate"]: t for t in trials(r.failing)}
    assert by["C-C"].state == TrialState.FAIL and "non-finite loss" in by["C-C"].user_attrs["fail_reason"]
    assert store.record(by["C-C"]).run.fail_reason == by["C-C"].user_attrs["fail_reason"]
    assert by["C-T"].state == TrialState.COMPLETE and set(by["C-T"].user_attrs) == ATTRS
    assert r.failed_again.ran_now == 0  # a real failure is kept, not retried; the completed trial too
    assert _records(r.failing) == r.failed_records


@pytest.mark.parametrize("backend", ENGINES)
def test_a_run_gives_the_caller_its_signal_handlers_back(ran, backend):
    before, after = ran(backend).handlers
    assert before == {sig: _caller for sig in SIGNALS}
    assert after == before  # Ray: the local ray.init the run made replaced them; optuna: its workers' blocks


@pytest.mark.parametrize("backend", ENGINES)
def test_the_report_is_written_from_the_engines_records(ran, backend, tmp_path):
    text = write_report("s", ran(backend).tiny, tmp_path).read_text()
    for part in ("C-C", "C-T", "## Generalization"):
        assert part in text, part


def test_the_same_seed_gives_the_same_records_on_both_engines(ran):
    by = {b: {t.params["candidate"]: t for t in trials(ran(b).tiny)} for b in ENGINES}
    assert by["optuna"].keys() == by["ray"].keys() == {"C-C", "C-T"}
    for cand, o in by["optuna"].items():
        t = by["ray"][cand]
        assert t.params == o.params and t.distributions == o.distributions and set(t.user_attrs) == set(o.user_attrs)
        ro, rt = R.flat(store.record(o).run), R.flat(store.record(t).run)
        assert set(rt) == set(ro) | {"ray"}  # the one field only Ray writes (module docstring)
        for key in ("macs", "params", "key", "seed", "generalization.train_loss", "transfer.finetune_acc"):
            assert rt[key] == ro[key], key  # same candidate, seed and metrics, exactly
        curves = rt["curves.generalization"], ro["curves.generalization"]
        assert curves[0]["train_loss"] == curves[1]["train_loss"] and curves[0]["eval_acc"] == curves[1]["eval_acc"]
        assert t.value == o.value and rt["env"]["torch_threads"] == ro["env"]["torch_threads"] == 1


BAD_COUNTS = [
    ({"workers": 0}, "workers: 0 is not allowed; allowed: an integer 1..64"),
    ({"workers": 65}, "workers: 65 is not allowed; allowed: an integer 1..64"),
    ({"workers": True}, "workers: True is not allowed; allowed: an integer 1..64"),
    ({"trials": 0}, "trials: 0 is not allowed; allowed: an integer 1..100000"),
]


@pytest.mark.parametrize("backend", ENGINES)
@pytest.mark.parametrize(("kwargs", "expected"), BAD_COUNTS)
def test_a_bad_count_is_the_same_one_line_error_and_writes_nothing(tmp_path, backend, kwargs, expected):
    with pytest.raises(UserError) as exc:
        coatsearch.run(TINY, study="s", backend=backend, studies_dir=tmp_path / "studies", report=False,
                       progress=False, **kwargs)  # fmt: skip
    assert str(exc.value) == expected and not (tmp_path / "studies").exists()


@pytest.mark.parametrize("backend", ENGINES)
@pytest.mark.parametrize("workers", ["0", "65", "x"])
def test_a_bad_workers_flag_is_the_same_one_line_cli_error(tmp_path, backend, workers):
    err = refused(tmp_path, ["run", str(TINY), "--backend", backend, "--workers", workers, "--no-report"], "")
    shown = workers if workers.isdigit() else repr(workers)
    assert err == f"coatsearch run: error: argument --workers: {shown} is not allowed; allowed: an integer 1..64\n"
