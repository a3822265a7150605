"""Fresh test images: a draw's identity (space.draws), the committed record of the draws each look read
(papers/draws_seen, reports/test_draws.json) and the reuse that remains (docs/verdicts.md, "Fresh test images")."""

from __future__ import annotations

import json
from itertools import combinations
from pathlib import Path

import pytest

from coatsearch import api
from coatsearch.papers import draws_seen as D
from coatsearch.space.draws import chance_overlap, draw_of, draws_of_space, parse, shares

ROOT = Path(__file__).resolve().parents[2]
DATA = {"dataset": "fashion_mnist", "eval_size": 1000, "test_size": 4000, "test_sampling": "per_seed"}

# The reuse on record (reports/test_draws.json), every later look at claim (a) that re-read test images of an
# earlier look at it: (claim, later look, earlier look, draws shared). The looks correction counts these looks
# as looks; the reuse says they are not independent on test images. No look at (f) re-reads a draw of (f).
KNOWN_REUSE = {
    # the default's designs on seeds 0-3 (1,000 test images a seed), 0-5 and 0-4 (4,000): the smaller draw of a
    # seed is a prefix of the larger one's
    ("a", "reports/paper_layouts/summary.json @ 358161e", "reports/paper_layouts/summary.json @ 40d5870", 4),
    ("a", "reports/paper_layouts/summary.json @ e01c02d", "reports/paper_layouts/summary.json @ 40d5870", 4),
    ("a", "reports/paper_layouts/summary.json @ e01c02d", "reports/paper_layouts/summary.json @ 358161e", 5),
    # the replicate on seeds 5-9, draw 1, after the withdrawn replicate on seeds 6-11, draw 1
    ("a", "reports/paper_layouts-rep/summary.json @ 6d9f554", "reports/paper_layouts-rep/summary.json @ 4c7feb4", 4),
    # the layout searches on seeds 0-1 (0-3 with the re-evaluation), draw 0, after the paper_layouts looks
    ("a", "reports/layout_search-enumerate/summary.json @ e52ee10", "reports/paper_layouts/summary.json @ 40d5870", 2),
    ("a", "reports/layout_search-enumerate/summary.json @ e52ee10", "reports/paper_layouts/summary.json @ 358161e", 2),
    ("a", "reports/layout_search-enumerate/summary.json @ e52ee10", "reports/paper_layouts/summary.json @ e01c02d", 2),
    ("a", "reports/layout_search/summary.json @ 096d434", "reports/paper_layouts/summary.json @ 40d5870", 4),
    ("a", "reports/layout_search/summary.json @ 096d434", "reports/paper_layouts/summary.json @ 358161e", 4),
    ("a", "reports/layout_search/summary.json @ 096d434", "reports/paper_layouts/summary.json @ e01c02d", 4),
    ("a", "reports/layout_search/summary.json @ 096d434", "reports/layout_search-enumerate/summary.json @ e52ee10", 2),
}
# Draws shared across different claims, which the rule allows (each claim's looks are their own family): the
# vit_stems pair (f) reads the paper_layouts pair's (a) draws, seeds 0-4 draw 0 and seeds 5-9 draw 1, and so the
# layout searches' (a) draws on seeds 0-3.
KNOWN_ACROSS = {("vit_stems", "paper_layouts", 5), ("vit_stems-rep", "paper_layouts-rep", 5),
                ("vit_stems", "layout_search", 4), ("vit_stems", "layout_search-enumerate", 2)}  # fmt: skip


def test_a_draw_is_named_by_its_spec_and_seed_and_its_label_reads_back() -> None:
    d = draw_of(DATA, 5)
    assert d.label == "fashion_mnist v1000 t4000 per_seed d0 s5" and parse(d.label) == d
    shared = draw_of({"dataset": "fashion_mnist", "eval_size": 300, "test_draw": 2}, 5, (0, 3))
    assert shared.seed is None and shared.test_size == 300 and parse(shared.label) == shared  # as many as validation
    with pytest.raises(ValueError):
        parse("fashion_mnist v1000")


def test_shares_follows_how_split_draws() -> None:
    a, b = draw_of(DATA, 5), draw_of({**DATA, "test_size": 1000}, 5)
    assert shares(a, b) and shares(b, a)  # a smaller per-seed draw of the same seed is a prefix of the larger
    assert not shares(a, draw_of(DATA, 6)) and not shares(a, draw_of({**DATA, "test_draw": 1}, 5))
    assert chance_overlap(a, draw_of(DATA, 6)) == pytest.approx(4000 / 9000)  # independent samples of 9,000
    shared = {"dataset": "fashion_mnist", "eval_size": 1000, "test_size": 4000}
    d0, d1 = draw_of(shared, 0), draw_of({**shared, "test_draw": 1}, 0)
    assert not shares(d0, d1) and chance_overlap(d0, d1) == 0.0  # disjoint by construction
    assert shares(d1, draw_of({**shared, "test_size": 1000, "test_draw": 5}, 0))  # positions 5,000-6,000 of 4-8k


