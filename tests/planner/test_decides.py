"""A profile's `decides:` declaration: `plan` and `run` refuse a profile whose plan cannot decide a claim it
declares decided (planner.power.undecided), in one line and before anything is written."""

import dataclasses
from pathlib import Path

import pytest

from coatsearch import api
from coatsearch.cli import main
from coatsearch.planner import power as P
from coatsearch.planner.runs import check_decides
from coatsearch.space.identity import content_sha256
from tests.tiny import TINY, tiny_variant

ROOT = Path(__file__).resolve().parents[2]


def _plan(claim: str = "a", sd: float | None = 1.0, paper: float | None = None, regime: tuple = ()) -> P.ClaimPlan:
    return P.ClaimPlan(claim, "t", "generalization.matched_acc", ("C-C-C-C", "ViT_REL"), 1, 6, sd, "study x", 0.03,
                       None, paper, None, None, None, regime, "", 2, 1)  # fmt: skip


def test_a_claim_is_decidable_when_its_smallest_detectable_difference_is_within_the_declared_effect():
    mdd = P.claim_power(1.0, 6, 2, 1, None).mdd
    assert P.undecided([_plan()], {"a": mdd + 0.01}, 6) == []
    (line,) = P.undecided([_plan()], {"a": mdd - 0.01}, 6)
    assert line.startswith("(a): smallest detectable difference") and f"{mdd:.2f} points at 6 seeds" in line
    assert P.undecided([_plan(paper=mdd + 0.01)], {"a": None}, 6) == []  # null: the paper's effect
    assert P.undecided([_plan()], {"a": mdd + 0.01}, 2)  # fewer seeds, less power


def test_a_claim_cannot_be_shown_decidable_without_effect_noise_models_or_regime():
    assert "no effect to size for" in P.undecided([_plan()], {"a": None}, 6)[0]
    assert "no power to state" in P.undecided([_plan(sd=None)], {"a": 5.0}, 6)[0]
    assert "no two models" in P.undecided([_plan()], {"f": 5.0}, 6)[0]
    out = ("ViT_REL is expected to need ~1,815 steps to reach 0.1 nats; the profile gives 900 (out of regime)",)
    assert P.undecided([_plan(regime=out)], {"a": 50.0}, 6) == [f"(a): {out[0]}"]
    unknown = ("ViT_REL is expected to need ~1,815 steps to reach 0.1 nats; steps not planned (unknown)",)
    assert P.undecided([_plan(regime=unknown)], {"a": 50.0}, 6) == []


def test_the_declaration_is_not_part_of_the_space_identity(tmp_path):
    text = TINY.read_text()
    declared = text + "decides: {a: 2.0}\n"
    profiled = text.replace("  quick:\n", "  quick:\n    decides: {e: null}\n")
    assert profiled != text
    assert content_sha256(declared) == content_sha256(text) == content_sha256(profiled)
    assert content_sha256(text.replace("per_class: 20", "per_class: 21")) != content_sha256(text)


