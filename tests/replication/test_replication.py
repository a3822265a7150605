"""`coatsearch replicate`: a registered study again on fresh seeds and a fresh test draw, and its report section."""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import coatsearch
from coatsearch import api, cli, replication
from coatsearch.errors import UserError
from coatsearch.papers import categories as K
from coatsearch.papers import judging, registration
from coatsearch.papers import replicate as vr
from coatsearch.papers.claim_results import ClaimReplication
from coatsearch.report.markdown_replication import section
from coatsearch.storage import store
from coatsearch.storage.trials import space_record
from tests.report_records import AGREE, SPACE, layout_records, noisy, reverse
from tests.tiny import tiny_variant

# tiny.yaml with room for three test draws in every subset, and candidates named for claim (d) (V0 ≥ V2 > V1)
SMALL = (("eval_size: 100}", "eval_size: 40, test_size: 40}"), ("{name: C-C, layout: C-C}", "{name: V2, layout: C-C}"),
         ("- {name: C-T}", "- {name: V1, layout: C-T}"))  # fmt: skip


# ------------------------------------------------------------------------------------ the rule, constructed cases


def _shifted(records: list, by: int) -> list:
    """The complete records on seeds moved by `by` (a study on other seeds with the same numbers)."""
    out = []
    for r in (r for r in records if r.state == "COMPLETE"):
        ident = dataclasses.replace(r.run.identity, seed=r.seed + by)
        out.append(dataclasses.replace(r, params={**r.params, "seed": r.seed + by},
                                       run=dataclasses.replace(r.run, identity=ident)))  # fmt: skip
    return out


def _replication(original: dict, replicate: dict, by: int = 3) -> dict[str, ClaimReplication]:
    theirs, ours = _shifted(layout_records(original), 0), _shifted(layout_records(replicate), by)
    judged = judging.judge_records(SPACE, ours)
    done = vr.compute("fab-rep", SPACE, ours, judged, "fab", SPACE, theirs, None)
    assert done.original_seeds == (0, 1, 2) and done.seeds == tuple(s + by for s in (0, 1, 2))
    return {c.id: c for c in done.claims}


def test_the_same_firm_verdict_on_fresh_seeds_replicates_and_pooled_pairs_both_studies_seeds() -> None:
    claims = _replication(AGREE, AGREE)
    a = claims["a"]
    assert a.original.verdict == a.replicate.verdict == "supported" and a.outcome == vr.REPLICATED
    assert all(claims[k].outcome == vr.REPLICATED for k in ("a", "b", "c"))
    assert claims["d"].outcome == vr.NOTHING  # not tested at this scale in the original: nothing to replicate
    first = [e for e in a.pooled.estimates if e.relation == a.original.estimates[0].relation][0]
    assert a.original.estimates[0].n == a.replicate.estimates[0].n == 3 and first.n == 6  # seeds pooled, paired
    mean = (a.original.estimates[0].d + a.replicate.estimates[0].d) / 2
    assert first.d == pytest.approx(mean) and first.ci is not None  # same pairs, twice the seeds


def test_a_replicate_not_firm_or_firm_the_other_way_does_not_replicate() -> None:
    other = _replication(AGREE, reverse(AGREE))["a"]
    assert other.replicate.verdict == "not supported" and other.outcome == vr.NOT_REPLICATED
    assert "firm the other way" in other.why
    loose = _replication(AGREE, noisy(AGREE))["a"]
    assert loose.replicate.verdict == "unresolved" and loose.outcome == vr.NOT_REPLICATED and "not firm" in loose.why
    nothing = _replication(noisy(AGREE), AGREE)["a"]
    assert nothing.original.verdict == "unresolved" and nothing.replicate.verdict == "supported"
    assert nothing.outcome == vr.NOTHING  # a firm replicate of an unfirm original is no replication
    same = _replication(AGREE, AGREE, by=0)["a"]  # the replicate reran the original's seeds
    assert same.outcome == vr.NOT_REPLICATED and "not fresh" in same.why


