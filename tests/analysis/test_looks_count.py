"""Looks that count (looks.LOOKS_RULE): a verdict is supported only after the looks correction, and the looks a
report counts travel with the reports folder (looks_record), so a fresh clone counts the same ones."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from coatsearch.errors import UserError
from coatsearch.papers import categories as K
from coatsearch.papers import looks as L
from coatsearch.papers import looks_record as R
from coatsearch.report import write_report
from tests.looks_support import OTHER_DATA, SHA, THIS, _judged, _look, _space, _split
from tests.report_records import layout_records, make_study


def _counted(p: float, earlier: list[L.Look]) -> tuple[L.ClaimLooks, object]:
    row = L.adjust(_judged(p), THIS, earlier)
    return row, L.counted([_judged(p)], L.Looks(THIS, (), (row,)))[0]


def test_a_claim_whose_own_p_passes_but_whose_looks_adjusted_p_fails_is_not_supported():
    earlier = [_look(0.01, SHA["b"]), _look(0.015, SHA["c"])]
    row, claim = _counted(0.02, earlier)  # Holm over 0.01, 0.015, 0.02: 0.03 for every one, not below α 0.03
    assert row.p == pytest.approx(0.02) and row.holm_p == pytest.approx(0.03)
    assert claim.verdict == K.UNRESOLVED and claim.before_looks == K.SUPPORTED and claim.scale is None
    assert "p 0.02" in claim.reason and "Holm-adjusted p 0.03 over the 3 looks" in claim.reason
    assert claim.to_json()["before_looks"] == K.SUPPORTED  # summary.json keeps the study's own verdict


def test_a_claim_that_holds_after_the_looks_stays_supported_and_notes_both_p_values():
    row, claim = _counted(0.005, [_look(0.2, SHA["b"])])  # Holm: 2 · 0.005 = 0.01 < α
    assert claim.verdict == K.SUPPORTED and claim.before_looks is None
    assert any("this look's p 0.005, Holm-adjusted p 0.01 over the 2 looks" in n for n in claim.notes)


def test_looks_that_spend_no_alpha_or_no_gathered_looks_leave_the_verdict_alone():
    _, claim = _counted(0.02, [_look(0.001, SHA["b"], spends=False), _look(0.001, SHA["c"], spends=False)])
    assert claim.verdict == K.SUPPORTED
    assert L.counted([_judged(0.02)], None)[0] == _judged(0.02)


def test_the_looks_record_round_trips_and_keeps_one_reading_per_look(tmp_path: Path):
    looks = [_look(0.01, SHA["b"]), _look(None, SHA["c"], spends=False, seeds=None), _look(0.2, SHA["b"], claim="f")]
    R.write(tmp_path, looks)
    assert sorted(R.read(tmp_path), key=repr) == sorted(looks, key=repr)
    R.write(tmp_path, [_look(0.04, SHA["b"], where="later")])  # the same look read again: the newer reading
    back = R.read(tmp_path)
    assert len(back) == 3 and [x.p for x in back if x.claim == "a" and x.sha256 == SHA["b"]] == [0.04]
    text = (tmp_path / R.NAME).read_text()
    R.write(tmp_path, [])
    assert (tmp_path / R.NAME).read_text() == text  # the same looks: the same file
    data = json.loads(text)
    assert (data["kind"], data["version"]) == (R.KIND, R.RECORD_VERSION)


@pytest.mark.parametrize(
    ("data", "words"),
    [({"kind": R.KIND, "version": 99, "looks": []}, "version 1..1"),
     ({"kind": R.KIND, "version": 1, "looks": [{"claim": "a"}]}, "a damaged look"),
     ({"kind": R.KIND, "version": 1, "looks": {}}, "no list")],
)  # fmt: skip
def test_a_newer_or_damaged_record_is_one_line(tmp_path: Path, data: dict, words: str):
    (tmp_path / R.NAME).write_text(json.dumps(data))
    with pytest.raises(UserError, match=words):
        R.read(tmp_path)


def test_a_fresh_reports_folder_with_only_the_record_counts_the_same_looks(tmp_path: Path):
    studies, reports = tmp_path / "studies", tmp_path / "reports"
    make_study(studies, "fab-quick", _space(profile="quick"), _split(layout_records()))
    make_study(studies, "fab-old", _space(SHA["b"]), _split(layout_records(OTHER_DATA)))  # an older version
    make_study(studies, "fab", _space(), _split(layout_records()))
    write_report("fab-quick", studies, reports)
    shutil.rmtree(reports / "fab-quick")  # a withdrawn report: its look stays on record
    here = json.loads((write_report("fab", studies, reports).parent / "summary.json").read_text())
    record = json.loads((reports / R.NAME).read_text())
    assert {(x["where"], x["claim"]) for x in record["looks"]} >= {("fab-old", "a"), ("fab-quick/summary.json", "a")}
    clone_studies, clone = tmp_path / "clone" / "studies", tmp_path / "clone" / "reports"  # a fresh clone
    clone.mkdir(parents=True)
    shutil.copy(reports / R.NAME, clone / R.NAME)
    make_study(clone_studies, "fab", _space(), _split(layout_records()))
    there = json.loads((write_report("fab", clone_studies, clone).parent / "summary.json").read_text())
    for mine, theirs in zip(here["looks"]["claims"], there["looks"]["claims"], strict=True):
        assert (mine["looks"], mine["spending"], mine["holm_p"]) == (theirs["looks"], theirs["spending"],
                                                                    theirs["holm_p"])  # fmt: skip
        assert mine["earlier"] == theirs["earlier"]
    assert here["looks"]["claims"][0]["looks"] == 3  # this one, the quick profile's and the older version's
    assert [c["verdict"] for c in here["claims"]] == [c["verdict"] for c in there["claims"]]


def test_a_committed_summary_hands_on_the_looks_it_counted():
    root = Path(__file__).parents[2] / "reports"
    data = json.loads((root / "paper_layouts" / "summary.json").read_text())
    counted = R.recorded(data, "paper_layouts/summary.json")
    listed = sum(len(c["earlier"]) for c in data["looks"]["claims"])
    assert len(counted) == listed and all(isinstance(x, L.Look) for x in counted)
