"""Every look on record: earlier studies and committed reports of a space, one look per
space hash + profile + seeds, pilots and validation looks spending no test α, this look Holm-adjusted over the rest."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from coatsearch.papers import looks as L
from coatsearch.papers import looks_found as F
from coatsearch.papers.claim_results import ClaimVerdict
from coatsearch.report import judged_claims, write_report
from tests.looks_support import OTHER_DATA, SHA, THIS, _judged, _look, _space, _split, _typed
from tests.report_records import layout_records, make_study


def _summary(folder: Path) -> dict:
    return json.loads((folder / "summary.json").read_text())


def _claim(summary: dict, cid: str) -> dict:
    return next(c for c in summary["looks"]["claims"] if c["claim"] == cid)


def _p(summary: dict, cid: str) -> float | None:
    return next(L.claim_p(ClaimVerdict.from_json(c)) for c in summary["claims"] if c["id"] == cid)


def test_a_second_study_of_the_space_lists_the_first_and_holm_adjusts_over_both(tmp_path: Path) -> None:
    studies, reports = tmp_path / "studies", tmp_path / "reports"
    make_study(studies, "fab-quick", _space(profile="quick"), _split(layout_records()))
    make_study(studies, "other", _space(SHA["b"], space="other"), _split(layout_records()))  # another space
    make_study(studies, "fab", _space(), _split(layout_records()))
    first = _summary(write_report("fab-quick", studies, reports).parent)
    text = write_report("fab", studies, reports).read_text()
    s = _summary(reports / "fab")
    row = _claim(s, "a")
    assert [(x["where"], x["profile"], x["sha256"], x["seeds"]) for x in row["earlier"]] == [
        ("fab-quick/summary.json", "quick", SHA["a"], [0, 1, 2])  # the looks record's: where it was first found
    ]
    assert row["earlier"][0]["verdict"] == "supported" and row["earlier"][0]["spends"] is True
    p, earlier = _p(s, "a"), _p(first, "a")
    assert row["p"] == p and row["earlier"][0]["p"] == pytest.approx(earlier)
    lo, hi = sorted([p, earlier])  # Holm over two looks: 2·min, then max(2·min, max)
    assert row["holm_p"] == pytest.approx(2 * lo if p == lo else max(2 * lo, hi))
    assert (row["looks"], row["spending"]) == (2, 2)
    assert "## Earlier looks" in text and "| fab-quick" in text and "| other" not in text
    assert f"**(a)** 2 looks at this claim; Holm-adjusted p {row['holm_p']:.3g} over the 2 that spend test α" in text
    assert s["looks"]["this"]["seeds"] == [0, 1, 2] and s["looks"]["this"]["pilots"] == []


def test_a_study_alone_has_one_look_and_its_p_unadjusted(tmp_path: Path) -> None:
    studies = tmp_path / "studies"
    make_study(studies, "fab", _space(), _split(layout_records()))
    s = _summary(write_report("fab", studies, tmp_path / "reports").parent)
    row = _claim(s, "a")
    assert row["earlier"] == [] and row["looks"] == 1 and row["holm_p"] == pytest.approx(_p(s, "a"))


def test_pilot_looks_are_listed_for_their_claim_and_spend_no_alpha(tmp_path: Path) -> None:
    studies, reports = tmp_path / "studies", tmp_path / "reports"
    make_study(studies, "pilot", _space(SHA["b"], space="fab_pilot", pilots=["a"]), _split(layout_records()))
    make_study(studies, "fab", _space(), _split(layout_records()))
    s = _summary(write_report("fab", studies, reports).parent)
    a, b = _claim(s, "a"), _claim(s, "b")
    assert [(x["where"], x["pilot"], x["spends"]) for x in a["earlier"]] == [("pilot", True, False)]
    assert b["earlier"] == []  # the pilot names (a) only
    assert a["holm_p"] == pytest.approx(_p(s, "a")) and (a["looks"], a["spending"]) == (2, 1)
    assert "(1 spends test α; 1 spends none: 1 from a pilot); Holm-adjusted p" in a["line"]
    assert "no (pilot of the claim)" in (reports / "fab" / "report.md").read_text()
    # a pilot's own report: its looks at (a) spend no test α, so no adjusted p
    own = _claim(_summary(write_report("pilot", studies, reports).parent), "a")
    assert own["spends"] is False and own["holm_p"] is None and "its space pilots (a)" in own["line"]


def test_holm_over_the_looks_that_spend_alpha_on_known_values() -> None:
    earlier = [_look(0.04, SHA["b"]), _look(0.03, SHA["c"]), _look(0.001, "d" * 64, spends=False)]
    # this 0.01 with 0.03, 0.04: Holm 3·0.01 = 0.03; the validation look's 0.001 is not in the family
    assert L.adjust(_judged(0.01), THIS, earlier).holm_p == pytest.approx(0.03)
    row = L.adjust(_judged(0.04), THIS, [_look(0.01, SHA["b"]), _look(0.03, SHA["c"])])
    assert row.holm_p == pytest.approx(0.06)  # sorted 0.01, 0.03, 0.04: 0.03, max(0.03, 0.06), max(0.06, 0.04)
    assert (row.looks, row.spending, row.p) == (3, 3, 0.04)
    assert "3 looks at this claim; Holm-adjusted p 0.06 over the 3 that spend test α" in row.line and "≥ α" in row.line
    assert L.adjust(_judged(0.4), THIS, [_look(0.1, SHA["b"])]).holm_p == pytest.approx(0.4)  # max(2·0.1, 0.4)
    alone = L.adjust(_judged(0.01, images="exploratory"), THIS, earlier)  # this verdict read no test images
    assert alone.spends is False and alone.holm_p is None and "no separate test images" in alone.line


def test_a_claims_p_is_the_largest_key_holm_p_and_one_for_a_reversed_relation() -> None:
    assert L.claim_p(_judged(0.02)) == 0.02
    reversed_ = _typed([{"key": True, "d": -1.0, "p_holm": 0.001}, {"key": True, "d": 1, "p_holm": 0.2}])
    assert L.claim_p(reversed_) == 1.0
    assert L.claim_p(_typed([{"key": True, "d": 1.0, "p_holm": None}])) is None
    assert L.claim_p(_typed([{"key": True, "d": None, "p_holm": 0.01}])) == 1.0  # no common seed: not shown
    parts = [{"status": "holds", "d": 2.0, "p": 0.01}, {"status": "not run", "d": None, "p": None}]
    assert L.claim_p(_typed(parts=parts)) == 0.01  # claim (f): its tested parts
    assert L.claim_p(_typed(verdict="not tested at this scale")) is None


def test_readings_with_the_same_space_hash_profile_and_seeds_are_one_look() -> None:
    found = [_look(0.01, SHA["b"], where="study s"), _look(0.02, SHA["b"], source="report history", where="h"),
             _look(0.02, SHA["b"], profile="quick"), _look(0.02, SHA["b"], seeds=(0, 1, 2)),
             _look(0.03, SHA["a"])]  # fmt: skip  # the last is this study's own space version, profile and seeds
    kept = L.unique(found, THIS)
    assert [(x.where, x.profile, x.seeds) for x in kept] == [("study s", "default", (0, 1)), ("s", "quick", (0, 1)),
                                                             ("s", "default", (0, 1, 2))]  # fmt: skip
    assert L.adjust(_judged(0.01), THIS, kept).looks == 4


def test_an_earlier_space_version_that_read_this_studys_data_is_this_look_and_any_other_reading_is_not() -> None:
    """A rerun after a comment-only edit of the space file (another hash, the same profile and seeds) that trained
    bit for bit alike reads the same verdict and p: no second chance at a false verdict, so not another look."""
    mine = {"a": ("supported", 0.02)}
    rerun = [_look(0.02, SHA["b"], where="h1"), _look(0.05, SHA["b"], where="h2")]  # one hash: one look
    assert L.unique(rerun, THIS, mine) == []  # one of its readings is this one's: the whole look is this one
    other = [_look(0.0200001, SHA["b"]), _look(0.02, SHA["c"], verdict="inconclusive"),
             _look(0.02, "d" * 64, seeds=(0, 1, 2)), _look(0.02, "e" * 64, profile="quick"),
             _look(0.02, "f" * 64, claim="d"),
             _look(0.02, "0" * 64, space="pilot", pilot=True, spends=False)]  # fmt: skip
    assert L.unique(other, THIS, mine) == other  # another p, verdict, seeds, profile or claim: another look
    assert L.unique(rerun, THIS, {"a": ("supported", None)}) == rerun[:1]  # nothing tested: nothing to match


def test_a_look_without_a_split_is_on_validation_images_only_within_this_validation_set() -> None:
    of = dataclasses.replace(THIS, sha256=SHA["b"], eval_size=100)
    assert L.images(_typed(images="exploratory"), of, THIS) == "validation"  # its 100 images: within the 200
    assert L.images(_typed(), dataclasses.replace(of, eval_size=300), THIS) == "test"  # saw images past the prefix
    assert L.images(_typed(), dataclasses.replace(of, eval_size=None), THIS) == "test"  # the whole split
    assert L.images(_typed(), dataclasses.replace(of, dataset="cifar10"), THIS) == "test"
    assert L.images(_typed(images="split"), of, THIS) == "test"
    (look,) = L.looks_of("study", "s", of, [_judged(0.01, images="exploratory")], THIS)
    assert (look.images, look.spends) == ("validation", False)


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True,
                   capture_output=True)  # fmt: skip


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_committed_summary_versions_are_looks_with_their_space_hash(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    studies, reports = repo / "studies", repo / "reports"
    _git(tmp_path, "init", "-q", str(repo))
    make_study(studies, "fab", _space(), _split(layout_records()))
    write_report("fab", studies, reports)
    _git(repo, "add", "reports")
    _git(repo, "commit", "-qm", "first")
    path = reports / "fab" / "summary.json"
    s = json.loads(path.read_text())
    s["space"]["sha256"] = SHA["b"]  # a later space version, committed over the first
    path.write_text(json.dumps(s))
    other = {**s, "space": {**s["space"], "space": "other"}}
    (reports / "other").mkdir()
    (reports / "other" / "summary.json").write_text(json.dumps(other))  # another space: no look
    _git(repo, "add", "reports")
    _git(repo, "commit", "-qm", "second")
    found = F.from_history(reports, L.ident(_space(SHA["c"])))
    a = [x for x in found.looks if x.claim == "a"]
    assert [(x.source, x.sha256) for x in a] == [("report history", SHA["b"]), ("report history", SHA["a"])]
    head = subprocess.run(["git", "-C", str(repo), "log", "--format=%H %cs"], capture_output=True, text=True).stdout
    assert [x.where for x in a] == [  # the place in the file's history from the oldest: no commit hash, no date
        "reports/fab/summary.json, committed version 2",
        "reports/fab/summary.json, committed version 1",
    ] and found.notes == ()
    assert not any(w[:7] in x.where or w in x.where for x in found.looks for w in head.split())
    assert a[0].p == pytest.approx(_p(s, "a")) and a[0].verdict == "supported" and a[0].spends
    # a new version of the space: the studies folder's fab and the history's first version are one look
    make_study(studies, "fab-new", _space(SHA["c"]), _split(layout_records(OTHER_DATA)))
    row = _claim(_summary(write_report("fab-new", studies, reports, history=True).parent), "a")
    # the first version is in the looks record (written with its report), which keeps where it was first found (the
    # studies folder's fab is that look again); the second is the reports folder's summary as it stands
    assert sorted((x["source"], x["sha256"]) for x in row["earlier"]) == [("report", SHA["a"]), ("report", SHA["b"])]
    assert row["looks"] == 3 and row["spending"] == 3


def test_reports_outside_a_git_checkout_are_noted_not_an_error(tmp_path: Path) -> None:
    (tmp_path / "reports").mkdir()
    found = F.from_history(tmp_path / "reports", THIS)
    assert found.looks == () and "report history: not read" in found.notes[0]
    studies = tmp_path / "studies"
    make_study(studies, "fab", _space(), _split(layout_records()))
    text = write_report("fab", studies, tmp_path / "reports", history=True).read_text()
    assert "Note: report history: not read (" in text and "not in a git checkout" in text


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_without_history_asked_for_the_report_runs_no_git_and_cites_no_commit(tmp_path: Path, monkeypatch) -> None:
    """By default the earlier looks read the studies and reports folders only, even inside a git checkout."""
    repo = tmp_path / "repo"
    studies, reports = repo / "studies", repo / "reports"
    _git(tmp_path, "init", "-q", str(repo))
    make_study(studies, "fab-quick", _space(profile="quick"), _split(layout_records()))
    write_report("fab-quick", studies, reports)
    _git(repo, "add", "reports")
    _git(repo, "commit", "-qm", "first")
    shutil.rmtree(reports / "fab-quick")  # on record only in the history now
    shutil.rmtree(studies / "fab-quick")

    def no_git(*args, **kw):
        raise AssertionError(f"git ran: {args}")

    monkeypatch.setattr(F.subprocess, "run", no_git)
    make_study(studies, "fab", _space(), _split(layout_records()))
    s = _summary(write_report("fab", studies, reports).parent)
    assert s["looks"]["notes"] == [F.NOT_ASKED]
    earlier = [x for c in s["looks"]["claims"] for x in c["earlier"]]  # the looks record still holds fab-quick's
    assert earlier and {(x["source"], x["where"]) for x in earlier} == {("report", "fab-quick/summary.json")}
    assert ", committed version " not in (reports / "fab" / "report.md").read_text()  # no committed version cited
    monkeypatch.undo()
    (reports / "looks.json").unlink()  # without the record (nor fab's first summary, which passes on the looks it
    shutil.rmtree(reports / "fab")  # counted), fab-quick's look is on record only in the history
    s = _summary(write_report("fab", studies, reports, history=True).parent)  # asked for: the history is read
    assert {x["source"] for c in s["looks"]["claims"] for x in c["earlier"]} == {"report history"}
    assert "| reports/fab-quick/summary.json, committed version 1 |" in (reports / "fab" / "report.md").read_text()


def test_an_unreadable_study_is_noted_and_left_out(tmp_path: Path) -> None:
    studies = tmp_path / "studies"
    make_study(studies, "fab", _space(), _split(layout_records()))
    (studies / "broken").mkdir()
    (studies / "broken" / "journal.log").write_text("{not json\n")
    found = F.from_studies(studies, "fab", L.ident(_space()), judged_claims)
    assert found.looks == () and found.notes[0].startswith("study broken: not read (")


def test_a_report_left_in_the_reports_folder_is_a_look_and_a_linked_one_is_noted(tmp_path: Path) -> None:
    studies, reports = tmp_path / "studies", tmp_path / "reports"
    make_study(studies, "gone", _space(SHA["b"]), _split(layout_records(OTHER_DATA)))
    write_report("gone", studies, reports)
    shutil.rmtree(studies / "gone")  # its study is gone; its report is on record
    (reports / "linked").mkdir()
    (reports / "linked" / "summary.json").symlink_to(reports / "gone" / "summary.json")
    make_study(studies, "fab", _space(), _split(layout_records()))
    s = _summary(write_report("fab", studies, reports).parent)
    assert [(x["source"], x["where"], x["sha256"]) for x in _claim(s, "a")["earlier"]] == [
        ("report", "gone/summary.json", SHA["b"])
    ]
    assert any("linked/summary.json" in n and "left out" in n for n in s["looks"]["notes"])


@pytest.mark.parametrize("flags,asked", [([], False), (["--history"], True)])
def test_coatsearch_report_asks_for_the_history_only_with_its_flag(tmp_path: Path, monkeypatch, flags, asked) -> None:
    import coatsearch.report as R
    from coatsearch import cli

    seen: list[bool] = []

    def fake(study: str, studies: Path, reports: Path, history: bool = False) -> Path:
        seen.append(history)
        (reports / study).mkdir(parents=True)
        return (reports / study / "report.md").resolve()

    monkeypatch.setattr(R, "write_report", fake)
    args = ["report", "s", "--studies-dir", str(tmp_path), "--reports-dir", str(tmp_path / "r"), *flags]
    assert cli.main(args) == 0
    assert seen == [asked]
