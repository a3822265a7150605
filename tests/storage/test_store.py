"""The study store: one storage per journal per process, claiming and freeing keys, frozen records, old journals."""

from __future__ import annotations

import dataclasses
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from coatsearch.report import summarize, write_report
from coatsearch.scores.base import Measured
from coatsearch.space.objects import load_space
from coatsearch.storage import record as R
from coatsearch.storage import sampling, store
from coatsearch.storage import trials as P
from tests.tiny import TINY

HERE = Path(__file__).parents[1]
OLD = HERE / "data" / "journal_7eb0683"  # `coatsearch run tests/spaces/tiny.yaml --profile quick` at 7eb0683


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_the_layout_is_composed_once_and_the_storage_opened_once(tmp_path):
    assert store.storage_file(tmp_path, "s") == store.folder(tmp_path, "s") / "journal.log"
    space = load_space(TINY)
    store.create_study(space, tmp_path, "s")
    path = store.storage_file(tmp_path, "s")
    assert store.open_storage(path) is store.open_storage(Path(str(path)))
    assert store.load_study(tmp_path, "s")._storage is store.open_storage(path)


def test_claim_takes_each_key_once_and_a_dead_worker_frees_its_key(tmp_path):
    space = load_space(TINY)
    study = store.create_study(space, tmp_path, "s")
    items = {i.key: i for i in P.plan(space)}
    folder = store.folder(tmp_path, "s")
    first, item_a = store.claim(study, items, "r", None, folder)
    second, item_b = store.claim(study, items, "r", None, folder)
    assert {item_a.key, item_b.key} == set(items)
    assert store.claim(study, items, "r", None, folder) is None  # both keys are taken by live RUNNING trials
    store.tell(study, second, "FAIL", R.failed(R.Identity(), "boom"), None)  # a real failure keeps its key
    first.set_user_attr("worker", {"host": socket.gethostname(), "pid": _dead_pid()})  # as after kill -9
    again, item = store.claim(study, items, "r", None, folder)
    assert item == item_a and again.number != first.number
    states = {r.number: (r.state, r.run.fail_reason) for r in store.records(study)}
    assert states[first.number] == ("FAIL", None) and states[second.number] == ("FAIL", "boom")
    assert store.claim(study, items, "r", 3, folder) is None  # this run's limit reached


def test_records_are_frozen_copies(tmp_path):
    space = load_space(TINY)
    study = store.create_study(space, tmp_path, "s")
    trial, item = store.claim(study, {i.key: i for i in P.plan(space)}, "r", None, store.folder(tmp_path, "s"))
    assert sampling.suggest(trial, space, item) == {}  # the tiny space searches nothing
    measured = {"generalization.eval_acc": 0.5, "curves.generalization": {"eval_acc": [0.5]}}
    run = R.completed(
        R.Identity("C-C", 0, 0, item.key), R.Model(), Measured.from_json(measured), R.Optimizer(), objective="x"
    )
    journal = store.storage_file(tmp_path, "s")
    lines = len(journal.read_text().splitlines())
    store.tell(study, trial, "COMPLETE", run, 0.5)
    # the record (one attribute), Optuna's constraint (what the samplers read rejections by), then the state
    assert len(journal.read_text().splitlines()) == lines + 3
    assert study.trials[0].constraints == {sampling.CONSTRAINT: 0.0}
    (rec,) = store.records(study)
    assert rec.state == "COMPLETE" and rec.value == 0.5 and rec.candidate == "C-C" and rec.seed == 0
    assert rec.run.keys() == ("generalization.eval_acc",) and rec.run.value("generalization.eval_acc") == 0.5
    assert rec.run.curves["generalization"]["eval_acc"] == (0.5,) and rec.run.version == R.VERSION
    with pytest.raises(dataclasses.FrozenInstanceError):
        rec.value = 1.0
    with pytest.raises(TypeError):
        rec.run.metrics["generalization"]["eval_acc"] = 0.9  # type: ignore[index]
    study.set_user_attr("space", {"space": "changed"})
    R.measured(rec.run)["curves.generalization"]["eval_acc"].append(1.0)  # a copy: nothing changes
    assert rec.run.curves["generalization"]["eval_acc"] == (0.5,)
    assert store.records(study)[0].run == rec.run and rec.run.objective == "x"


def test_a_journal_written_before_the_store_opens_and_reports(tmp_path):
    shutil.copytree(OLD, tmp_path / "studies")
    study = store.load_study(tmp_path / "studies", "tiny-quick")
    recs = store.records(study)
    assert [r.state for r in recs] == ["COMPLETE", "COMPLETE"]
    assert {r.candidate for r in recs} == {"C-C", "C-T"} and all(r.run.identity.key and r.run.wall_s for r in recs)
    assert all(r.run.objective == "generalization.eval_acc" and r.value == r.run.value(r.run.objective) for r in recs)
    summary = summarize("tiny-quick", store.space_of(study), list(recs))
    assert [r.candidate for r in summary.summary.candidates] == ["C-C", "C-T"]
    path = write_report("tiny-quick", tmp_path / "studies", tmp_path / "reports")
    assert "C-C" in path.read_text(encoding="utf-8")
