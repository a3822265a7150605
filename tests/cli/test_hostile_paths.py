"""Writes beside another study, repair's own files, a changed space resumed,
a damaged plan.json, and report lines that must be true. No training: studies are fabricated (report_records)."""

from __future__ import annotations

import json
from pathlib import Path

import optuna
import pytest

from coatsearch import api, planner
from coatsearch.analysis.results import Stat
from coatsearch.analysis.spread import sizes
from coatsearch.analysis.table_rows import CandidateRow
from coatsearch.report.markdown import size_note
from coatsearch.space.objects import load_space
from coatsearch.storage import journal as J
from coatsearch.storage import sampling, store
from tests.report_records import SPACE, layout_records, make_study
from tests.support.hostile import cli, digest, refused, study, wsgi_request
from tests.tiny import TINY, tiny_variant

N = len(layout_records())


def _two_studies(tmp_path: Path) -> tuple[Path, Path]:
    """Studies `fab` and `other` under tmp_path/studies; their journals."""
    make_study(tmp_path / "studies", "other", SPACE, layout_records())
    return study(tmp_path), tmp_path / "studies" / "other" / "journal.log"


# --------------------------------------------------------------------- 1. commands that overwrite another study


@pytest.mark.parametrize("out", ["studies/other/journal.log", "studies/other/claim.lock", "studies/other/x.csv"])
def test_export_refuses_every_study_folder_not_only_its_own(tmp_path, out):
    _, other = _two_studies(tmp_path)
    refused(tmp_path, ["export", "fab", "--out", out], "is inside the study folder", outside=other)


@pytest.mark.parametrize("reports", ["studies", "studies/other"])
def test_report_dir_inside_the_studies_is_refused(tmp_path, reports):
    _, other = _two_studies(tmp_path)
    refused(tmp_path, ["report", "fab", "--reports-dir", reports], "--reports-dir", outside=other)


def test_run_with_reports_dir_studies_is_refused_before_anything_is_written(tmp_path):
    refused(tmp_path, ["run", str(TINY), "--study", "t", "--reports-dir", "studies"], "is inside the study folder")


def _rename(app, study_id: int) -> str:
    return wsgi_request(app, "POST", f"/api/studies/{study_id}/rename", b'{"study_name": "renamed"}')


def test_the_view_is_never_the_source_of_a_rename(tmp_path, monkeypatch):
    import optuna_dashboard

    from coatsearch.dashboard import ReadableStorage, serve

    journal = study(tmp_path)
    was = digest(journal)
    view = ReadableStorage(store.open_storage(journal))
    sid = store.load_study(tmp_path / "studies", "fab")._study_id
    assert _rename(optuna_dashboard.wsgi(view), sid).startswith("500")  # read-only: refused, nothing written
    assert digest(journal) == was
    served: list = []
    monkeypatch.setattr(optuna_dashboard, "run_server", lambda storage, **kw: served.append(storage))
    serve("fab", tmp_path / "studies", port=0, allow_writes=True)
    assert not isinstance(served[0], ReadableStorage)  # --allow-writes: the storage itself
    assert _rename(optuna_dashboard.wsgi(served[0]), sid).startswith("2")
    store._OPEN.clear()
    renamed = optuna.load_study(study_name="renamed", storage=store.open_storage(journal))
    assert len(store.records(renamed)) == N  # every run record copied, none lost
    assert renamed.user_attrs["space"] == SPACE


# -------------------------------------------------------------------- 2. repair's temporary and backup files


def _damage(journal: Path) -> int:
    """Append a damaged line; the number of records before it."""
    records = journal.read_bytes().count(b"\n")
    with open(journal, "ab") as fh:
        fh.write(b'{"op_code": 4, "worker_id": "x", "cut sho\n')
    return records


def test_a_linked_repairing_file_is_never_written_through(tmp_path):
    journal = study(tmp_path)
    kept = _damage(journal)
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me\n")
    (journal.parent / "journal.log.repairing").symlink_to(outside)
    rc, out, err = cli(tmp_path, ["repair", "fab"])
    assert rc == 0 and f"kept {kept} complete records" in out, err
    assert outside.read_text() == "keep me\n"
    assert not journal.is_symlink() and journal.is_file()
    rc, out, _ = cli(tmp_path, ["status", "fab"])
    assert rc == 0 and "completed" in out


