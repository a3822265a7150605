"""The public Python API: cheap import, load/build/count, results as a table, export, status, the README example."""

from __future__ import annotations

import math
import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import coatsearch
from coatsearch import api
from coatsearch.errors import UserError
from tests.report_records import SPACE, failed, layout_records, make_study, record, with_derived

HERE = Path(__file__).parents[1]
TINY = HERE / "spaces" / "tiny.yaml"
README = HERE.parent / "README.md"


def test_import_is_cheap_and_exports_the_api() -> None:
    code = "import sys, coatsearch; print(sorted(m for m in ('torch', 'optuna', 'pandas') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    for name in ("load_space", "build", "count", "plan", "run", "results", "write_report", "status", "export"):
        assert callable(getattr(coatsearch, name)) and getattr(coatsearch, name) is getattr(api, name)


def test_functions_and_modules_have_different_names() -> None:
    import importlib.util
    import types

    import coatsearch.report as R  # the report package, imported by its own name

    assert isinstance(R, types.ModuleType) and callable(R.write_report)
    assert type(coatsearch) is types.ModuleType and coatsearch.report is R  # a plain package, no module-type hack
    assert isinstance(coatsearch.plan, types.FunctionType) and coatsearch.plan is api.plan
    assert isinstance(coatsearch.write_report, types.FunctionType)
    assert importlib.util.find_spec("coatsearch.plan") is None  # the trial grid lives in coatsearch.storage.trials
    clash = [n for n in coatsearch.__all__ if n != "__version__" and importlib.util.find_spec(f"coatsearch.{n}")]
    assert clash == []


def test_load_space_candidates_build_and_count() -> None:
    space = coatsearch.load_space(TINY)
    assert (space.name, space.profile) == ("tiny", "default")
    assert [(c.name, c.layout) for c in space.candidates] == [("C-C", "C-C"), ("C-T", "C-T")]
    for cand in space.candidates:
        counted = coatsearch.count(cand.spec)
        assert (cand.macs, cand.params) == (counted.macs, counted.params)
        assert abs(cand.macs - 400_000) <= 40_000  # the budget band of tiny.yaml
        model = cand.build()
        assert sum(p.numel() for p in model.parameters()) == cand.params
        assert coatsearch.count(model, image_size=16) == counted
        assert coatsearch.count(coatsearch.build(cand.spec), 16) == counted
    with pytest.raises(KeyError, match="candidates: C-C, C-T"):
        space.candidate("nope")
    assert coatsearch.load_space(TINY, profile="quick").profile == "quick"