def test_run_refuses_an_undecidable_declaration_in_one_line_and_writes_nothing(tmp_path, capsys):
    space = tiny_variant(tmp_path, ("study: {seeds: [0]", "decides: {a: 1.0}\nstudy: {seeds: [0]"))
    studies, reports = tmp_path / "s", tmp_path / "r"
    args = ["run", str(space), "--device", "cpu", "--workers", "1", "--studies-dir", str(studies)]
    assert main([*args, "--reports-dir", str(reports), "--no-plan"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert f"{space}: profile default: decides: the plan cannot decide (a): the space has no two models" in err
    assert err.endswith("(--allow-undecided runs it anyway)")
    assert not studies.exists() and not reports.exists()
    with pytest.raises(Exception, match="decides: the plan cannot decide"):
        api.run(space, studies_dir=studies, reports_dir=reports, device="cpu", workers=1)
    assert not studies.exists()


@pytest.mark.slow  # trains the tiny space's two trials
def test_the_flag_runs_it_anyway(tmp_path):
    space = tiny_variant(tmp_path, ("study: {seeds: [0]", "decides: {a: 1.0}\nstudy: {seeds: [0]"))
    res = api.run(space, studies_dir=tmp_path / "s", reports_dir=tmp_path / "r", device="cpu", workers=1,
                  progress=False, allow_undecided=True)  # fmt: skip
    assert res.complete == 2 and res.report is not None


@pytest.mark.committed
@pytest.mark.parametrize("name, profile, claim", [("paper_layouts", "default", "a"), ("vit_stems", "default", "f"),
                                                  ("paper_layouts", "middle", "a")])  # fmt: skip
def test_each_shipped_profile_can_decide_what_it_declares(name, profile, claim, tmp_path):
    sp = api.load_space(ROOT / "spaces" / f"{name}.yaml", profile)
    study = api.study_name(sp, None)
    assert claim in sp.decides
    check_decides(sp, tmp_path / "no-studies", study, ROOT / "reports")  # the committed report's noise: no error
    weak = dataclasses.replace(sp, decides={claim: 0.01})
    with pytest.raises(Exception, match=rf"\({claim}\): smallest detectable difference"):
        check_decides(weak, tmp_path / "no-studies", study, ROOT / "reports")


def test_the_planner_judges_claim_a_at_the_profiles_own_fit_level():
    """The middle profile reads claim (a) at 0.2 nats (fit_loss); the default at the verdict rule's 0.1."""
    middle = api.load_space(ROOT / "spaces" / "paper_layouts.yaml", "middle")
    default = api.load_space(ROOT / "spaces" / "paper_layouts.yaml")
    assert P.regime_loss(middle) == pytest.approx(0.2) and P.regime_loss(default) == pytest.approx(P.REGIME_LOSS)
    curve = {"candidate": "C-C-C-T", "step": [0, 500, 1000], "train_loss": [2.3, 0.4, 0.15], "eval_acc": [10, 80, 85]}
    earlier = P.Earlier("study", "here", [], {"generalization": [curve]}, {}, None)
    planned = {"C-C-C-T": {"generalization": 1000}}
    at_02 = P.regime("generalization.matched_acc", ["C-C-C-T"], planned, earlier, P.regime_loss(middle), False)
    at_01 = P.regime("generalization.matched_acc", ["C-C-C-T"], planned, earlier, P.regime_loss(default), False)
    assert "(in regime)" in at_02[0] and "(out of regime)" in at_01[0]


@pytest.mark.committed
def test_a_claim_takes_its_noise_from_the_sibling_study_that_ran_its_models():
    """depth_long's (d) is sized on the depth study's V0/V1/V2 noise, not the default's three other layouts; the
    middle's (a) on the default's, since no sibling ran all four of its models on the matched-loss measure."""
    from coatsearch.planner import model_rows

    reports = ROOT / "reports"
    for profile, claim, source in (("depth_long", "d", "paper_layouts-depth/"), ("middle", "a", "paper_layouts/")):
        sp = api.load_space(ROOT / "spaces" / "paper_layouts.yaml", profile)
        models = model_rows(sp)
        rows, keys = list(models.rows), dict(models.measures)
        default = P.earlier(Path("/nonexistent"), reports, "paper_layouts")
        sibs = P.siblings(reports, "paper_layouts", f"paper_layouts-{profile}", "paper_layouts")
        plans = {c.claim: c for c in P.plan_claims(rows, keys, {}, 5, default, None, P.regime_loss(sp), sibs)}
        assert source in plans[claim].noise_source, (profile, plans[claim].noise_source)
        alone = {c.claim: c for c in P.plan_claims(rows, keys, {}, 5, default, None, P.regime_loss(sp))}
        assert "paper_layouts/" in alone[claim].noise_source  # without siblings: the default's
    nowhere = Path("/nonexistent")
    first, sibs = P.sources(nowhere, reports, "paper_layouts", "paper_layouts-not-run")
    assert first.where.endswith("paper_layouts/summary.json") and "paper_layouts-depth/summary.json" in [
        s.where.split("reports/")[-1] for s in sibs]  # fmt: skip
    ran, none = P.sources(nowhere, reports, "paper_layouts", "paper_layouts-depth_long")
    assert ran.where.endswith("paper_layouts-depth_long/summary.json") and none == ()  # once run: its own noise
    sp = dataclasses.replace(api.load_space(ROOT / "spaces" / "paper_layouts.yaml", "depth_long"), decides={"d": 1.27})
    with pytest.raises(Exception, match=r"\(d\): smallest detectable difference"):  # its run measured 1.28
        check_decides(sp, nowhere, "paper_layouts-depth_long", reports)
    own, none = P.sources(nowhere, reports, "paper_layouts", "paper_layouts-depth-rep", "paper_layouts-depth")
    assert own.where.endswith("paper_layouts-depth/summary.json") and none == ()  # a replicate: the original's


def test_a_profile_not_yet_run_takes_its_noise_from_the_spaces_default_study(tmp_path):
    reports = tmp_path / "r"
    (reports / "sp").mkdir(parents=True)
    (reports / "sp" / "summary.json").write_text((ROOT / "reports" / "paper_layouts" / "summary.json").read_text())
    assert P.earlier(tmp_path / "s", reports, "sp-middle") is None  # its own name only: nothing measured
    found = P.earlier(tmp_path / "s", reports, "sp-middle", "sp")
    assert found is not None and found.source == "report" and found.where.endswith("sp/summary.json")
    (reports / "sp-middle").mkdir()
    (reports / "sp-middle" / "summary.json").write_text((ROOT / "reports" / "paper_layouts-depth" / "summary.json")
                                                        .read_text())  # fmt: skip
    own = P.earlier(tmp_path / "s", reports, "sp-middle", "sp")
    assert own is not None and own.where.endswith("sp-middle/summary.json")  # its own report comes first