def test_the_rule_reads_only_the_two_verdicts_and_freshness() -> None:
    assert vr.outcome("supported", "supported")[0] == vr.REPLICATED
    assert vr.outcome("not supported", "not supported")[0] == vr.REPLICATED
    assert vr.outcome("supported", "not supported")[0] == vr.NOT_REPLICATED
    assert vr.outcome("not supported", "unresolved")[0] == vr.NOT_REPLICATED
    assert vr.outcome("supported", None)[0] == vr.NOT_REPLICATED
    assert vr.outcome("underpowered", "supported")[0] == vr.NOTHING
    assert vr.outcome("supported", "supported", "seed(s) 0")[0] == vr.NOT_REPLICATED


def test_the_section_renders_original_replicate_and_pooled_per_claim() -> None:
    ours = _shifted(layout_records(AGREE), 3)
    info = vr.compute("fab-rep", SPACE, ours, judging.judge_records(SPACE, ours), "fab", SPACE,
                      _shifted(layout_records(reverse(AGREE)), 0), None)  # fmt: skip
    text = section(info)
    assert text.startswith("## Replication of fab") and "seeds 3, 4, 5 (original: 0, 1, 2)" in text
    assert re.search(r"\| claim +\| original +\| replicate +\| pooled +\| outcome +\| why", text)
    assert "### (a) estimates on" in text and "pooled (both studies' seeds)" in text
    assert "not replicated" in text and "✅ replicated" not in text


# ---------------------------------------------------------------------------------------------- refusals, no run


def _registered(tmp_path: Path, edits: tuple = SMALL) -> tuple[Path, Path]:
    """A registered study of the tiny space (prepared as `run` prepares it, no trial run): (space file, studies)."""
    path, studies, name = tiny_variant(tmp_path, *edits), tmp_path / "studies", "tiny-quick"
    space = api.load_space(path, "quick")
    store.prepare(space, studies, name)
    registration.register(space_record(space), store.folder(studies, name), name)
    return path, studies


