"""A committed report is what its shipped space file produces: its summary.json records the space's identity and
profile, and the figures Markdown quotes from a report come from its summary.json (papers.reproduce).

The checks of the committed reports, tables and docs carry the `committed` marker: `-m "not committed"` leaves them
out while editing; CI (.ci/run, the README's test command) runs every test, these included."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from coatsearch.papers import reproduce as RP
from coatsearch.papers import rule_tables
from coatsearch.space import identity
from coatsearch.space.objects import load_space
from coatsearch.storage.trials import space_record

ROOT = Path(__file__).resolve().parents[2]
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
    return {"source": SPACE, "profile": "default", "sha256": identity.space_hash(record)}


@pytest.mark.committed
def test_every_committed_report_was_made_from_its_shipped_space_file():
    """Fails for a report whose space file changed after it, or that predates space hashes: rerun the space."""
    assert sorted(p.parent.name for p in (ROOT / "reports").glob("*/summary.json"))  # the test has reports to check
    assert RP.problems(ROOT / "reports", ROOT) == []


@pytest.mark.committed
def test_every_committed_reports_a_a_column_is_a_state_of_the_committed_a_a_table():
    """A report made before the A/A table grew cites the state it was made under; figures of no state fail."""
    table = json.loads(rule_tables.AA_TABLE.read_text(encoding="utf-8"))
    rules = [json.loads(p.read_text())["rules"] for p in (ROOT / "reports").glob("*/summary.json")]
    assert rules
    for r in rules:  # a report made under the table's rule carries the column; one under another rule never does
        same = (r.get("calibration") or {}).get("rule_version") == table["rule_version"]
        assert bool(r.get("aa")) == same, (r.get("calibration") or {}).get("rule_version")
    assert RP.aa_problems(ROOT / "reports", table) == []


@pytest.mark.committed
def test_every_committed_report_names_the_rule_it_was_made_under_and_it_is_a_known_one():
    """A report made under an earlier rule version stands under that rule (rule_tables.EARLIER_RULES says what
    changed since); it is regenerated from its study, never edited, to be judged under the current rule."""
    known = {rule_tables.RULE_VERSION, *rule_tables.EARLIER_RULES}
    for path in sorted((ROOT / "reports").glob("*/summary.json")):
        summary = json.loads(path.read_text(encoding="utf-8"))
        rules = summary["rules"]
        rule = rules.get("rule_version") or (rules.get("calibration") or {}).get("rule_version")
        assert rule in known, f"{path.parent.name}: rule {rule!r} is no known rule version"
        text = (path.parent / "report.md").read_text(encoding="utf-8")
        if rule != rule_tables.RULE_VERSION and "Calibration of this rule" in text:  # it names the rule it is under
            assert f"rule version {rule}" in text, path.parent.name


def _aa_state(studies: int, date: str, firm: int) -> dict:
    """An A/A table's state as bench_aa writes it: one family, claim (f)."""
    fam = {"n": studies, "firm": firm, "supported": 0, "out_of_regime": 0, "no_verdict": 0, "rate": firm / studies,
           "ci95": [0.0, 1.0], "out_of_regime_rate": 0.0}  # fmt: skip
    return {"rule_version": "r", "alpha": 0.03, "date": date, "command": "c", "seeds_per_study": 3,
            "studies": studies, "failed_studies": 0, "wall_s": 1.0, "study_s": 1.0, "families": {"f": fam}}  # fmt: skip


def test_a_report_citing_an_earlier_state_passes_and_altered_figures_fail(tmp_path):
    old = _aa_state(2, "d1", 0)
    table = {**_aa_state(3, "d2", 1), "verdicts": [], "history": [old]}
    now = rule_tables.aa_cited(table).to_json()
    for name, aa in [("early", old), ("now", now), ("made-up", {**old, "date": "d0"})]:
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


