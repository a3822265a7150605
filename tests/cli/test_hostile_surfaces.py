"""The newer surfaces under hostile use: diverging trials across processes, resumed search studies, refusals that
write nothing, device strings, huge search spaces.

Each test reproduces a failure a new user met, and a second member of its class.
"""

from __future__ import annotations

import os
import pickle
import signal
import time
from pathlib import Path

import pytest

from coatsearch.errors import Pruned, TrialFailed, UserError
from coatsearch.runner.spawned import run_spawned
from coatsearch.space.admission import Rejected
from coatsearch.space.load import SpaceError
from coatsearch.space.objects import load_space
from coatsearch.storage import sampling, store
from coatsearch.storage import trials as P
from coatsearch.training.history import NonFinite, NonFiniteLoss
from tests.support.hostile import deadline
from tests.tiny import TINY, TINY_SEARCH, tiny_text, tiny_variant

# ------------------------------------------------------------- 2. exceptions cross processes; a dead worker is seen


@pytest.mark.parametrize(
    "exc",
    [NonFiniteLoss(3, 17), NonFiniteLoss(0, None, "eval loss (nan)"), NonFinite("non-finite metric x = nan"),
     Rejected("conv_before_attention"), TrialFailed("budget not met"), Pruned(), UserError("x: y"),
     SpaceError("s.yaml:1: z")],
)  # fmt: skip
def test_every_exception_a_trial_can_raise_pickles_with_its_fields(exc):
    # NonFiniteLoss needed `step` to be rebuilt, so a spawned pilot's divergence could not be read by its parent
    back = pickle.loads(pickle.dumps(exc))
    assert type(back) is type(exc) and str(back) == str(exc) and vars(back) == vars(exc)


def _diverge(epoch: int) -> None:
    raise NonFiniteLoss(epoch, 5)


class _Unpicklable(Exception):
    def __init__(self, a: int, b: int) -> None:  # not rebuilt from its args: does not unpickle
        super().__init__(f"{a}/{b}")


def _raise_unpicklable() -> None:
    raise _Unpicklable(1, 2)


def _die(sig: int) -> None:
    os.kill(os.getpid(), sig)
    time.sleep(60)


def test_a_spawned_task_that_diverges_or_raises_what_cannot_cross_is_raised_in_the_parent():
    with deadline(120):
        assert run_spawned(abs, [(-1,), (2,), (-3,)], 2) == [1, 2, 3]
        with pytest.raises(NonFiniteLoss, match="non-finite loss at epoch 4, step 5"):
            run_spawned(_diverge, [(4,)], 1)
        with pytest.raises(RuntimeError, match=r"_Unpicklable: 1/2"):  # multiprocessing.Pool waited forever
            run_spawned(_raise_unpicklable, [()], 1)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGSEGV])
def test_a_spawned_process_that_dies_is_seen_by_its_parent_within_the_poll(sig):
    began = time.monotonic()
    with deadline(120), pytest.raises(RuntimeError, match=f"died \\(signal {sig}"):
        run_spawned(_die, [(sig,), (sig,)], 2)
    assert time.monotonic() - began < 60


@pytest.mark.slow
def test_a_plan_of_a_space_whose_training_diverges_ends_and_times_the_trials(tmp_path):
    # `run` of a space with lr: 1.0e4 hung in its pilots (killed after 120 s, the study left RUNNING)
    from coatsearch.planner.pilot import run_pilots
    from coatsearch.space.objects import load_space

    space = load_space(tiny_variant(tmp_path, ("lr: 3.0e-3", "lr: 1.0e4")))
    preps = [c.prepared for c in space.candidates]
    with deadline(240):
        timings = run_pilots(space, preps, 0, "cpu", 2, 1)
    assert [t.candidate for t in timings] == ["C-C", "C-T"] and all(t.pilot_s > 0 for t in timings)


# ------------------------------------------------------------- 1. a search study with re-evaluation resumes in place

SEARCH = TINY_SEARCH


def _told(st, space, item) -> None:
    """A trial that fixed its choices as a run's trial does (sampling.suggest), told COMPLETE."""
    trial = st.ask()
    sampling.suggest(trial, space, item)
    st.tell(trial, 0.5)


