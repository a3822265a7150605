"""One path rule for every folder a study owns: a link planted at any level below the study folder is refused
(a one-line error or a note), and nothing outside the study is written or removed through it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import coatsearch
from coatsearch import fsafe
from coatsearch.errors import UserError
from coatsearch.runner import resume, tracking
from coatsearch.space.objects import load_space
from coatsearch.storage.trials import PlanItem
from coatsearch.training import checkpoint, checkpoint_policy
from tests.support.checkpoint import STUDY
from tests.tiny import TINY, tiny_variant

ITEM = PlanItem("C-T", 0)
CHECKPOINT_LEVELS = ("checkpoints", "checkpoints/C-T", "checkpoints/C-T/seed=0", "checkpoints/C-T/seed=0/sample=0")


def _plant(study: Path, level: str, outside: Path) -> Path:
    """Make `study/level` a link to a copy of the layout below it in `outside`, holding a user's file; that file."""
    below = Path(*Path("checkpoints/C-T/seed=0/sample=0").parts[len(Path(level).parts) :])
    notes = outside / below / "USER_NOTES.txt"
    notes.parent.mkdir(parents=True, exist_ok=True)
    notes.write_text("mine")
    (study / level).parent.mkdir(parents=True, exist_ok=True)
    (study / level).symlink_to(outside, target_is_directory=True)
    return notes


@pytest.mark.parametrize("level", CHECKPOINT_LEVELS)
def test_a_link_on_the_checkpoint_path_is_never_written_or_removed_through(tmp_path, level, capsys):
    space = load_space(tiny_variant(tmp_path, (STUDY, f"{STUDY}\ncheckpoint: {{every: 3, keep: false}}")))
    study, outside = tmp_path / "s", tmp_path / "outside"
    notes = _plant(study, level, outside)
    with resume.trial(space, study, ITEM) as (done, saves):
        assert saves is None  # no saver: the trial runs without checkpoints
        assert done(("COMPLETE", None, 1.0)) == ("COMPLETE", None, 1.0)
    assert notes.read_text() == "mine"  # the end of the trial removed nothing through the link
    err = capsys.readouterr().err
    assert f"{study / level}: is a symbolic link" in err and err.count("\n") == 1


@pytest.mark.parametrize("level", CHECKPOINT_LEVELS)
def test_removing_a_trials_checkpoints_never_follows_a_link_planted_after_it_started(tmp_path, level, capsys):
    study, outside = tmp_path / "s", tmp_path / "outside"
    notes = _plant(study, level, outside)
    resume.remove(study, ITEM)
    assert notes.read_text() == "mine" and os.path.islink(study / level)
    assert "is a symbolic link" in capsys.readouterr().err


def test_a_trials_checkpoints_and_their_empty_parents_are_removed(tmp_path):
    study = tmp_path / "s"
    where = resume.folder_of(study, ITEM)
    where.mkdir(parents=True)
    (where / "fit1.safetensors").write_bytes(b"x")
    (where / "inner").mkdir()
    (where / "inner" / "link").symlink_to(tmp_path)  # a link inside is removed as a link
    resume.remove(study, ITEM)
    assert os.listdir(study / "checkpoints") == [] and tmp_path.exists()


def test_a_save_checks_the_whole_path_again(tmp_path):
    study, outside = tmp_path / "s", tmp_path / "outside"
    outside.mkdir()
    policy = checkpoint_policy.Policy(resume.folder_of(study, ITEM), 1, 1, None, study)
    saver = checkpoint.Saver(checkpoint_policy.Trial(policy), policy.folder / "fit1.safetensors")
    study.mkdir()
    (study / "checkpoints").symlink_to(outside)
    with pytest.raises(UserError, match="checkpoints: is a symbolic link"):
        saver.save(None, None, 0, 0)
    assert list(outside.iterdir()) == []


@pytest.mark.parametrize("log, level", [("tensorboard", "tensorboard"), ("tensorboard", "tensorboard/RUN"),
                                        ("mlflow", "mlartifacts"), ("mlflow", "mlflow.db")])  # fmt: skip
def test_tracking_never_writes_through_a_link_in_the_study(tmp_path, log, level, capsys):
    pytest.importorskip("tensorboard" if log == "tensorboard" else "mlflow")
    space = load_space(TINY)
    import dataclasses

    space = dataclasses.replace(space, log=log)
    study, outside = tmp_path / "s", tmp_path / "outside"
    outside.mkdir()
    level = level.replace("RUN", tracking.run_name(ITEM, 3))
    (study / level).parent.mkdir(parents=True, exist_ok=True)
    (study / level).symlink_to(outside)
    with tracking.tracked(space, study, ITEM, {}, 3) as tracker:
        assert tracker is None
    assert list(outside.iterdir()) == []
    assert "is a symbolic link" in capsys.readouterr().err


def test_the_timm_weights_path_refuses_a_link(tmp_path):
    from coatsearch import timm_models

    studies = tmp_path / "studies"
    (studies / "s").mkdir(parents=True)
    (studies / "s" / "weights").symlink_to(tmp_path)
    with pytest.raises(UserError, match="weights: is a symbolic link"):
        timm_models.weights_path(studies, "s", "C-T")


@pytest.mark.parametrize("name", fsafe.OWNED)
def test_run_refuses_a_link_to_any_folder_the_study_owns_before_writing(tmp_path, name):
    studies, outside = tmp_path / "studies", tmp_path / "outside"
    outside.mkdir()
    (studies / "t").mkdir(parents=True)
    (studies / "t" / name).symlink_to(outside)
    with pytest.raises(UserError) as err:
        coatsearch.run(coatsearch.load_space(TINY), study="t", workers=1, device="cpu", studies_dir=studies,
                       report=False, progress=False)  # fmt: skip
    assert f"{name}: is a symbolic link" in str(err.value) and "\n" not in str(err.value)
    assert sorted(os.listdir(studies / "t")) == [name] and list(outside.iterdir()) == []


@pytest.mark.parametrize("parts", [("..", "x"), ("/etc",), ("a", "..", "..")])
def test_owned_refuses_a_path_that_leaves_the_study(tmp_path, parts):
    with pytest.raises(UserError, match="leads outside the study folder"):
        fsafe.owned(tmp_path, *parts)


def test_owned_refuses_a_special_file_on_the_path(tmp_path):
    os.mkfifo(tmp_path / "checkpoints")
    with pytest.raises(UserError, match="is a FIFO, where the study keeps a folder"):
        fsafe.owned(tmp_path, "checkpoints", "x")
    (tmp_path / "weights").mkdir()
    (tmp_path / "weights" / "a").write_text("")
    assert fsafe.owned(tmp_path, "weights", "a") == tmp_path / "weights" / "a"