def test_the_space_record_holds_the_content_hash_and_older_records_read(tmp_path):
    record = space_record(load_space(ROOT / SPACE, "default"))
    raw = (ROOT / SPACE).read_bytes()
    assert record["space_sha256"] == identity.bytes_sha256(raw)  # the file's bytes, as before
    assert record["space_content_sha256"] == identity.content_sha256(raw.decode()) == identity.space_hash(record)
    older = {k: v for k, v in record.items() if k != "space_content_sha256"}  # a study recorded before content hashes
    assert identity.space_hash(older) == record["space_sha256"]
    oldest = {k: v for k, v in older.items() if k != "space_sha256"}  # before any hash: its recorded text
    assert identity.space_hash(oldest) == record["space_sha256"]  # the text is the file's bytes (UTF-8, LF)
    assert identity.space_hash({"space_yaml": ""}) is None and identity.space_hash({}) is None
    assert identity.space_ids(record) == {record["space_sha256"], record["space_content_sha256"]}


def test_a_report_stands_when_another_profile_of_its_file_changes_and_falls_when_its_own_does(tmp_path):
    """A report records the identity of the profile it ran (identity.profile_sha256): adding or editing another
    profile of the space file keeps it standing, an edit of its own profile or of the shared sections does not."""
    reports = _tree(tmp_path, _made_from_file(tmp_path))
    path = tmp_path / SPACE
    record = space_record(load_space(path, "default"))
    summary = reports / "vit_stems" / "summary.json"
    summary.write_text(json.dumps({"space": {**_made_from_file(tmp_path),
                                             "profile_sha256": identity.recorded_profile(record)}}))  # fmt: skip
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("profiles:\n", "profiles:\n  extra: {study: {seeds: [7]}}\n", 1), encoding="utf-8")
    assert identity.recorded_profile(space_record(load_space(path, "extra"))) is not None
    assert RP.problems(reports, tmp_path) == []  # a profile added
    path.write_text(text.replace("epochs: 50", "epochs: 60", 1), encoding="utf-8")
    assert any("changed since the report was made" in p for p in RP.problems(reports, tmp_path))


def test_comments_formatting_and_key_order_keep_the_identity_and_a_value_changes_it():
    text = "name: s\nstudy:\n  seeds: [0, 1]  # two\n  lr: 0.001\n"
    same = "# a comment\n\nstudy: {lr: 1.0e-3,\n  seeds: [0, 1]}\nname: 's'\n"
    assert identity.content_sha256(text) == identity.content_sha256(same)
    assert identity.content_sha256(text) != identity.content_sha256(text.replace("0.001", "0.002"))
    assert identity.file_ids(b"a: [\n")["bytes"] and "content" not in identity.file_ids(b"a: [\n")  # not YAML


def _comment_edit(path: Path) -> None:
    """A comment and a blank line put before the file's first line: nothing a study runs changes."""
    path.write_bytes(b"# an edit of comments only\n\n" + path.read_bytes())


def test_a_comment_only_edit_of_every_shipped_space_file_keeps_its_report_standing(tmp_path):
    """Every shipped space file, copied, reported as the report writes it, then edited in its comments only."""
    files = sorted((ROOT / "spaces").glob("*.yaml"))
    assert files
    for src in files:
        rel = f"spaces/{src.name}"
        (tmp_path / "spaces").mkdir(exist_ok=True)
        (tmp_path / rel).write_bytes(src.read_bytes())
        record = space_record(load_space(tmp_path / rel, "default"))
        folder = tmp_path / "reports" / src.stem
        folder.mkdir(parents=True)
        summary = {"space": {"source": rel, "profile": "default", "sha256": identity.space_hash(record)}}
        (folder / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    assert RP.problems(tmp_path / "reports", tmp_path) == []
    for src in files:
        _comment_edit(tmp_path / "spaces" / src.name)
    assert RP.problems(tmp_path / "reports", tmp_path) == []


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True,
                   capture_output=True)  # fmt: skip


@pytest.mark.committed
@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_a_comment_only_edit_of_every_shipped_space_file_keeps_the_committed_reports_standing(tmp_path):
    """The committed reports recorded their space files' identity as run: in a clone of this checkout (its history
    holds the versions they ran, where another profile of the file changed since) with the shipped files committed,
    a comment-only edit of every one keeps every report standing; a value edit does not."""
    _git(ROOT, "clone", "-q", "--no-checkout", str(ROOT), str(tmp_path))
    shutil.copytree(ROOT / "spaces", tmp_path / "spaces")
    for path in (ROOT / "reports").glob("*/summary.json"):
        (tmp_path / "reports" / path.parent.name).mkdir(parents=True)
        shutil.copy(path, tmp_path / "reports" / path.parent.name / "summary.json")
    _git(tmp_path, "add", "spaces", "reports")
    _git(tmp_path, "commit", "-qm", "as shipped", "--allow-empty")
    assert RP.problems(tmp_path / "reports", tmp_path) == []
    for path in sorted((tmp_path / "spaces").glob("*.yaml")):
        _comment_edit(path)
    assert RP.problems(tmp_path / "reports", tmp_path) == []
    path = tmp_path / SPACE
    path.write_bytes(path.read_bytes().replace(b"epochs: 50", b"epochs: 60", 1))
    assert any(p.startswith("vit_stems: spaces/vit_stems.yaml changed since") for p in RP.problems(
        tmp_path / "reports", tmp_path))  # fmt: skip


