"""The report as sections: each section's Info from fabricated records, and render only formats."""

from __future__ import annotations

import ast
import importlib
import inspect
import types
from pathlib import Path

import pytest

from coatsearch.report import SECTIONS, plots, render, summarize
from coatsearch.report import markdown_claims as mdc
from coatsearch.report import markdown_measures as mdm
from coatsearch.scores import SCORES
from tests.report_records import AGREE, SPACE, edit_runs, layout_records, seeded, vit_records

REPORT = Path(__file__).resolve().parents[2] / "coatsearch" / "report"
MARKDOWN = (
    "markdown.py",
    "markdown_answer.py",
    "markdown_claims.py",
    "markdown_measures.py",
    "markdown_search.py",
    "markdown_speed.py",
)
NUMERIC = {"pandas", "numpy", "scipy", "statistics", "math"}  # computing libraries a renderer must not import
FORMATTERS = {"escape", "markdown", "markdown_answer", "claims", "constants", "categories"}  # cell escaping, the
# table and verdict formatters, the papers' constants, the shared constants and the verdict categories' names
COMPUTING = {"sorted", "min", "max", "sum", "any", "all", "filter", "round", "next"}  # picks, sorts, counts


def _gen(**accs: float) -> dict:
    """AGREE with these generalization eval accuracies (the report reads the matched level off the curves)."""
    base = {**{n: v[1] for n, v in AGREE["generalization.eval_acc"].items()}, **accs}
    rest = {k: v for k, v in AGREE.items() if k != "generalization.matched_acc"}
    return {**rest, **seeded({"generalization.eval_acc": base})}


def _stepped(values: dict, losses: dict[str, list[float]]) -> list:
    """layout_records with step-level generalization curves, a candidate's train losses replaced."""

    def step(r, m):
        if "curves.generalization" in m:
            m["curves.generalization"]["step"] = list(range(6))
            if r.candidate in losses:
                m["curves.generalization"]["train_loss"] = losses[r.candidate]

    return edit_runs(layout_records(values), step)


@pytest.fixture(scope="module")
def censored():
    """A study whose C-C-C-T, a model claim (a) needs to learn, never fits below 0.3 nats: (a) is out of regime."""
    return summarize("fab", SPACE, _stepped(_gen(), {"C-C-C-T": [2.0, 1.0, 0.6, 0.4, 0.3, 0.3]}))


def test_the_matched_section_names_its_level_and_the_candidate_out_of_regime(censored):
    m = censored.infos["matched"]
    assert m.level == pytest.approx(0.1) and m.levels[0] > m.levels[-1] and m.reached
    assert m.key[:2] == ("ViT_REL", "C-C-C-C")
    (reason,) = [u for u in m.out_of_regime if u.startswith("C-C-C-T")]
    assert reason == "C-C-C-T never fit below 0.316 nats"
    rows = {r.at.candidate: r for r in m.rows}
    assert rows["C-C-C-T"].eval_acc is None and rows["C-C-C-T"].censored_runs == rows["C-C-C-T"].runs == 3
    assert rows["C-C-C-C"].censored_runs == 0 and rows["C-C-C-C"].eval_acc == pytest.approx(85.1, abs=0.3)
    assert rows["C-C-C-C"].at.size[0].mean == pytest.approx(1.506)  # params (M): trials 1, 6, 11
    text = mdm.matched(m)
    assert "Out of regime for claim (a): " in text and "C-C-C-T never fit below 0.316 nats" in text
    assert "3/3" in text  # C-C-C-T: censored at the common level in all 3 runs


def test_the_failures_section_lists_a_failed_trial_with_its_reason(censored):
    f = censored.infos["failures"]
    by_candidate = {r.candidate: r for r in f.rows}
    assert by_candidate["C-C-C-C"].state == "FAIL" and by_candidate["C-C-C-C"].seed == 3
    assert by_candidate["C-C-C-C"].reason == "budget not met: too small"
    assert by_candidate["C-T-T-T"].reason.startswith("interrupted (worker died)")  # FAIL without a reason
    assert "budget not met: too small" in mdc.failures(f)


def test_the_candidates_section_picks_measured_columns_and_guards(censored):
    c = censored.infos["candidates"]
    assert [r.candidate for r in c.rows][:2] == ["ViT_REL", "C-C-C-C"] and c.baselines == ()
    keys = [m.key for m in c.columns]
    assert "generalization.eval_acc" in keys and "robustness.corrupt_acc" not in keys  # only what was measured
    assert all(r.n == 3 for r in c.rows) and c.params_ratio == pytest.approx(c.sizes.big[1] / c.sizes.small[1])
    assert set(c.fired) == {"failed", "not_converged", "unchecked"} and c.fired["failed"] == ()


def test_sections_with_their_data_are_in_and_verdicts_read_their_metric(censored):
    r = censored.infos["rankings"]
    assert r.rule.startswith("Neighbours are compared") and any(line.label == "gen. eval acc" for line in r.lines)
    claims = {c.id: c for c in censored.infos["claims"].claims}
    assert claims["a"].verdict == "out of regime"
    assert claims["c"].evidence[0].metric is SCORES["transfer"].metrics[3]  # the gain, from the registry
    t = censored.infos["transfer"]
    assert [m.key for m in t.columns] == [m.key for m in SCORES["transfer"].metrics]


