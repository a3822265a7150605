"""Cases of a run a first attack did not reach (issue 56): a damaged MLflow store, two runs of one study at once, and
a resume with another number of workers. Each exits as docs/limits.md says."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import coatsearch
from coatsearch.cli import main
from coatsearch.storage import lock, store
from tests.support.checkpoint import EDITS, ROOT
from tests.tiny import TINY, tiny_variant


def _files(root: Path) -> set[Path]:
    return {p.relative_to(root) for p in root.rglob("*")}


def _garbage(db: Path) -> None:
    db.write_bytes(b"not a database\n" * 300)


def _truncated(db: Path) -> None:
    with sqlite3.connect(db) as con:  # a real store cut short (a full disk, a copy stopped halfway)
        con.execute("create table runs (id integer, name text)")
        con.executemany("insert into runs values (?, ?)", [(i, "x" * 200) for i in range(200)])
    con.close()
    data = db.read_bytes()
    db.write_bytes(data[: len(data) // 2 + 100])


@pytest.mark.parametrize("damage", [_garbage, _truncated])
def test_a_damaged_mlflow_store_is_one_note_and_the_run_goes_on_untracked(tmp_path, monkeypatch, capsys, damage):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    studies, reports = tmp_path / "studies", tmp_path / "reports"
    db = studies / "t" / "mlflow.db"
    db.parent.mkdir(parents=True)
    damage(db)
    before, outside = db.read_bytes(), _files(tmp_path) - {Path("studies/t"), Path("studies/t/mlflow.db")}
    args = ["run", str(TINY), "--study", "t", "--studies-dir", str(studies), "--reports-dir", str(reports),
            "--log", "mlflow", "--no-plan", "--quiet", "--workers", "1", "--device", "cpu"]  # fmt: skip
    assert main(args) == 0
    err = capsys.readouterr().err
    notes = [line for line in err.splitlines() if "mlflow" in line]
    assert len(notes) == 1 and notes[0].startswith("coatsearch: note: tracking in mlflow (sqlite:///"), err
    assert notes[0].endswith("this run is not tracked") and "Traceback" not in err
    assert db.read_bytes() == before  # left as it was, never replaced or repaired
    assert {r.state for r in store.records(store.load_study(studies, "t"))} == {"COMPLETE"}
    new = _files(tmp_path) - outside
    assert all(p.parts[0] in ("studies", "reports") for p in new), sorted(new)
    assert not (studies / "t" / "mlartifacts").exists() and not (tmp_path / "mlruns").exists()


def test_a_link_in_place_of_the_mlflow_store_is_one_line_and_exit_2(tmp_path, capsys):
    studies, elsewhere = tmp_path / "studies", tmp_path / "elsewhere.db"
    elsewhere.write_bytes(b"")
    (studies / "t").mkdir(parents=True)
    (studies / "t" / "mlflow.db").symlink_to(elsewhere)
    args = ["run", str(TINY), "--study", "t", "--studies-dir", str(studies), "--reports-dir", str(tmp_path / "r"),
            "--log", "mlflow", "--no-plan", "--quiet", "--workers", "1", "--device", "cpu"]  # fmt: skip
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "mlflow.db: is a symbolic link" in err
    assert elsewhere.read_bytes() == b"" and sorted(os.listdir(studies / "t")) == ["mlflow.db"]


def _cli(space: Path, studies: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "coatsearch", "run", str(space), "--study", "s", "--studies-dir", str(studies),
            "--device", "cpu", "--no-plan", "--no-report", "--quiet", *extra]  # fmt: skip


_HOLD = """import sys, time
from pathlib import Path
from coatsearch.storage import lock
with lock.running(Path(sys.argv[1])):
    print("held", flush=True)
    time.sleep(600)
"""


@pytest.mark.slow
def test_a_second_run_of_a_study_while_one_runs_is_one_line_and_exit_2(tmp_path):
    """A process holds the study's run lock as a running `coatsearch run` does: a real second `coatsearch run` is
    refused in one line before it writes anything, whatever the timing; the lock dies with its holder's process."""
    space, studies = tiny_variant(tmp_path, *EDITS), tmp_path / "studies"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    holder = subprocess.Popen([sys.executable, "-c", _HOLD, str(studies / "s")], env=env, cwd=ROOT,
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"  # EOF if the holder died
        second = subprocess.run(_cli(space, studies, "--workers", "2"), env=env, cwd=ROOT, capture_output=True,
                                text=True, timeout=300)  # fmt: skip
        assert holder.poll() is None
    finally:
        holder.kill()
        holder.wait(timeout=60)
    assert second.returncode == 2 and second.stdout == "", second.stderr
    assert second.stderr.count("\n") == 1 and "is being run already (pid " in second.stderr, second.stderr
    assert f"pid {holder.pid} on " in second.stderr
    assert sorted(os.listdir(studies / "s")) == [lock.RUN_LOCK]  # the refused run wrote nothing
    with lock.running(studies / "s"):  # free again once the holder's process is gone (killed, not released)
        pass


@pytest.mark.slow
def test_a_study_resumes_with_another_number_of_workers(tmp_path):
    """Allowed: trials are claimed by key, whatever the worker count; the rest run once each, none twice."""
    seeds = ("study: {seeds: [0], baselines: false}", "study: {seeds: [0, 1], baselines: false}")
    space, studies = coatsearch.load_space(tiny_variant(tmp_path, seeds)), tmp_path / "studies"
    common = {"study": "s", "device": "cpu", "studies_dir": studies, "report": False, "progress": False}
    first = coatsearch.run(space, workers=1, trials=1, **common)
    assert (first.complete, first.ran_now, first.planned) == (1, 1, 4)
    again = coatsearch.run(space, workers=2, **common)
    assert (again.complete, again.ran_now) == (4, 3)
    records = store.records(store.load_study(studies, "s"))
    keys = [r.run.identity.key for r in records]
    assert len(keys) == len(set(keys)) == 4 and {r.state for r in records} == {"COMPLETE"}  # each key once
    assert len({t.user_attrs["run_id"] for t in store.load_study(studies, "s").get_trials()}) == 2
