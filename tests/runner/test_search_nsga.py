"""Multi-objective architecture search (NSGA-II) on the tiny searched space: accuracy against measured latency,
the search section's Pareto front of the found architectures (table and figure), the front's dominance rule."""

from __future__ import annotations

import json

import pytest

import coatsearch
from coatsearch.space import search
from coatsearch.storage import sampling, store
from tests.tiny import TINY_SEARCH, tiny_variant

SPACE = TINY_SEARCH
OBJECTIVES = ["generalization.eval_acc", "speed.infer_latency_ms"]


@pytest.fixture(scope="module")
def multi(tmp_path_factory):
    """The tiny search under NSGA-II: eval accuracy (maximize) against batch-1 latency (minimize), 6 samples."""
    root = tmp_path_factory.mktemp("nsga")
    path = tiny_variant(
        root,
        ("sampler: tpe", "sampler: nsga2"),
        ("study: {seeds: [0],", "study: {objectives: [generalization.eval_acc, speed.infer_latency_ms], "
         "directions: [maximize, minimize], seeds: [0],"),
        (", reevaluate: {top: 2, seeds: 2}", ""),
        ("generalization: {per_class: 10, epochs: 1}", "generalization: {per_class: 10, epochs: 1}\n"
         "  speed: {infer_batch: 8, repeats: 3, latency_repeats: 4}"),
        source=SPACE,
    )  # fmt: skip
    coatsearch.run(coatsearch.load_space(path), study="mo", workers=1, device="cpu", studies_dir=root / "studies",
                   reports_dir=root / "reports", report=True, progress=False)  # fmt: skip
    return root


def _searched(root):
    records = store.records(store.load_study(root / "studies", "mo"), say=False)
    return [r for r in records if r.state == "COMPLETE" and r.params.get("candidate") == "searched"]


def test_the_study_is_nsga2_over_two_objectives(multi):
    study = store.load_study(multi / "studies", "mo")
    assert [d.name for d in study.directions] == ["MAXIMIZE", "MINIMIZE"]
    done = [t for t in study.trials if t.state.name == "COMPLETE"]
    assert done and all(len(t.values) == 2 for t in done)
    space = coatsearch.load_space(multi / "space.yaml")
    assert type(sampling.sampler(space)).__name__ == "NSGAIISampler"


def test_the_search_section_lists_the_pareto_front_of_the_found_architectures(multi):
    summary = json.loads((multi / "reports" / "mo" / "summary.json").read_text())
    [one] = summary["search"]["searched"]
    front = one["front"]
    runs: dict[str, list[tuple[float, float]]] = {}
    for r in _searched(multi):
        runs.setdefault(search.architecture(r.run), []).append(
            (r.run.number(OBJECTIVES[0]) * 100, r.run.number(OBJECTIVES[1]))
        )
    assert {p["name"] for p in front} == set(runs)  # every measured architecture, on the front or not
    means = {n: (sum(a for a, _ in v) / len(v), sum(b for _, b in v) / len(v)) for n, v in runs.items()}
    for p in front:
        assert p["means"] == pytest.approx(list(means[p["name"]]))
        beaten = any(a >= means[p["name"]][0] and b <= means[p["name"]][1] and (a, b) != means[p["name"]]
                     for a, b in means.values())  # fmt: skip
        assert p["pareto"] == (not beaten)
    on = [p["name"] for p in front if p["pareto"]]
    assert on and all(p["pareto"] for p in front[: len(on)])  # the front first
    text = (multi / "reports" / "mo" / "report.md").read_text()
    section = text[text.index("## Search") :]
    assert "Pareto front over gen. eval acc (higher is better), batch-1 latency (lower is better)" in section
    assert all(f"`{n}`" in section for n in on)
    assert (multi / "reports" / "mo" / "search_pareto.png").stat().st_size > 0
    assert "search_pareto.png" in text


def test_a_single_objective_search_has_no_front(tmp_path):
    from coatsearch.analysis import search_results, search_types
    from coatsearch.report import plots_search, view_search

    assert search_results._objectives({"objective": "generalization.eval_acc"}) == ()
    found = search_types.SearchResults("generalization.eval_acc", "eval accuracy", "%", True, "tpe", (), ())
    info = view_search.SearchInfo(found, (), 5)
    assert plots_search.front(info, tmp_path / "f.png") is None and not (tmp_path / "f.png").exists()
