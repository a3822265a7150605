"""Live tracking of trials: TensorBoard event files and an MLflow store in the study folder, read back."""

from __future__ import annotations

from pathlib import Path

import pytest

import coatsearch
from coatsearch.cli import main
from coatsearch.errors import UserError
from coatsearch.runner import tracking
from coatsearch.storage import store
from coatsearch.storage.trials import PlanItem
from coatsearch.training.point import Point

TINY = Path(__file__).resolve().parents[1] / "spaces" / "tiny.yaml"


def _run(tmp_path: Path, log: str, workers: int = 1) -> tuple[Path, list]:
    studies = tmp_path / "studies"
    coatsearch.run(coatsearch.load_space(TINY), study="t", workers=workers, device="cpu", studies_dir=studies,
                   report=log == "mlflow", reports_dir=tmp_path / "reports", progress=False, log=log)  # fmt: skip
    return studies / "t", store.records(store.load_study(studies, "t"))


def _curve(rec, score: str) -> tuple[list[int], list[float]]:
    c = rec.run.curve(score)
    return list(c.step), list(c.train_loss)


def test_tensorboard_holds_each_trials_curves_hparams_and_final_metrics(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    folder, records = _run(tmp_path, "tensorboard", workers=2)
    runs = sorted(p.name for p in (folder / "tensorboard").iterdir())
    assert runs == sorted(tracking.run_name(PlanItem(r.run.identity.candidate, r.run.identity.seed), r.number)
                          for r in records)  # fmt: skip
    for r in records:
        ea = EventAccumulator(str(folder / "tensorboard" / tracking.run_name(PlanItem(r.params["candidate"], 0),
                                                                             r.number)))  # fmt: skip
        ea.Reload()
        steps, losses = _curve(r, "generalization")
        got = ea.Scalars("generalization/train_loss")
        assert [e.step for e in got] == steps
        assert [e.value for e in got] == pytest.approx(losses, rel=1e-6)  # float32 in the event file
        assert {"generalization/eval_acc", "generalization/lr", "transfer/train_loss"} <= set(ea.Tags()["scalars"])
        assert "architecture" in "".join(ea.Tags()["tensors"])


def test_mlflow_holds_one_run_per_trial_in_the_studys_experiment(tmp_path):
    """Read back in a fresh process with the plain client and no MLflow setting (the default store is SQLite)."""
    import json
    import os
    import subprocess
    import sys

    folder, records = _run(tmp_path, "mlflow", workers=2)
    assert (folder / "mlflow.db").is_file() and not (folder / "mlruns").exists() and not Path("mlruns").exists()
    read = """if True:
        import json, sys
        from mlflow.tracking import MlflowClient
        client = MlflowClient(tracking_uri=sys.argv[1])
        exp = client.get_experiment_by_name("t")
        out = {}
        for run in client.search_runs([exp.experiment_id]):
            hist = client.get_metric_history(run.info.run_id, "generalization/train_loss")
            out[run.info.run_name] = {"status": run.info.status, "tags": run.data.tags, "params": run.data.params,
                "metrics": run.data.metrics, "steps": [m.step for m in hist], "losses": [m.value for m in hist],
                "artifacts": sorted(a.path for a in client.list_artifacts(run.info.run_id))}
        print(json.dumps(out))
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}  # no MLFLOW_ALLOW_FILE_STORE
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    done = subprocess.run([sys.executable, "-c", read, uri], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    runs = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(runs) == len(records) + 1 == 3  # a run per trial, and the report's
    for r in records:
        run = runs[tracking.run_name(PlanItem(r.params["candidate"], 0), r.number)]
        assert run["status"] == "FINISHED" and run["tags"]["candidate"] == r.params["candidate"]
        assert run["params"]["layout"] == r.run.model.layout and run["params"]["seed"] == "0"
        steps, losses = _curve(r, "generalization")
        assert run["steps"] == steps and run["losses"] == pytest.approx(losses)
        acc = r.run.metrics["generalization"]["eval_acc"]
        assert run["metrics"]["final/generalization.eval_acc"] == pytest.approx(acc)
    report = runs[tracking.REPORT_RUN]
    written = sorted(p.name for p in (tmp_path / "reports" / "t").iterdir() if p.suffix in (".md", ".json", ".png"))
    assert report["artifacts"] == written and "report.md" in written and any(n.endswith(".png") for n in written)


def test_mlflow_follows_the_tracking_uri_flag_and_the_standard_variable(tmp_path, monkeypatch):
    from mlflow.tracking import MlflowClient

    space = coatsearch.load_space(TINY)
    folder = tmp_path / "s" / "t"
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    assert tracking.mlflow_uri(folder) == f"sqlite:///{folder.resolve() / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'team.db'}")
    assert tracking.mlflow_uri(folder) == f"sqlite:///{tmp_path / 'team.db'}"
    assert tracking.mlflow_uri(folder, "http://mlflow.team:5000") == "http://mlflow.team:5000"  # the flag wins
    flag = f"sqlite:///{tmp_path / 'flag.db'}"
    args = ["run", str(TINY), "--study", "t", "--studies-dir", str(tmp_path / "s"), "--reports-dir",
            str(tmp_path / "r"), "--log", "mlflow", "--tracking-uri", flag, "--no-plan", "--quiet", "--workers", "1",
            "--device", "cpu"]  # fmt: skip
    assert main(args) == 0
    client = MlflowClient(tracking_uri=flag)
    exp = client.get_experiment_by_name("t")
    names = {r.info.run_name for r in client.search_runs([exp.experiment_id])}
    assert len(names) == 3 and tracking.REPORT_RUN in names
    assert not (folder / "mlflow.db").exists() and not (tmp_path / "team.db").exists()
    assert (folder / "mlartifacts").is_dir() and not (tmp_path / "mlruns").exists()  # a local store: the study's
    assert space.tracking_uri is None


def test_points_are_written_while_the_trial_trains(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    space = coatsearch.load_space(TINY)
    tb = tracking.TensorBoard(tmp_path / "run", {"candidate": "C-C"}, 0.003)
    tb.point("generalization", 5, Point(5, 1.5, 0.4, 1.6, 0.3, 0.5))
    ea = EventAccumulator(str(tmp_path / "run"))
    ea.Reload()  # before the run ends
    assert [(e.step, e.value) for e in ea.Scalars("generalization/train_loss")] == [(5, 1.5)]
    assert ea.Scalars("generalization/lr")[0].value == pytest.approx(0.0015)
    assert space.log == "none"


def test_a_backend_whose_extra_is_missing_is_one_line_with_nothing_written(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(tracking.importlib.util, "find_spec", lambda name: None)
    args = ["run", str(TINY), "--studies-dir", str(tmp_path / "s"), "--log", "mlflow", "--no-plan", "--quiet"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--log mlflow: needs the mlflow extra: pip install 'coatsearch[mlflow]'" in err
    assert not (tmp_path / "s").exists()
    bad = tmp_path / "space.yaml"
    bad.write_text(TINY.read_text() + "log: tensorboard\n")
    assert main(["run", str(bad), "--studies-dir", str(tmp_path / "s"), "--no-plan", "--quiet"]) == 2
    assert "log tensorboard: needs the tensorboard extra" in capsys.readouterr().err
    assert not (tmp_path / "s").exists()


def test_log_in_the_space_file_is_read_and_is_not_the_spaces_identity(tmp_path):
    from coatsearch.storage.trials import space_form

    path = tmp_path / "space.yaml"
    path.write_text(TINY.read_text() + "log: mlflow\n")
    tracked, plain = coatsearch.load_space(path), coatsearch.load_space(TINY)
    assert (tracked.log, plain.log) == ("mlflow", "none")
    assert space_form(tracked) == space_form(plain)  # turning tracking on or off continues the study
    path.write_text(TINY.read_text() + "log: wandb\n")
    with pytest.raises(UserError, match="field 'log': Input should be 'none', 'tensorboard' or 'mlflow'"):
        coatsearch.load_space(path)


@pytest.mark.slow
def test_ray_trials_are_tracked_in_the_study_folder_too(tmp_path):
    import dataclasses

    import ray
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from coatsearch.runner import ray_backend

    space = dataclasses.replace(coatsearch.load_space(TINY), log="tensorboard")
    ray_backend.run(space, tmp_path, "t", progress=False)
    assert not ray.is_initialized()
    for r in store.records(store.load_study(tmp_path, "t")):
        ea = EventAccumulator(str(tmp_path / "t" / "tensorboard" / tracking.run_name(PlanItem(r.params["candidate"], 0),
                                                                                       r.number)))  # fmt: skip
        ea.Reload()
        steps, losses = _curve(r, "generalization")
        got = ea.Scalars("generalization/train_loss")
        assert [e.step for e in got] == steps and [e.value for e in got] == pytest.approx(losses, rel=1e-6)
