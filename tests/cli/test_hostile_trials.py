"""Trials whose worker was killed, and records other Optuna clients wrote.

A killed trial is rerun at most KILL_RETRIES times, then recorded as failed and the study goes on;
foreign or malformed trials are left out with one note line each, never crash, never block.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from coatsearch.errors import UserError
from coatsearch.report import write_report
from coatsearch.scores.base import Measured
from coatsearch.space.objects import load_space
from coatsearch.storage import lock, store
from coatsearch.storage import record as R
from coatsearch.storage import trialcheck as TC
from coatsearch.storage import trials as P
from tests.report_records import SPACE, layout_records, make_study
from tests.support.hostile import cli, deadline, digest, refused, study
from tests.tiny import TINY

ROOT = Path(__file__).resolve().parents[2]


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _tiny(tmp_path: Path):
    space = load_space(TINY)
    st = store.create_study(space, tmp_path, "s")
    return space, st, {i.key: i for i in P.plan(space)}, store.folder(tmp_path, "s")


def _killed(st, trial) -> None:
    """As after the OOM killer: the trial stays RUNNING, its worker process is gone."""
    trial.set_user_attr("worker", {"host": socket.gethostname(), "pid": _dead_pid()})


# ---------------------------------------------------------------------------------- 3. killed workers


def test_a_trial_that_kills_its_worker_is_retried_then_failed_and_the_study_goes_on(tmp_path):
    space, st, items, folder = _tiny(tmp_path)
    first_key = next(iter(items))
    for attempt in range(lock.KILL_RETRIES + 1):  # the first run and each retry die on the same trial
        trial, item = store.claim(st, items, "r", None, folder)
        assert item.key == first_key, attempt
        _killed(st, trial)
    trial, item = store.claim(st, items, "r", None, folder)
    assert item.key != first_key  # the study goes on with the other trial
    failed = [r for r in store.records(st) if r.run.identity.key == first_key and r.run.fail_reason]
    assert [r.run.fail_reason for r in failed] == [f"worker killed (process gone; out of memory?) on {3} attempts"]
    assert sum(r.run.identity.key == first_key for r in store.records(st)) == lock.KILL_RETRIES + 1  # no trial lost
    assert store.counts(st)["failed"] == 1


def test_the_signal_recorded_by_the_parent_is_the_reason(tmp_path):
    space, st, items, folder = _tiny(tmp_path)
    for _ in range(lock.KILL_RETRIES + 1):
        trial, _item = store.claim(st, items, "r", None, folder)
        assert store.mark(st, folder, os.getpid(), "killed_by", "signal 9") == 1
        _killed(st, trial)
    store.claim(st, items, "r", None, folder)
    assert any(r.run.fail_reason == "worker killed (signal 9; out of memory?) on 3 attempts" for r in store.records(st))


def test_interrupted_trials_are_not_counted_as_kills(tmp_path):
    space, st, items, folder = _tiny(tmp_path)
    first_key = next(iter(items))
    for _ in range(lock.KILL_RETRIES + 2):
        trial, item = store.claim(st, items, "r", None, folder)
        assert item.key == first_key  # Ctrl-C never fails a trial for good
        trial.set_user_attr("interrupted", True)
        _killed(st, trial)
    assert store.counts(st)["failed"] == 0


KILLER = """
import os, signal, sys
from pathlib import Path
from coatsearch.runner import trial as T

_attempt = T.attempt


def attempt(space, item, *args, **kwargs):  # patched in every spawned worker too (spawn imports __main__)
    marker = Path(sys.argv[2]) / f"killed-{item.candidate}"
    if item.candidate == "C-C" and (sys.argv[3] == "always" or not marker.exists()):
        marker.touch()
        os.kill(os.getpid(), signal.SIGKILL)  # what the kernel's OOM killer does
    return _attempt(space, item, *args, **kwargs)


T.attempt = attempt
if __name__ == "__main__":
    import coatsearch

    r = coatsearch.run(sys.argv[1], workers=int(sys.argv[4]), device="cpu", studies_dir=sys.argv[2], report=False,
                       progress=False, profile="quick")
    print(r.complete, r.failed)
