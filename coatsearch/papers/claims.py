"""The papers' claims and reference values, as data: the only numbers a report does not measure (papers.md)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Claim:
    """One ordering claim of papers.md §3: names best first, joined by ≈ ≥ > ≫ as the paper writes them."""

    id: str
    title: str
    chain: str  # e.g. "C-C-C-C ≈ C-C-C-T ≥ C-C-T-T > C-T-T-T ≫ ViT_REL" (names: candidates or model labels)
    source: str  # where the paper shows it
    measures: tuple[str, ...]  # metric keys; the first one measured decides, the others must not contradict it
    paper_effect: float | None = None  # smallest key effect the paper reports, in accuracy points (None: no number)
    effect_note: str = ""  # where paper_effect comes from
    needs_convergence: bool = False  # a key candidate whose eval accuracy still rises makes the claim out of regime
    margin: float = 1.0  # equivalence margin for ≈ (and non-inferiority for ≥), in points; losses use LOSS_MARGIN
    margin_note: str = "the paper gives no numbers: 1 point by convention"  # how the margin was derived
    overfit: tuple[str, str] | None = None  # (train loss, held-out loss): a member further apart than OVERFIT_NATS
    # is out of the claim's regime ("no overfitting", CoAtNet §2.2)
    floor_on: str | None = None  # the accuracy measure the fair-floor guard reads when the deciding one is a loss


def top_group(chain: str) -> tuple[str, ...]:
    """The names a chain ranks first, joined by '≈' alone: the models that must learn for its claim to be in regime
    ('C-C-C-C ≈ C-C-C-T ≥ …' -> C-C-C-C, C-C-C-T). The paper's predicted losers never gate a claim."""
    tokens = chain.split()
    names, out = tokens[0::2], [tokens[0]]
    for sym, name in zip(tokens[1::2], names[1:], strict=True):
        if sym != "≈":
            break
        out.append(name)
    return tuple(out)


def _half_effect(effect: float) -> float:
    """The margin derived from a paper's numbers: half its smallest strict difference (docs/verdicts.md)."""
    return round(effect / 2, 2)


CHAIN_CLAIMS = (
    Claim(
        "a",
        "Generalization: more convolution stages, higher eval accuracy at the same training loss",
        "C-C-C-C ≈ C-C-C-T ≥ C-C-T-T > C-T-T-T ≫ ViT_REL",
        "CoAtNet §2.2, Fig. 1 (ImageNet-1K)",
        ("generalization.matched_acc",),  # the paper's definition; the end-of-schedule gap is description only
        None,
        "Fig. 1 gives curves, not numbers (unconfirmed)",
        False,  # a matched-loss reading compares runs at the same fit, converged or not
        1.0,
        "Fig. 1 gives curves, not numbers: 1 point by convention",
    ),
    Claim(
        "b",
        "Capacity: attention stages fit large data better",
        "C-C-T-T ≈ C-T-T-T > ViT_REL > C-C-C-T > C-C-C-C",
        "CoAtNet §2.2, Fig. 1 (JFT)",
        ("capacity.train_loss", "capacity.eval_acc"),
        None,
        "Fig. 1 gives curves, not numbers (unconfirmed); capacity is judged after a fixed budget",
        overfit=("capacity.train_loss", "capacity.val_loss"),
        floor_on="capacity.eval_acc",
    ),
    Claim(
        "c",
        "Transfer: C-C-T-T transfers better than C-T-T-T",
        "C-C-T-T > C-T-T-T",
        "CoAtNet Table 2 (JFT → ImageNet-1K: 82.39 vs 81.78 at 224)",
        ("transfer.gain", "transfer.finetune_acc"),  # fine-tune − scratch first, then fine-tune accuracy
        0.61,
        "Table 2: 82.39 − 81.78 points at 224",
        True,
        _half_effect(0.61),
        "half of Table 2's 0.61 points (no ≈/≥ relation uses it)",
    ),
    Claim(
        "d",
        "Depth split of C-C-T-T: V0 ≥ V2 > V1",
        "V0 ≥ V2 > V1",
        "CoAtNet Table 7 (ImageNet-1K top-1 84.1 / 84.0 / 83.4)",
        ("accuracy.eval_acc", "generalization.eval_acc", "capacity.eval_acc"),
        0.6,
        "Table 7: V2 − V1 = 84.0 − 83.4 points (V0 − V2 = 0.1 is a ≥ relation)",
        True,
        _half_effect(0.6),
        "half of Table 7's strict V2 − V1 = 0.6 points (the paper's own V0 − V2 = 0.1 lies within it)",
    ),
)
CAPACITY_SCORE = CHAIN_CLAIMS[1].measures[0].split(".")[0]  # claim (b)'s score: its curves say if the ranking held
TRANSFER_SCORE = CHAIN_CLAIMS[2].measures[0].split(".")[0]  # claim (c)'s score: its gain says if pretraining helped
GEN_SCORE = CHAIN_CLAIMS[0].measures[0].split(".")[0]  # claim (a)'s score: its space section sets the loss ladder

