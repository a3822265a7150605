"""Claim (b) on fabricated capacity studies: supported, not supported, and out of regime when a model overfits or
the models that must learn stay at the fair linear floor (papers.verdicts.overfits, claims.Claim.floor_on)."""

from __future__ import annotations

from coatsearch.analysis import tables
from coatsearch.papers import categories as K
from coatsearch.papers import claims as C
from coatsearch.papers import verdicts as V
from tests.report_records import AGREE, SPACE, edit_runs, layout_records, reverse, seeded

_CAP = {k: v for k, v in AGREE.items() if k.startswith("capacity.")}  # the five layouts' capacity runs only


def _b(values: dict = _CAP, edit=None):
    records = layout_records(values)
    records = edit_runs(records, edit) if edit else records
    (b,) = [c for c in V.all_claims(tables.candidate_rows(SPACE, records), None) if c.id == "b"]
    return b


def _held_out(candidate: str, above_train: float):
    """An edit: `candidate`'s held-out loss this many nats above its clean train loss, every seed."""

    def edit(r, m):
        if r.candidate == candidate:
            m["capacity.val_loss"] = m["capacity.train_loss"] + above_train

    return edit


def _with_floor(acc: float) -> dict:
    """The capacity runs plus a linear baseline whose fair floor on capacity.eval_acc is `acc` on every seed."""
    floor = seeded({"capacity.floor_acc": {"baseline-linear": acc}, "capacity.eval_acc": {"baseline-linear": acc}})
    return {k: {**_CAP.get(k, {}), **floor.get(k, {})} for k in {*_CAP, *floor}}


def test_attention_layouts_fitting_best_without_overfitting_support_claim_b():
    b = _b()
    assert b.verdict == K.SUPPORTED
    assert b.evidence[0].key == "capacity.train_loss" and not b.evidence[0].out_of_regime


def test_convolution_fitting_best_refutes_claim_b():
    assert _b(reverse(_CAP)).verdict == K.NOT_SUPPORTED


def test_an_overfitting_model_puts_claim_b_out_of_regime_even_a_predicted_loser():
    b = _b(edit=_held_out("C-C-C-C", 0.4))  # C-C-C-C is the paper's last: the premise still fails
    assert b.verdict == K.OUT_OF_REGIME
    assert "C-C-C-C overfits: cap. held-out loss" in b.why and f"at most {C.OVERFIT_NATS:g}" in b.why
    assert _b(edit=_held_out("C-C-C-C", C.OVERFIT_NATS - 0.01)).verdict == K.SUPPORTED  # within the margin


def test_a_model_without_a_held_out_loss_is_not_checkable():
    def drop(r, m):
        if r.candidate == "C-T-T-T":
            del m["capacity.val_loss"]

    b = _b(edit=drop)
    assert b.verdict == K.OUT_OF_REGIME and "C-T-T-T: overfitting not checkable" in b.why


def test_the_fair_floor_guards_claim_b_on_its_accuracy_when_a_loss_decides():
    assert _b(_with_floor(0.80)).verdict == K.SUPPORTED  # 90% against an 80% floor
    b = _b(_with_floor(0.91))  # C-C-T-T and C-T-T-T (90%) at a 91% floor
    assert b.verdict == K.OUT_OF_REGIME
    assert "C-C-T-T not shown above the fair linear floor on cap. eval acc" in b.why
    assert "C-C-C-C not shown" not in b.why  # the paper's predicted losers never gate it
