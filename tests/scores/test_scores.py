"""Scores: the transfer copy keeps the body and renews the head; the length score and objective fallback."""

import dataclasses

import pytest
import torch

from coatsearch.models import build
from coatsearch.scores import ScoresSpec, TrialInput, measure
from coatsearch.scores.length import LengthSpec
from coatsearch.scores.transfer import copy_body
from coatsearch.training import schedule
from coatsearch.vocab import specs as S
from tests.tiny import DATA, MODEL, OPTIM, STEM


def test_transfer_copies_every_weight_but_the_head():
    torch.manual_seed(0)
    source = build(MODEL)
    torch.manual_seed(1)
    target = build(MODEL)
    head = {n for n, _ in target.get_classifier().named_parameters()}
    before = {k: v.clone() for k, v in target.state_dict().items()}
    copy_body(source, target)
    for key, value in target.state_dict().items():
        if key.split(".", 1)[-1] in head and key.startswith("head"):
            assert torch.equal(value, before[key])
        else:
            assert torch.equal(value, source.state_dict()[key]), key


def test_length_score_trains_each_schedule():
    scores = ScoresSpec(length=LengthSpec(per_class=5, epochs=(1, 2)))
    out = measure(TrialInput(MODEL, OPTIM, DATA, scores, seed=0), torch.device("cpu"))
    m, longest = out.metrics, out.curves["length2"]
    assert m["length.epochs"] == [1, 2] and len(m["length.eval_acc"]) == 2
    assert m["length.eval_acc_longest"] == m["length.eval_acc"][1]
    assert len(longest.epoch_eval_acc) == 2 and longest.points.step[0] == 0
    assert list(out.to_json()) == [*m, "curves.length1", "curves.length2"]  # the measured form: metrics, then curves


def test_robustness_reuses_the_source_model_and_is_deterministic():
    from coatsearch.scores import SCORES, Context, robustness

    inp = TrialInput(MODEL, OPTIM, DATA, ScoresSpec(generalization=S.SubsetSpec(per_class=5, epochs=1)), seed=0)
    ctx = Context(inp, torch.device("cpu"))
    gen = SCORES["generalization"].run(ctx, inp.scores.generalization)
    spec = robustness.RobustnessSpec(source="generalization", severities=3)
    out, again = SCORES["robustness"].run(ctx, spec), SCORES["robustness"].run(ctx, spec)
    m = out.metrics
    assert out == again and m["robustness.clean_acc"] == gen.metrics["generalization.eval_acc"]
    per = [m[f"robustness.{n}_acc"] for n in robustness.CORRUPTIONS]
    assert len(per) >= 5 and m["robustness.corrupt_acc"] == pytest.approx(sum(per) / len(per))
    curve = out.to_json()["curves.robustness"]
    assert curve["severity"] == [0, 1, 2, 3] and len(curve["blur"]) == 4
    with pytest.raises(ValueError, match="source score 'accuracy'"):
        SCORES["robustness"].run(ctx, robustness.RobustnessSpec(source="accuracy"))


def test_corruptions_change_the_images_more_with_severity():
    from coatsearch.scores.robustness import CORRUPTIONS, corrupt

    ramp = torch.linspace(-2, 2, 16)
    x = (ramp[:, None] + ramp[None, :]).expand(4, 1, 16, 16)  # smooth: a shift or rotation moves it visibly
    x = x + 0.3 * torch.randn(4, 1, 16, 16, generator=torch.Generator().manual_seed(0))
    for name in CORRUPTIONS:
        d = [(corrupt(x, name, s, seed=0) - x).abs().mean().item() for s in (1, 3)]
        assert 0 < d[0] < d[1], name
        assert torch.equal(corrupt(x, name, 2, seed=1), corrupt(x, name, 2, seed=1))


def test_one_fallback_list_and_the_pruner_signal_come_from_the_registry(monkeypatch):
    from coatsearch import scores
    from coatsearch.analysis import tables
    from tests.report_records import layout_records

    recs, plain = layout_records(), {"study": {}}  # no objective: the report judges by the registry's fallback
    assert tables.primary_acc(plain, recs) == "generalization.eval_acc"
    monkeypatch.setattr(scores, "FALLBACK", ("no_score.eval_acc",))
    assert tables.primary_acc(plain, recs) is None  # the report reads the trial runner's list, not a copy
    monkeypatch.undo()
    assert scores.FALLBACK[:2] == ("accuracy.eval_acc", "generalization.eval_acc")
    sc = ScoresSpec(length=LengthSpec(per_class=5, epochs=(1, 4)), generalization=S.SubsetSpec(5, 2))
    assert scores.signal("generalization.eval_acc", sc) == "generalization"
    assert scores.signal("capacity.eval_acc", sc) is None and scores.max_epochs(sc) == 4


