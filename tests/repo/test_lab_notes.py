"""The user's guide, the docs and the committed reports hold no lab notes: no dates or times of work, no commit
hashes, no load averages (the history lives in git and the CHANGELOG). A rule version is a name, not a note."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTES = {
    "a date of work": re.compile(r"\b\d{4}-\d{2}-\d{2}(?!\.[a-z])"),  # 2026-12-04, not the rule version 2026-12-04.x
    "a commit hash": re.compile(r"@ [0-9a-f]{7,40}\b|\bcommit [0-9a-f]{7,40}\b"),
    "a load average": re.compile(r"load average", re.IGNORECASE),
}


def notes(text: str) -> list[str]:
    """What lab notes a text holds, one entry per match."""
    return [f"{what}: {m.group(0)!r}" for what, rx in NOTES.items() for m in rx.finditer(text)]


@pytest.mark.committed
def test_the_readme_docs_and_committed_reports_hold_no_lab_notes():
    files = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted(ROOT.glob("reports/*/report.md"))]
    assert len(files) > 10
    found = {str(p.relative_to(ROOT)): notes(p.read_text(encoding="utf-8")) for p in files}
    assert {k: v for k, v in found.items() if v} == {}


def test_the_rule_sees_each_kind_of_note():
    text = "registered 2026-12-04T22:05:26; summary.json @ fc4867a3c0fd; load average 1.9; rule 2026-12-04.floor"
    assert [n.split(":")[0] for n in notes(text)] == ["a date of work", "a commit hash", "a load average"]
