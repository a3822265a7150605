"""write_report on a real JournalStorage study: Markdown sections, PNG figures, summary.json, dashboard note."""

from __future__ import annotations

import json
import re
from dataclasses import fields

import pytest

from coatsearch.analysis.constants import LENGTH_SCORE, ROBUSTNESS_SCORE, SPEED_SCORE
from coatsearch.dashboard import save_report_note
from coatsearch.errors import UserError
from coatsearch.papers.claims import CAPACITY_SCORE, TRANSFER_SCORE
from coatsearch.report import render, summarize, write_report
from coatsearch.report.summary import StudySummary
from coatsearch.storage.store import load_study
from tests.report_records import AGREE, SPACE, layout_records, make_study, seeded, vit_records

PNG = b"\x89PNG\r\n\x1a\n"
SPLITS = seeded({"generalization.eval_acc": {"C-C-T-T": 0.841, "V2": 0.839, "V1": 0.801}})


def test_layout_study_report(tmp_path):
    from optuna_dashboard import get_note

    accs = {**AGREE["generalization.eval_acc"], **SPLITS["generalization.eval_acc"]}
    values = {**AGREE, "generalization.eval_acc": accs}
    space = {**SPACE, "candidates": [*SPACE["candidates"], "V1", "V2"]}
    make_study(tmp_path / "studies", "fab", space, layout_records(values))
    written = (tmp_path / "studies" / "fab" / "journal.log").read_bytes()
    path = write_report("fab", tmp_path / "studies", tmp_path / "reports")
    assert path == tmp_path / "reports" / "fab" / "report.md"
    text = path.read_text()
    for heading in ("# coatsearch report: fab", "## Setup", "## Candidates", "## Figures", "## Rankings",
                    "## Depth splits V0/V1/V2", "## Claim details", "## Failed and pruned trials"):  # fmt: skip
        assert heading in text
    assert "**Proxy scale.** no scale at all" in text
    assert "Trials: 23 — 21 complete, 1 failed, 1 interrupted" in text  # 7 candidates × 3 seeds, 2 failures
    assert "interrupted (worker died); rerun resumes it" in text
    assert "✅ supported" in text and "Optimizability" not in text  # no ViT, no sampled hyperparameters
    for part in ("Method: Differences are paired by seed", "Holm", "Calibration of this rule", "Power: smallest "
                 "detectable difference", "Regime checks:", "95% CI (pooled sd, or own)"):  # fmt: skip
        assert part in text
    assert re.search(r"\| C-C-T-T +\| C-C-T-T +\| C1x32/1 C3x64/2 T7x128/2 T1x256/1 +\|", text)  # pandas table
    folder = path.parent
    for name in ("generalization.png", "curves.png", "acc_vs_params.png"):
        assert (folder / name).read_bytes()[:8] == PNG and f"]({name})" in text
    assert not (folder / "edf.png").exists() and not (folder / "length.png").exists()
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["version"] == 1  # the summary's format (papers.summary_file.SUMMARY_VERSION)
    assert list(summary) == [f.name for f in fields(StudySummary)]  # the file is the typed summary, key for field
    assert {CAPACITY_SCORE, TRANSFER_SCORE, LENGTH_SCORE, ROBUSTNESS_SCORE, SPEED_SCORE} <= set(summary)
    assert summary["rules"]["alpha"] == 0.05 and summary["rules"]["verdict_alpha"] == 0.03
    assert all(v["null_firm"] <= 0.05 for v in summary["rules"]["calibration"]["per_claim"].values())
    assert {c["id"]: c["verdict"] for c in summary["claims"]} == dict.fromkeys("abcd", "supported")
    assert summary["candidates"][3]["metrics"]["generalization.eval_acc"]["n"] == 3
    journal = tmp_path / "studies" / "fab" / "journal.log"
    assert journal.read_bytes() == written  # reporting never writes to the journal
    assert get_note(load_study(tmp_path / "studies", "fab")) == ""
    assert save_report_note("fab", tmp_path / "studies", path)  # the explicit step (`coatsearch report --note`)
    study = load_study(tmp_path / "studies", "fab")  # a fresh handle reads the note back from the journal
    assert _as_report(get_note(study)) == text and study.user_attrs["report_verdicts"]["d"] == "supported"
    assert "](/artifacts/" in get_note(study) and not re.search(r"!\[\w+\]\([\w.]+\.png\)", get_note(study))
    size, stored = journal.stat().st_size, sorted((tmp_path / "studies" / "fab" / "artifacts").iterdir())
    save_report_note("fab", tmp_path / "studies", path)  # the same note, figures and verdicts: nothing new stored
    assert journal.stat().st_size == size and sorted((tmp_path / "studies" / "fab" / "artifacts").iterdir()) == stored