def test_a_search_study_with_a_reevaluation_seed_reopens_in_place_not_as_a_successor(tmp_path, capsys):
    # every rerun of a space with study.reevaluate went on as '<study>~2' (then ~3), retraining every trial: the
    # resume check compared the trials' seed choices (search and re-evaluation seeds) with study.seeds alone
    space = load_space(SEARCH)
    st = store.create_study(space, tmp_path, "s")
    again = next(i for i in P.plan(space) if i.sample >= P.REEVAL)  # a re-evaluation trial, on a fresh seed
    _told(st, space, again)
    _told(st, space, P.plan(space)[0])
    reopened = store.create_study(space, tmp_path, "s")
    assert reopened.study_name == "s" and "goes on as" not in capsys.readouterr().err
    assert len(reopened.trials) == 2  # nothing orphaned: the same study, its trials kept


def test_trials_that_fixed_other_choices_still_go_on_in_a_successor(tmp_path, capsys):
    # the check still finds choices the space no longer plans (a study an older --force-new-space recorded into)
    import optuna

    space = load_space(SEARCH)
    st = store.create_study(space, tmp_path, "s")
    trial = st.ask()
    trial.suggest_categorical("seed", [0, 7])  # not what this space plans
    st.tell(trial, 0.5)
    assert P.fixed_choices(space) == {"candidate": ["C-C", "C-T", "searched"], "seed": [0, 1, 2]}
    assert store.create_study(space, tmp_path, "s").study_name == "s~2"
    assert "goes on as Optuna study 's~2'" in capsys.readouterr().err
    assert isinstance(st, optuna.Study)


# -------------------------------------------------------------------- 5. refusals write nothing; 6. devices


def test_run_on_ray_at_an_address_nobody_serves_writes_no_journal_lock_or_registration(tmp_path):
    pytest.importorskip("ray")
    import coatsearch

    studies = tmp_path / "studies"
    for address in ("127.0.0.1:1", "nohost"):
        with deadline(60), pytest.raises(UserError, match="no Ray cluster at 127.0.0.1:1|--address must be"):
            coatsearch.run(TINY, backend="ray", address=address, studies_dir=studies, report=False, progress=False)
        assert not studies.exists() or list(studies.rglob("*")) == []


@pytest.mark.parametrize("device", ["tpu", "cuda:99", "nonsense:0"])
def test_a_device_this_machine_lacks_is_one_line_naming_what_it_has(tmp_path, device):
    # load_weights(path, device=...) with an unknown device, or cuda without a driver, was an internal error
    import coatsearch
    from coatsearch.training.fit import pick_device

    path = tmp_path / "w.pt"
    path.write_bytes(b"not weights")
    with pytest.raises(UserError, match=r"allowed here: auto, cpu"):
        coatsearch.load_weights(path, device=device)
    with pytest.raises(UserError, match=r"allowed here: auto, cpu"):  # the same check as --device
        pick_device(device)
    with pytest.raises(UserError, match=r"not a coatsearch weights file \("):  # one line, no torch advice
        coatsearch.load_weights(path)


# ------------------------------------------------------------------------------------ 7. huge search spaces

GRID = "  - name: searched\n    search:\n" + "".join(
    f"      train.{k}: {{choices: [{', '.join(str(round(0.001 * (i + 1), 6)) for i in range(1000))}]}}\n"
    for k in ("lr", "weight_decay", "label_smoothing")
)


def test_a_grid_too_big_to_plan_is_one_line_giving_its_size(tmp_path):
    # a grid of 10^9 points was materialised in full (past 5 GB in 70 s) after the journal was written
    text = tiny_text(("  - {name: C-T}\n", "  - {name: C-T}\n" + GRID),
                     ("study: {seeds: [0],", "study: {seeds: [0], sampler: grid,"))  # fmt: skip
    path = tmp_path / "grid.yaml"
    path.write_text(text.replace("label_smoothing: {choices: [0.001", "label_smoothing: {choices: [0.0"))
    began = time.monotonic()
    with deadline(60), pytest.raises(UserError, match=r"holds 1,000,000,000 points; the grid sampler plans at most"):
        load_space(path)
    assert time.monotonic() - began < 30


