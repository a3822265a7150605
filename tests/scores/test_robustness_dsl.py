"""Robustness in the DSL: its section loads, its load-time checks, and a tiny study that records and reports it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coatsearch.cli import main
from coatsearch.scores import SCORES, ScoresSpec
from coatsearch.scores.robustness import CORRUPTIONS, RobustnessSpec
from coatsearch.space.load import SpaceError
from coatsearch.space.objects import load_space
from coatsearch.storage import record as R
from coatsearch.storage import store
from coatsearch.vocab.specs import SubsetSpec
from tests.tiny import tiny_text

TINY = tiny_text()
TRANSFER = """  transfer:
    pretrain: {per_class: 10, epochs: 1, classes: [0, 1, 2, 3, 4]}
    finetune: {per_class: 10, epochs: 1, classes: [5, 6, 7, 8, 9]}
"""


def space_file(tmp_path: Path, robustness: str, keep: str = "  generalization: {per_class: 20, epochs: 2}\n") -> Path:
    """tiny.yaml with its `scores` section's first line replaced by `keep` and a `robustness` line added."""
    text = TINY.replace("  generalization: {per_class: 20, epochs: 2}\n", keep + robustness + "\n")
    path = tmp_path / "rob.yaml"
    path.write_text(text)
    return path


def error_of(path: Path) -> str:
    with pytest.raises(SpaceError) as info:
        load_space(path)
    return str(info.value)


def test_the_section_loads_into_its_spec(tmp_path):
    space = load_space(space_file(tmp_path, "  robustness: {source: generalization, severities: 2}"))
    assert space.scores.robustness == RobustnessSpec("generalization", 2)
    assert all(c.scores.robustness.severities == 2 for c in space.candidates)
    assert load_space(space_file(tmp_path, "  robustness: {}")).scores.robustness == RobustnessSpec()
    assert load_space(space_file(tmp_path, "")).scores.robustness is None


def test_the_source_must_be_an_enabled_score_that_keeps_a_model(tmp_path):
    msg = error_of(space_file(tmp_path, "  robustness: {source: capacity}"))
    assert msg.startswith(f"{tmp_path / 'rob.yaml'}:21: field 'scores.robustness.source': 'capacity' is not an")
    assert "(enabled that do: generalization, transfer)" in msg
    length = "  length: {per_class: 5, epochs: [1, 2]}\n"
    assert "'length' is not an enabled score" in error_of(
        space_file(tmp_path, "  robustness: {source: length}", length)
    )
    msg = error_of(space_file(tmp_path, "  robustness: {severities: 1}", keep=""))
    assert "field 'scores.robustness': source 'generalization' is not an enabled score" in msg


@pytest.mark.parametrize(
    "body, expected",
    [
        ("{severities: 6}", "field 'scores.robustness.severities': Input should be less than or equal to 5 (found 6)"),
        ("{severities: 0}", "greater than or equal to 1 (found 0)"),
        ("{severities: '2'}", "field 'scores.robustness.severities': Input should be a valid integer (found '2')"),
        ("{sauce: x}", "field 'scores.robustness.sauce': unknown key 'sauce'; allowed: source, severities"),
    ],
)
def test_bad_robustness_fields_are_one_line_errors(tmp_path, body, expected):
    msg = error_of(space_file(tmp_path, f"  robustness: {body}"))
    assert expected in msg and "\n" not in msg


def test_unknown_scores_are_named_from_the_registry(tmp_path):
    msg = error_of(space_file(tmp_path, "  robustnes: {}"))
    assert f"unknown key 'robustnes'; allowed: {', '.join(SCORES)}" in msg


def test_the_rule_holds_for_specs_built_in_python():
    with pytest.raises(ValueError, match="robustness: source: 'accuracy' is not an enabled score"):
        ScoresSpec(generalization=SubsetSpec(5, 1), robustness=RobustnessSpec("accuracy"))
    assert ScoresSpec(accuracy=SubsetSpec(5, 1), robustness=RobustnessSpec("accuracy")).robustness.source == "accuracy"


@pytest.mark.slow
def test_a_tiny_study_records_robustness_and_reports_it(tmp_path):
    """A quick paper_layouts-like study on synthetic data: the metrics are stored, ranked, tabled and drawn."""
    path = space_file(tmp_path, "  robustness: {source: generalization, severities: 2}")
    path.write_text(path.read_text().replace(TRANSFER, ""))
    args = ["run", str(path), "--profile", "quick", "--quiet", "--workers", "1"]
    assert main([*args, "--studies-dir", str(tmp_path / "s"), "--reports-dir", str(tmp_path / "r")]) == 0
    trials = store.load_study(tmp_path / "s", "tiny-quick").get_trials()
    assert len(trials) == 2 and all(t.state.name == "COMPLETE" for t in trials)
    for t in trials:
        a = R.flat(store.record(t).run)
        assert a["robustness.clean_acc"] == a["generalization.eval_acc"] and a["robustness.source"] == "generalization"
        assert {f"robustness.{n}_acc" for n in CORRUPTIONS} <= set(a) and 0.0 <= a["robustness.corrupt_acc"] <= 1.0
        assert a["curves.robustness"]["severity"] == [0, 1, 2]
    folder = tmp_path / "r" / "tiny-quick"
    report = (folder / "report.md").read_text()
    assert "corrupted acc (mean)" in report and "](robustness.png)" in report
    assert (folder / "robustness.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    summary = json.loads((folder / "summary.json").read_text())
    assert [r["severity"] for r in summary["robustness"]] == [[0, 1, 2]] * 2
    assert any(r["key"] == "robustness.corrupt_acc" for r in summary["rankings"])