def test_a_dangling_backup_link_is_skipped_not_followed(tmp_path, monkeypatch):
    journal = study(tmp_path)
    _damage(journal)
    monkeypatch.setattr(J.time, "strftime", lambda fmt: "20260101-000000")
    target = tmp_path / "elsewhere" / "planted"
    (journal.parent / "journal.log.damaged-20260101-000000").symlink_to(target)
    rc, out, err = cli(tmp_path, ["repair", "fab"])
    assert rc == 0 and "journal.log.damaged-20260101-000000-2" in out, (out, err)
    assert not target.exists() and not (tmp_path / "elsewhere").exists()
    assert not journal.is_symlink()
    assert all(not p.is_symlink() or p.name.endswith("000000") for p in journal.parent.iterdir())


# --------------------------------------------------------------------------- 3. resuming a changed space


def _one_trial(space, studies: Path, name: str) -> optuna.Study:
    """Create (or continue) the study and claim one planned trial the way the engines do, then tell it."""
    from coatsearch.storage.trials import plan

    study_ = store.create_study(space, studies, name, force_new_space=True)
    trial = study_.ask()
    sampling.suggest(trial, space, plan(space)[-1])
    study_.tell(trial, state=optuna.trial.TrialState.FAIL)
    return study_


@pytest.mark.parametrize(
    "edit",
    [
        ("study: {seeds: [0]", "study: {seeds: [0, 1]"),
        ("  - {name: C-T}", "  - {name: C-T}\n  - {name: X, layout: C-C}"),
    ],
    ids=["seed added", "candidate added"],
)
def test_force_new_space_with_new_choices_goes_on_in_a_successor(tmp_path, edit):
    studies = tmp_path / "studies"
    first = _one_trial(load_space(TINY), studies, "t")
    second = _one_trial(load_space(tiny_variant(tmp_path, edit)), studies, "t")  # was: dynamic value space
    assert (first.study_name, second.study_name) == ("t", "t~2")
    assert len(optuna.load_study(study_name="t", storage=store.open_storage(store.storage_file(studies, "t"))).trials)
    assert store.load_study(studies, "t").study_name == "t~2"


def test_a_space_an_older_run_recorded_in_place_goes_on_in_a_successor(tmp_path):
    from coatsearch.storage.trials import plan, space_form, space_record

    studies = tmp_path / "studies"
    old = _one_trial(load_space(TINY), studies, "t")
    new = load_space(tiny_variant(tmp_path, ("study: {seeds: [0]", "study: {seeds: [0, 1]")))
    old.set_user_attr("space", {**space_record(new), "form": space_form(new)})  # what --force-new-space did
    store._OPEN.clear()
    now = store.create_study(new, studies, "t")  # was: every rerun crashed (dynamic value space)
    assert now.study_name == "t~2"
    sampling.suggest(now.ask(), new, plan(new)[-1])


@pytest.mark.parametrize(
    "edit, directions",
    [
        (("study: {seeds: [0]", "study: {seeds: [0], direction: minimize, objective: generalization.gap"),
         ["MINIMIZE"]),
        (("study: {seeds: [0]", "study: {seeds: [0], objectives: [generalization.eval_acc, generalization.gap], "
          "directions: [maximize, minimize]"), ["MAXIMIZE", "MINIMIZE"]),
    ],
    ids=["direction", "objectives"],
)  # fmt: skip
def test_force_new_space_directions_agree_with_the_recorded_space(tmp_path, edit, directions):
    studies = tmp_path / "studies"
    _one_trial(load_space(TINY), studies, "t")
    now = store.create_study(load_space(tiny_variant(tmp_path, edit)), studies, "t", force_new_space=True)
    assert [d.name for d in now.directions] == directions
    recorded = store.load_study(studies, "t").user_attrs["space"]["study"]
    assert recorded["direction" if len(directions) == 1 else "directions"] in (
        directions[0].lower(), [d.lower() for d in directions])  # fmt: skip


