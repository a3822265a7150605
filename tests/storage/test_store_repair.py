"""A study remembers its space, and a damaged journal is reported in one line and repaired."""

import json
import os
from pathlib import Path

import optuna
import pytest

from coatsearch.cli import main
from coatsearch.errors import UserError
from coatsearch.scores.base import Measured
from coatsearch.space.objects import load_space
from coatsearch.storage import journal as J
from coatsearch.storage import record as R
from coatsearch.storage import store
from tests.tiny import TINY


def _study(tmp_path: Path, text: str | None = None) -> Path:
    """A tiny study under tmp_path/studies with one finished trial; its journal path."""
    space = load_space(_space_file(tmp_path, text or TINY.read_text()))
    study = store.create_study(space, tmp_path / "studies", "tiny")
    trial = study.ask()
    run = R.completed(R.Identity("C-C", 0), R.Model(), Measured({"generalization.eval_acc": 0.5}), R.Optimizer())
    store.tell(study, trial, "COMPLETE", run, 0.5)
    store._OPEN.clear()
    return store.storage_file(tmp_path / "studies", "tiny")


def _space_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(text)
    return path


def _cli(tmp_path: Path, argv: list[str], capsys) -> tuple[int, str, str]:
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        rc = main(argv)
    finally:
        os.chdir(cwd)
        store._OPEN.clear()
    out = capsys.readouterr()
    return rc, out.out, out.err


# ------------------------------------------------------------------------------ a study remembers its space

CHANGES = [
    (("lr: 3.0e-3", "lr: 1.0e-2"), "train.lr of candidate C-T: 0.003 -> 0.01"),
    (("- {name: C-T}", "- {name: C-T}\n  - {name: X, layout: T-T}"), "candidate added: X"),
    (("  - {name: C-C, layout: C-C}\n", ""), "candidate removed: C-C"),
    (("study: {seeds: [0]", "study: {seeds: [0, 1]"), "study.seeds: [0] -> [0, 1]"),
    (("eval_size: 100", "eval_size: 50"), "data.eval_size: 100 -> 50"),
    (("generalization: {per_class: 20", "generalization: {per_class: 30"), "scores.generalization.per_class"),
    (("widths: [16, 32]", "widths: [16, 48]"), "widths of candidate C-T: [16, 32] -> [16, 48]"),
]


@pytest.mark.parametrize("edit, expected", CHANGES)
def test_a_changed_space_is_refused_and_nothing_is_written(tmp_path, capsys, edit, expected):
    journal = _study(tmp_path)
    before = journal.read_bytes()
    space = _space_file(tmp_path, TINY.read_text().replace(*edit))
    rc, _, err = _cli(tmp_path, ["run", str(space), "--studies-dir", "studies", "--quiet"], capsys)
    assert rc == 2 and err.count("\n") == 1, err
    assert expected in err and "--study NEW" in err and "--force-new-space" in err, err
    assert journal.read_bytes() == before
    assert sorted(p.name for p in journal.parent.iterdir()) == ["journal.log"]
    assert not (tmp_path / "reports").exists()


def test_force_new_space_starts_a_successor_and_keeps_the_old_trials(tmp_path):
    journal = _study(tmp_path)
    space = load_space(_space_file(tmp_path, TINY.read_text().replace("lr: 3.0e-3", "lr: 1.0e-2")))
    with pytest.raises(UserError, match="another version of this space"):
        store.create_study(space, journal.parent.parent, "tiny")
    study = store.create_study(space, journal.parent.parent, "tiny", force_new_space=True)
    assert study.study_name == "tiny~2" and store.records(study) == ()
    assert study.user_attrs["space"]["form"]["candidates"]["C-T"]["train"]["lr"] == 0.01
    old = optuna.load_study(study_name="tiny", storage=store.open_storage(journal))
    assert [r.state for r in store.records(old)] == ["COMPLETE"]  # kept, readable as it was
    store._OPEN.clear()
    again = store.create_study(space, journal.parent.parent, "tiny")  # the new space is now the study's
    assert again.study_name == "tiny~2" and store.load_study(journal.parent.parent, "tiny").study_name == "tiny~2"


def test_the_same_space_reopens_without_writing(tmp_path):
    journal = _study(tmp_path)
    before = journal.read_bytes()
    store.create_study(load_space(tmp_path / "tiny.yaml"), journal.parent.parent, "tiny")
    assert journal.read_bytes() == before