def test_a_huge_structural_space_is_surveyed_within_its_bounds_and_says_so():
    from coatsearch.space import admission
    from coatsearch.vocab.specs import SearchDim

    dim = SearchDim(low=1, high=10**9)  # an int range of a billion values: counted, never listed
    assert len(dim.values() or ()) == 10**9
    space = load_space(SEARCH)
    cand = space.candidate("searched")
    found = admission.survey(space, cand, limit=3)
    assert found.points == 3 and found.stopped == "at the first 3"
    found = admission.survey(space, cand, seconds=0.0)
    assert found.points == 0 and found.stopped == "after 0 s"


# ----------------------------------------------------------------------------------- 9. the API's arguments


@pytest.mark.parametrize(
    "call, expected",
    [(lambda c: c.run({"name": "x"}), "space: {'name': 'x'} is not allowed"),
     (lambda c: c.run(TINY, study=Path("x"), report=False), "study name PosixPath('x') is not allowed"),
     (lambda c: c.load_weights(123), "path: 123 is not allowed"),
     (lambda c: c.export("s", "yaml", best=1.5), "best: 1.5 is not allowed; allowed: an integer 1..100000"),
     (lambda c: c.export("s", "yaml", best=True), "best: True is not allowed"),
     (lambda c: c.replicate("s", seeds=2.7), "seeds: 2.7 is not allowed; allowed: an integer 1..100"),
     (lambda c: c.replicate("s", seeds=True), "seeds: True is not allowed"),
     (lambda c: c.replicate("s", seeds=(-1,)), "seeds: -1 is not allowed; allowed: an integer 0..2147483647"),
     (lambda c: c.build(study="s", trial="3"), "trial: '3' is not allowed; allowed: an integer 0..100000")],
)  # fmt: skip
def test_api_arguments_take_the_clis_checks_and_one_line(tmp_path, monkeypatch, call, expected):
    import coatsearch

    monkeypatch.chdir(tmp_path)
    with pytest.raises(UserError) as info:
        call(coatsearch)
    assert expected in str(info.value) and "\n" not in str(info.value), info.value
    assert list(tmp_path.rglob("*")) == []


def test_a_space_loaded_under_one_profile_is_not_run_under_another_silently(tmp_path):
    import coatsearch

    space = coatsearch.load_space(TINY, "quick")
    with pytest.raises(UserError, match="the Space was loaded under profile 'quick'"):
        coatsearch.run(space, profile="default", studies_dir=tmp_path, report=False)
    assert list(tmp_path.rglob("*")) == []


# ------------------------------------------------------------- 10. a registration belongs to its own study


class _Stop(Exception):
    pass


def _registered_run(monkeypatch, studies: Path, name: str) -> str:
    """`run` of the tiny space as study `name`, stopped at its first trial (registered, nothing trained); the
    study's registration line as the report reads it."""
    import coatsearch
    from coatsearch.papers import registration
    from coatsearch.report import _registered
    from coatsearch.runner import optuna_backend

    def stop(*args: object, **kwargs: object) -> None:
        raise _Stop

    monkeypatch.setattr(optuna_backend, "_run_trial", stop)
    with pytest.raises(_Stop):
        coatsearch.run(TINY, study=name, profile="quick", workers=1, device="cpu", studies_dir=studies, report=False,
                       progress=False)  # fmt: skip
    store._OPEN.clear()
    space = P.space_record(load_space(TINY, "quick"))
    standing = _registered(studies, name, space)
    assert standing is not None and registration.load(store.folder(studies, name)) is not None
    return standing.line()  # every change counted: the study's whole line


def _copy_registration(source: Path, target: Path) -> None:
    target.mkdir(parents=True, exist_ok=True)
    (target / "registration.json").write_bytes((source / "registration.json").read_bytes())


def test_a_registration_copied_from_another_study_is_exploratory_and_says_why(tmp_path, monkeypatch):
    # a registration.json copied from a study that had seen its results made a fresh study 'confirmatory'
    studies = tmp_path / "studies"
    assert _registered_run(monkeypatch, studies, "a").startswith("confirmatory")
    _copy_registration(studies / "a", studies / "b")
    line = _registered_run(monkeypatch, studies, "b")
    assert line.startswith("exploratory") and "registered for study 'a', not 'b' (copied from another study?)" in line