def test_a_report_of_the_file_bytes_reads_and_a_value_edit_fails_without_history(tmp_path):
    """A report made before content hashes (the file's bytes) stands while the file does; outside a checkout a
    comment edit cannot be told from a change, so it is one."""
    record = space_record(load_space(ROOT / SPACE, "default"))
    reports = _tree(tmp_path, {"source": SPACE, "profile": "default", "sha256": record["space_sha256"]})
    assert RP.problems(reports, tmp_path) == []
    _comment_edit(tmp_path / SPACE)
    (why,) = RP.problems(reports, tmp_path)
    assert why.startswith("vit_stems: spaces/vit_stems.yaml changed since the report was made (sha256 ")


def test_a_report_of_the_file_bytes_with_its_content_identity_stands_a_comment_edit_without_history(tmp_path):
    """A study that recorded the file's bytes: the report adds the content identity of the text it recorded, so an
    edit of comments (or of `decides:`, not part of the identity) stands without git; a value edit does not."""
    from coatsearch.report import summarize

    record = space_record(load_space(ROOT / SPACE, "default"))
    old = {k: v for k, v in record.items() if k != "space_content_sha256"}  # as recorded before content hashes
    sp = summarize("s", old, []).summary.space
    assert sp["sha256"] == record["space_sha256"] and sp["content_sha256"] == record["space_content_sha256"]
    reports = _tree(tmp_path, {**sp, "source": SPACE})
    _comment_edit(tmp_path / SPACE)
    path = tmp_path / SPACE
    path.write_text(path.read_text() + "decides: {f: 3.0}\n")
    assert RP.problems(reports, tmp_path) == []
    path.write_bytes(path.read_bytes().replace(b"epochs: 50", b"epochs: 60", 1))
    (why,) = RP.problems(reports, tmp_path)
    assert why.startswith("vit_stems: spaces/vit_stems.yaml changed since the report was made (sha256 ")


def test_the_report_records_and_shows_the_space_hash(tmp_path):
    from coatsearch.report import summarize

    record = space_record(load_space(ROOT / SPACE, "default"))
    report = summarize("s", record, [])
    sp = report.summary.space
    sha = record["space_content_sha256"]
    assert sp["sha256"] == sha and sp["profile"] == "default" and sp["source"] == str(ROOT / SPACE)
    from coatsearch.report import render

    assert f"- Space file: `{ROOT / SPACE}`, profile `default`, sha256 `{sha}`" in render(report, {})


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


@pytest.mark.committed
def test_figures_the_readme_and_docs_quote_come_from_the_committed_reports():
    """Every marked quote in README.md and docs/*.md matches the committed summary.json it names."""

    def summary_of(name: str) -> dict:
        return json.loads((ROOT / "reports" / name / "summary.json").read_text(encoding="utf-8"))

    found = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        found += RP.quote_problems(path.read_text(encoding="utf-8"), summary_of, path.name)
    assert found == []


def test_ci_and_the_readme_run_the_committed_checks():
    """The `committed` marker is registered, and the test command CI runs (the README's, verbatim) selects no
    marker away: the checks of the committed reports run there with the rest."""
    import tomllib

    markers = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"]["ini_options"]
    assert any(m.startswith("committed:") for m in markers["markers"]) and "-m" not in markers["addopts"].split()
    for path in (ROOT / ".ci" / "run", ROOT / "README.md"):
        commands = [line for line in path.read_text(encoding="utf-8").splitlines() if "python -m pytest" in line]
        assert commands and all(" -m " not in c.split("python -m pytest", 1)[1] for c in commands), path