def _as_report(note: str) -> str:
    """A dashboard note with its figure links back as the report's (`![name](/artifacts/..)` -> `![name](name.png)`)."""
    return re.sub(r"!\[(\w+)\]\(/artifacts/\d+/[0-9a-f-]+\)", r"![\1](\1.png)", note)


def test_vit_study_report_has_optimizability(tmp_path):
    space = {"study": {"objective": "accuracy.eval_acc"}, "candidates": ["ViT_P-adamw", "ViT_P-sgd"]}
    make_study(tmp_path, "vit", space, vit_records(n=4))
    path = write_report("vit", tmp_path, tmp_path / "out")
    text = path.read_text()
    for part in ("## Optimizability", "### Optimizer gap", "### Hyperparameter stability (EDF)",
                 "### Training-length stability", "### Peak performance", "### Hyperparameter samples used",
                 "(f) Conv stem", "Accuracy used: recipe eval acc (`accuracy.eval_acc`)"):  # fmt: skip
        assert part in text
    for name in ("edf.png", "length.png", "curves.png", "acc_vs_params.png"):
        assert (path.parent / name).read_bytes()[:8] == PNG
    assert "## Failed and pruned trials" not in text and "Proxy scale" not in text  # no data, no section


def test_render_skips_sections_without_data():
    text = render(summarize("empty", {}, []), {})
    assert "No trial completed" in text
    for absent in ("## Rankings", "## Claim details", "## Verdicts", "## Regime", "## Figures", "## Optimizability"):
        assert absent not in text


def test_missing_study_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="no study 'nope'"):
        write_report("nope", tmp_path, tmp_path / "reports")


def test_robustness_is_ranked_and_drawn_against_severity(tmp_path):
    from tests.report_records import record

    def metrics(candidate: str, seed: int) -> dict:
        drop = {"C-C-C-C": 0.10, "C-T-T-T": 0.20}[candidate] + 0.01 * seed
        curve = {"severity": [0, 1, 2], **{k: [0.8, 0.8 - drop, 0.8 - 2 * drop] for k in ("noise", "blur")}}
        return {"generalization.eval_acc": 0.8, "robustness.clean_acc": 0.8,
                "robustness.corrupt_acc": 0.8 - 1.5 * drop, "curves.robustness": curve}  # fmt: skip

    recs = [record(2 * i + s, c, s, metrics(c, s)) for i, c in enumerate(("C-C-C-C", "C-T-T-T")) for s in (0, 1)]
    make_study(tmp_path / "studies", "rob", {**SPACE, "candidates": ["C-C-C-C", "C-T-T-T"]}, recs)
    summary = summarize("rob", SPACE, recs).summary
    (rank,) = [r for r in summary.rankings if r.key == "robustness.corrupt_acc"]
    assert [c for c, _ in rank.order] == ["C-C-C-C", "C-T-T-T"]
    (row, _) = summary.robustness
    assert row.severity == (0, 1, 2) and row.acc[2].mean == pytest.approx(100 * (0.8 - 2 * 0.105))
    path = write_report("rob", tmp_path / "studies", tmp_path / "reports")
    assert (path.parent / "robustness.png").read_bytes().startswith(PNG)
    assert "robustness.png" in path.read_text() and "corrupted acc (mean)" in path.read_text()