"""


def _killer(tmp_path: Path, mode: str, workers: int) -> subprocess.CompletedProcess:
    script = tmp_path / "killer.py"
    script.write_text(KILLER)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, str(script), str(TINY), str(tmp_path / "studies"), mode, str(workers)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=900, env=env, cwd=tmp_path)


@pytest.mark.slow
def test_a_worker_sigkilled_always_is_failed_in_the_same_run(tmp_path):
    done = _killer(tmp_path, "always", 2)
    assert done.returncode == 0 and done.stdout.split() == ["1", "1"], done
    store._OPEN.clear()
    st = store.load_study(tmp_path / "studies", "tiny-quick")
    [failed] = [r for r in store.records(st) if r.run.fail_reason]
    reason = failed.run.fail_reason or ""
    # the parent names the signal when it sees the exit first; another worker finding the trial stale first
    # can only say the process is gone: both are the kill, recorded with its attempts
    assert failed.candidate == "C-C" and reason.startswith(("worker killed (signal 9;", "worker killed (process gone;"))
    assert reason.endswith("out of memory?) on 3 attempts"), reason


@pytest.mark.slow
def test_a_worker_sigkilled_once_is_rerun_and_nothing_is_lost(tmp_path):
    first = _killer(tmp_path, "once", 1)
    assert first.returncode == -9, first  # the in-process worker is the run: it dies with it
    second = _killer(tmp_path, "once", 1)
    assert second.returncode == 0 and second.stdout.split() == ["2", "0"], second
    rc, out, err = cli(tmp_path, ["status", "tiny-quick", "--studies-dir", "studies"])
    assert rc == 0 and "2 complete" in out and "1 interrupted" in out, (out, err)


# ---------------------------------------------------------------------------------- 5. foreign records


def test_a_running_trial_with_a_foreign_worker_does_not_stop_claims(tmp_path):
    space, st, items, folder = _tiny(tmp_path)
    trial, _ = store.claim(st, items, "r", None, folder)
    trial.set_user_attr("worker", "someone else's")
    with deadline(60):
        again, item = store.claim(st, items, "r", None, folder)
    assert again.number != trial.number and item.key in items


def test_a_foreign_waiting_trial_is_told_failed_once_and_never_blocks(tmp_path, capsys):
    space, st, items, folder = _tiny(tmp_path)
    st.enqueue_trial({"candidate": "C-C", "seed": 0})  # no coatsearch key: someone else's
    trial, item = store.claim(st, items, "r", None, folder)
    assert item.key in items and trial.number == 1
    err = capsys.readouterr().err
    assert err == "coatsearch: note: trial 0: a WAITING trial without the key coatsearch plans by (added from " \
                  "outside coatsearch); told FAIL and left out\n"  # fmt: skip
    assert [t.state.name for t in st.get_trials()] == ["FAIL", "RUNNING"]


BAD = {k: ("x" if types[0] is not str else 7) for k, (types, _) in TC.ATTRS.items()}


@pytest.mark.parametrize("attr", sorted(BAD))
def test_a_mistyped_attribute_leaves_that_trial_out_with_one_note(tmp_path, capsys, attr):
    records = layout_records()
    st = make_study(tmp_path, "fab", SPACE, records, extra={3: {attr: BAD[attr]}})  # as a foreign script could
    kept = store.records(st)
    assert len(kept) == len(records) - 1 and 3 not in {r.number for r in kept}
    err = capsys.readouterr().err
    assert err.startswith(f"coatsearch: note: trial 3: attribute {attr} ") and err.endswith("; left out\n"), err


def test_the_report_survives_mistyped_attributes_and_a_foreign_space(tmp_path, capsys):
    records = layout_records()
    bad = ("optim", "depths", "wall_s", "curves.generalization", "seed", "record")
    extra = {i: {attr: "x" if attr != "record" else {"model": 3}} for i, attr in enumerate(bad)}
    st = make_study(tmp_path / "studies", "fab", SPACE, records, extra=extra)
    st.set_user_attr("space", "not a mapping")
    with deadline(300):
        path = write_report("fab", tmp_path / "studies", tmp_path / "reports")
    err = capsys.readouterr().err
    assert path.read_text().startswith("# coatsearch report: fab")
    assert err.count("; left out\n") == 6 and "study attribute space is a str, expected a mapping" in err, err


def test_a_told_from_outside_running_trial_is_noticed_and_run_again(tmp_path, capsys):
    space, st, items, folder = _tiny(tmp_path)
    trial, item = store.claim(st, items, "r", None, folder)
    st.tell(trial.number, 0.99)  # the dashboard's "Complete" with a fake value, while it trains
    run = R.completed(R.Identity(item.candidate), R.Model(), Measured({"generalization.eval_acc": 0.5}), R.Optimizer())
    store.tell(st, trial, "COMPLETE", run, 0.5)
    err = capsys.readouterr().err
    assert f"trial {trial.number} was finished from outside this run" in err and err.count("\n") == 1
    assert store.records(st) == () and store.counts(st)["complete"] == 0  # the fake result is not kept
    again, same = store.claim(st, items, "r", None, folder)
    assert same.key == item.key and again.number != trial.number  # trained again


def test_a_journal_without_the_study_or_an_empty_one_is_one_line(tmp_path):
    journal = study(tmp_path)
    refused(tmp_path, ["status", "gone"], "no study 'gone'")
    other = tmp_path / "studies" / "gone"
    other.mkdir()
    (other / "journal.log").write_bytes(journal.read_bytes())  # a journal holding study fab only
    for command in ("status", "report", "export"):
        err = refused(tmp_path, [command, "gone"], "journal.log: holds no study 'gone' (it holds fab;")
        assert "move the file away" in err
    (other / "journal.log").write_bytes(b"")
    store._OPEN.clear()  # a new process, as each command is
    refused(tmp_path, ["status", "gone"], "journal.log: holds no study 'gone' (it holds no study at all;")


def test_run_into_a_journal_whose_study_was_deleted_writes_nothing(tmp_path):
    make_study(tmp_path, "other", SPACE, layout_records())
    store._OPEN.clear()
    (tmp_path / "other").rename(tmp_path / "s")
    was = digest(tmp_path / "s" / "journal.log")
    with pytest.raises(UserError, match="holds no study 's' \\(it holds other;"):
        store.create_study(load_space(TINY), tmp_path, "s")
    assert digest(tmp_path / "s" / "journal.log") == was
