"""What a search is measured against, on fabricated tables with known answers: the random-search baseline and its
regret, Kendall's tau between two rankings, the equal-seeds ranking; the samplers learning rejected points through
Optuna's constraint (TPE, GP, NSGA-II; CMA-ES as the worst value); an unvaried dimension's importance."""

from __future__ import annotations

import re
import warnings
from types import SimpleNamespace

import optuna
import pytest

from coatsearch.analysis import search_stats as SS
from coatsearch.storage import sampling
from tests.tiny import TINY_SEARCH, tiny_variant


def _nets(*means, weights=None):
    return [SS.Network(f"n{i}", (weights or [1] * len(means))[i], (m,)) for i, m in enumerate(means)]


def test_random_baseline_is_the_expected_best_of_k_distinct_draws():
    # best of 2 of {1, 2, 3, 4} drawn without replacement: (2·1 + 3·2 + 4·3) / 6 = 10/3; minimum: 10/6
    up = SS.random_baseline(_nets(1, 2, 3, 4), 2, maximize=True)
    assert up.ci[0] <= 10 / 3 <= up.ci[1] and up.ci[1] - up.ci[0] < 0.1
    assert up.best == 4 and up.regret == pytest.approx(4 - up.mean) and up.networks == 4
    down = SS.random_baseline(_nets(1, 2, 3, 4), 2, maximize=False)
    assert down.ci[0] <= 10 / 6 <= down.ci[1] and down.best == 1 and down.regret == pytest.approx(down.mean - 1)
    whole = SS.random_baseline(_nets(1, 2, 3, 4), 9, maximize=True)  # more trials than networks: all of them
    assert whole.mean == whole.ci[0] == whole.ci[1] == 4 and whole.regret == 0 and whole.spread == (4, 4)


def test_random_baseline_weights_networks_by_their_points_and_reads_one_seed():
    # n1 is built by 3 points of 4: one draw finds it 3 times in 4 -> 0.75·1 + 0.25·2 = 1.25
    one = SS.random_baseline(_nets(1, 2, weights=[3, 1]), 1, maximize=True)
    assert one.ci[0] <= 1.25 <= one.ci[1]
    # both drawn; a's seeds read 0 or 10 (mean 5), b's 6: the incumbent is b half the time -> 0.5·6 + 0.5·5
    noisy = [SS.Network("a", 1, (0.0, 10.0)), SS.Network("b", 1, (6.0, 6.0))]
    both = SS.random_baseline(noisy, 2, maximize=True)
    assert both.ci[0] <= 5.5 <= both.ci[1] and both.best == 6 and both.regret_of(5.0, True) == 1.0
    with pytest.raises(ValueError):
        SS.random_baseline([], 1, True)


def test_networks_of_a_table_merge_twin_points():
    nets = SS.networks({(1,): "A", (2,): "A", (3,): "B"}, {(1,): [0.5], (2,): [0.5], (3,): [0.7]})
    assert [(n.name, n.weight, n.values) for n in nets] == [("A", 2, (0.5,)), ("B", 1, (0.7,))]


def test_kendall_tau_on_known_rankings():
    a = {f"n{i}": float(i) for i in range(6)}
    same = SS.kendall(a, {k: 2 * v for k, v in a.items()})
    assert same is not None and same.tau == pytest.approx(1.0) and same.n == 6
    back = SS.kendall(a, {k: -v for k, v in a.items()})
    assert back is not None and back.tau == pytest.approx(-1.0)
    swapped = dict(a, n4=5.0, n5=4.0)  # one discordant pair of 15
    tau = SS.kendall(a, swapped)
    assert tau is not None and tau.tau == pytest.approx(13 / 15) and tau.ci is not None
    assert -1 <= tau.ci[0] < tau.tau < tau.ci[1] <= 1 and 0 < tau.p < 0.05
    assert SS.kendall(a, {"n0": 1.0, "n1": 2.0}) is None  # under 3 networks in common
    assert SS.kendall({"x": 1.0, "y": 2.0, "z": 3.0, "w": 4.0}, {"x": 1.0, "y": 2.0, "z": 3.0, "w": 4.0}).ci is None


