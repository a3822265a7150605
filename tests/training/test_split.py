"""Validation images vs test images: the split, the purposes a study records, and what the report makes of them."""

from __future__ import annotations

import json
import subprocess
import sys
from types import SimpleNamespace

import pytest
import torch

from coatsearch import api
from coatsearch.analysis.results import Judgement
from coatsearch.errors import UserError
from coatsearch.papers import categories as K
from coatsearch.papers import judging
from coatsearch.papers.claim_results import ClaimVerdict
from coatsearch.training import data, subsets
from coatsearch.vocab.specs import DataSpec
from tests.tiny import TINY, tiny_variant


@pytest.fixture(scope="module")
def pool() -> data.TensorData:
    """Fashion-MNIST's test split (10,000 images, 1,000 a class), as the studies load it."""
    return data.load(DataSpec("fashion_mnist"), 28, 1)[1]


def _ids(d: data.TensorData) -> set[int]:
    return set(subsets.image_ids(d).tolist())


def test_validation_is_the_old_eval_draw_and_every_test_draw_is_disjoint(pool):
    spec = DataSpec("fashion_mnist", eval_size=1000, test_size=1000)
    val, test0 = subsets.split(pool, spec, None)
    _, test1 = subsets.split(pool, DataSpec("fashion_mnist", eval_size=1000, test_size=1000, test_draw=1), None)
    old = subsets.eval_subset(pool, 1000, None)  # the one eval set every look before the split used
    assert subsets.fingerprint(val) == subsets.fingerprint(old)
    assert len(val) == len(test0) == len(test1) == 1000
    assert not _ids(val) & _ids(test0) and not _ids(val) & _ids(test1) and not _ids(test0) & _ids(test1)
    assert torch.bincount(test0.y).tolist() == [100] * 10  # balanced, relabelled like the validation images
    smaller, _ = subsets.split(pool, DataSpec("fashion_mnist", eval_size=300), None)
    assert _ids(smaller) <= _ids(val)  # a smaller validation draw is nested in a larger one: earlier looks saw it


def test_per_seed_test_images_differ_by_seed_and_never_touch_validation(pool):
    spec = DataSpec("fashion_mnist", eval_size=1000, test_size=1000, test_sampling="per_seed")
    val, t0 = subsets.split(pool, spec, None, seed=0)
    again_val, again = subsets.split(pool, spec, None, seed=0)
    _, t1 = subsets.split(pool, spec, None, seed=1)
    shared_val, _ = subsets.split(pool, DataSpec("fashion_mnist", eval_size=1000, test_size=1000), None)
    assert (
        subsets.fingerprint(val) == subsets.fingerprint(shared_val) == subsets.fingerprint(again_val)
    )  # one validation set
    assert subsets.fingerprint(t0) == subsets.fingerprint(again)  # every candidate of a seed reads the same images
    assert subsets.fingerprint(t0) != subsets.fingerprint(t1)
    assert not _ids(val) & (_ids(t0) | _ids(t1))
    assert torch.bincount(t1.y).tolist() == [100] * 10
    overlap = len(_ids(t0) & _ids(t1)) / 1000  # independent samples of 1,000 from the 9,000 outside validation
    assert 0.05 < overlap < 0.2
    _, t0_draw1 = subsets.split(pool, DataSpec("fashion_mnist", eval_size=1000, test_size=1000, test_draw=1,
                                            test_sampling="per_seed"), None, seed=0)  # fmt: skip
    assert subsets.fingerprint(t0_draw1) != subsets.fingerprint(t0)  # a replicate's draw reseeds even a reused seed


def test_per_seed_sampling_fits_any_draw_but_not_more_than_the_pool(pool):
    ok = DataSpec("fashion_mnist", eval_size=1000, test_size=9000, test_draw=9, test_sampling="per_seed")
    assert len(subsets.split(pool, ok, None, seed=3)[1]) == 9000
    with pytest.raises(UserError) as err:
        subsets.split(pool, DataSpec("fashion_mnist", eval_size=1000, test_size=9010, test_sampling="per_seed"), None)
    assert "data.test_size" in str(err.value) and "per seed" in str(err.value) and "\n" not in str(err.value)