def _refused(argv: list[str], capsys: pytest.CaptureFixture, tmp_path: Path) -> str:
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    assert cli.main(["replicate", *argv, "--no-plan", "--device", "cpu"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before  # nothing written
    assert not (tmp_path / "studies" / "tiny-quick-rep").exists() and not (tmp_path / "reports").exists()
    return err


def test_bad_input_is_one_line_exit_2_and_nothing_written(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path, studies = _registered(tmp_path)
    dirs = ["--studies-dir", str(studies), "--reports-dir", str(tmp_path / "reports")]
    assert "no study 'nope'" in _refused(["nope", *dirs], capsys, tmp_path)
    err = _refused(["tiny-quick", "--seeds", "0,5", *dirs], capsys, tmp_path)
    assert "seed(s) 0 already used by 'tiny-quick'" in err
    assert "listed twice" in _refused(["tiny-quick", "--seeds", "5,5", *dirs], capsys, tmp_path)
    # a value edited after registration (a comment-only edit is the same space: space.identity)
    path.write_text(path.read_text().replace("{per_class: 10, epochs: 1}", "{per_class: 10, epochs: 2}"))
    err = _refused(["tiny-quick", *dirs], capsys, tmp_path)
    assert "the space file changed since 'tiny-quick' was registered" in err and "sha256" in err
    bare = tmp_path / "bare"
    store.prepare(api.load_space(path, "quick"), bare, "tiny-quick")  # a study with no registration
    capsys.readouterr()
    err = _refused(["tiny-quick", "--studies-dir", str(bare), "--reports-dir", str(tmp_path / "reports")], capsys,
                   tmp_path)  # fmt: skip
    assert "has no registered analysis" in err


def test_a_test_draw_that_does_not_fit_is_refused_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    _, studies = _registered(tmp_path, ())  # tiny.yaml: 100 validation + 100 test images of 250 per 5 classes
    err = _refused(["tiny-quick", "--studies-dir", str(studies), "--reports-dir", str(tmp_path / "reports")], capsys,
                   tmp_path)  # fmt: skip
    assert "data.test_size" in err and "draw 1" in err


def test_a_test_draw_an_earlier_look_read_is_refused_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """Fresh test images: the default draw index goes past every draw a look at the claims read (the reports
    folder's record, withdrawn looks included), and a draw that still reads their images is refused in one line,
    exit status 2, nothing written: here a withdrawn look's 80-image draw 1 covers the 40-image draw 2."""
    from coatsearch.papers import draws_seen
    from coatsearch.space.draws import draws_of_space, parse

    _, studies = _registered(tmp_path)
    rec = tmp_path / "rec"
    space = replication.prepare("tiny-quick", studies_dir=studies, reports_dir=rec).space
    mine = sorted(draws_of_space(space), key=lambda d: d.label)
    assert {d.draw for d in mine} == {1} and mine[0].classes is None
    wide = dataclasses.replace(mine[0], test_size=80).label  # positions 80-160 after validation: draws 2 and 3 of 40
    rec.mkdir()
    (rec / draws_seen.RECORD).write_text(draws_seen.dump([draws_seen.DrawLook(
        "tiny-quick-rep", "reports/tiny-quick-rep/summary.json @ 0abc", "tiny", "quick", ("a",), (wide,), ("f",),
        True)]))  # fmt: skip
    err = _refused(["tiny-quick", "--studies-dir", str(studies), "--reports-dir", str(rec)], capsys, tmp_path)
    assert f"'{dataclasses.replace(mine[0], draw=2).label}' reads images of '{wide}'" in err and "@ 0abc read" in err
    assert parse(wide).draw == 1


def test_a_missing_study_through_the_command_line(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "coatsearch", "replicate", "nope", "--studies-dir",
                          str(tmp_path / "s")], capture_output=True, text=True, timeout=120)  # fmt: skip
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1 and "no study 'nope'" in out.stderr
    assert not (tmp_path / "s").exists()


def test_the_seeds_flag_is_a_count_or_a_list() -> None:
    assert replication.parse_seeds("3") == 3 and replication.parse_seeds("5,6,7") == (5, 6, 7)
    assert replication.parse_seeds("7,") == (7,)
    for bad in ("0", "x", "1,-2", ","):
        with pytest.raises(ValueError):
            replication.parse_seeds(bad)


def test_fresh_seeds_follow_the_largest_used_and_status_counts_the_replicate(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    _, studies = _registered(tmp_path)
    rep = replication.prepare("tiny-quick", 3, studies_dir=studies)
    assert (rep.study, rep.seeds, rep.test_draw) == ("tiny-quick-rep", (1, 2, 3), 1)
    assert rep.space.study.seeds == (1, 2, 3) and rep.space.data.test_draw == 1
    store.prepare(rep.space, studies, rep.study)  # the replicate's study, as `run` creates it
    assert api.status(rep.study, studies).planned == 2 * 3  # its own seeds, not the space file's one
    assert cli.main(["status", rep.study, "--studies-dir", str(studies)]) == 0
    assert "0 completed, 0 failed, 0 pruned, 0 running, 0 waiting of 6 planned" in capsys.readouterr().out
    with pytest.raises(UserError, match="exists and holds no registered replicate"):
        replication.prepare("tiny-quick", studies_dir=studies)
    folder = store.folder(studies, rep.study)
    registration.register(space_record(rep.space), folder, rep.study, replicate_of="tiny-quick")
    again = replication.prepare("tiny-quick", studies_dir=studies)  # resumed on its registered seeds and draw
    assert (again.resumed, again.seeds, again.test_draw) == (True, (1, 2, 3), 1)
    assert replication.prepare("tiny-quick", 3, studies_dir=studies).seeds == (1, 2, 3)
    with pytest.raises(UserError, match="on seeds 1, 2, 3; rerun without --seeds"):
        replication.prepare("tiny-quick", (8,), studies_dir=studies)


def test_the_re_evaluation_seeds_count_as_used(tmp_path: Path) -> None:
    reeval = ("study: {seeds: [0],", "study: {seeds: [3], reevaluate: {top: 1, seeds: 2},")
    _, studies = _registered(tmp_path, (*SMALL, reeval))  # runs seeds 3, then re-evaluates on 4 and 5
    assert replication.prepare("tiny-quick", studies_dir=studies).seeds == (6,)
    with pytest.raises(UserError, match=r"re-evaluation after seeds 2 would run seed\(s\) 3, 4"):
        replication.prepare("tiny-quick", (2,), studies_dir=studies)
    assert replication.prepare("tiny-quick", (0,), studies_dir=studies).space.study.fresh_seeds == (1, 2)


def test_a_moved_space_file_is_named_with_its_registered_bytes(tmp_path: Path) -> None:
    path, studies = _registered(tmp_path)
    moved = tmp_path / "moved.yaml"
    moved.write_bytes(path.read_bytes())
    path.unlink()
    with pytest.raises(UserError, match="cannot be read"):
        replication.prepare("tiny-quick", studies_dir=studies)
    rep = replication.prepare("tiny-quick", (7, 9), studies_dir=studies, space_file=moved)
    assert rep.seeds == (7, 9) and rep.space.source == str(moved) and not (studies / "tiny-quick-rep").exists()


# -------------------------------------------------------------------------------------------------- end to end


@pytest.mark.slow
def test_replicate_end_to_end_on_the_tiny_space(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path, studies, reports = tiny_variant(tmp_path, *SMALL), tmp_path / "studies", tmp_path / "reports"
    api.run(path, profile="quick", workers=1, device="cpu", studies_dir=studies, report=False, progress=False)
    args = ["--studies-dir", str(studies), "--reports-dir", str(reports), "--workers", "1", "--device", "cpu"]
    assert cli.main(["replicate", "tiny-quick", "--seeds", "4,", *args, "--no-plan", "--quiet"]) == 0
    out = capsys.readouterr()
    assert "study tiny-quick-rep (replicate of tiny-quick on seeds 4, test draw 1): 2 complete, 0 failed" in out.out
    reg = registration.load(store.folder(studies, "tiny-quick-rep"))
    orig = registration.load(store.folder(studies, "tiny-quick"))
    assert reg.analysis.replicate_of == "tiny-quick" and orig.analysis.replicate_of is None
    assert reg.analysis.seeds == (4,) and orig.analysis.seeds == (0,)  # the fresh seed asked for
    assert (orig.analysis.data["test_draw"], reg.analysis.data["test_draw"]) == (0, 1)  # a fresh test draw
    assert reg.analysis.space_sha256 == orig.analysis.space_sha256 and reg.analysis.profile == "quick"
    df = api.results("tiny-quick-rep", studies)
    assert set(df["seed"]) == {4}
    summary = json.loads((reports / "tiny-quick-rep" / "summary.json").read_text())
    assert summary["images"]["draws"] == [1]
    possible = any(c["verdict"] in K.POSSIBLE for c in summary["claims"])  # 'confirmatory' only where firm could be
    assert summary["registration"].startswith("confirmatory" if possible else K.REGISTERED_ONLY)
    rep = summary["replication"]
    assert (rep["original"], rep["seeds"], rep["original_draws"], rep["fresh"]) == ("tiny-quick", [4], [0], "")
    d = next(c for c in rep["claims"] if c["id"] == "d")  # V2 > V1: the tiny runs stay near chance, never firm
    assert d["outcome"] == vr.NOTHING
    for side in ("original", "replicate"):
        want = "confirmatory" if d[side]["verdict"] in K.POSSIBLE else K.REGISTERED_ONLY
        assert d[side]["status"] == want, d[side]
    unfirm = {"not tested at this scale", *K.NOT_FIRM}
    assert {d[k]["verdict"] for k in ("original", "replicate", "pooled")} <= unfirm
    text = (reports / "tiny-quick-rep" / "report.md").read_text()
    assert "## Replication of tiny-quick" in text and "### (d) estimates" in text
    assert re.search(r"\| \(d\) Depth split[^\n]*\| original not firm: nothing to replicate", text)
    assert api.status("tiny-quick-rep", studies).planned == 2
    again = coatsearch.replicate("tiny-quick", studies_dir=studies, reports_dir=reports, workers=1, device="cpu",
                          progress=False, report=False)  # fmt: skip
    assert again.ran_now == 0 and again.complete == 2  # resumed on its registered seeds