def test_run_on_an_empty_journal_writes_nothing_into_it(tmp_path):
    journal = tmp_path / "studies" / "t" / "journal.log"
    journal.parent.mkdir(parents=True)
    journal.touch()
    refused(tmp_path, ["run", str(TINY), "--study", "t", "--no-report", "--workers", "1"], "is empty")
    assert journal.stat().st_size == 0
    with pytest.raises(Exception, match="is empty"):
        store.create_study(load_space(TINY), tmp_path / "studies", "t")


# ------------------------------------------------------------------------------------ 5. a damaged plan.json

PLAN = {"study_s": 120.0, "trials": 10, "processes": 1, "threads": None, "device": "cpu", "trial_s": {"a": 12.0}}


@pytest.mark.parametrize(
    "edit, field",
    [({"study_s": "soon"}, "study_s"), ({"study_s": 0}, "study_s"), ({"trials": 0}, "trials"),
     ({"study_s": float("nan")}, "study_s"), ({"study_s": float("inf")}, "study_s"),
     ({"trials": None}, "trials"), ({"trial_s": {"a": "x"}}, "trial_s.a"), ({"study_s": None}, "study_s"),
     ({"study_s": 1e308}, "study_s"), ({"trial_s": {"a": 1e300}}, "trial_s.a"), ({"trials": 10**30}, "trials"),
     ({"processes": 10**9}, "processes")],
)  # fmt: skip
def test_a_damaged_plan_is_noted_and_ignored_by_status_and_report(tmp_path, edit, field):
    journal = study(tmp_path)
    plan = {k: v for k, v in {**PLAN, **edit}.items() if v is not None}
    (journal.parent / "plan.json").write_text(json.dumps(plan))
    rc, out, err = cli(tmp_path, ["status", "fab"])
    assert rc == 0 and f"plan.json: field '{field}'" in err and "ignored" in err, (out, err)
    assert "plan: predicted" not in out
    rc, _, err = cli(tmp_path, ["report", "fab"])
    assert rc == 0 and f"field '{field}'" in err, err
    assert planner.load(journal.parent) is None  # what `run` reads: it makes a new plan


def test_a_sound_plan_is_read(tmp_path):
    journal = study(tmp_path)
    (journal.parent / "plan.json").write_text(json.dumps(PLAN))
    rc, out, err = cli(tmp_path, ["status", "fab"])
    assert rc == 0 and "plan: predicted 2 min 00 s" in out and "ignored" not in err, (out, err)


# ---------------------------------------------------------------------------- 7. the report says what is so


def _row(name: str, params: float, macs: float, budget: float) -> CandidateRow:
    stat = lambda v: Stat(v, None, 1)  # noqa: E731
    metrics = {"params": stat(params), "macs": stat(macs), "budget_error": stat(0.01)}
    return CandidateRow(name, name, "C", "", (), int(budget), ("adamw",), 1, metrics, {}, {})


def test_a_candidate_with_its_own_budget_is_not_called_matched():
    rows = [_row("A", 0.39e6, 0.4e6, 0.4e6), _row("B", 1.99e6, 2.0e6, 2.0e6)]
    note = size_note(sizes(rows), 1.99 / 0.39)
    assert "NOT matched" in note and "A 0.40M" in note and "B 2.00M" in note
    same = [_row("A", 0.39e6, 0.4e6, 0.4e6), _row("B", 0.5e6, 0.41e6, 0.4e6)]
    assert size_note(sizes(same), 0.5 / 0.39).startswith("Size: MACs are matched")


def test_plan_says_which_unmatched_candidate_it_leaves_out(tmp_path, capsys):
    space = api.load_space(
        tiny_variant(tmp_path, ("  - {name: C-T}", "  - {name: C-T, budget: {macs: 50M, scale: none}}"))
    )
    preps = planner.matched_preps(space)
    err = capsys.readouterr().err
    assert [p.name for p in preps] == ["C-C"]
    assert err.count("\n") == 1 and "plan leaves out candidate C-T: not matched" in err
