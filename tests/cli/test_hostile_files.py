"""Links, study-destroying commands, hangs and half-written files.

Each test asserts the contract: exit 2 with one line and nothing written (or a clean run), outside files
unchanged by hash, no hang (a deadline), and no trial lost (counts before and after).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from coatsearch import fsafe
from coatsearch.dashboard import ReadableStorage, ReadOnly
from coatsearch.errors import UserError
from coatsearch.report import plots
from coatsearch.storage import journal as J
from coatsearch.storage import store
from tests.report_records import SPACE, layout_records, make_study
from tests.support.hostile import cli, deadline, digest, refused, study, wsgi_request

N = len(layout_records())


def outside_file(tmp_path: Path) -> Path:
    path = tmp_path / "outside" / "precious.txt"
    path.parent.mkdir()
    path.write_text("keep me\n")
    return path


# ---------------------------------------------------------------------- 1. no write or read through a link


@pytest.mark.parametrize("name", ["report.md", "summary.json", *(f"{f}.png" for f in plots.FIGURES)])
def test_a_linked_report_file_is_refused_and_the_target_is_unchanged(tmp_path, name):
    study(tmp_path)
    target = outside_file(tmp_path)
    (tmp_path / "reports" / "fab").mkdir(parents=True)
    (tmp_path / "reports" / "fab" / name).symlink_to(target)
    refused(tmp_path, ["report", "fab"], f"{name}: is a symbolic link", outside=target)


@pytest.mark.parametrize("command", [["status", "fab"], ["report", "fab"], ["export", "fab"], ["repair", "fab"]])
def test_a_linked_journal_is_refused_and_no_lock_lands_beside_its_target(tmp_path, command):
    journal = study(tmp_path)
    target = tmp_path / "outside" / "journal.log"
    target.parent.mkdir()
    journal.rename(target)
    journal.symlink_to(target)
    refused(tmp_path, command, "journal.log: is a symbolic link", outside=target)
    assert sorted(p.name for p in target.parent.iterdir()) == ["journal.log"]  # no lock made beside it


def test_a_linked_claim_lock_is_refused(tmp_path):
    folder = study(tmp_path).parent
    target = outside_file(tmp_path)
    (folder / "claim.lock").symlink_to(target)
    with pytest.raises(UserError, match="claim.lock: is a symbolic link"), store.locked(folder):
        pass
    assert target.read_text() == "keep me\n"


# ------------------------------------------------------------------------------ 2. commands that destroy


@pytest.mark.parametrize("out", ["studies/fab/journal.log", "studies/fab/claim.lock", "studies/fab/sub/x.csv"])
def test_export_refuses_the_study_folder(tmp_path, out):
    journal = study(tmp_path)
    refused(tmp_path, ["export", "fab", "--out", out], "is inside the study folder", outside=journal)


def test_export_writes_elsewhere_and_keeps_the_journal(tmp_path):
    journal = study(tmp_path)
    was = digest(journal)
    rc, out, err = cli(tmp_path, ["export", "fab", "--out", "out/fab.csv"])
    assert rc == 0, err
    assert (tmp_path / "out" / "fab.csv").read_text().count("\n") == N + 1 and digest(journal) == was
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["fab.csv"]  # no temporary file left


WRITES = [
    ("delete_study", lambda s, sid, tid: s.delete_study(sid)),
    ("set_trial_state_values", lambda s, sid, tid: s.set_trial_state_values(tid, store.TrialState.COMPLETE, [1.0])),
    ("set_study_user_attr", lambda s, sid, tid: s.set_study_user_attr(sid, "space", "x")),
    ("set_study_system_attr", lambda s, sid, tid: s.set_study_system_attr(sid, "dashboard:note", "x")),
    ("set_trial_user_attr", lambda s, sid, tid: s.set_trial_user_attr(tid, "optim", "x")),
    ("create_new_trial", lambda s, sid, tid: s.create_new_trial(sid)),
]


@pytest.mark.parametrize("name, write", WRITES, ids=[w[0] for w in WRITES])
def test_the_dashboard_view_is_read_only_by_default(tmp_path, name, write):
    journal = study(tmp_path)
    view = ReadableStorage(store.open_storage(journal))
    [summary] = view.get_all_studies()
    running = store.load_study(tmp_path / "studies", "fab")
    running.enqueue_trial({"candidate": "C-C-C-C", "seed": 0}, user_attrs={"key": "k"})
    trial_id = running.ask()._trial_id
    was = digest(journal)
    with pytest.raises(ReadOnly, match=f"read-only \\({name} refused\\)"):
        write(view, summary._study_id, trial_id)
    assert digest(journal) == was
    rc, out, err = cli(tmp_path, ["status", "fab"])
    assert rc == 0 and f"{N - 2} complete" in out, (out, err)


@pytest.mark.parametrize("writes", [False, True])
def test_the_dashboard_server_refuses_delete_and_tell_unless_allowed(tmp_path, writes):
    import optuna_dashboard

    journal = study(tmp_path)
    running = store.load_study(tmp_path / "studies", "fab")
    running.enqueue_trial({"candidate": "C-C-C-C", "seed": 0}, user_attrs={"key": "k"})
    trial_id = running.ask()._trial_id
    served = store.open_storage(journal)  # --allow-writes serves the storage itself, never the view
    app = optuna_dashboard.wsgi(served if writes else ReadableStorage(served))
    was = digest(journal)
    told = wsgi_request(app, "POST", f"/api/trials/{trial_id}/tell", b'{"state": "Complete", "values": [0.99]}')
    deleted = wsgi_request(app, "DELETE", f"/api/studies/{running._study_id}", b"{}")
    if writes:  # the same requests succeed on the storage itself: the refusal is the view's
        assert told.startswith("2") and deleted.startswith("2"), (told, deleted)
        return
    assert told.startswith("500") and deleted.startswith("500"), (told, deleted)
    assert digest(journal) == was
    assert len(store.load_study(tmp_path / "studies", "fab").trials) == N + 1


# ------------------------------------------------------------------------------------- 4. bounded waits


def test_a_dangling_journal_lock_is_one_line_not_a_spin(tmp_path):
    journal = study(tmp_path)
    Path(f"{journal}.lock").symlink_to("/moved/away/studies/fab/journal.log")
    err = refused(tmp_path, ["status", "fab"], "a lock left for another file (/moved/away")
    assert "remove this file" in err


def test_a_stale_journal_lock_is_removed_with_one_note(tmp_path):
    journal = study(tmp_path)
    lock = Path(f"{journal}.lock")
    lock.symlink_to(journal)
    old = time.time() - 3600
    os.utime(lock, (old, old), follow_symlinks=False)
    rc, out, err = cli(tmp_path, ["status", "fab"], seconds=10)
    assert rc == 0 and f"{N - 2} complete" in out, err
    assert err.count("\n") == 1 and "removed a journal lock left by a killed writer" in err
    assert not os.path.lexists(lock)


def test_a_live_lock_is_waited_for_a_bounded_time(tmp_path):
    journal = study(tmp_path)
    Path(f"{journal}.lock").symlink_to(journal)  # fresh: a live writer's
    with deadline(10), pytest.raises(UserError, match="locked for over 1 s by another process"):
        J.Lock(journal, wait_s=1.0).acquire()


def test_a_lock_that_is_not_a_link_is_explained(tmp_path):
    journal = study(tmp_path)
    Path(f"{journal}.lock").write_text("")
    refused(tmp_path, ["status", "fab"], "is not a journal lock")


@pytest.mark.parametrize("special", ["fifo", "zero"])
def test_a_journal_that_is_a_fifo_or_a_device_does_not_hang(tmp_path, special):
    journal = study(tmp_path)
    journal.unlink()
    if special == "fifo":
        os.mkfifo(journal)
        expected = "journal.log: is a FIFO"
    else:
        journal.symlink_to("/dev/zero")
        expected = "journal.log: is a symbolic link"
    for command in (["status", "fab"], ["report", "fab"], ["repair", "fab"]):
        refused(tmp_path, command, expected)


# --------------------------------------------------------------------------- 9. atomic writes, named errors


def test_a_failed_write_keeps_the_previous_file_and_names_it(tmp_path):
    path = tmp_path / "r" / "figure.png"
    fsafe.write(path, b"good")
    code = (
        "import resource, sys\nfrom coatsearch import fsafe\nfrom coatsearch.errors import UserError\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (1000, 1000))\n"
        f"try:\n    fsafe.write({str(path)!r}, b'x' * 100000)\nexcept UserError as e:\n    print(e)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert f"{path}: cannot be written (File too large); the previous file is unchanged" in done.stdout, done
    assert path.read_bytes() == b"good" and [p.name for p in path.parent.iterdir()] == ["figure.png"]


def test_a_write_under_a_file_names_the_file(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(UserError, match=f"{blocker}/a.md: cannot be used \\(Not a directory\\)"):
        fsafe.write(blocker / "a.md", "text")
    assert blocker.read_text() == "x"


def test_text_with_an_undecodable_name_is_written(tmp_path):
    name = os.fsdecode(b"sp\xffce.yaml")  # a non-UTF-8 file name, as Python hands it over
    fsafe.write(tmp_path / "report.md", f"from `{name}`")
    assert (tmp_path / "report.md").read_text(encoding="utf-8") == "from `sp\\udcffce.yaml`"


def test_a_report_from_a_space_with_an_undecodable_file_name_is_written(tmp_path):
    name = os.fsdecode(b"spaces/sp\xffce.yaml")
    make_study(tmp_path / "studies", "fab", {**SPACE, "source": name}, layout_records())
    store._OPEN.clear()
    rc, out, err = cli(tmp_path, ["report", "fab"], seconds=300)
    assert rc == 0, err
    assert "from `spaces/sp\\udcffce.yaml`" in (tmp_path / "reports" / "fab" / "report.md").read_text(encoding="utf-8")
