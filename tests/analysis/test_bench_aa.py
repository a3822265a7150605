"""benchmarks/bench_aa.py end to end: A/A studies through `coatsearch run` and `report`, and the table's shape."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import bench_aa  # noqa: E402


def test_every_name_stands_for_one_architecture_with_its_own_init():
    space = bench_aa.space(3)
    cands = space["candidates"]
    offsets = [c["init_offset"] for c in cands]
    assert len(set(offsets)) == len(offsets)  # each name its own initialization
    assert not any(k in c for c in cands for k in ("layout", "stem", "depths", "widths"))  # one shared model
    assert space["study"]["seeds"] == [9, 10, 11]  # replicate 3's own seeds
    assert space["data"]["test_sampling"] == "per_seed" and "a" in space["untestable"]
    stems = [c for c in cands if "label" in c]
    assert [c["label"] for c in stems] == ["ViT_P", "ViT_P", "ViT_C", "ViT_C"]
    assert [c.get("train", {}).get("optimizer", "adamw") for c in stems] == ["adamw", "sgd", "adamw", "sgd"]
    names = {c["name"] for c in cands}
    assert {"C-C-C-C", "C-T-T-T", "ViT_REL", "V0", "V1", "V2", "C-C-T-T", "C-C-T-T-norel"} <= names


@pytest.mark.slow
def test_quick_run_writes_a_table_of_rates(tmp_path):
    cmd = [sys.executable, str(ROOT / "benchmarks" / "bench_aa.py"), "--quick", "--studies", "2", "--workers", "2",
           "--out", str(tmp_path), "--timeout", "1700"]  # fmt: skip  # a loaded machine: inside the outer bound
    res = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=1800, check=True)
    assert res.stdout.strip().splitlines()[-1].startswith("aa_firm_max=")
    table = json.loads((tmp_path / "aa.json").read_text())
    assert table["studies"] == 2 and table["failed_studies"] == 0, table["errors"]
    f = table["families"]["f"]
    assert f["n"] == 2 and 0 <= f["rate"] <= 1 and 0 <= f["ci95"][0] <= f["rate"] <= f["ci95"][1] <= 1
    assert {v["f"] for v in table["verdicts"]} <= {
        "supported",
        "not supported",
        "out of regime",
        "underpowered",
        "unresolved",
    }
    space = yaml.safe_load((tmp_path / "spaces" / "aa_1.yaml").read_text())
    assert space["study"]["seeds"] == [3, 4, 5]


def test_the_report_reads_the_aa_table_of_this_rule_version_only(tmp_path, monkeypatch):
    from coatsearch.papers import rule_tables
    from coatsearch.report import markdown_claims
    from coatsearch.report.view_claims import aa_info

    rows = [{"study": f"s{i}", "wall_s": 1.0, "claims": {"f": {"verdict": v, "why": w}}}
            for i, (v, w) in enumerate(
            [("supported", ""), ("inconclusive", "out of regime — x"), ("inconclusive", "0 of 1")])]  # fmt: skip
    result = bench_aa.table([*rows, {"error": "boom", "wall_s": 1.0, "claims": {}}], 10.0, "bench_aa.py")
    f = result["families"]["f"]
    assert (f["n"], f["firm"], f["out_of_regime"], result["failed_studies"]) == (3, 1, 1, 1)
    assert f["ci95"][0] < 1 / 3 < f["ci95"][1] and f["ci95"][1] < 0.95  # exact (Clopper-Pearson) 95% interval
    path = tmp_path / "aa.json"
    monkeypatch.setattr(rule_tables, "AA_TABLE", path)
    path.write_text(json.dumps({**result, "rule_version": "older"}))
    assert rule_tables.aa_figures() is None  # a table of another rule version is never shown
    path.write_text(json.dumps(result))
    shown = rule_tables.aa_figures()
    assert shown is not None and "verdicts" not in shown.to_json() and shown.families["f"].firm == 1
    cell = markdown_claims._aa(aa_info(shown), "f")
    assert cell.startswith("33.3% of 3 [") and cell.endswith("1 out of regime")
    assert markdown_claims._aa(aa_info(shown), "a") == "–"
    assert "trained by `coatsearch run`" in markdown_claims._aa_line(aa_info(shown))


def _rows(verdicts: list[tuple[str, str]], first: int = 0) -> list[dict]:
    return [{"study": f"s{first + i}", "wall_s": 2.0, "claims": {c: {"verdict": v, "why": w} for c in bench_aa.CLAIMS}}
            for i, (v, w) in enumerate(verdicts)]  # fmt: skip


def test_a_resumed_table_has_the_counts_and_intervals_of_all_its_studies():
    early = _rows([("supported", ""), ("inconclusive", "out of regime — x")])
    late = _rows([("not supported", ""), ("inconclusive", "0 of 1"), ("inconclusive", "out of regime — y")], 2)
    whole = bench_aa.table(early + late, 10.0, "all")
    joined = bench_aa.merged(bench_aa.table(early, 4.0, "first"), bench_aa.table(late, 6.0, "second"))
    assert joined["families"] == whole["families"]  # counts add; rate and exact interval from the sums
    f = joined["families"]["f"]
    assert (f["n"], f["firm"], f["supported"], f["out_of_regime"]) == (5, 2, 1, 2)
    assert joined["studies"] == 5 and joined["wall_s"] == 10.0 and joined["commands"] == ["first", "second"]
    assert [v["study"] for v in joined["verdicts"]] == ["s0", "s1", "s2", "s3", "s4"]


def test_a_resumed_table_keeps_every_state_it_stood_in_as_reports_cite_them():
    from coatsearch.papers import rule_tables

    first = bench_aa.table(_rows([("supported", "")]), 1.0, "first")
    second = bench_aa.merged(first, bench_aa.table(_rows([("inconclusive", "0 of 1")], 1), 1.0, "second"))
    third = bench_aa.merged(second, bench_aa.table(_rows([("not supported", "")], 2), 1.0, "third"))
    states = rule_tables.aa_states(third)
    assert [s.studies for s in states] == [1, 2, 3] and [s.families["f"].firm for s in states] == [1, 1, 2]
    assert states[:2] == (rule_tables.aa_cited(first), rule_tables.aa_cited(second))  # as a report cited them
    assert not any(k in s.to_json() for s in states for k in rule_tables.AA_DETAIL)  # no rows or nested history


def test_resume_refuses_a_table_of_another_rule_or_design(tmp_path):
    path = tmp_path / "aa.json"
    path.write_text(json.dumps({**bench_aa.table(_rows([("supported", "")]), 1.0, "x"), "seeds_per_study": 5}))
    with pytest.raises(SystemExit, match=r"--resume: .* 5 seeds per study"):
        bench_aa.earlier_table(path)
    path.write_text("{not json")
    with pytest.raises(SystemExit, match="--resume: .*aa.json: not a JSON file"):
        bench_aa.earlier_table(path)
    path.write_text(json.dumps(bench_aa.table(_rows([("supported", "")]), 1.0, "x")))
    assert bench_aa.earlier_table(path)["studies"] == 1
    bigger = bench_aa.Size(per_class=300, steps=1600, capacity_steps=400)
    with pytest.raises(SystemExit, match=r"--resume: .*size \{'per_class': 100, 'steps': 800, 'capacity_steps': 100\}"):
        bench_aa.earlier_table(path, bigger)  # a table of another design is never extended
    path.write_text(json.dumps(bench_aa.table(_rows([("supported", "")]), 1.0, "x", bigger)))
    assert bench_aa.earlier_table(path, bigger)["size"] == vars(bigger)
    older = {k: v for k, v in bench_aa.table(_rows([("supported", "")]), 1.0, "x").items() if k != "size"}
    path.write_text(json.dumps(older))  # recorded before sizes were: the first design's
    assert bench_aa.earlier_table(path)["studies"] == 1
    space = bench_aa.space(0, bigger)
    assert space["scores"]["accuracy"] == {"per_class": 300, "max_steps": 1600, "eval_every": 200}
    assert space["scores"]["capacity"] == {"per_class": 300, "max_steps": 400, "eval_every": 100}


def test_gap_pvalues_are_read_from_the_reports_and_tested_for_uniformity(tmp_path):
    for i, p in enumerate([0.01, 0.2, None, 0.7]):
        folder = tmp_path / "reports" / f"aa_{i}"
        folder.mkdir(parents=True)
        parts = [{"short": "gap contrast", "p": p}]
        (folder / "summary.json").write_text(json.dumps({"claims": [{"id": "f", "parts": parts}, {"id": "b"}]}))
    assert bench_aa.gap_pvalues(tmp_path) == [0.01, 0.2, 0.7]  # an untested contrast has no p
    line = bench_aa.uniformity([0.01, 0.2, 0.7])
    assert line.startswith("(f) gap contrast over 3 A/A studies: 1 below α 0.03 (33.3%") and "KS against" in line
    assert "binomial p of an excess 0.0873" in line  # P(X >= 1 | n 3, p 0.03) = 1 - 0.97^3
    assert bench_aa.uniformity([]) == "no tested gap contrasts"