def _model(layout: str) -> S.ModelSpec:
    stages = tuple(S.StageSpec(k, 1, 16, s) for k, s in zip(layout.split("-"), (1, 2), strict=True))
    return S.ModelSpec(layout, "coatnet", 16, 1, 5, STEM, stages, S.BlockSpec(head_size=8))


def test_candidates_of_a_seed_see_the_same_paired_data_and_record_it():
    from coatsearch.scores import Context
    from coatsearch.scores import training as T
    from coatsearch.training import subsets

    sub = S.SubsetSpec(per_class=8, epochs=1, eval_every=1)
    runs = {}
    for layout, seed in (("C-C", 0), ("C-T", 0), ("C-C", 1)):
        inp = TrialInput(_model(layout), OPTIM, DATA, ScoresSpec(generalization=sub), seed=seed)
        ctx = Context(inp, torch.device("cpu"))
        train, held, _ = T.splits(ctx, sub)
        out = measure(inp, torch.device("cpu")).to_json()
        runs[(layout, seed)] = (subsets.image_ids(train), subsets.image_ids(held), out)
    (tr_a, ev_a, a), (tr_b, ev_b, b), (tr_c, ev_c, c) = runs.values()
    assert torch.equal(tr_a, tr_b) and torch.equal(ev_a, ev_b) and torch.equal(ev_a, ev_c)  # paired by seed
    assert not torch.equal(tr_a, tr_c)  # another seed, another training subset; the eval set stays
    for key in ("generalization.train_fingerprint", "generalization.eval_fingerprint"):
        assert a[key] == b[key]
    assert a["generalization.train_fingerprint"] != c["generalization.train_fingerprint"]
    assert a["generalization.eval_fingerprint"] == c["generalization.eval_fingerprint"]
    assert a["generalization.eval_images"] == len(ev_a) == 40 == a["generalization.val_images"]
    assert a["curves.generalization"]["step"] == list(range(a["generalization.steps"] + 1))


def test_whole_split_and_the_eval_set_default_to_all_images():
    from coatsearch.training import data as D
    from coatsearch.training import subsets

    pool, test = D.load(S.DataSpec("synthetic"), 16, 1)
    assert len(subsets.subset(pool, None, None, seed=3)) == len(pool)
    assert len(subsets.subset(pool, None, (0, 1), seed=3)) == int((pool.y <= 1).sum())
    assert len(subsets.eval_subset(test, S.DataSpec("synthetic").eval_size, None)) == len(test)


def test_capacity_budget_must_cover_an_epoch():
    from coatsearch.errors import UserError

    scores = ScoresSpec(capacity=S.SubsetSpec(per_class=20, max_steps=1))
    with pytest.raises(UserError, match="capacity: max_steps"):
        measure(TrialInput(MODEL, OPTIM, DATA, scores, seed=0), torch.device("cpu"))


def test_transfer_records_the_fine_tune_the_baselines_and_the_gain():
    from coatsearch.scores.transfer import TransferSpec

    pre = S.SubsetSpec(per_class=10, epochs=3, classes=(0, 1), target_acc=0.05, eval_every=1)
    fin = S.SubsetSpec(per_class=10, classes=(2, 3, 4), max_steps=4, lr_factor=0.5)
    inp = TrialInput(MODEL, OPTIM, DATA, ScoresSpec(transfer=TransferSpec(pre, fin)), seed=0)
    out = measure(inp, torch.device("cpu")).to_json()
    assert out["transfer.pretrain_stopped"] == "target" and out["transfer.pretrain_steps"] == 1  # 5% is met at once
    assert out["transfer.finetune_steps"] == 4 and out["transfer.lr_factor"] == 0.5
    assert out["transfer.gain"] == pytest.approx(out["transfer.finetune_acc"] - out["transfer.scratch_acc"])
    assert 0.0 <= out["transfer.probe_acc"] <= 1.0
    assert out["curves.scratch"]["step"][-1] == out["curves.transfer"]["step"][-1] == 4  # same budget
    capped = ScoresSpec(transfer=TransferSpec(dataclasses.replace(pre, target_acc=1.0), fin))
    capped = measure(dataclasses.replace(inp, scores=capped), torch.device("cpu")).metrics
    assert capped["transfer.pretrain_stopped"] == "cap" and capped["transfer.pretrain_steps"] == 3


