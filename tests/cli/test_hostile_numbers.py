"""Numbers the DSL, the CLI and the API check alike (one line, exit 2, nothing
written), and resources: workers capped, depth matching bounded, candidate names limited. No training."""

from __future__ import annotations

import math

import pytest

import coatsearch
from coatsearch.budget.match import match
from coatsearch.errors import UserError
from coatsearch.runner import workers
from coatsearch.vocab import specs as S
from tests.support.hostile import deadline, listing, refused
from tests.tiny import TINY, tiny_text, tiny_variant

MO = "study: {seeds: [0], baselines: true, objectives: [generalization.eval_acc, transfer.finetune_acc], "
TRANSFER = (
    "{transfer: {pretrain: {per_class: 10, epochs: 1, classes: [0, 1, 2, 3, 4]}, "
    "finetune: {per_class: 10, max_steps: 2, classes: [5, 6, 7, 8, 9]}}}"
)


def _baselines_cannot_measure() -> str:
    """Candidates that measure transfer, shared scores (what the baselines train) that do not."""
    text = tiny_text(("study: {seeds: [0], baselines: false}", MO + "directions: [maximize, maximize]}"))
    text = text.replace(text[text.index("  transfer:") : text.index("study:")], "")
    both = f"  - {{name: C-C, layout: C-C, scores: {TRANSFER}}}\n  - {{name: C-T, scores: {TRANSFER}}}\n"
    return text.replace("  - {name: C-C, layout: C-C}\n  - {name: C-T}\n", both)


BAD = [
    (("study: {seeds: [0]", "study: {seeds: [0, 0]"), "field 'study.seeds': seed 0 is listed twice"),
    (("study: {seeds: [0]", "study: {seeds: [3, 1, 3]"), "seed 3 is listed twice"),
    (("macs: 0.4M", "macs: '0'"), "field 'budget.macs': '0' is not allowed; allowed: a whole count"),
    (("macs: 0.4M", "macs: 0.5"), "field 'budget.macs': 0.5 is not allowed"),
    (("scale: width}", "scale: width, params: '0'}"), "field 'budget.params': '0' is not allowed"),
    (("scale: width}", "scale: width, params: 0.25}"), "field 'budget.params': 0.25 is not allowed"),
    (("study: {seeds: [0]", "study: {seeds: [0], objectives: [generalization.eval_acc, generalization.eval_acc], "
      "directions: [maximize, minimize]"), "'generalization.eval_acc' is listed twice"),
    (("  - {name: C-T}", "  - {name: C-T, search: {model.block: {choices: [{head_size: 8}, {head_size: 16}]}}}"),
     "dict {'head_size': 8} is not allowed; allowed: numbers, strings"),
    (("  - {name: C-T}", "  - {name: C-T, search: {model.depths: {choices: [[1, {a: 1}], [1, 2]]}}}"),
     "is not allowed; allowed: numbers, strings"),
    (("  - {name: C-T}", "  - {name: " + "C" * 65 + ", layout: C-T}"), "at most 64 characters"),
]  # fmt: skip


@pytest.mark.parametrize("edit, expected", BAD, ids=[b[1][:40] for b in BAD])
def test_bad_numbers_in_a_space_are_one_line(tmp_path, edit, expected):
    path = tiny_variant(tmp_path, edit)
    for command in (["show", str(path)], ["run", str(path), "--workers", "1", "--no-report"]):
        refused(tmp_path, command, expected)


