"""The run record: typed fields, JSON round trip, and the one migration-on-read of older journals (7eb0683, b1c4749)."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from coatsearch.report import render, summarize
from coatsearch.scores.base import Measured
from coatsearch.storage import record as R
from coatsearch.storage import record_flat, store
from coatsearch.storage.record import TrialRecord
from coatsearch.training.point import Curve, RunCurve

DATA = Path(__file__).parents[1] / "data"
OLD = {  # `coatsearch run tests/spaces/tiny.yaml --profile quick` with that commit's code: flat attributes
    "7eb0683": DATA / "journal_7eb0683",
    "b1c4749": DATA / "journal_b1c4749",
}


def _flat(journal: Path) -> list[dict]:
    """Each trial's user attributes as the journal wrote them (one append per attribute)."""
    attrs: dict[int, dict] = {}
    for line in journal.read_text().splitlines():
        op = json.loads(line)
        if op["op_code"] == 8:  # SET_TRIAL_USER_ATTR
            attrs.setdefault(op["trial_id"], {}).update(op["user_attr"])
    return [attrs[k] for k in sorted(attrs)]


@pytest.mark.parametrize("commit", sorted(OLD))
def test_an_older_journal_opens_as_typed_records(tmp_path, commit):
    shutil.copytree(OLD[commit], tmp_path / "studies")
    study = store.load_study(tmp_path / "studies", "tiny-quick")
    recs = store.records(study)
    flat = _flat(tmp_path / "studies" / "tiny-quick" / "journal.log")
    assert [r.state for r in recs] == ["COMPLETE", "COMPLETE"] and len(flat) == 2
    for r, a in zip(recs, flat, strict=True):
        run = r.run
        assert run.version == 1 and run.identity == R.Identity(a["candidate"], a["seed"], a["sample"], a["key"])
        assert run.model is not None and (run.model.layout, run.model.macs) == (a["layout"], a["macs"])
        assert run.model.depths == tuple(a["depths"]) and run.label == a["model_label"]
        assert run.optimizer is not None and run.optimizer.name == a["optim"]["optimizer"]
        assert run.environment is not None and run.environment.versions["torch"] == a["env"]["versions"]["torch"]
        assert run.environment.device == a["device"] and run.wall_s == a["wall_s"]
        metric_keys = sorted(k for k in a if "." in k and not k.startswith("curves."))
        assert sorted(run.keys()) == metric_keys and all(run.value(k) == a[k] for k in metric_keys)
        assert sorted(run.curves) == sorted(k[7:] for k in a if k.startswith("curves."))
        assert list(run.curve("generalization").eval_acc) == a["curves.generalization"]["eval_acc"]
        assert run.objective == a["objective"] and r.value == run.value(run.objective)
        assert run.extra == {}  # every flat attribute has its place in the record


@pytest.mark.parametrize("commit", sorted(OLD))
def test_a_migrated_record_written_back_as_one_attribute_reports_the_same(tmp_path, commit):
    shutil.copytree(OLD[commit], tmp_path / "studies")
    study = store.load_study(tmp_path / "studies", "tiny-quick")
    space, old = store.read(study)
    new = [dataclasses.replace(r, run=R.read({R.ATTR: R.to_json(r.run)}, r.state, r.params)) for r in old]
    assert [n.run for n in new] == [o.run for o in old]  # the record, written and read back, is the same
    assert render(summarize("s", space, old), {}) == render(summarize("s", space, new), {})


def test_the_json_round_trip_keeps_every_field():
    measured = {"generalization.eval_acc": 0.8, "length.epochs": [2, 4], "curves.generalization": {"step": [0, 1]}}
    model = R.Model("C-T", "coatnet", "C-T", "conv", "C1x16/1 T1x32/2", (1, 1), (16, 32), ("4x4",), 10, 20, 21, -0.05)
    env = R.Environment("cpu", "h", 7, versions={"torch": "2"})
    optim, key = R.optimizer({"optimizer": "sgd", "lr": 0.1}), "generalization.eval_acc"
    run = R.completed(R.Identity("C-T", 1, 0, "k"), model, Measured.from_json(measured), optim, wall_s=3.0,
                      environment=env, objective=key)  # fmt: skip
    back = R.from_json(json.loads(json.dumps(R.to_json(run))))
    assert back == run and back.value("length.epochs") == (2, 4) and back.value("macs") == 20
    assert back.value("wall_s") == 3.0 and back.value("generalization.nope") is None
    assert back.optimizer_name == "sgd" and back.optimizer and back.optimizer.lr == 0.1
    newer = {**R.to_json(run), "added_later": 1}  # a field a newer writer added is kept, not an error
    assert R.from_json(newer).extra == {"added_later": 1}


def test_a_training_runs_curve_is_stored_typed_and_an_older_curve_as_it_was_written():
    points = Curve(
        step=(0, 10),
        train_loss=(2.0, 1.0),
        train_acc=(0.1, 0.5),
        eval_loss=(2.1, 1.2),
        eval_acc=(0.1, 0.4),
        probe=8,
        lr_phase=(0.0, 1.0),
        val_loss=(2.2, 1.3),
        val_acc=(0.1, 0.35),
    )
    curve = RunCurve(points, (1.5,), (0.4,), (0.35,), (3.0,))
    older = {"step": [0, 10], "train_loss": [2.0, 1.0], "eval_acc": [0.1, 0.4]}  # before RunCurve's form
    measured = Measured({"generalization.eval_acc": 0.4}, {"generalization": curve, "transfer": older})
    run = R.completed(R.Identity("C-T", 0), R.Model(), measured, R.Optimizer())
    back = R.from_json(json.loads(json.dumps(R.to_json(run))))
    assert back.curves["generalization"] == curve and back.curve("generalization") == points  # typed, unchanged
    assert R.to_json(back)["curves"]["transfer"] == older  # written back as it was read, no key added
    assert back.curve("transfer") == Curve(step=(0, 10), train_loss=(2.0, 1.0), eval_acc=(0.1, 0.4))
    assert R.validation_view(TrialRecord(0, 0.4, {}, None, None, back)).run.curve("generalization") == points
    with_images = dataclasses.replace(back, images={"validation": "v", "test": "t"})
    seen = R.validation_view(TrialRecord(0, 0.4, {}, None, None, with_images)).run.curve("generalization")
    assert seen is not None and seen.eval_acc == points.val_acc and seen.eval_loss == points.val_loss