def test_sizes_give_the_params_spread_of_budget_matched_candidates():
    from coatsearch.analysis import spread, tables

    rows = tables.candidate_rows(SPACE, layout_records())
    params = {r.candidate: r.metrics["params"].mean for r in rows}  # 1.5M + 1000 × trial number, in M
    z = spread.sizes(rows)
    assert z is not None and z.small == ("ViT_REL", params["ViT_REL"]) and z.big == ("C-T-T-T", params["C-T-T-T"])
    assert z.macs_err == (1.0, 1.0) and z.params_err is None  # every record: +1% MACs error, a MACs-only budget
    assert spread.sizes(rows[:1]) is None  # one candidate: nothing to compare


def test_report_writes_the_note_only_with_note(tmp_path, capsys):
    from optuna_dashboard import get_note

    from coatsearch.cli import main

    make_study(tmp_path / "studies", "fab", SPACE, layout_records())
    journal = tmp_path / "studies" / "fab" / "journal.log"
    before = journal.read_bytes()
    args = ["report", "fab", "--studies-dir", str(tmp_path / "studies"), "--reports-dir", str(tmp_path / "r")]
    assert main(args) == 0 and journal.read_bytes() == before  # a plain report leaves the journal as it was
    assert main([*args, "--note"]) == 0
    text = (tmp_path / "r" / "fab" / "report.md").read_text()
    assert _as_report(get_note(load_study(tmp_path / "studies", "fab"))) == text and journal.read_bytes() != before


def test_the_calibration_table_gives_each_claims_a_a_rate_from_the_committed_table(monkeypatch):
    """The A/A column is the committed papers/aa.json as it stands: studies, rate and exact interval per claim,
    cited only under the rule version it was measured for; under another rule the report says it is not measured."""
    import json

    from coatsearch.papers import rule_tables

    measured_under = json.loads(rule_tables.AA_TABLE.read_text(encoding="utf-8"))["rule_version"]
    current = measured_under == rule_tables.RULE_VERSION  # else the calibration rows of that rule are not committed
    if not current:  # the table predates this rule: never cited as its figures
        assert rule_tables.aa_figures() is None
        text = render(summarize("fab", SPACE, layout_records(AGREE)), {})
        assert "A/A through the real trainer: not measured for this rule version" in text
        monkeypatch.setattr(rule_tables, "RULE_VERSION", measured_under)  # the column as that rule's reports cite it
    aa = rule_tables.aa_figures()
    assert aa is not None and aa.studies >= 40 and aa.commands  # the table is committed for its rule version
    text = render(summarize("fab", SPACE, layout_records(AGREE)), {})
    assert f"A/A column: {aa.studies} studies standing one architecture" in text
    assert f"{len(aa.commands)} run(s), each later one `--resume` on fresh seeds" in text
    b = aa.families["b"]
    assert b.ci95 is not None and b.rate is not None
    lo, hi = b.ci95
    cell = f"{100 * b.rate:.1f}% of {b.n} [{100 * lo:.1f}%, {100 * hi:.1f}%], {b.out_of_regime} out of regime"
    assert re.search(r"^\| \(b\) .*" + re.escape(cell), text, re.M) or not current
    assert "/work/" not in text  # no work folder of the benchmark's in a report


def _with_kernels(records, kernels):
    """The records with their environments' torch CPU kernel instruction set replaced by `kernels`."""
    from dataclasses import replace

    return [r if r.run.environment is None else
            replace(r, run=replace(r.run, environment=replace(r.run.environment, cpu_kernels=kernels)))
            for r in records]  # fmt: skip


def test_the_hardware_line_names_the_cpu_kernels_where_the_runs_recorded_them():
    records = layout_records(AGREE)
    before = render(summarize("s", SPACE, records), {})
    assert "- Hardware: Test CPU (2 cores, 2 torch threads), GPU none" in before  # older records: as before
    after = render(summarize("s", SPACE, _with_kernels(records, "AVX512")), {})
    assert "- Hardware: Test CPU (2 cores, 2 torch threads, AVX512 kernels), GPU none" in after
    assert after.replace(", AVX512 kernels", "") == before  # the one difference
