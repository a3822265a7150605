"""Architecture search end to end on the tiny searched space: architectures are rows, rejected points cost no
training and are counted, the search section (history, top, importance) is in the report, bad input exits 2."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

import coatsearch
from coatsearch.cli import main
from coatsearch.space import admission, search
from coatsearch.storage import sampling, store
from coatsearch.storage import trials as P
from coatsearch.storage.trials import REEVAL
from coatsearch.vocab import kinds
from tests.tiny import TINY_SEARCH, tiny_variant

SPACE = TINY_SEARCH
KEY = "generalization.eval_acc"  # the objective on the test images


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """The tiny search run once: two named candidates and six sampled points of `searched`, one seed."""
    root = tmp_path_factory.mktemp("search")
    space = coatsearch.load_space(SPACE)
    coatsearch.run(space, study="ts", workers=1, device="cpu", studies_dir=root / "studies",
                   reports_dir=root / "reports", report=True, progress=False)  # fmt: skip
    return root


def _records(root):
    return store.records(store.load_study(root / "studies", "ts"))


def test_rejected_points_cost_no_training_and_never_break_a_constraint(study):
    records = _records(study)
    done = [r for r in records if r.state == "COMPLETE"]
    rejected = [r for r in records if r.state == "REJECTED"]
    named = {search.architecture(r.run) for r in done if r.candidate in ("C-C", "C-T")}
    found = {search.architecture(r.run) for r in done if r.params["candidate"] == "searched"} - named
    # 2 named + 6 samples on seed 0; on seeds 1 and 2 the named two and the top 2 networks no named one builds
    assert len(done) == 2 + 6 + (2 + min(2, len(found))) * 2 and not [r for r in records if r.state == "FAIL"]
    assert rejected, "T-C is sampled in 6 TPE draws of 8 points with seed 0: the fixture must exercise a rejection"
    for r in rejected:
        assert r.run.model is None and not r.run.metrics and "conv_before_attention" in r.run.extra["rejected"]
        assert (r.params["model.layout.0"], r.params["model.layout.1"]) == ("T", "C")
    assert all(not kinds.conv_after_attention(r.run.model.layout) for r in done)
    n = store.counts(store.load_study(study / "studies", "ts"))
    assert n["rejected"] == len(rejected) and n["pruned"] == 0 and n["failed"] == 0


def test_the_spaces_sampler_and_seed_draw_the_points(study, tmp_path):
    # the workers ask with `study.sampler` seeded by `study.seeds[0]`: a rerun samples the same points
    space = coatsearch.load_space(SPACE)
    coatsearch.run(space, study="ts", workers=1, device="cpu", studies_dir=tmp_path, report=False, progress=False)

    def points(records):
        return [(r.params["model.layout.0"], r.params["model.layout.1"], r.params["train.lr"]) for r in records
                if r.params.get("candidate") == "searched"]  # fmt: skip

    assert points(store.records(store.load_study(tmp_path, "ts"))) == points(_records(study))


def test_each_architecture_is_a_report_row(study):
    summary = json.loads((study / "reports" / "ts" / "summary.json").read_text())
    rows = {r["candidate"]: r for r in summary["candidates"]}
    searched = [r for r in _records(study) if r.state == "COMPLETE" and r.params.get("candidate") == "searched"]
    names = {search.architecture(r.run) for r in searched}
    assert "searched" not in rows and names <= set(rows)
    for r in searched:  # the row's stage string is the trial's solved model, not the base candidate's
        assert rows[search.architecture(r.run)]["stages"] == r.run.model.stages
    table = coatsearch.results("ts", studies_dir=study / "studies")
    assert set(table.loc[table.state == "COMPLETE", "architecture"]) >= names


def test_the_report_has_a_search_section(study):
    text = (study / "reports" / "ts" / "report.md").read_text()
    section = text[text.index("## Search") : text.index("## Rankings")]
    assert "The space holds 8 structural points" in section
    assert "points rejected before training" in section and "constraint" in section
    assert "Top architectures found" in section and "best named candidate" in section
    assert "Importance of each dimension" in section and "`model.layout.0`" in section
    assert (study / "reports" / "ts" / "search_history.png").stat().st_size > 0
    assert (study / "reports" / "ts" / "search_slices.png").stat().st_size > 0
    summary = json.loads((study / "reports" / "ts" / "summary.json").read_text())
    importance = summary["search"]["searched"][0]["importance"]
    assert {row[0] for row in importance} == {"model.block.downsample", "model.layout.0", "model.layout.1", "train.lr"}
    assert abs(sum(row[1] for row in importance) - 1.0) < 1e-6  # normalized fANOVA shares


def test_reevaluation_retrains_the_top_architectures_paired_with_the_named_ones(study):
    records = [r for r in _records(study) if r.state == "COMPLETE"]
    search_runs = [r for r in records if r.params["candidate"] == "searched" and r.run.identity.sample < REEVAL]
    named = {search.architecture(r.run) for r in records if r.candidate in ("C-C", "C-T")}
    means: dict[str, list[float]] = {}
    for r in search_runs:
        means.setdefault(search.architecture(r.run), []).append(r.value)
    top2 = sorted(set(means) - named, key=lambda a: -sum(means[a]) / len(means[a]))[:2]  # a named network: itself
    assert top2 and set(means) & named  # the fixture finds a named layout again, and others
    again = [r for r in records if r.run.identity.sample >= REEVAL]
    assert sorted({search.architecture(r.run) for r in again}) == sorted(top2)
    assert sorted(r.seed for r in again) == sorted([1, 2] * len(top2))  # fresh seeds, never the search's seed 0
    assert sorted(r.candidate for r in records if r.seed in (1, 2) and r.candidate != "searched") == [
        "C-C", "C-C", "C-T", "C-T"]  # fmt: skip
    summary = json.loads((study / "reports" / "ts" / "summary.json").read_text())
    paired = summary["search"]["searched"][0]["reevaluation"]
    assert {p["found"] for p in paired} == set(top2) and {p["named"] for p in paired} <= {"C-C", "C-T"}
    tested = [p for p in paired if p["verdict"] != "the same network as"]
    assert tested and all(p["n"] == 2 and p["verdict"] and p["detectable"] > 0 for p in tested)
    for p in paired:  # judged on the test images (eval_acc), never on the trial values the search selected on
        runs = [r for r in again if search.architecture(r.run) == p["found"]]
        assert p["found_mean"] == pytest.approx(100 * statistics.fmean(r.run.number(KEY) for r in runs))
        assert p["found_mean"] != pytest.approx(100 * statistics.fmean(r.value for r in runs))
    named = {
        c: statistics.fmean(r.value for r in records if r.seed in (1, 2) and r.candidate == c) for c in ("C-C", "C-T")
    }
    assert {p["named"] for p in tested} == {max(named, key=named.__getitem__)}  # chosen on the validation images
    text = (study / "reports" / "ts" / "report.md").read_text()
    assert "Re-evaluation (`study.reevaluate`)" in text and "search found `" in text


def test_export_best_loads_back_to_the_same_macs_and_params(study, tmp_path):
    import yaml

    out = tmp_path / "best.yaml"
    assert main(["export", "ts", "--studies-dir", str(study / "studies"), "--best", "2", "--format", "yaml",
                 "--out", str(out)]) == 0  # fmt: skip
    entries = yaml.safe_load(out.read_text())["candidates"]
    doc = yaml.safe_load(SPACE.read_text())
    doc["candidates"] += entries  # pasted into the space they came from
    back = tmp_path / "back.yaml"
    back.write_text(yaml.safe_dump(doc))
    space = coatsearch.load_space(back)
    recorded = {search.architecture(r.run): r.run.model for r in _records(study) if r.run.model is not None}
    for e in entries:
        cand = space.candidate(e["name"])
        model = recorded[e["name"]]
        assert (cand.macs, cand.params, cand.spec.layout) == (model.macs, model.params, model.layout)
        assert coatsearch.count(cand).macs == model.macs


def test_a_trial_builds_from_its_record(study, capsys):
    number = next(r.number for r in _records(study) if r.state == "COMPLETE" and r.params["candidate"] == "searched")
    model = coatsearch.build(study="ts", trial=number, studies_dir=study / "studies")
    recorded = next(r.run.model for r in _records(study) if r.number == number)
    assert sum(p.numel() for p in model.parameters()) == recorded.params
    assert main(["show", "ts", "--trial", str(number), "--studies-dir", str(study / "studies")]) == 0
    out = capsys.readouterr().out
    assert f"trial {number} of study ts: candidate searched" in out and recorded.stages in out


@pytest.mark.parametrize(
    "args, expected",
    [
        (["--best", "99", "--format", "yaml"], "--best 99: study 'ts' holds"),
        (["--format", "yaml"], "--best K goes with --format yaml"),
        (["--best", "1"], "--best K goes with --format yaml"),
    ],
)
def test_bad_export_requests_exit_2_with_nothing_written(study, tmp_path, capsys, args, expected):
    out = tmp_path / "x.yaml"
    assert main(["export", "ts", "--studies-dir", str(study / "studies"), "--out", str(out), *args]) == 2
    assert expected in capsys.readouterr().err and not out.exists()


def test_show_counts_the_architectures_a_space_holds(capsys):
    assert main(["show", str(SPACE), "--all"]) == 0
    out = capsys.readouterr().out
    # C-T and T-T read no downsampling variant (no strided C block): eq5 and dw build one network each
    assert "8 structural points; 4 distinct architectures pass" in out and "2 rejected: constraint" in out
    assert out.count("block.downsample=") == 4


def _fails(tmp_path, text: str, expected: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    proc = subprocess.run([sys.executable, "-m", "coatsearch.cli", "run", str(path), "--studies-dir",
                           str(tmp_path / "studies")], capture_output=True, text=True, cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert expected in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert not (tmp_path / "studies").exists()


@pytest.mark.parametrize(
    "old, new, expected",
    [
        (
            "model.layout.0: {choices: [C, T]}",
            "model.layout.0: {choices: [T]}\n      model.layout.5: {choices: [C]}",
            "stage index '5'",
        ),
        ("model.block.downsample: {choices: [eq5, dw]}", "model.block.nope: {choices: [1, 2]}", "unknown field 'nope'"),
        ("model.block.downsample: {choices: [eq5, dw]}", "model.block.downsample: {choices: []}", "must not be empty"),
        ("model.layout.1: {choices: [C, T]}", "model.layout.1: {choices: [C, X]}", "stage types"),
    ],
)
def test_bad_search_dimensions_exit_2_with_nothing_written(tmp_path, old, new, expected):
    text = SPACE.read_text()
    assert old in text
    _fails(tmp_path, text.replace(old, new), expected)


def test_a_dimension_no_architecture_can_satisfy_exits_2(tmp_path):
    text = SPACE.read_text().replace("model.layout.0: {choices: [C, T]}", "model.layout.0: {choices: [T]}")
    text = text.replace("model.layout.1: {choices: [C, T]}", "model.layout.1: {choices: [C]}")
    _fails(tmp_path, text, "no sampled layout satisfies constraints.conv_before_attention")


def _variant(tmp_path, *edits):
    return tiny_variant(tmp_path, *edits, source=SPACE)


@pytest.mark.parametrize(
    "sampler, cls",
    [("random", "RandomSampler"), ("tpe", "TPESampler"), ("gp", "GPSampler"), ("grid", "RandomSampler")],
)
def test_each_sampler_is_optunas(tmp_path, sampler, cls):
    space = coatsearch.load_space(_variant(tmp_path, ("sampler: tpe", f"sampler: {sampler}"),
                                           ("train.lr: {low: 1.0e-3, high: 1.0e-2, log: true}",
                                            "train.lr: {choices: [1.0e-3, 3.0e-3]}")))  # fmt: skip
    assert type(sampling.sampler(space)).__name__ == cls
    if sampler == "tpe":
        assert sampling.sampler(space)._multivariate and sampling.sampler(space)._group


def test_cmaes_and_nsga2_where_the_space_allows_them(tmp_path):
    only_lr = ("search:\n      model.layout.0: {choices: [C, T]}\n      model.layout.1: {choices: [C, T]}\n"
               "      model.block.downsample: {choices: [eq5, dw]}\n", "search:\n")  # fmt: skip
    space = coatsearch.load_space(_variant(tmp_path, ("sampler: tpe", "sampler: cmaes"), only_lr))
    assert type(sampling.sampler(space)).__name__ == "CmaEsSampler"
    multi = ("study: {seeds: [0],", "study: {objectives: [generalization.eval_acc, generalization.train_loss], "
             "directions: [maximize, minimize], seeds: [0],")  # fmt: skip
    space = coatsearch.load_space(_variant(tmp_path, ("sampler: tpe", "sampler: nsga2"), multi))
    assert type(sampling.sampler(space)).__name__ == "NSGAIISampler"


@pytest.mark.parametrize(
    "sampler, expected",
    [
        ("cmaes", "cmaes samples int and float ranges only, and 'model.layout.0' is a choice list"),
        ("nsga2", "nsga2 is for multi-objective studies"),
        ("grid", "grid needs a finite space, and 'train.lr' is a continuous range"),
        ("annealing", "field 'study.sampler'"),
    ],
)
def test_a_sampler_that_does_not_fit_exits_2(tmp_path, sampler, expected):
    _fails(tmp_path, SPACE.read_text().replace("sampler: tpe", f"sampler: {sampler}"), expected)


def test_grid_takes_every_point_once_per_seed(measured):
    records = store.records(store.load_study(measured, "g"))
    for seed in (0, 1):  # each of the 8 points once per seed: 2 rejected (T-C); the 6 others build 4 networks
        mine = [r for r in records if r.seed == seed]
        points = [tuple(sorted(r.searched().items())) for r in mine]
        assert len(points) == len(set(points)) == 8
        assert sum(r.state == "REJECTED" for r in mine) == 2
        # C-T and T-T read no downsampling option: their eq5 and dw points are one network each, trained once
        assert sum(r.state == "COMPLETE" for r in mine) == 4 and sum(r.state == "REUSED" for r in mine) == 2


def test_the_shipped_layout_search_space_searches_the_paper_choices():
    from coatsearch.space.objects import (
        load_space,  # validated, not solved (the API's load_space solves every candidate)
    )

    root = Path(__file__).resolve().parents[2]
    layout = {"model.layout.1", "model.layout.2", "model.layout.3", "model.depths"}
    block = {"model.block.head_size", "model.block.downsample", "model.block.rel_pos"}
    for profile, paths, size in (("default", layout, 24), ("quick", layout, 24), ("full", layout | block, 192)):
        space = load_space(root / "spaces" / "layout_search.yaml", profile)
        cand = space.candidate("searched")
        assert {d.path for d in cand.dims} == paths and search.size(cand) == size, profile
        assert space.conv_before_attention and space.study.reevaluate is not None
    default = load_space(root / "spaces" / "layout_search.yaml", "default")
    cpu = load_space(root / "spaces" / "paper_layouts.yaml", "default")  # the in-regime proxy: its budget and data
    assert default.candidate("C-C-C-T").definition.budget == cpu.candidate("C-C-C-T").definition.budget
    assert default.study.baselines  # the regime baselines stay on: the search is compared with the fair floor
    paper = load_space(root / "spaces" / "paper_layouts.yaml", "full")  # the joint budget of the full profiles
    budget = paper.candidate("C-C-T-T").definition.budget
    assert space.candidate("C-C-T-T").definition.budget == budget  # the same joint MACs + params budget


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    """The tiny space measured in full by the grid sampler: all 8 points on two seeds (6 trained, 2 rejected)."""
    root = tmp_path_factory.mktemp("grid")
    path = _variant(root, ("sampler: tpe", "sampler: grid"), ("samples: 6", "samples: 8"),
                    ("seeds: [0]", "seeds: [0, 1]"), (", reevaluate: {top: 2, seeds: 2}", ""),
                    ("train.lr: {low: 1.0e-3, high: 1.0e-2, log: true}", "train.lr: {choices: [3.0e-3]}"),
                    ("  - {name: C-C, layout: C-C}\n  - {name: C-T}\n", ""),
                    ("{per_class: 10, epochs: 1}", "{per_class: 2, epochs: 1}"))  # fmt: skip
    coatsearch.run(coatsearch.load_space(path), study="g", workers=1, device="cpu", studies_dir=root / "studies",
                   report=False, progress=False)  # fmt: skip
    return root / "studies"


def test_replay_gives_each_sampler_a_regret_curve(measured, capsys):
    from coatsearch.analysis import replay
    from coatsearch.analysis.measured_table import MeasuredTable

    curves = replay.replay(replay.table("g", measured), ["random", "tpe"], 6, 4)
    for c in curves:
        assert all(m >= 0 and lo <= m <= hi for _, m, lo, hi in c.points)  # the incumbent's regret, over repeats
    full = replay.table("g", measured)
    exact = MeasuredTable(full.candidate, {k: v[:1] for k, v in full.values.items()}, full.rejected, True)
    for c in replay.replay(exact, ["random", "tpe"], 6, 4):  # one value a point: the incumbent never worsens
        means = [m for _, m, _, _ in c.points]
        assert means == sorted(means, reverse=True) and means[0] > 0
    assert main(["replay", "g", "--studies-dir", str(measured), "--trials", "6", "--repeats", "3"]) == 0
    out = capsys.readouterr().out
    # each sampler's regret row, then its best found over the 3 search seeds
    assert "regret" in out and out.count("\nrandom ") == 2 and out.count("\ntpe ") == 2 and "over 3 seeds" in out


def test_an_exported_table_replays_as_the_study_does(measured, tmp_path):
    # benchmarks/bench_search.py replays a committed `export --format csv` table: it must read the same table
    from coatsearch.analysis import replay

    out = tmp_path / "g.csv"
    assert main(["export", "g", "--studies-dir", str(measured), "--format", "csv", "--out", str(out)]) == 0
    from_study, from_csv = replay.table("g", measured), replay.table_from_csv(measured.parent / "space.yaml", out)
    assert from_csv.values == from_study.values and from_csv.rejected == from_study.rejected
    assert len(from_csv.values) == 6 and all(len(v) == 2 for v in from_csv.values.values())
    assert replay.replay(from_csv, ["tpe"], 5, 3) == replay.replay(from_study, ["tpe"], 5, 3)


def test_a_search_not_measured_whole_reads_the_random_baseline_from_the_enumerated_table(measured):
    """A search that measured part of its space takes the random baseline from a study of the same space that
    measured it whole (`coatsearch enumerate`'s), and names it; without one, the note says what is missing."""
    from coatsearch.analysis import search_checks

    space, records = store.read(store.load_study(measured, "g"))
    dropped = {r.params.get("model.layout.0") for r in records if r.searched() and r.state == "COMPLETE"}
    part = [r for r in records if not (r.searched() and r.params.get("model.layout.0") == sorted(dropped)[0])]
    alone = search_checks.random_baseline(space, part, "x", 2, 100.0, True)
    assert alone.baseline is None and "replay needs every point" in alone.note and alone.table == ""
    whole = search_checks.EnumeratedTable("g-enumerate", records)
    got = search_checks.random_baseline(space, part, "x", 2, 100.0, True, whole)
    own = search_checks.random_baseline(space, records, "x", 2, 100.0, True)
    assert got.table == "g-enumerate" and got.baseline is not None and own.baseline is not None
    assert (got.baseline.networks, got.baseline.best) == (own.baseline.networks, own.baseline.best) and own.table == ""


def test_replay_refuses_an_unmeasured_study_or_sampler(study, measured, capsys):
    assert main(["replay", "ts", "--studies-dir", str(study / "studies")]) == 2
    assert "replay needs every point" in capsys.readouterr().err
    assert main(["replay", "g", "--studies-dir", str(measured), "--sampler", "nsga2"]) == 2
    assert "replay takes random, tpe, gp" in capsys.readouterr().err


def test_no_sampled_point_escapes_a_constraint_whichever_path_samples_it():
    from coatsearch.errors import TrialFailed
    from coatsearch.runner.trial import run_item
    from coatsearch.storage.trials import PlanItem

    space = coatsearch.load_space(SPACE)
    cand = space.candidate("searched")
    for point in ({"model.layout.0": "T", "model.layout.1": "C"}, {"model.layout": "T-C"}):
        with pytest.raises(admission.Rejected, match="conv_before_attention"):
            admission.admit(space, cand, point)
        with pytest.raises(TrialFailed, match="rejected before training"):  # an engine that did not admit it
            run_item(space, PlanItem("searched", 0), point, device=None)  # type: ignore[arg-type]
    assert admission.admit(space, cand, {"model.layout.0": "C", "model.layout.1": "T"}).model.layout == "C-T"


def test_save_weights_without_best_exits_2_with_nothing_written(study, tmp_path, capsys):
    out = tmp_path / "x.csv"
    assert main(["export", "ts", "--studies-dir", str(study / "studies"), "--out", str(out), "--save-weights"]) == 2
    assert "--save-weights goes with --best K" in capsys.readouterr().err and not list(tmp_path.iterdir())


@pytest.mark.slow
def test_the_dashboard_history_and_importance_pages_read_the_search(study):
    # optuna-dashboard on the same study: its trial list (history) and its importance API work on a search
    from tests.support.dashboard import free_port, get, start, stop, wait

    port = free_port()
    proc = start(study / "studies", "ts", port)
    try:
        base = f"http://127.0.0.1:{port}"
        [one] = wait(f"{base}/api/studies", proc)["study_summaries"]
        trials = get(f"{base}/api/studies/{one['study_id']}")["trials"]
        importance = get(f"{base}/api/studies/{one['study_id']}/param_importances")["param_importances"]
    finally:
        stop(proc.pid, proc)
    records = _records(study)
    # a rejected point told after a value was measured is Complete to Optuna, with its constraint violated
    ours = store.load_study(study / "studies", "ts").get_trials(deepcopy=False)
    told = [t for t in ours if "rejected" in t.user_attrs and t.state.name == "COMPLETE"]
    complete = sum(r.state == "COMPLETE" for r in records) + len(told)
    assert len(trials) == len(records) and sum(t["state"] == "Complete" for t in trials) == complete
    assert all(t.constraints == {sampling.CONSTRAINT: 1.0} for t in told)
    [shares] = importance  # one objective
    assert {"model.layout.0", "model.layout.1", "model.block.downsample", "train.lr"} <= {s["name"] for s in shares}
    assert abs(sum(s["importance"] for s in shares) - 1.0) < 1e-6


def test_the_plan_counts_and_prices_the_reevaluation_trials(tmp_path, capsys):
    # 2 named + 6 samples on seed 0, then 2 named + the top 2 on fresh seeds 1 and 2: 16 trials, not 8
    args = ["plan", str(SPACE), "--workers", "1", "--device", "cpu", "--studies-dir", str(tmp_path), "--json"]
    assert main(args) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["trials"] == 16 == len(P.plan(coatsearch.load_space(SPACE)))
    per_trial = plan["trial_s"]
    assert plan["study_s"] >= 2 * per_trial["C-C"] + 2 * per_trial["C-T"] + 10 * per_trial["searched"]


def test_block_options_no_block_reads_do_not_make_another_architecture():
    base = "coatnet conv2x16/2 | C1x16/1 C3x40/2 C7x72/2 C1x144/1 |"
    assert search.identity(base + " head_size=16 rel_pos=False") == search.identity(base) == base
    assert search.identity(base + " head_size=8 downsample=dw").endswith("| downsample=dw")  # strided C blocks
    attn = "coatnet conv2x16/2 | C1x16/1 T3x40/2 T7x72/2 T1x144/1 | head_size=8 downsample=dw rel_pos=False"
    assert search.identity(attn).endswith("| head_size=8 rel_pos=False")  # no strided C block: downsample unread
    vit = "vit patch4 | T12x64/1 | head_size=16 expand_ratio=2"
    assert search.identity(vit) == "vit patch4 | T12x64/1 | head_size=16"


def test_a_found_architecture_a_named_candidate_builds_is_that_candidate(study):
    import dataclasses

    from coatsearch.analysis import search_results

    records = [r for r in _records(study) if r.state == "COMPLETE"]
    named = [r for r in records if r.seed in (1, 2) and r.candidate in ("C-C", "C-T")]
    twins = []  # the named C-C runs again as searched re-evaluations, with a head size no conv block reads
    for r in (r for r in named if r.candidate == "C-C"):
        model = dataclasses.replace(r.run.model, structure=r.run.model.structure + " head_size=64")
        ident = dataclasses.replace(r.run.identity, candidate="searched", sample=REEVAL)
        twins.append(dataclasses.replace(r, run=dataclasses.replace(r.run, model=model, identity=ident)))
    [row] = search_results._reevaluation(twins, named, KEY, 100.0, True)
    assert row.verdict == search_results.SAME and row.named == "C-C" and row.p is None and row.n == 0
