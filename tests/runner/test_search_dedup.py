"""No network trained twice: on the tiny searched space, whose points repeat networks (C-T and T-T read no
downsampling option, the named C-C and C-T are sampled points too), each (network, seed) trains once; every other
point that builds it reuses that measurement, counted once, and the report says how many points mapped to how
many networks."""

from __future__ import annotations

import json
from collections import Counter

import pytest

import coatsearch
from coatsearch.space import search
from coatsearch.storage import sampling, store
from tests.tiny import TINY_SEARCH, tiny_variant

SPACE = TINY_SEARCH


@pytest.fixture(scope="module")
def repeated(tmp_path_factory):
    """Six TPE samples a seed on two seeds of a space that holds four networks, two of them named."""
    root = tmp_path_factory.mktemp("dedup")
    tiny_variant(root, ("seeds: [0]", "seeds: [0, 1]"), (", reevaluate: {top: 2, seeds: 2}", ""),
                 ("train.lr: {low: 1.0e-3, high: 1.0e-2, log: true}", "train.lr: {choices: [3.0e-3]}"),
                 ("{per_class: 10, epochs: 1}", "{per_class: 2, epochs: 1}"), source=SPACE)  # fmt: skip
    coatsearch.run(coatsearch.load_space(root / "space.yaml"), study="d", workers=1, device="cpu",
                   studies_dir=root / "studies", reports_dir=root / "reports", report=True, progress=False)  # fmt: skip
    return root


def test_each_network_trains_once_per_seed(repeated):
    study = store.load_study(repeated / "studies", "d")
    records = store.records(study)
    trained = [r for r in records if r.state == "COMPLETE"]
    per = Counter((search.architecture(r.run), r.seed) for r in trained)
    assert per and max(per.values()) == 1, per
    assert len(per) == 8  # C-C eq5 (named), C-C dw, C-T (named), T-T: four networks on each of two seeds
    assert not [r for r in records if r.state == "FAIL"]
    trials = {t.number: t for t in study.get_trials(deepcopy=False)}
    reused = [r for r in records if r.state == "REUSED"]
    assert reused, "six samples a seed over two unnamed networks must reuse"
    for r in reused:  # each reuse points at the measurement of its own network on its own seed
        source = trials[r.run.extra["reuse"]]
        assert source.state.name == "COMPLETE" and source.params["seed"] == r.seed
        assert source.user_attrs[sampling.NETWORK] == trials[r.number].user_attrs[sampling.NETWORK]
        assert r.value is None and r.run.model is None
    n = store.counts(study)
    assert n["reused"] == len(reused) and n["complete"] == len(trained)


def test_a_reused_point_is_told_its_measurement_and_the_planned_trial_samples_again(repeated):
    study = store.load_study(repeated / "studies", "d")
    trials = study.get_trials(deepcopy=False)
    again = [t for t in trials if t.user_attrs.get("again") == 1]
    closing = [t for t in trials if sampling.REUSE in t.user_attrs and t.user_attrs.get("again") != 1]
    assert again and all(t.constraints == {sampling.CONSTRAINT: 0.0} for t in again if t.state.name == "COMPLETE")
    for t in again:
        if t.state.name == "COMPLETE":  # the sampler learns the value the network measured
            assert t.values == trials[t.user_attrs[sampling.REUSE]].values
    # every planned key is taken once: by its training, or by the reuse that ended it after REUSE_MAX asks
    keys = Counter(t.user_attrs["key"] for t in trials if store.holds_key(t))
    assert max(keys.values()) == 1 and len(keys) == 2 * (2 + 6)
    per_key = Counter(t.user_attrs["key"] for t in again)
    assert max(per_key.values()) <= sampling.REUSE_MAX
    assert all(per_key[t.user_attrs["key"]] == sampling.REUSE_MAX for t in closing)


def test_rows_count_each_measurement_once_and_the_report_maps_points_to_networks(repeated):
    summary = json.loads((repeated / "reports" / "d" / "summary.json").read_text())
    rows = {r["candidate"]: r for r in summary["candidates"]}
    assert all(r["n_runs"] <= 2 for r in rows.values() if "n_runs" in r)
    text = (repeated / "reports" / "d" / "report.md").read_text()
    assert "points mapped to" in text and "reused" in text
