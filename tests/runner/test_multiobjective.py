"""Multi-objective studies: study.objectives runs an Optuna multi-objective study; a Pareto front."""

from __future__ import annotations

import optuna
import pytest

from coatsearch import api
from coatsearch.cli import main
from coatsearch.runner import optuna_backend as engine
from coatsearch.space.objects import load_space
from coatsearch.storage import store
from tests.tiny import tiny_text

STUDY = "study: {seeds: [0], baselines: false}"
MULTI = (
    "study: {seeds: [0], baselines: false, objectives: [generalization.eval_acc, speed.infer_latency_ms], "
    "directions: [maximize, minimize]}"
)
GEN = "scores:\n  generalization: {per_class: 20, epochs: 2}\n"
SPEED = (GEN, GEN + "  speed: {infer_batch: 16, warmup: 1, repeats: 3, latency_repeats: 4}\n")


def _space(tmp_path, study: str = MULTI, *edits) -> str:
    path = tmp_path / "multi.yaml"
    path.write_text(tiny_text((STUDY, study), SPEED, *edits))
    return str(path)


@pytest.mark.slow
def test_multi_objective_study_reports_a_pareto_front(tmp_path):
    space = load_space(_space(tmp_path))
    studies, reports = tmp_path / "studies", tmp_path / "reports"
    summary = engine.run(space, studies, "m", progress=False)
    assert (summary.complete, summary.failed) == (2, 0)
    study = store.load_study(studies, "m")
    assert study.directions == [optuna.study.StudyDirection.MAXIMIZE, optuna.study.StudyDirection.MINIMIZE]
    done = study.get_trials(states=[optuna.trial.TrialState.COMPLETE])
    for t in done:
        run = store.record(t).run
        assert t.values == [
            run.value("generalization.val_acc"),
            run.value("speed.infer_latency_ms"),
        ]  # chosen on validation
    text = api.write_report("m", studies, reports).markdown.read_text()
    assert "## Pareto front" in text and "## Measured speed" in text
    front_line = next(line for line in text.splitlines() if line.startswith("Multi-objective study:"))
    best = {t.params["candidate"] for t in study.best_trials}  # one trial per candidate: Optuna's own front
    assert best and all(name in front_line.split("on the front:")[1] for name in best)


def test_pruning_a_multi_objective_study_is_refused(tmp_path, capsys):
    path = _space(tmp_path, MULTI.replace("baselines: false,", "baselines: false, pruner: median,"))
    assert main(["show", path]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "field 'study.pruner'" in err and "multi-objective" in err


def test_objectives_need_one_direction_each(tmp_path, capsys):
    assert main(["show", _space(tmp_path, MULTI.replace("directions: [maximize, minimize]", "directions: [maximize]"))])
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "one direction" in err and "multi.yaml:" in err


def test_every_objective_must_be_measured(tmp_path, capsys):
    path = _space(tmp_path, MULTI.replace("speed.infer_latency_ms", "speed.nonsense"))
    assert main(["show", path]) == 2
    err = capsys.readouterr().err.strip()
    assert "study.objectives[1]" in err and "does not measure 'speed.nonsense'" in err


def test_single_objective_study_is_unchanged(tmp_path):
    space = load_space(_space(tmp_path, STUDY))
    assert space.study.objectives == () and space.study.keys == ("generalization.eval_acc",)
    study = store.create_study(space, tmp_path, "one")
    assert study.directions == [optuna.study.StudyDirection.MAXIMIZE]