def test_a_section_without_data_is_none_and_left_out(censored):
    for name in ("capacity", "v_table", "speed", "pareto", "untested", "optimizability", "edges"):
        assert censored.infos[name] is None, name
    text = render(censored, {})
    assert "## Capacity on abundant data" not in text and "## Measured speed" not in text
    assert "## Generalization at matched training loss" in text and "## Failed and pruned trials" in text
    empty = summarize("empty", {}, [])
    assert [n for n, i in empty.infos.items() if i is not None] == ["header", "setup", "candidates"]
    assert render(empty, {}).count("\n## ") == 2  # setup and candidates ("no trial completed")


def test_the_optimizability_section_reads_the_vit_runs():
    o = summarize("vit", {**SPACE, "candidates": []}, vit_records()).infos["optimizability"]
    assert o.length.epochs == (2, 4, 8) and o.edf is not None and o.edf.dims == ("train.lr", "train.weight_decay")
    row = next(r for r in o.length.rows if r.candidate == "ViT_P-adamw")
    assert len(row.accs) == 3 and row.deltas[-1] == pytest.approx(0.0)  # Δerr against the longest schedule
    assert o.acc == ("recipe eval acc", "accuracy.eval_acc")


def test_sections_are_listed_once_and_every_figure_draws_a_sections_info():
    names = [s.name for s in SECTIONS]
    assert len(names) == len(set(names)) and names[:5] == ["header", "search_answer", "answer", "regime", "about"]
    assert {f.section for f in plots.FIGURES.values()} <= set(names) - {"figures"}


def _imports(tree: ast.Module) -> list[tuple[str, str]]:
    """(module, name) of every import of a module's source."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            out += [(node.module or "", a.name) for a in node.names]
    return out


@pytest.mark.parametrize("name", MARKDOWN)
def test_markdown_only_formats(name):
    """A renderer imports no computing library and, from the report, only Info types, constants and formatters."""
    tree = ast.parse((REPORT / name).read_text(encoding="utf-8"))
    imports = _imports(tree)
    assert not [m for m, _ in imports if m.split(".")[0] in NUMERIC], f"{name} imports a computing library"
    for module, item in (i for i in imports if i[0].startswith("coatsearch")):
        obj = getattr(importlib.import_module(module), item)
        if inspect.ismodule(obj):
            assert item in FORMATTERS, f"{name} imports the module {item}"
        elif module.rsplit(".", 1)[-1] not in FORMATTERS:  # a type or a constant, never a compute function
            assert inspect.isclass(obj) or isinstance(obj, types.GenericAlias) or not callable(obj), (name, item)
    calls = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    assert not calls & COMPUTING, f"{name} computes: {sorted(calls & COMPUTING)}"
    picks = [ast.unparse(c) for c in ast.walk(tree) if isinstance(c, ast.comprehension) and not _drops_empty(c)]
    assert not picks, f"{name} filters rows (only empty text may be dropped): {picks}"


def _drops_empty(c: ast.comprehension) -> bool:
    """Whether a comprehension filters nothing, or only drops falsy items (`p for p in parts if p`)."""
    return all(isinstance(f, ast.Name) and isinstance(c.target, ast.Name) and f.id == c.target.id for f in c.ifs)


def test_a_score_names_its_roles_or_says_which_it_has():
    assert SCORES["transfer"].role("gain") == "transfer.gain"
    with pytest.raises(KeyError, match="declares no role 'steps' .declared: epochs, accs"):
        SCORES["length"].role("steps")


def test_a_search_finds_the_enumerated_table_of_its_own_space(tmp_path, monkeypatch):
    """The report looks for `coatsearch enumerate`'s default study of the same space and profile, and takes it only
    when its recorded space has this study's content identity."""
    from coatsearch import report
    from coatsearch.storage import store

    space = {"space": "s", "profile": "quick", "space_content_sha256": "a" * 64}
    studies = {"s-quick-enumerate": ({**space}, ["rec"]), "t-enumerate": ({**space, "space": "t"}, ["rec"])}
    monkeypatch.setattr(store, "load_study", lambda folder, name: name)
    monkeypatch.setattr(store, "read", lambda name: studies[name])
    for name in studies:
        (tmp_path / name).mkdir()
    found = report._measured_table(tmp_path, "s-quick", space)
    assert found is not None and (found.study, found.records) == ("s-quick-enumerate", ["rec"])
    assert report._measured_table(tmp_path, "s-quick-enumerate", space) is None  # never its own table
    studies["s-quick-enumerate"] = ({**space, "space_content_sha256": "b" * 64}, ["rec"])
    assert report._measured_table(tmp_path, "s-quick", space) is None  # another version of the space
    assert report._measured_table(tmp_path, "s", {**space, "profile": "default"}) is None  # no such study
