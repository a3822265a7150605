"""Scores: the transfer copy keeps the body and renews the head; the length score and objective fallback."""

import pytest
import torch

from coatsearch import spec as S
from coatsearch.models import build
from coatsearch.scores import TrialInput, measure
from coatsearch.scores.transfer import copy_body

STEM = S.StemSpec("conv", width=8, layers=1, stride=2)
MODEL = S.ModelSpec(
    "m", "coatnet", 16, 1, 5, STEM, (S.StageSpec("C", 1, 16, 1), S.StageSpec("T", 1, 16, 2)), S.BlockSpec(head_size=8)
)
DATA = S.DataSpec("synthetic", eval_size=100)
OPTIM = S.OptimSpec(lr=3e-3, batch_size=32, warmup_epochs=0)


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
    scores = S.ScoresSpec(length=S.LengthSpec(per_class=5, epochs=(1, 2)))
    out = measure(TrialInput(MODEL, OPTIM, DATA, scores, seed=0), torch.device("cpu"))
    assert out["length.epochs"] == [1, 2] and len(out["length.eval_acc"]) == 2
    assert out["length.eval_acc_longest"] == out["length.eval_acc"][1]
    assert len(out["curves.length2"]["eval_acc"]) == 2


def test_robustness_reuses_the_source_model_and_is_deterministic():
    from coatsearch.scores import SCORES, Context, robustness

    inp = TrialInput(MODEL, OPTIM, DATA, S.ScoresSpec(generalization=S.SubsetSpec(per_class=5, epochs=1)), seed=0)
    ctx = Context(inp, torch.device("cpu"))
    gen = SCORES["generalization"].run(ctx, inp.scores.generalization)
    spec = robustness.RobustnessSpec(source="generalization", severities=3)
    out, again = SCORES["robustness"].run(ctx, spec), SCORES["robustness"].run(ctx, spec)
    assert out == again and out["robustness.clean_acc"] == gen["generalization.eval_acc"]
    per = [out[f"robustness.{n}_acc"] for n in robustness.CORRUPTIONS]
    assert len(per) >= 5 and out["robustness.corrupt_acc"] == pytest.approx(sum(per) / len(per))
    assert out["curves.robustness"]["severity"] == [0, 1, 2, 3] and len(out["curves.robustness"]["blur"]) == 4
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


def test_one_fallback_list_and_the_pruner_signal_come_from_the_registry():
    from coatsearch import scores
    from coatsearch.report import optim

    assert optim.FALLBACK_ACC is scores.FALLBACK
    assert scores.FALLBACK[:2] == ("accuracy.eval_acc", "generalization.eval_acc")
    sc = S.ScoresSpec(length=S.LengthSpec(per_class=5, epochs=(1, 4)), generalization=S.SubsetSpec(5, 2))
    assert scores.signal("generalization.eval_acc", sc) == "generalization"
    assert scores.signal("capacity.eval_acc", sc) is None and scores.max_epochs(sc) == 4