def test_the_report_says_whether_image_sampling_is_in_the_intervals():
    from coatsearch.storage import record as R

    measured = {"accuracy.val_fingerprint": "v", "accuracy.eval_fingerprint": "t"}
    assert "test_sampling" not in R.images_of(measured, 0)
    assert R.images_of(measured, 0, "per_seed")["test_sampling"] == "per_seed"

    def rec(images: dict) -> SimpleNamespace:  # what purposes() reads of a complete trial record
        run = SimpleNamespace(images=images, objective=None, objectives=(), keys=lambda: (), value=lambda k: None)
        return SimpleNamespace(run=run, number=0)

    shared = judging.purposes([rec(R.images_of(measured, 0))])
    per_seed = judging.purposes([rec(R.images_of(measured, 0, "per_seed"))])
    assert shared.sampling == judging.SHARED and per_seed.sampling == judging.PER_SEED
    assert judging.purposes([]).sampling is None


def test_eval_size_zero_halves_each_class(pool):
    val, test = subsets.split(pool, DataSpec("fashion_mnist", eval_size=0), (0, 1))
    assert len(val) == len(test) == 1000 and not _ids(val) & _ids(test)


def test_a_test_draw_that_does_not_fit_is_one_line(pool):
    spec = DataSpec("fashion_mnist", eval_size=1000, test_size=1000, test_draw=9)  # 1,000 + 10 x 1,000 > 10,000
    with pytest.raises(UserError) as err:
        subsets.split(pool, spec, None)
    assert "data.test_size" in str(err.value) and "\n" not in str(err.value)


def test_run_refuses_a_split_too_small_with_exit_2_and_writes_nothing(tmp_path):
    space = tiny_variant(tmp_path, ("eval_size: 100}", "eval_size: 100, test_size: 1000, test_draw: 50}"))
    out = subprocess.run(
        [sys.executable, "-m", "coatsearch", "run", str(space), "--profile", "quick", "--device", "cpu",
         "--studies-dir", str(tmp_path / "studies"), "--reports-dir", str(tmp_path / "reports"), "--no-plan"],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
    )  # fmt: skip
    assert out.returncode == 2, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "test_size" in out.stderr and "Traceback" not in out.stderr
    assert not (tmp_path / "reports").exists()
    assert not list((tmp_path / "studies").glob("*/journal.log"))


def _claim(images: str) -> ClaimVerdict:
    found = Judgement("supported", "", None, {}, "")
    return ClaimVerdict("d", "title", "A > B", "paper", found, images=images)


def test_a_verdict_is_confirmatory_only_when_registered_unchanged_and_split():
    ok = "confirmatory: matches the registration (fingerprint 0123…)"
    assert judging.with_status(_claim("split"), ok).status == "confirmatory"
    none = judging.with_status(_claim("split"), None)
    assert none.status == "exploratory" and none.status_why == "no registered analysis"
    changed = judging.with_status(_claim("split"), "exploratory: differs from the registration in seeds: [0] -> [1]")
    assert changed.status == "exploratory" and "seeds: [0] -> [1]" in (changed.status_why or "")
    legacy = judging.with_status(_claim("exploratory"), ok)
    assert legacy.status == "exploratory" and "one eval set" in (legacy.status_why or "")


@pytest.mark.slow
def test_a_tiny_study_selects_on_validation_and_its_report_is_registered(tmp_path):
    studies, reports = tmp_path / "studies", tmp_path / "reports"
    api.run(TINY, profile="quick", workers=1, device="cpu", studies_dir=studies, reports_dir=reports,
            progress=False)  # fmt: skip
    df = api.results("tiny-quick", studies)
    done = df[df.state == "COMPLETE"]
    assert len(done) and (done["value"] == done["generalization.val_acc"]).all()  # the objective read validation images
    assert (done["generalization.val_fingerprint"] != done["generalization.eval_fingerprint"]).all()
    summary = json.loads((reports / "tiny-quick" / "summary.json").read_text())
    assert summary["images"]["state"] == "split"
    possible = any(c["verdict"] in K.POSSIBLE for c in summary["claims"])  # a one-seed run: never, so no word
    word = "confirmatory" if possible else K.REGISTERED_ONLY
    assert summary["registration"].startswith(f"{word}: matches the registration")
    text = (reports / "tiny-quick" / "report.md").read_text()
    assert f"- Analysis: {word}: matches the registration" in text
    assert "validation images served every choice" in text