# Claim (e): relative attention helps (CoAtNet Table 6). A pair is a candidate named with "norel" and the
# candidate with the same name without it.
REL_CLAIM = Claim(
    "e",
    "Relative attention helps",
    "with rel-pos > without",
    "CoAtNet Table 6 (ImageNet-1K 224: 84.1 with vs 83.8 without)",
    ("accuracy.eval_acc", "generalization.eval_acc", "capacity.eval_acc"),
    0.3,
    "Table 6: 84.1 − 83.8 points at 224",
    True,
    _half_effect(0.3),
    "half of Table 6's 0.3 points (no ≈/≥ relation uses it)",
)
NOREL_TAG = "norel"

# Claim (f): the ViT_C conv stem shrinks the SGD/AdamW gap and steepens the EDF (ViT_C paper Tables 2-3, Fig. 5).
STEM_CLAIM = Claim(
    "f",
    "Conv stem (ViT_C) shrinks the SGD/AdamW gap and steepens the EDF vs patchify (ViT_P)",
    "ViT_C > ViT_P",
    "Early convolutions, Table 3 (4GF, 50 epochs: Δ 5.3 ViT_P vs 0.7 ViT_C) and Fig. 5",
    (),  # judged on the study's primary accuracy (analysis.tables.primary_acc)
    4.6,
    "Table 3: optimizer gap 5.3 (ViT_P) − 0.7 (ViT_C) points",
)

# The claims' decision constants (printed in the report; the shared statistical ones are analysis.constants).
LOSS_MARGIN = 0.05  # equivalence margin for losses (nats)
OVERFIT_NATS = 0.1  # claim (b)'s "no overfitting": a model's mean held-out (validation) loss at most this far above its
# final clean train loss. The default's 12,000-image runs, which memorise, end 0.43-0.53 nats apart; a model that
# fits abundant data generalizes within a few hundredths (docs/verdicts.md, "Capacity")
EDF_K = 2.0  # EDF steepness: fraction of runs within K points of top-1 error of the best run of the same
# model and optimizer (the paper uses 4 points at ImageNet scale, where errors are ~25%; proxy errors are a few times
# smaller)
FIT_LOSS = 0.1  # nats: claim (a) is read at a ladder level at or below this, where train accuracy (~97%) exceeds
# eval accuracy and generalization exists; a key candidate with a run that never fits this low is out of regime
EDF_SHARES = (0.6, 0.2)  # Fig. 5 (SGD, 18GF): ViT_C ~60% of runs within 4 points of the best, ViT_P < 20%
EDF_RUNS = 8  # runs per (model, optimizer) curve below which edf.png draws dots, not an EDF

# Table 7: blocks per stage [S0..S4] and ImageNet-1K top-1 of the three C-C-T-T depth splits.
TABLE7 = {
    "V0": {"blocks": [2, 2, 6, 14, 2], "top1": 84.1, "setting": "CoAtNet-2"},
    "V1": {"blocks": [2, 2, 2, 18, 2], "top1": 83.4, "setting": "S2 ⇐ S3"},
    "V2": {"blocks": [2, 2, 8, 12, 2], "top1": 84.0, "setting": "S2 ⇒ S3"},
}
V0_STANDIN = "C-C-T-T"  # a candidate with this name and layout stands in for V0 when the study has no V0

# ViT_C paper Table 3 (4GF, 50 epochs): top-1 error AdamW / SGD; and the SGD EDF of Fig. 5 (18GF).
OPTIMIZER_GAP = {
    "ViT_P": {"adamw_err": 27.7, "sgd_err": 33.0, "gap": 5.3},
    "ViT_C": {"adamw_err": 24.0, "sgd_err": 24.7, "gap": 0.7},
}
EDF_PAPER = "SGD: ~60% of ViT_C-18GF runs within 4 points of the best, < 20% of ViT_P-18GF runs"
LENGTH_PAPER = "peak top-1 error 100/200/400 epochs, 4GF: ViT_P 23.3/20.8/19.6, ViT_C 20.9/19.2/18.6"
# Claim (f)'s other two tested parts, in points, from Table 2 (4GF). Peak: ViT_C's top-1 minus ViT_P's, each at
# its better optimizer, at 100 epochs (23.3 − 20.9): Table 2's shortest schedule, as the optimizer gap's 4.6 is read
# at a short one (Table 3, 50 epochs); at 400 epochs it is 1.0 (19.6 − 18.6). Length: how much more error ViT_P
# adds than ViT_C at the shortest schedule against the longest, (23.3 − 19.6) − (20.9 − 18.6).
PEAK_EFFECT = 2.4
LENGTH_EFFECT = 1.4