def test_multi_objective_baselines_must_measure_every_objective(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(_baselines_cannot_measure())
    refused(tmp_path, ["show", str(path)], "the regime baseline 'baseline-linear' does not measure 'transfer.finetune")
    path.write_text(_baselines_cannot_measure().replace("baselines: true", "baselines: false"))
    coatsearch.load_space(path)  # without baselines the candidates measure both: fine


@pytest.mark.parametrize("command", ["plan", "run"])
def test_every_candidate_unmatched_is_refused_before_a_journal(tmp_path, command):
    path = tiny_variant(tmp_path, ("budget: {macs: 0.4M, tolerance: 0.1, scale: width}",
                                   "budget: {macs: 50M, tolerance: 0.1, scale: none}"))  # fmt: skip
    refused(tmp_path, [command, str(path), "--workers", "1", "--device", "cpu"], "no candidate meets the budget")


@pytest.mark.parametrize(
    "kwargs, expected",
    [({"budget": math.nan}, "budget: nan is not allowed"), ({"budget": True}, "budget: True is not allowed"),
     ({"budget": math.inf}, "budget: inf is not allowed"),
     ({"budget": 10**9}, "budget: 1000000000 is not allowed; allowed: a finite number > 0 and <= 31,622,400"),
     ({"effect": math.nan}, "effect: nan is not allowed"), ({"effect": 500.0}, "and <= 100"),
     ({"pilot_seeds": True}, "pilot_seeds: True is not allowed"), ({"pilot_seeds": 11}, "an integer 0..10")],
)  # fmt: skip
def test_the_api_plan_checks_numbers_like_the_cli(tmp_path, kwargs, expected):
    with deadline(60), pytest.raises(UserError, match=expected.replace(".", "\\.").replace("(", "\\(")):
        coatsearch.plan(TINY, studies_dir=tmp_path / "studies", reports_dir=tmp_path / "r", device="cpu", **kwargs)
    assert listing(tmp_path) == []


def test_the_cli_plan_says_the_same(tmp_path):
    refused(tmp_path, ["plan", str(TINY), "--effect", "500"], "argument --effect: 500.0 is not allowed")
    refused(tmp_path, ["plan", str(TINY), "--effect", "nan"], "allowed: a finite number > 0 and <= 100")


@pytest.mark.parametrize(
    "kwargs, expected",
    [({"cpus_per_trial": 2.0}, "cpus_per_trial: only used with backend='ray'"),
     ({"address": "auto"}, "address: only used with backend='ray'"),
     ({"backend": "ray", "cpus_per_trial": math.nan}, "cpus_per_trial: nan is not allowed"),
     ({"backend": "ray", "workers": 2}, "workers: only used with backend='optuna'")],
)  # fmt: skip
def test_the_api_run_refuses_what_its_backend_ignores(tmp_path, kwargs, expected):
    with pytest.raises(UserError, match=expected.replace("(", "\\(")):
        coatsearch.run(TINY, studies_dir=tmp_path / "studies", reports_dir=tmp_path / "r", **kwargs)
    assert listing(tmp_path) == []


# ------------------------------------------------------------------------------------------------ 6. resources


def test_workers_are_capped_by_the_trials_left(capsys):
    space = coatsearch.load_space(TINY)  # 2 planned trials
    assert workers.processes(space, 6, None, "cpu", False) == (2, None)
    assert "--workers 6 lowered to 2: 2 trial(s) left" in capsys.readouterr().err
    assert workers.processes(space, 6, None, "cpu", False, done=1) == (1, None)
    assert workers.processes(space, 2, 1, "cpu", False) == (1, None)  # --trials 1
    assert workers.processes(space, 1, None, "cpu", False) == (1, None)
    assert capsys.readouterr().err.count("\n") == 2  # one note per lowered count, none when it fits


def test_workers_are_capped_by_memory(capsys, monkeypatch):
    monkeypatch.setattr(workers, "memory_workers", lambda: 1)
    assert workers.processes(coatsearch.load_space(TINY), 2, None, "cpu", False) == (1, None)
    assert "lowered to 1: memory for 1 (1024 MB each)" in capsys.readouterr().err


@pytest.mark.parametrize("macs", [50_000_000, 10**12])
def test_depth_matching_stays_within_100_blocks_and_is_quick(macs):
    one = S.ModelSpec("m", "vit", 16, 1, 10, S.StemSpec("patch", width=16, patch_size=4),
                      (S.StageSpec("T", 20, 32, 1),), S.BlockSpec(head_size=16))  # fmt: skip
    with deadline(60):
        got = match(one, S.Budget(macs=macs, scale="depth"))
    assert not got.ok and max(s.depth for s in got.spec.stages) <= S.DEPTH_MAX
    assert "largest depth" in got.reason


def test_a_long_candidate_name_through_the_api_is_one_error(tmp_path):
    path = tiny_variant(tmp_path, ("  - {name: C-T}", "  - {name: " + "x" * 200 + ", layout: C-T}"))
    with pytest.raises(UserError, match="at most 64 characters"):
        coatsearch.load_space(path)
