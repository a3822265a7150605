"""Shared fabrications of the looks tests (test_looks.py, test_looks_count.py): space hashes, the split records,
looks and judged claims."""

from __future__ import annotations

import dataclasses

from coatsearch.papers import looks as L
from coatsearch.papers.claim_results import ClaimVerdict
from tests.report_records import MEANS, SPACE, seeded

SHA = {k: k * 64 for k in "abc"}
SPLIT = {"validation": "v", "test": "t", "test_draw": 0}


def _split(records: list) -> list:
    """The records told they split validation from test images (their verdicts read test images)."""
    return [dataclasses.replace(r, run=dataclasses.replace(r.run, images=SPLIT)) if r.state == "COMPLETE" else r
            for r in records]  # fmt: skip


def _space(sha: str = SHA["a"], **kw) -> dict:
    return {**SPACE, "space_sha256": sha, **kw}


def _look(p: float | None, sha: str = SHA["b"], spends: bool = True, **kw) -> L.Look:
    images = "test" if spends else "validation"
    fields = dict(source="study", where="s", space="fab", sha256=sha, profile="default", seeds=(0, 1), claim="a",
                  verdict="supported", p=p, images=images, pilot=False, spends=spends)  # fmt: skip
    return L.Look(**{**fields, **kw})


def _typed(pairs: list | None = None, parts: list | None = None, **kw) -> ClaimVerdict:
    """A judged claim as a summary holds it, read back typed (ClaimVerdict.from_json)."""
    pairs = [{"a": "x", "b": "y", "n": 2, **q} for q in pairs or ()]
    evidence = [{"key": "generalization.matched_acc", "pairs": pairs}] if pairs else []
    return ClaimVerdict.from_json({"id": "a", "verdict": "supported", "evidence": evidence, "parts": parts, **kw})


def _judged(p: float, images: str = "split") -> ClaimVerdict:
    pairs = [{"key": True, "d": 1.0, "p_holm": p / 2}, {"key": True, "d": 0.5, "p_holm": p},
             {"key": False, "d": -3.0, "p_holm": 0.9}]  # fmt: skip
    return _typed(pairs, images=images)


THIS = L.Ident("fab", SHA["a"], "default", (0, 1), (), "synthetic", 200)
OTHER_DATA = seeded(MEANS, 1.3)  # another space version's runs on the same seeds: the same order, another p
