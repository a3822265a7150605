"""A committed report is what its shipped space file produces: its summary.json records the file's sha256 and
profile, and the figures Markdown quotes from a report come from its summary.json (report.reproduce)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coatsearch.analysis import calibration
from coatsearch.analysis import reproduce as RP
from coatsearch.space.objects import load_space
from coatsearch.storage.trials import space_record

ROOT = Path(__file__).resolve().parents[1]
SPACE = "spaces/vit_stems.yaml"


def _tree(tmp_path: Path, space: dict, name: str = "vit_stems") -> Path:
    """A fabricated repository: the shipped space file copied in, and one report whose summary has `space`."""
    (tmp_path / "spaces").mkdir(exist_ok=True)
    (tmp_path / SPACE).write_bytes((ROOT / SPACE).read_bytes())
    folder = tmp_path / "reports" / name
    folder.mkdir(parents=True)
    (folder / "summary.json").write_text(json.dumps({"space": space}), encoding="utf-8")
    return tmp_path / "reports"


def _made_from_file(tmp_path: Path) -> dict:
    """The summary's space table as the report writes it, from the space record `run` stores for the copied file."""
    (tmp_path / "spaces").mkdir(exist_ok=True)
    (tmp_path / SPACE).write_bytes((ROOT / SPACE).read_bytes())
    record = space_record(load_space(tmp_path / SPACE, "default"))
    return {"source": SPACE, "profile": "default", "sha256": RP.space_hash(record)}


def test_every_committed_report_was_made_from_its_shipped_space_file():
    """Fails for a report whose space file changed after it, or that predates space hashes: rerun the space."""
    assert sorted(p.parent.name for p in (ROOT / "reports").glob("*/summary.json"))  # the test has reports to check
    assert RP.problems(ROOT / "reports", ROOT) == []


def test_every_committed_reports_a_a_column_is_a_state_of_the_committed_a_a_table():
    """A report made before the A/A table grew cites the state it was made under; figures of no state fail."""
    table = json.loads(calibration.AA_TABLE.read_text(encoding="utf-8"))
    rules = [json.loads(p.read_text())["rules"] for p in (ROOT / "reports").glob("*/summary.json")]
    assert rules
    for r in rules:  # a report made under the table's rule carries the column; one under another rule never does
        same = (r.get("calibration") or {}).get("rule_version") == table["rule_version"]
        assert bool(r.get("aa")) == same, (r.get("calibration") or {}).get("rule_version")
    assert RP.aa_problems(ROOT / "reports", table) == []


def test_a_report_citing_an_earlier_state_passes_and_altered_figures_fail(tmp_path):
    old = {"studies": 2, "date": "d1", "families": {"f": {"firm": 0}}}
    table = {"studies": 3, "date": "d2", "families": {"f": {"firm": 1}}, "verdicts": [], "history": [old]}
    for name, aa in [("early", old), ("now", calibration.aa_cited(table)), ("made-up", {**old, "date": "d0"})]:
        (tmp_path / name).mkdir()
        (tmp_path / name / "summary.json").write_text(json.dumps({"rules": {"aa": aa}}), encoding="utf-8")
    assert RP.aa_problems(tmp_path, table) == [
        "made-up: its A/A column (2 studies, d0) is no state of the A/A table (states at 2, 3 studies)"
    ]


def test_a_report_of_the_space_as_it_stands_passes(tmp_path):
    reports = _tree(tmp_path, _made_from_file(tmp_path))
    assert RP.problems(reports, tmp_path) == []


def test_a_space_changed_after_its_report_fails(tmp_path):
    reports = _tree(tmp_path, _made_from_file(tmp_path))
    path = tmp_path / SPACE
    path.write_bytes(path.read_bytes().replace(b"epochs: 50", b"epochs: 60", 1))  # a7d8994-style schedule change
    (why,) = RP.problems(reports, tmp_path)
    assert why.startswith("vit_stems: spaces/vit_stems.yaml changed since the report was made (sha256 ")