def test_bad_input_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="unknown backend 'spark'"):
        coatsearch.run(TINY, backend="spark", studies_dir=tmp_path)
    with pytest.raises(UserError, match="allowed: an integer 1..64"):
        coatsearch.run(TINY, workers=0, studies_dir=tmp_path)
    with pytest.raises(UserError, match="no study 'nope'"):
        coatsearch.results("nope", tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_results_one_row_per_trial_with_every_scalar_score(tmp_path: Path) -> None:
    records = layout_records()
    make_study(tmp_path, "fab", SPACE, records)
    table = coatsearch.results("fab", tmp_path)
    assert len(table) == len(records) == 17  # 5 layouts × 3 seeds, one failed, one interrupted
    assert list(table.columns[:6]) == ["number", "state", "value", "candidate", "seed", "sample"]
    assert {"generalization.eval_acc", "generalization.gap", "capacity.train_loss", "macs", "optim.lr"} <= set(table)
    assert not [c for c in table.columns if c.startswith("curves.")]
    assert table["state"].value_counts().to_dict() == {"COMPLETE": 15, "FAIL": 2}
    first = table.iloc[0]
    assert (first["candidate"], first["seed"], first["depths"]) == ("ViT_REL", 0, "1, 3, 7, 1")
    assert first["generalization.eval_acc"] == pytest.approx(0.706)  # mean 0.705 plus seed 0's jitter
    fails = table[table["state"] == "FAIL"]
    assert list(fails["candidate"]) == ["C-C-C-C", "C-T-T-T"]
    assert fails["fail_reason"].iloc[0] == "budget not met: too small" and pd.isna(fails["fail_reason"].iloc[1])
    assert fails["value"].isna().all()


@pytest.mark.parametrize("fmt", ["csv", "parquet", "json"])
def test_export_writes_the_results_table(tmp_path: Path, fmt: str) -> None:
    make_study(tmp_path, "fab", SPACE, layout_records())
    path = coatsearch.export("fab", fmt, tmp_path / "out" / f"fab.{fmt}", studies_dir=tmp_path)
    read = {"csv": pd.read_csv, "parquet": pd.read_parquet, "json": pd.read_json}[fmt]
    back, table = read(path), coatsearch.results("fab", tmp_path)
    assert "h" in set(table["env.host"])  # the study's own records name the machine (failed trials: none)
    assert list(back.columns) == [c for c in table.columns if c != "env.host"] and len(back) == len(table)
    key = "generalization.eval_acc"
    assert back[key].tolist() == pytest.approx(table[key].tolist(), nan_ok=True)
    with pytest.raises(UserError, match="unknown format 'xls'"):
        coatsearch.export("fab", "xls", studies_dir=tmp_path)


def test_status_counts_states_and_estimates_the_time_left(tmp_path: Path) -> None:
    space_file = tmp_path / "tiny3.yaml"
    space_file.write_text(TINY.read_text().replace("study: {seeds: [0]", "study: {seeds: [0, 1, 2]"))
    metrics = with_derived({"generalization.eval_acc": 0.5})
    recs = [record(0, "C-C", 0, metrics), record(1, "C-T", 0, metrics)]  # wall_s 10 and 11
    recs += [failed(2, "C-C", 1, "out of memory on cpu"), failed(3, "C-T", 1, None)]
    study = make_study(tmp_path, "st", {**SPACE, "source": str(space_file), "profile": "default"}, recs)
    running = study.ask()  # one RUNNING, claimed as coatsearch claims (a key and a live worker)
    running.set_user_attr("key", "C-T/seed=1/sample=0")
    running.set_user_attr("worker", {"host": socket.gethostname(), "pid": os.getpid()})
    study.enqueue_trial({"candidate": "C-C", "seed": 2}, user_attrs={"key": "C-C/seed=2/sample=0"})  # one WAITING
    st = coatsearch.status("st", tmp_path)
    assert (st.planned, st.complete, st.failed, st.interrupted, st.pruned) == (6, 2, 1, 1, 0)
    assert (st.running, st.waiting, st.remaining) == (1, 1, 3)
    assert st.mean_wall_s == pytest.approx(10.5) and st.eta_s == pytest.approx(3 * 10.5)
    gone = make_study(tmp_path, "gone", SPACE, recs[:1])  # spaces/fab.yaml does not exist: plan unknown
    assert gone and coatsearch.status("gone", tmp_path).planned is None
    # the space text recorded with the study plans it, wherever the file went (or a relative path points)
    text = space_file.read_text().replace("seeds: [0, 1, 2]", "seeds: [0, 1]")
    kept = {**SPACE, "source": "moved/tiny3.yaml", "profile": "default", "space_yaml": text}
    make_study(tmp_path, "kept", kept, recs[:1])
    assert coatsearch.status("kept", tmp_path).planned == 4


def _readme_python() -> str:
    section = README.read_text(encoding="utf-8").split("## Python API", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert len(blocks) == 1, "the README's Python API section has one python example"
    return blocks[0]


@pytest.mark.slow
def test_readme_python_example_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "tests" / "spaces").mkdir(parents=True)
    shutil.copy(TINY, tmp_path / "tests" / "spaces" / "tiny.yaml")
    monkeypatch.chdir(tmp_path)
    exec(compile(_readme_python(), "README.md", "exec"), {"__name__": "readme"})
    out = capsys.readouterr().out
    assert "2 of 2 trials complete" in out and "C-T" in out
    assert (tmp_path / "studies" / "tiny-api" / "journal.log").exists()
    assert (tmp_path / "reports" / "tiny-api" / "report.md").exists()
    table = coatsearch.results("tiny-api", "studies")
    assert set(table["state"]) == {"COMPLETE"} and all(math.isfinite(v) for v in table["generalization.eval_acc"])


def test_status_shows_a_running_trial_whose_worker_is_gone_as_interrupted(tmp_path: Path, capsys) -> None:
    from coatsearch.cli import main

    space_file = tmp_path / "tiny.yaml"
    space_file.write_text(TINY.read_text())
    study = make_study(tmp_path, "k", {**SPACE, "source": str(space_file), "profile": "default"}, [])
    dead = subprocess.Popen(["true"])
    dead.wait()  # its pid is gone: a worker killed with SIGKILL looks the same
    for pid, key in ((dead.pid, "C-C/seed=0/sample=0"), (os.getpid(), "C-T/seed=0/sample=0")):
        t = study.ask()
        t.set_user_attr("key", key)
        t.set_user_attr("worker", {"host": socket.gethostname(), "pid": pid})
    st = coatsearch.status("k", tmp_path)
    assert (st.running, st.interrupted, st.remaining) == (1, 1, 2)
    assert main(["status", "k", "--studies-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "1 running, 0 waiting of 2 planned (1 interrupted, to rerun: the next `coatsearch run` trains" in out


def test_rays_options_are_one_typed_value_checked_like_the_keywords() -> None:
    import inspect

    from coatsearch import run_study
    from coatsearch.vocab import bounds, run_options

    sources = inspect.getsource(api) + inspect.getsource(run_study) + inspect.getsource(run_options)
    body = inspect.getsource(api.run).split('"""')[2]  # after the docstring
    assert sources.count("RayOptions(") == 1 and "RunOptions(" not in body  # built once, in RunOptions.ray
    assert run_options.RunOptions(address="a", cpus_per_trial=2.0).ray == api.RayOptions("a", 2.0)
    given = api.RayOptions(address="auto", gpus_per_trial=1.0)
    for ray in (given, {"address": "auto", "gpus_per_trial": 1.0}):
        with pytest.raises(bounds.ArgumentError) as caught:
            api.check_backend_args("optuna", "auto", ray)
        assert str(caught.value) == "address, gpus_per_trial: only used with backend='ray' (this run uses optuna)"
    api.check_backend_args("ray", "auto", given)


def test_run_takes_one_options_object_that_the_command_line_builds_too():
    """Each run option is a RunOptions field, declared once: every flag of `coatsearch run` fills one (by its
    destination, or as its `--no-X` negation), and the API's keywords set the same fields."""
    import dataclasses

    from coatsearch.cli import _parser
    from coatsearch.cli_run import _NEGATED, run_options
    from coatsearch.vocab.run_options import NAMES, RunOptions, options_of

    args = _parser().parse_args(["run", "s.yaml", "--study", "x", "--workers", "2", "--trials", "3", "--no-plan",
                                 "--quiet", "--log", "tensorboard", "--device", "cpu"])  # fmt: skip
    built = run_options(args)
    assert built == RunOptions(study="x", workers=2, trials=3, plan_first=False, progress=False, log="tensorboard",
                               device="cpu", profile="default", studies_dir=Path("studies"),
                               reports_dir=Path("reports"))  # fmt: skip
    run_parser = _parser()._subparsers._group_actions[0].choices["run"]  # type: ignore[union-attr]
    dests = {a.dest for a in run_parser._actions} - {"help", "space"}
    assert dests <= set(NAMES) | set(_NEGATED.values()), sorted(dests - set(NAMES) - set(_NEGATED.values()))
    assert options_of(built, {"trials": 5}) == dataclasses.replace(built, trials=5)
    assert options_of(None, {"study": "s"}) == RunOptions(study="s")
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.trials = 1  # type: ignore[misc]


def test_an_unknown_run_option_or_options_object_is_one_line(tmp_path):
    with pytest.raises(UserError, match="run: no option 'workerz'; allowed: study, backend, workers"):
        coatsearch.run(TINY, workerz=2, studies_dir=tmp_path)
    with pytest.raises(UserError, match="options: .* is not allowed; allowed: a coatsearch.RunOptions"):
        coatsearch.run(TINY, {"study": "s"})  # type: ignore[arg-type]
    assert not any(tmp_path.iterdir())