def test_the_ranking_compares_networks_on_equal_seeds():
    # a lucky single run never outranks a network measured on every seed
    by_seed = {"lucky": {0: 0.99}, "steady": {0: 0.80, 1: 0.82}, "weak": {0: 0.50, 1: 0.52}}
    assert SS.rank(by_seed, maximize=True) == ["steady", "weak", "lucky"]
    assert SS.rank(by_seed, maximize=False) == ["weak", "steady", "lucky"]


DISTS = {"a": optuna.distributions.CategoricalDistribution(["x", "y", "z", "w"]),
         "b": optuna.distributions.CategoricalDistribution(["p", "q", "r", "s"])}  # fmt: skip


def _study(name: str, n: int, objectives: int = 1) -> optuna.Study:
    """`n` trials of a sampler on a space where a = x is refused (told as a study tells a rejected point)."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        study = optuna.create_study(directions=["maximize"] * objectives, sampler=sampling.make_sampler(name, 0))
        for _ in range(n):
            t = study.ask(DISTS)
            if t.params["a"] == "x":
                t.set_user_attr("rejected", "constraint: conv after attention")
                sampling.tell_rejected(study, t)
                continue
            sampling.constrain(t, False)
            value = {"y": 0.5, "z": 0.6, "w": 0.7}[t.params["a"]] + 0.01 * "pqrs".index(t.params["b"])
            study.tell(t, [value] * objectives)
    return study


def _rejected(study: optuna.Study) -> list[optuna.trial.FrozenTrial]:
    return [t for t in study.trials if "rejected" in t.user_attrs]


@pytest.mark.parametrize("name", ["gp", "nsga2", "tpe"])
def test_the_samplers_see_the_rejections(name):
    # GP and NSGA-II read complete trials only: a rejected point after the first measurement is one of them, at the
    # worst value, marked infeasible by Optuna's constraint; TPE reads its constraint too
    study = _study(name, 12, objectives=2 if name == "nsga2" else 1)
    rejected = _rejected(study)
    done = [t for t in study.trials if t.state.name == "COMPLETE" and "rejected" not in t.user_attrs]
    first = min(t.number for t in done)  # before any measured value a rejected point is told PRUNED
    assert all(t.state.name == ("PRUNED" if t.number < first else "COMPLETE") for t in rejected)
    later = [t for t in rejected if t.state.name == "COMPLETE"]
    assert later and all(t.constraints == {sampling.CONSTRAINT: 1.0} for t in rejected)
    for t in later:  # told the worst value measured before it
        before = [d.values[0] for d in done if d.number < t.number]
        assert t.values[0] == min(before)
    assert all(t.constraints == {sampling.CONSTRAINT: 0.0} for t in done)
    feasible = optuna.study._constrained_optimization._get_feasible_trials(study.get_trials(states=[
        optuna.trial.TrialState.COMPLETE]))  # fmt: skip
    assert len(feasible) == len(done)  # what the samplers' constrained code paths split on


def test_cmaes_reads_a_rejected_point_as_the_worst_value():
    # CMA-ES has no constraint model: the rejected point is a complete trial at the worst value measured so far
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="maximize", sampler=sampling.make_sampler("cmaes", 0))
    dist = {"x": optuna.distributions.IntDistribution(0, 9)}
    for _ in range(8):
        t = study.ask(dist)
        if t.params["x"] >= 7:
            t.set_user_attr("rejected", "budget not met")
            sampling.tell_rejected(study, t)
        else:
            sampling.constrain(t, False)
            study.tell(t, float(t.params["x"]))
    told = [t for t in _rejected(study) if t.state.name == "COMPLETE"]
    measured = [t for t in study.trials if "rejected" not in t.user_attrs]
    assert told and all(t.values[0] == min(m.values[0] for m in measured if m.number < t.number) for t in told)
    assert all(t.constraints == {} for t in study.trials)  # CMA-ES reads none: none is recorded


def test_an_old_study_without_the_constraint_keeps_pruning_rejections():
    # a study begun before the constraint was recorded: GP refuses a mix, so rejections stay PRUNED there
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="maximize")
    study.add_trial(optuna.trial.create_trial(params={}, distributions={}, value=0.5))
    assert not sampling.constrained(study)
    t = study.ask()
    sampling.tell_rejected(study, t)
    assert study.trials[-1].state.name == "PRUNED" and study.trials[-1].constraints == {}


def test_an_unvaried_dimension_has_undefined_importance():
    from coatsearch.analysis import search_results
    from coatsearch.report import markdown_search

    dims = [SimpleNamespace(path="model.layout.0", kind="choice", choices=["C", "T"], low=None, high=None),
            SimpleNamespace(path="model.layout.1", kind="choice", choices=["C", "T"], low=None, high=None)]  # fmt: skip
    cand = SimpleNamespace(dims=dims)
    done = [SimpleNamespace(params={"model.layout.0": k, "model.layout.1": "C"}, value=v)
            for k, v in (("C", 0.7), ("T", 0.5), ("C", 0.72), ("T", 0.48))]  # fmt: skip
    rows = dict((p, (m, sd)) for p, m, sd in search_results._importance(cand, done, True))
    assert rows["model.layout.1"] == (None, None) and rows["model.layout.0"][0] == pytest.approx(1.0)
    held = [SimpleNamespace(params={"model.layout.0": "C", "model.layout.1": "C"}, value=v) for v in (0.7, 0.6, 0.5)]
    assert all(m is None for _, m, _ in search_results._importance(cand, held, True))
    assert markdown_search.UNDEFINED == "undefined (never varied)"


SPACE = TINY_SEARCH


def _enumerate(tmp_path, capsys, *edits):
    from coatsearch.cli import main

    tiny_variant(tmp_path, *edits, source=SPACE)
    args = ["enumerate", str(tmp_path / "space.yaml"), "--studies-dir", str(tmp_path / "s"), "--reports-dir",
            str(tmp_path / "r"), "--quiet"]  # fmt: skip
    code = main(args)
    err = capsys.readouterr().err.strip()
    return code, err


LR = "train.lr: {low: 1.0e-3, high: 1.0e-2, log: true}"


def test_enumerate_refuses_an_infinite_or_oversized_space_in_one_line(tmp_path, capsys):
    code, err = _enumerate(tmp_path, capsys)  # train.lr is a continuous range
    assert code == 2 and len(err.splitlines()) == 1 and "train.lr is continuous" in err and "infinitely" in err
    wide = ("{choices: [eq5, dw]}", "{choices: [eq5, dw]}\n      model.block.head_size: {choices: [8, 16]}")
    code, err = _enumerate(tmp_path, capsys, (LR, "train.batch_size: {low: 1, high: 8000}"), wide)
    assert code == 2 and len(err.splitlines()) == 1
    assert "holds 128000 points (16 structural, so at most 16 networks)" in err and "at most 10000 points" in err
    assert not (tmp_path / "s").exists() and not (tmp_path / "r").exists()  # nothing written


def test_enumerate_plans_every_point_once_per_seed_with_the_grid():
    import coatsearch
    from coatsearch.cli_search import enumerated

    text = SPACE.read_text().replace(LR, "train.lr: {choices: [3.0e-3]}")
    path = __import__("tempfile").mkdtemp()
    (p := __import__("pathlib").Path(path) / "space.yaml").write_text(text)
    space = enumerated(coatsearch.load_space(p), str(p))
    assert (space.study.sampler, space.study.samples, space.study.reevaluate) == ("grid", 8, None)


def test_replay_refuses_a_repeat_count_of_zero(capsys):
    from coatsearch.analysis import replay
    from coatsearch.cli import main
    from coatsearch.errors import UserError

    with pytest.raises(SystemExit) as stop:
        main(["replay", "any", "--repeats", "0"])
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--repeats" in err
    with pytest.raises(UserError, match="at least 2 repeats"):
        replay.replay(SimpleNamespace(), ["random"], 5, 0)


def test_successive_halving_on_a_table_of_curves_with_known_answers():
    from coatsearch.analysis import fidelity

    honest = {f"n{i:02d}": [[i / 12] * 8] for i in range(12)}  # early points rank as the final ones do
    for pruner in fidelity.PRUNERS:
        f = fidelity.measure(honest, pruner, 12, 20, maximize=True)
        assert f.same_best == 1.0 and 0 < f.cost < 1  # the best is never pruned; the others stop early
    liars = {f"n{i:02d}": [[1 - i / 12] * 7 + [i / 12]] for i in range(12)}  # early ranking reversed
    f = fidelity.measure(liars, "sha", 12, 20, maximize=True)
    assert f.same_best < 1.0
    assert "same best as full fidelity" in fidelity.text([f])
    with pytest.raises(fidelity.UserError):
        fidelity.measure(honest, "median", 12, 20, True)


def test_a_point_that_reuses_a_named_candidates_run_reads_its_value(tmp_path):
    """An enumerated space whose named candidates build some of its networks: the points that reuse a named run
    are measured (before, such a table read as incomplete and neither replay nor the random baseline ran)."""
    from coatsearch.analysis.measured_table import table_from_rows
    from coatsearch.space.objects import load_space

    tiny_variant(tmp_path, (LR, "train.lr: {choices: [3.0e-3]}"), source=SPACE)
    space = load_space(tmp_path / "space.yaml")
    rows, number = [], 0

    def row(cand, point, state, value=None, reuse=None, net=""):
        nonlocal number
        dims = dict(zip(("model.layout.0", "model.layout.1", "model.block.downsample"), point, strict=False))
        params = {"candidate": cand, "seed": 0, **dims}
        rows.append((params, state, value, None, number, reuse, net))
        number += 1
        return number - 1

    named = row("C-C", (), "COMPLETE", 0.5, net="C-C_net")
    first = row("searched", ("C", "T", "eq5"), "COMPLETE", 0.7, net="C-T_net")
    for ds in ("eq5", "dw"):
        row("searched", ("C", "C", ds), "REUSED", reuse=named)
        row("searched", ("T", "C", ds), "REJECTED")
        row("searched", ("T", "T", ds), "COMPLETE", 0.6, net=f"T-T_{ds}")
    row("searched", ("C", "T", "dw"), "REUSED", reuse=first)
    table = table_from_rows(space, rows, "the study")
    cc = [(ds, "C", "C") for ds in ("eq5", "dw")]  # a point's key follows the dims' order: downsample, layouts
    assert table.values[cc[0]] == table.values[cc[1]] == [0.5]  # the named run's value, on its seed
    assert table.networks[cc[1]] == "C-C_net" and len(table.values) == 6 and len(table.rejected) == 2


def test_the_random_baseline_is_also_given_at_smaller_budgets():
    from coatsearch.analysis.search_checks import budgets

    assert budgets(12, 24) == (1, 2, 4, 8) and budgets(12, 4) == (1, 2, 8) and budgets(1, 1) == ()
    nets = _nets(1.0, 2.0, 3.0, 4.0)
    regrets = [SS.random_baseline(nets, k, True).regret for k in budgets(4, 4)]
    assert regrets == sorted(regrets, reverse=True) and regrets[0] > 0  # more trials, less regret


def test_a_sampled_architecture_is_not_a_hyperparameter_sample():
    """The EDF of hyperparameter stability (the ViT paper's) reads train.* samples; model.* samples pick networks."""
    from coatsearch.papers import optim

    recs = [SimpleNamespace(params={"candidate": "s", "model.layout.1": "C", "train.lr": 0.1}),
            SimpleNamespace(params={"candidate": "s", "model.depths": [1, 3]})]  # fmt: skip
    assert optim.search_dims(recs) == ["train.lr"] and optim.search_dims(recs[1:]) == []


def test_a_finished_enumerate_study_has_no_trials_left_and_says_what_was_not_trained(tmp_path, capsys):
    """status plans from what ran (the grid of every point, no re-evaluation), not from the space file's search."""
    from coatsearch.cli import main

    code, err = _enumerate(tmp_path, capsys, (LR, "train.lr: {choices: [3.0e-3]}"))
    assert code == 0, err
    assert main(["status", "tiny_search-enumerate", "--studies-dir", str(tmp_path / "s")]) == 0
    out = capsys.readouterr().out
    assert "remaining 0 trials" in out and "ETA 0 s" in out
    counts = [int(n) for n in re.findall(r"(\d+) (?:completed|reused|rejected)", out)]
    planned = int(re.search(r"of (\d+) planned", out).group(1))
    assert sum(counts) == planned == 10  # 2 named + 8 grid points on one seed: each trained, reused or refused
    assert "reused" in out and "rejected" in out  # C-C and C-T points reuse the named runs; T-C breaks a constraint