def test_space_changes_name_each_difference():
    from coatsearch.storage.trials import space_changes

    old = {"candidates": {"A": {"train": {"lr": 1}}, "B": {}}, "study": {"seeds": [0]}}
    new = {"candidates": {"A": {"train": {"lr": 2}}, "C": {}}, "study": {"seeds": [0]}}
    assert space_changes(old, new) == ["candidate removed: B", "candidate added: C", "train.lr of candidate A: 1 -> 2"]
    assert space_changes(old, old) == []


# ------------------------------------------------------------------------------ a corrupted store

DAMAGE = {
    "cut mid-line": (lambda raw: raw[:-25], "cut short: the last line has no newline"),
    "garbage appended": (lambda raw: raw + b"\x8f\xffgarbage from a full disk\n", "not JSON"),
    "NUL bytes": (lambda raw: raw + b"\0" * 64, "NUL bytes"),
    "an empty line in the middle": (lambda raw: raw.replace(b"\n", b"\n\n", 1), "an empty line"),
    "valid JSON, wrong shape": (lambda raw: raw + b'{"hello": "world"}\n', "not a journal record"),
    "a JSON list": (lambda raw: raw + b"[1, 2]\n", "not a journal record"),
    "cut, then appended to": (lambda raw: raw[:-25] + b'\n{"op_code": 4, "worker_id": "w"}\n', "not JSON"),
}


@pytest.mark.parametrize("how", list(DAMAGE))
@pytest.mark.parametrize("command", ["report", "status", "export", "dashboard"])
def test_a_damaged_journal_is_one_line_naming_file_and_line(tmp_path, capsys, how, command):
    journal = _study(tmp_path)
    damage, why = DAMAGE[how]
    journal.write_bytes(damage(journal.read_bytes()))
    rc, _, err = _cli(tmp_path, [command, "tiny", "--studies-dir", "studies"], capsys)
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    line = J.first_damage(journal.read_bytes()).line
    assert f"journal.log:{line}: damaged study journal" in err and why in err and "coatsearch repair tiny" in err


@pytest.mark.parametrize("how", list(DAMAGE))
def test_repair_keeps_the_complete_records_and_report_works_after_it(tmp_path, capsys, how):
    journal = _study(tmp_path)
    whole = journal.read_bytes()
    journal.write_bytes(DAMAGE[how][0](whole))
    rc, out, _ = _cli(tmp_path, ["repair", "tiny", "--studies-dir", "studies"], capsys)
    assert rc == 0 and "kept" in out
    repaired = journal.read_bytes()
    assert J.first_damage(repaired) is None and whole.startswith(repaired)
    backups = list(journal.parent.glob("journal.log.damaged-*"))
    if how == "an empty line in the middle":
        assert repaired == whole and not backups  # an empty line carries no record: dropped, nothing moved
    else:
        assert len(backups) == 1 and repaired + backups[0].read_bytes() == DAMAGE[how][0](whole)
    rc, out, err = _cli(tmp_path, ["report", "tiny", "--studies-dir", "studies"], capsys)
    assert rc == 0, err
    rc, out, _ = _cli(tmp_path, ["repair", "tiny", "--studies-dir", "studies"], capsys)
    assert rc == 0 and "no damage found" in out


def test_repair_of_a_missing_study(tmp_path, capsys):
    rc, _, err = _cli(tmp_path, ["repair", "nope", "--studies-dir", "studies"], capsys)
    assert rc == 2 and "no study 'nope'" in err and not (tmp_path / "studies").exists()


def test_a_run_on_a_damaged_journal_stops_before_writing(tmp_path, capsys):
    journal = _study(tmp_path)
    journal.write_bytes(journal.read_bytes() + b"{oops\n")
    before = journal.read_bytes()
    rc, _, err = _cli(tmp_path, ["run", str(tmp_path / "tiny.yaml"), "--studies-dir", "studies"], capsys)
    assert rc == 2 and "damaged study journal" in err and journal.read_bytes() == before


def test_first_damage_and_split_on_bytes():
    good = b'{"op_code": 0, "worker_id": "w"}\n'
    assert J.first_damage(good * 3) is None and J.first_damage(b"") is None
    damage = J.first_damage(good + b"\n" + good)
    assert (damage.line, damage.offset, damage.records) == (2, len(good), 1)
    cut = J.split(good + b"\n" + good + b"{bad\n" + good)
    assert (cut.keep, cut.records, cut.blank, cut.tail, cut.tail_lines) == (good * 2, 2, 1, b"{bad\n" + good, 2)
    assert json.loads(cut.keep.splitlines()[0])["op_code"] == 0