def test_a_subset_batch_size_sets_the_runs_batch_and_its_default_budget():
    from coatsearch.scores.transfer import TransferSpec

    fin = S.SubsetSpec(per_class=10, classes=(2, 3), epochs=2, batch_size=4)
    assert schedule.subset_optim(OPTIM, fin).batch_size == 4 and schedule.subset_optim(OPTIM, S.SubsetSpec()) is OPTIM
    pre = S.SubsetSpec(per_class=10, epochs=1, classes=(0, 1))
    spec = TransferSpec(pre, dataclasses.replace(fin, max_steps=10))
    out = measure(TrialInput(MODEL, OPTIM, DATA, ScoresSpec(transfer=spec), seed=0), torch.device("cpu"))
    assert out.metrics["transfer.finetune_steps"] == 10 and out.curves["transfer"].points.step[-1] == 10  # batch 4
    gen = measure(TrialInput(MODEL, OPTIM, DATA, ScoresSpec(generalization=fin), seed=0), torch.device("cpu"))
    assert gen.metrics["generalization.steps"] == 10  # 2 epochs of 20 images at batch 4 (not one step per epoch)


def test_fine_tuning_defaults_to_at_least_300_steps():
    from coatsearch.scores import transfer

    assert transfer.MIN_FINETUNE_STEPS == 300 and S.SubsetSpec().lr_factor == 0.1


def test_linear_probe_separates_separable_features():
    from coatsearch.scores.transfer import linear_probe
    from coatsearch.training import data as D

    class Net(torch.nn.Module):  # features = the mean pixel of each image; head removed by the probe
        def __init__(self):
            super().__init__()
            self.head = torch.nn.Linear(1, 2)

        def forward(self, x):
            return self.head(x.mean((1, 2, 3))[:, None])

    y = torch.arange(40) % 2
    x = (2.0 * y - 1)[:, None, None, None] + 0.1 * torch.randn(40, 1, 4, 4, generator=torch.Generator().manual_seed(0))
    data = D.TensorData(x, y, (0, 1))
    assert linear_probe(Net(), data, data, torch.device("cpu"), 16) == 1.0


def test_the_listener_passed_to_measure_hears_each_runs_curve_points_by_phase():
    """The listener is an argument (training.listeners): passed in, it hears every point; left out, nothing is."""
    heard: list[tuple[str, int]] = []
    scores = ScoresSpec(length=LengthSpec(per_class=5, epochs=(1, 2)))
    out = measure(TrialInput(MODEL, OPTIM, DATA, scores, seed=0), torch.device("cpu"),
                  listener=lambda phase, step, p: heard.append((phase, step)))  # fmt: skip
    for phase in ("length1", "length2"):
        assert [s for ph, s in heard if ph == phase] == list(out.curves[phase].points.step)


def test_measured_merges_in_order_and_gives_the_flat_form_a_record_is_made_from():
    from coatsearch.scores import Measured, RunCurve
    from coatsearch.training.point import Curve

    run = RunCurve(Curve(step=(0, 5), train_loss=(2.0, 1.0)), (1.5,), (0.4,), (0.3,), (0.1,))
    a = Measured({"a.x": 1, "a.y": [1, 2]}, {"a": run})
    b = Measured({"b.x": "s", "a.x": 3}, {"sev": {"severity": [0, 1]}})
    both = a.merge(b)
    assert dict(both.metrics) == {"a.x": 3, "a.y": [1, 2], "b.x": "s"} and list(both.metrics) == ["a.x", "a.y", "b.x"]
    flat = both.to_json()
    assert list(flat) == ["a.x", "a.y", "b.x", "curves.a", "curves.sev"] and flat["curves.sev"] == {"severity": [0, 1]}
    assert flat["curves.a"] == {**run.points.as_dict(), "epoch_train_loss": [1.5], "epoch_eval_acc": [0.4],
                                "epoch_val_acc": [0.3], "seconds": [0.1]}  # fmt: skip
    assert Measured().merge() == Measured() and a.metrics is not b.metrics
    with pytest.raises(TypeError):
        both.metrics["a.x"] = 0  # type: ignore[index]  # read-only