def test_a_report_without_a_space_hash_fails(tmp_path):
    reports = _tree(tmp_path, {"source": SPACE, "profile": "default"})  # as every report before the hash
    assert RP.problems(reports, tmp_path) == [
        "vit_stems: no space hash recorded (space.sha256) for spaces/vit_stems.yaml: regenerate the report from a "
        "run of the space"
    ]


@pytest.mark.parametrize(
    ("space", "words"),
    [
        ({"source": "spaces/gone.yaml", "profile": "default", "sha256": "ab"}, "spaces/gone.yaml cannot be read"),
        ({"source": SPACE, "profile": "nosuch", "sha256": "ab"}, "profile nosuch"),
        ({"profile": "default", "sha256": "ab"}, "no space file recorded"),
    ],
)
def test_a_missing_space_file_or_profile_fails(tmp_path, space, words):
    (why,) = RP.problems(_tree(tmp_path, space), tmp_path)
    assert words in why


def test_the_space_record_hashes_the_file_bytes_and_older_records_their_text(tmp_path):
    record = space_record(load_space(ROOT / SPACE, "default"))
    assert record["space_sha256"] == RP.sha256_bytes((ROOT / SPACE).read_bytes())
    assert RP.space_hash(record) == record["space_sha256"]
    older = {k: v for k, v in record.items() if k != "space_sha256"}  # a study recorded before the hash
    assert RP.space_hash(older) == record["space_sha256"]  # its recorded text is the file's bytes (UTF-8, LF)
    assert RP.space_hash({"space_yaml": ""}) is None and RP.space_hash({}) is None


def test_the_report_records_and_shows_the_space_hash(tmp_path):
    from coatsearch.report import summarize

    record = space_record(load_space(ROOT / SPACE, "default"))
    report = summarize("s", record, [])
    sp = report.summary["space"]
    assert sp["sha256"] == record["space_sha256"] and sp["profile"] == "default" and sp["source"] == str(ROOT / SPACE)
    from coatsearch.report import render

    assert f"- Space file: `{ROOT / SPACE}`, profile `default`, sha256 `{record['space_sha256']}`" in render(report, {})


def test_quoted_figures_are_checked_against_the_report_they_name():
    summary = {"claims": [{"id": "f", "evidence": [{"d": 2.6849}]}], "n": 5}
    text = (
        "intro\nthe contrast is <!-- reports/vit_stems: claims.[f].evidence.0.d -->+2.68 points at "
        "<!-- reports/vit_stems: n --> 5 seeds\nand <!-- reports/vit_stems: claims.[f].evidence.0.d -->2.7, but "
        "<!-- reports/vit_stems: claims.[f].evidence.0.d -->2.69 and <!-- reports/vit_stems: n.x -->5 and "
        "<!-- reports/gone: n -->5\n"
    )
    summaries = {"vit_stems": summary}

    def summary_of(name: str) -> dict:
        if name not in summaries:
            raise OSError(name)
        return summaries[name]

    assert [q[1:] for q in RP.quotes(text)][:2] == [("vit_stems", "claims.[f].evidence.0.d", "+2.68"),
                                                   ("vit_stems", "n", "5")]  # fmt: skip
    assert RP.quote_problems(text, summary_of, "README.md") == [
        "README.md:3: reports/vit_stems: claims.[f].evidence.0.d is 2.6849, the text quotes 2.69",
        "README.md:3: reports/vit_stems: n.x is not in its summary.json",
        "README.md:3: reports/gone: n is not in its summary.json",
    ]


def test_figures_the_readme_and_docs_quote_come_from_the_committed_reports():
    """Every marked quote in README.md and docs/*.md matches the committed summary.json it names."""

    def summary_of(name: str) -> dict:
        return json.loads((ROOT / "reports" / name / "summary.json").read_text(encoding="utf-8"))

    found = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        found += RP.quote_problems(path.read_text(encoding="utf-8"), summary_of, path.name)
    assert found == []