def test_a_shipped_profile_keeps_its_draws() -> None:
    """The identity names the draws the shipped profiles read as they always did (seeds, draw 0)."""
    capacity = api.load_space(ROOT / "spaces" / "paper_layouts.yaml", "capacity")
    assert sorted(d.label for d in draws_of_space(capacity)) == [f"fashion_mnist v1000 t4000 per_seed d0 s{s}"
                                                                 for s in (20, 21, 22)]  # fmt: skip


def test_reuse_and_draws_seen_read_a_record(tmp_path: Path) -> None:
    looks = [D.DrawLook("x", "reports/x/summary.json @ 1", "s", "default", ("a",), (draw_of(DATA, 0).label,), ("f0",)),
             D.DrawLook("y", "reports/y/summary.json @ 2", "t", "default", ("b",), (draw_of(DATA, 0).label,), ("f0",)),
             D.DrawLook("x-rep", "reports/x-rep/summary.json @ 3", "s", "default", ("a",),
                        (draw_of({**DATA, "test_size": 1000}, 0).label,), ("f1",), True)]  # fmt: skip
    (tmp_path / D.RECORD).write_text(D.dump(looks))
    assert D.load(tmp_path) == tuple(looks)
    assert [(r.claim, r.look, r.earlier) for r in D.reuse(looks)] == [("a", looks[2].where, looks[0].where)]
    assert D.draws_seen(tmp_path, {"b"}) == {draw_of(DATA, 0).label: looks[1].where}  # claim b's looks only
    assert set(D.draws_seen(tmp_path, (), "s", but="x-rep")) == {looks[0].draws[0], looks[2].draws[0]}  # withdrawn


# ------------------------------------------------------------------------------------------ the committed record


def _record() -> tuple[D.DrawLook, ...]:
    return D.load(ROOT / "reports")


@pytest.mark.committed
def test_the_record_holds_every_standing_report_and_its_own_reuse() -> None:
    """Every report that stands is a look of the record (run benchmarks/draws_record.py after committing one), and
    the record's reuse is what its looks give."""
    record = _record()
    held = {(x.study, x.claims, x.test_fp) for x in record if not x.withdrawn}
    for look in D.current(ROOT / "reports"):
        assert (look.study, look.claims, look.test_fp) in held, f"{look.where}: not in reports/{D.RECORD}"
    stored = json.loads((ROOT / "reports" / D.RECORD).read_text())["reuse"]
    assert stored == [dict(r.__dict__, draws=list(r.draws)) for r in D.reuse(record)]


@pytest.mark.committed
def test_draw_identities_match_the_recorded_test_fingerprints() -> None:
    """Two looks share a draw identity exactly as often as they share a recorded test fingerprint: the identity
    names the images the runs read."""
    record = _record()
    for x in record:
        assert len(x.draws) == len(x.test_fp), x.where
    for x, y in combinations(record, 2):
        assert len(set(x.draws) & set(y.draws)) == len(set(x.test_fp) & set(y.test_fp)), (x.where, y.where)


@pytest.mark.committed
def test_no_later_look_at_a_claim_re_reads_its_test_draws_but_the_known_reuse() -> None:
    """No replicate or later look at a claim reads test images an earlier look at it read (withdrawn looks
    included), except the reuse stated in KNOWN_REUSE, which the record carries for the looks correction."""
    found = {(r.claim, r.look, r.earlier, len(r.draws)) for r in D.reuse(_record())}
    assert found - KNOWN_REUSE == set(), "new reuse of test draws"
    assert KNOWN_REUSE - found == set(), "KNOWN_REUSE lists reuse the record no longer holds"
    assert not any(r.claim == "f" for r in D.reuse(_record()))


@pytest.mark.committed
def test_the_draws_shared_across_claims_are_the_known_ones() -> None:
    standing = {x.study: x for x in D.current(ROOT / "reports")}
    across = set()
    for x, y in combinations(standing.values(), 2):
        if not set(x.claims) & set(y.claims) and (n := len(set(x.draws) & set(y.draws))):
            across.add((*sorted((x.study, y.study), reverse=True), n))
    assert across == KNOWN_ACROSS
