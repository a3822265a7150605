"""summary.json read back typed (papers.summary_file): every type's from_json gives back what its to_json wrote,
older summaries read, and a newer or damaged one is one line naming the file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coatsearch.analysis.results import MeasureRanking
from coatsearch.analysis.table_rows import CandidateRow
from coatsearch.analysis.tables import StudyEnvironment, jsonable
from coatsearch.errors import UserError
from coatsearch.papers import summary_file
from coatsearch.papers.claim_results import ClaimVerdict, Purposes
from coatsearch.report import write_report
from tests.report_records import SPACE, layout_records, make_study

ROOT = Path(__file__).resolve().parents[2]


def _round_trips(data: dict) -> None:
    """Each typed part of a summary, read and written again, is the data it was read from."""
    for claim in data["claims"]:
        assert jsonable(ClaimVerdict.from_json(claim)) == claim
    for ranking in data["rankings"]:
        assert jsonable(MeasureRanking.from_json(ranking)) == ranking
    assert jsonable(StudyEnvironment.from_json(data["environment"])) == data["environment"]
    assert jsonable(Purposes.from_json(data["images"])) == data["images"]
    for row in data["candidates"]:
        assert jsonable(CandidateRow.from_json(row)) == row


def test_a_written_summary_reads_back_to_the_same_data(tmp_path: Path) -> None:
    make_study(tmp_path / "studies", "fab", SPACE, layout_records())
    path = write_report("fab", tmp_path / "studies", tmp_path / "reports").parent / "summary.json"
    data = json.loads(path.read_text())
    _round_trips(data)
    summary = summary_file.read(path)
    assert (summary.version, summary.study) == (summary_file.SUMMARY_VERSION, "fab")
    assert [(c.id, c.verdict) for c in summary.claims] == [(c["id"], c["verdict"]) for c in data["claims"]]
    assert summary.claims[0].evidence[0].pairs  # the judged pairs, typed: what the earlier looks read
    assert summary.environment.counts.total == data["environment"]["counts"]["total"] == 17  # 5 × 3 seeds + 2 failed
    assert [r.candidate for r in summary.candidates] == [r["candidate"] for r in data["candidates"]]
    assert all(set(r.by_seed[k]) <= set(summary.environment.seeds) for r in summary.candidates for k in r.by_seed)


@pytest.mark.committed
@pytest.mark.parametrize("report", sorted(p.parent.name for p in (ROOT / "reports").glob("*/summary.json")))
def test_every_committed_summary_reads_back_to_the_same_data(report: str) -> None:
    _round_trips(json.loads((ROOT / "reports" / report / "summary.json").read_text()))


def test_a_summary_before_versions_reads_with_its_missing_keys_empty(tmp_path: Path) -> None:
    claim = {"id": "a", "title": "t", "chain": "C > T", "source": "s", "verdict": "inconclusive", "why": "w",
             "evidence": [], "notes": [], "images": "split"}  # fmt: skip  # an early summary's claim
    got = summary_file.from_json({"space": {"space": "x"}, "claims": [claim]}, "old/summary.json")
    (c,) = got.claims
    assert got.version == 0 and (c.verdict, c.why, c.reason, c.estimate, c.images) == ("inconclusive", "w", "", None,
                                                                                      "split")  # fmt: skip
    assert got.environment.counts.total == 0 and got.candidates == ()


@pytest.mark.parametrize(
    ("data", "why"),
    [
        ({"version": 99, "space": {}}, "summary version 99 is not one this coatsearch reads (0..1)"),
        ({"version": "1", "space": {}}, "summary version '1'"),
        ({"space": {}, "claims": {"a": 1}}, "a damaged summary (TypeError: expected a list, found dict)"),
        ({"space": {}, "claims": [{"verdict": "x"}]}, "a damaged summary (KeyError: 'id')"),
        ({"space": {}, "environment": [1]}, "a damaged summary (TypeError: expected an object, found list)"),
    ],
)
def test_a_newer_or_damaged_summary_is_one_line_naming_the_file(data: dict, why: str, tmp_path: Path) -> None:
    path = tmp_path / "summary.json"
    path.write_text(json.dumps(data))
    with pytest.raises(UserError) as err:
        summary_file.read(path)
    assert str(err.value).startswith(f"{path}: ") and why in str(err.value) and "\n" not in str(err.value)