def test_a_failure_and_an_interrupted_trial_read_from_params_and_the_claim():
    failed = R.read({"key": "C-C/seed=0/sample=0", "fail_reason": "boom"}, "FAIL", {"candidate": "C-C", "seed": 0})
    assert failed.identity == R.Identity("C-C", 0, None, "C-C/seed=0/sample=0") and failed.fail_reason == "boom"
    told = R.read({R.ATTR: R.to_json(R.failed(R.Identity(), "no budget"))}, "FAIL", {"candidate": "C-T", "seed": 1})
    assert (told.identity.candidate, told.identity.seed, told.fail_reason, told.model) == ("C-T", 1, "no budget", None)
    rec = R.TrialRecord(3, None, {"candidate": "C-T"}, None, None, R.read({"key": "k"}, "FAIL", {"candidate": "C-T"}))
    assert rec.interrupted and R.count([rec])["interrupted"] == 1 and R.count([rec])["failed"] == 0


def test_row_is_the_one_flat_form_of_a_trial():
    run = R.completed(
        R.Identity("C-T", 0, 0, "k"),
        R.Model(label="C-T", layout="C-T", depths=(1, 2), params=5),
        Measured.from_json({"generalization.eval_acc": 0.5, "curves.generalization": {"step": [0]}}),
        R.optimizer({"optimizer": "adamw", "lr": 0.001}),
        environment=R.Environment("cpu", "h", versions={"torch": "2"}),
    )
    row = R.row(R.TrialRecord(0, 0.5, {"candidate": "C-T", "seed": 0, "train.lr": 0.001}, None, None, run))
    assert row["generalization.eval_acc"] == 0.5 and row["depths"] == "1, 2" and row["optim.lr"] == 0.001
    assert row["env.versions.torch"] == "2" and row["device"] == "cpu" and row["train.lr"] == 0.001
    assert not [k for k in row if k.startswith("curves.")] and row["model_label"] == "C-T"


@pytest.mark.parametrize("commit", sorted(OLD))
def test_the_flat_form_is_the_migrations_inverse(tmp_path, commit):
    shutil.copytree(OLD[commit], tmp_path / "studies")
    journal = _flat(tmp_path / "studies" / "tiny-quick" / "journal.log")
    for r in store.records(store.load_study(tmp_path / "studies", "tiny-quick")):
        back = R.flat(r.run)
        assert R.read(back, r.state, r.params) == r.run
        want = {k: v for k, v in journal[r.number].items() if k == "key" or k not in R.CLAIM_ATTRS}
        assert {k: back[k] for k in want} == want  # every attribute the old journal wrote, as it wrote it
        assert all(v is None for k, v in back.items() if k not in want)  # and nothing it did not


def test_the_flat_form_is_plain_data_split_and_joined():
    flat = {"capacity.eval_acc": 0.8, "capacity.curve_len": [1, 2], "curves.capacity": {"step": [0]}, "wall": 3.0}
    metrics, curves = record_flat.split(flat)
    assert metrics == {"capacity": {"eval_acc": 0.8, "curve_len": [1, 2]}} and curves == {"capacity": {"step": [0]}}
    assert record_flat.join(metrics, curves) == {k: v for k, v in flat.items() if "." in k}  # a dotless key: no metric
    assert record_flat.split({"curves.x": 1.0})[0] == {"curves": {"x": 1.0}}  # a curve is a mapping, else a metric
    data = record_flat.to_data({"candidate": "A", "optim": {"optimizer": "sgd", "lr": 0.1}, "note": "n"}, (), ())
    assert data["optimizer"] == {"name": "sgd", "lr": 0.1, "weight_decay": None, "settings": {"optimizer": "sgd",
                                                                                              "lr": 0.1}}  # fmt: skip
    assert data["model"] is None and data["environment"] is None and data["extra"] == {"note": "n"}
    assert R.from_json(data).optimizer == R.optimizer({"optimizer": "sgd", "lr": 0.1})


def test_a_worker_records_the_instruction_set_torch_dispatches_its_cpu_kernels_to():
    import torch

    from coatsearch.runner.environment import probe

    env = probe(torch.device("cpu"))
    assert env.cpu_kernels == torch.backends.cpu.get_cpu_capability() and env.cpu_kernels
    run = R.failed(R.Identity("c", 0, 0, "c/seed=0/sample=0"), "x", environment=env)
    assert R.from_json(R.to_json(run)).environment == env  # stored and read back
    flat = R.flat(run)  # version 1's flat form: the field kept when set, left out when not (as v1 wrote it)
    assert flat["env"]["cpu_kernels"] == env.cpu_kernels and R.read(flat, "FAIL", {}).environment == env
    unset = R.flat(dataclasses.replace(run, environment=dataclasses.replace(env, cpu_kernels=None)))
    assert "cpu_kernels" not in unset["env"]
