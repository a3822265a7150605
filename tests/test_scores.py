"""Scores: the transfer copy keeps the body and renews the head; the length score and objective fallback."""

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