def test_a_registration_copied_from_a_namesake_in_another_folder_is_exploratory(tmp_path, monkeypatch):
    # the second member: the same study name in another studies folder; the Optuna identity tells them apart
    assert _registered_run(monkeypatch, tmp_path / "one", "s").startswith("confirmatory")
    _copy_registration(tmp_path / "one" / "s", tmp_path / "two" / "s")
    line = _registered_run(monkeypatch, tmp_path / "two", "s")
    assert line.startswith("exploratory") and "registered for another Optuna study" in line, line


def test_a_registration_made_before_the_study_is_bound_on_its_first_run(tmp_path, monkeypatch):
    # `plan --register` writes the registration before the study exists: the first run ties it to the study
    from coatsearch.papers import registration

    folder = tmp_path / "studies" / "s"
    registration.register(P.space_record(load_space(TINY, "quick")), folder, "s")
    assert registration.load(folder).identity == ""  # type: ignore[union-attr]
    assert _registered_run(monkeypatch, tmp_path / "studies", "s").startswith("confirmatory")
    assert registration.load(folder).identity == store.identity(folder, "s") != ""  # type: ignore[union-attr]


# ------------------------------------------- 1. a finished search study resumes; 5. refusals before writing (CLI)

SMALL = (("  - {name: C-C, layout: C-C}\n  - {name: C-T}\n", ""), ("samples: 6", "samples: 3"),
         ("reevaluate: {top: 2, seeds: 2}", "reevaluate: {top: 1, seeds: 2}"),
         ("per_class: 10", "per_class: 2"))  # fmt: skip


@pytest.mark.slow
def test_rerunning_a_finished_search_study_trains_nothing_and_export_refuses_a_linked_weights_file(
    tmp_path, monkeypatch
):
    # rerunning `coatsearch run` on a finished space with study.reevaluate went on as '<study>~2' and retrained all
    import coatsearch
    from coatsearch.runner import optuna_backend
    from coatsearch.storage import found
    from tests.support.hostile import cli, refused

    tiny_variant(tmp_path, *SMALL, source=SEARCH)
    coatsearch.run(tmp_path / "space.yaml", study="ts", workers=1, device="cpu", studies_dir=tmp_path / "studies",
                   report=False, progress=False)  # fmt: skip
    store._OPEN.clear()
    before = len(store.load_study(tmp_path / "studies", "ts").trials)

    def trains(*args: object, **kwargs: object) -> None:
        raise AssertionError("a finished study retrained a trial")

    monkeypatch.setattr(optuna_backend, "_run_trial", trains)
    argv = ["run", "space.yaml", "--study", "ts", "--workers", "1", "--device", "cpu", "--no-plan", "--no-report"]
    for _ in range(2):  # the second rerun too: no '~2', then no '~3'
        rc, _, err = cli(tmp_path, argv, seconds=300)
        assert rc == 0 and "goes on as" not in err, err
        store._OPEN.clear()
        st = store.load_study(tmp_path / "studies", "ts")
        assert st.study_name == "ts" and len(st.trials) == before

    [(tm, _, _)] = found.best("ts", 1, tmp_path / "studies")
    outside = tmp_path / "outside.txt"
    outside.write_text("precious\n")
    (tmp_path / f"found.{tm.architecture}.safetensors").symlink_to(outside)
    export = ["export", "ts", "--best", "1", "--format", "yaml", "--out", "found.yaml", "--save-weights"]
    refused(tmp_path, export, "is a symbolic link", outside)  # nothing trained, no YAML, the target unchanged
    (tmp_path / f"found.{tm.architecture}.safetensors").unlink()
    (tmp_path / "found.yaml").symlink_to(outside)  # the second member: the YAML itself a link
    refused(tmp_path, export, "found.yaml: is a symbolic link", outside)


def test_run_on_ray_at_an_address_nobody_serves_from_the_cli_writes_nothing(tmp_path):
    # the CLI path of the Ray refusal: exit 2, one line, no journal, lock or registration
    from tests.support.hostile import refused

    (tmp_path / "space.yaml").write_text(TINY.read_text())
    for address, expected in (("127.0.0.1:1", "no Ray cluster at 127.0.0.1:1"), ("nohost", "--address must be")):
        refused(tmp_path, ["run", "space.yaml", "--backend", "ray", "--address", address, "--no-report"], expected)
    assert not (tmp_path / "studies").exists()
