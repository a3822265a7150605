"""Trial checkpoints: a trial whose worker is killed resumes from its last checkpoint, to the uninterrupted record."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

import coatsearch
from coatsearch.runner import resume
from coatsearch.storage import store
from coatsearch.storage.trials import PlanItem
from tests.support.checkpoint import EDITS, ROOT, STUDY, fit_under, untimed
from tests.tiny import tiny_variant


def _run(space: Path, studies: Path, study: str) -> None:
    before = torch.get_num_threads()
    torch.set_num_threads(1)  # as the killed run's process (OMP_NUM_THREADS=1): the same float reductions
    try:
        coatsearch.run(coatsearch.load_space(space), study=study, workers=1, device="cpu", studies_dir=studies,
                       report=False, progress=False)  # fmt: skip
    finally:
        torch.set_num_threads(before)


def _complete(studies: Path, study: str):
    [rec] = [r for r in store.records(store.load_study(studies, study)) if r.state == "COMPLETE"]
    return rec


def _kill_after_a_checkpoint(space: Path, studies: Path, study: str) -> Path:
    """Run `coatsearch run` in a process and kill -9 it once its trial wrote a checkpoint; the checkpoint."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    args = [sys.executable, "-m", "coatsearch", "run", str(space), "--study", study, "--studies-dir", str(studies),
            "--workers", "1", "--device", "cpu", "--no-plan", "--no-report", "--quiet"]  # fmt: skip
    proc = subprocess.Popen(args, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    where = resume.folder_of(studies / study, PlanItem("C-T", 0))
    deadline = time.monotonic() + 600
    try:
        while not list(where.glob("fit*.safetensors")):
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else proc.returncode
            assert time.monotonic() < deadline
            time.sleep(0.02)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    return where


@pytest.mark.slow
def test_a_killed_trial_resumes_from_its_checkpoint_to_the_uninterrupted_record(tmp_path):
    space = tiny_variant(tmp_path, *EDITS)
    studies = tmp_path / "studies"
    _run(space, studies, "whole")
    assert not (studies / "whole" / resume.FOLDER / "C-T").exists()  # removed once the trial completed
    where = _kill_after_a_checkpoint(space, studies, "killed")
    assert [r.state for r in store.records(store.load_study(studies, "killed"))] == ["RUNNING"]
    _run(space, studies, "killed")  # the kill is seen, the key runs again and resumes
    whole, again = _complete(studies, "whole"), _complete(studies, "killed")
    [(fit, step)] = [(r["fit"], r["step"]) for r in again.run.extra["resumed"]]
    assert fit == 1 and step >= 20 and step % 20 == 0  # the matched-loss run, from a checkpoint past its start
    assert "resumed" not in whole.run.extra and not where.exists()
    assert untimed(again.run.curves) == untimed(whole.run.curves)  # bit for bit on the CPU
    assert untimed(again.run.metrics) == untimed(whole.run.metrics)
    assert again.value == whole.value


def test_a_run_resumes_from_its_file_to_the_same_history_and_a_bad_file_starts_afresh(pools, tmp_path, capsys):
    from coatsearch.training import checkpoint_policy

    plain, _ = fit_under(pools, None)
    policy = checkpoint_policy.Policy(tmp_path / "c", every=5, min_steps=1)
    first, state = fit_under(pools, policy)  # saves at steps 5 and 10, inside epochs (the runner removes it at the end)
    assert first == plain and state.resumed == [] and (tmp_path / "c" / "fit1.safetensors").exists()
    again, state = fit_under(pools, policy)
    assert again == plain and state.resumed == [{"fit": 1, "step": 10}]
    said = capsys.readouterr().err  # one line says so
    assert f"coatsearch: resumed a training run from {tmp_path / 'c' / 'fit1.safetensors'} at step 10" in said
    (tmp_path / "c" / "fit1.safetensors").write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{damaged")
    damaged, state = fit_under(pools, policy)
    assert damaged == plain and state.resumed == []
    assert "fit1.safetensors: " in capsys.readouterr().err
    other, state = fit_under(pools, policy, seed=1)  # the file holds seed 0's run
    assert state.resumed == [] and other != plain
    assert "belongs to another architecture, seed" in capsys.readouterr().err
    (tmp_path / "c" / "fit1.safetensors").unlink()
    (tmp_path / "c" / "fit1.safetensors").symlink_to(tmp_path / "elsewhere")
    _, state = fit_under(pools, policy)
    assert state.resumed == [] and "symbolic link" in capsys.readouterr().err


def test_a_captured_run_resumes_into_its_slot_in_place_or_into_a_fresh_one(pools, tmp_path, monkeypatch):
    from coatsearch.training import capture, checkpoint_policy

    monkeypatch.setattr(capture, "DEVICES", ("cuda", "cpu"))  # the CPU's stand-in (tests/training/test_capture.py)
    capture.clear()
    try:
        plain, _ = fit_under(pools, None, compile="auto")
        assert plain["compile_mode"] == "captured"
        policy = checkpoint_policy.Policy(tmp_path / "c", every=5, min_steps=1)
        assert fit_under(pools, policy, compile="auto")[0] == plain
        for fresh in (False, True):  # the slot of the last fit (its state copied into), then a new slot
            if fresh:
                capture.clear()
            again, state = fit_under(pools, policy, compile="auto")
            assert again == plain and state.resumed == [{"fit": 1, "step": 10}]
    finally:
        capture.clear()


def _checkpointed(tmp_path: Path, setting: str) -> Path:
    """tiny.yaml with `checkpoint: <setting>`."""
    return tiny_variant(tmp_path, (STUDY, f"{STUDY}\ncheckpoint: {setting}"))


def test_a_trial_keeps_its_checkpoints_on_request_and_otherwise_removes_them(tmp_path):
    from coatsearch.space.objects import load_space

    item = PlanItem("C-T", 0)
    for keep in (False, True):
        space = load_space(_checkpointed(tmp_path, f"{{every: 3, keep: {str(keep).lower()}}}"))
        with resume.trial(space, tmp_path / "s", item) as (done, saves):
            assert saves is not None and saves.policy.every == 3
            where = resume.folder_of(tmp_path / "s", item)
            where.mkdir(parents=True, exist_ok=True)
            (where / "fit1.safetensors").write_bytes(b"")
            assert done(("COMPLETE", None, 1.0)) == ("COMPLETE", None, 1.0)
        assert where.exists() is keep
    with resume.trial(load_space(_checkpointed(tmp_path, "{every: 0}")), tmp_path / "off", item) as (_, saves):
        assert saves is None  # every: 0 saves nothing


@pytest.mark.parametrize(
    "value, words",
    [("{every: -1}", "every"), ("{every: '500'}", "every"), ("{min_steps: 0}", "min_steps"), ("{keep: 1}", "keep"),
     ("{evry: 5}", "evry"), ("500", "checkpoint")],
)  # fmt: skip
def test_a_bad_checkpoint_setting_is_a_one_line_user_error(tmp_path, value, words):
    from coatsearch.errors import UserError
    from coatsearch.space.objects import load_space

    with pytest.raises(UserError) as err:
        load_space(_checkpointed(tmp_path, value))
    assert words in str(err.value) and "\n" not in str(err.value).strip()
