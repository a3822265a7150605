"""`coatsearch answer SPACE` (answer.space_answer, space_claims, view_space, markdown_space): one page per space,
every claim taken from the study whose profile decides it, one row per relation, never a bare 'supported' for a
partly tested claim."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coatsearch.analysis.results import Estimate, Evidence, Judgement, Member, Pair, Power, Stat
from coatsearch.analysis.stats import PairTest
from coatsearch.analysis.tables import jsonable
from coatsearch.answer import markdown_space as mdsp
from coatsearch.answer import space_answer
from coatsearch.answer import view_space as vsp
from coatsearch.answer.space_rows import HELD, NOT_TESTED
from coatsearch.cli import main
from coatsearch.papers.claim_results import ClaimVerdict
from tests.tiny import tiny_variant

ROOT = Path(__file__).resolve().parents[2]
CHAIN_A = "C-C-C-C ≈ C-C-C-T ≥ C-C-T-T > C-T-T-T ≫ ViT_REL"
CHAIN_B = "C-C-T-T ≈ C-T-T-T > ViT_REL > C-C-C-T > C-C-C-C"
PROFILES = (
    "profiles:\n  quick:",
    """untestable: {c: "transfer is never run in this space"}
profiles:
  cap:
    untestable: {a: "capacity runs only"}
  quick:""",
)


def _pair(a: str, b: str, sym: str, d: float, status: str, n: int = 3) -> Pair:
    """A judged pair of n paired seeds, interval d ± 0.4 (none below 2 seeds)."""
    ci = (d - 0.4, d + 0.4) if n >= 2 else None
    test = PairTest(n, d, 0.3 if n >= 2 else None, tuple((s, d) for s in range(n)), 0.15, 4, ci, ci, 0.01)
    return Pair(a, b, sym, sym in (">", "≫"), 1.0, test, 0.01, 0.02, status)


def _claim(cid: str, chain: str, verdict: str, pairs: tuple[Pair, ...]) -> dict:
    """A judged claim as summary.json holds it: one measure's evidence with these pairs, detectable 0.9 points."""
    names = dict.fromkeys(n for p in pairs for n in (p.a, p.b))
    members = tuple(Member(n, n, Stat(86.0 - i, 0.3, 3)) for i, n in enumerate(names))
    est = (
        Estimate(f"{pairs[-1].a} − {pairs[-1].b}", pairs[-1].d, pairs[-1].ci, pairs[-1].n, "points") if pairs else None
    )
    found = Judgement(verdict, f"{verdict} (fabricated)", est, {"mdd": 0.9, "effect": None, "unit": "points", "n": 3},
                      "decided (a replicate on fresh seeds checks it)")  # fmt: skip
    power = Power(3, 0.5, 4, 3, 0.01, 0.9, None, None)
    key = "capacity.eval_acc" if cid == "b" else "generalization.matched_acc"
    ev = Evidence(key, "measure", "%", None, None, members, pairs, power, (), (), False, found, "")
    return jsonable(ClaimVerdict(cid, f"Claim {cid}: fabricated", chain, "paper", found, (ev,), status="confirmatory"))


def _write(reports: Path, study: str, profile: str, claims: list[dict], untested: dict[str, str],
           original: str = "") -> None:  # fmt: skip
    skipped = [{"id": c, "title": f"Claim {c}: fabricated", "reason": why, "verdict": "not tested at this scale"}
               for c, why in untested.items()]  # fmt: skip
    space = {"space": "tiny", "profile": profile, "sha256": "0" * 64}
    data: dict = {"version": 1, "study": study, "space": space, "claims": claims, "untested": skipped}
    if original:
        data["replication"] = {"original": original, "claims": [{"id": "a", "outcome": "replicated", "why": "same"}]}
    (reports / study).mkdir(parents=True)
    (reports / study / "summary.json").write_text(json.dumps(data, ensure_ascii=False))


FULL_A = (_pair("C-C-C-C", "C-C-C-T", "≈", 0.1, "equivalent"), _pair("C-C-C-T", "C-C-T-T", "≥", 0.5, "non-inferior"),
          _pair("C-C-T-T", "C-T-T-T", ">", 1.5, "holds"), _pair("C-T-T-T", "ViT_REL", "≫", 3.0, "holds"))  # fmt: skip
PART_B = (_pair("C-C-T-T", "C-T-T-T", "≈", 0.2, "equivalent"), _pair("C-T-T-T", "ViT_REL", ">", 2.0, "holds"))


@pytest.fixture
def fabricated(tmp_path: Path) -> tuple[Path, Path]:
    """Space `tiny` (profiles default, cap, quick) and its reports: (a) fully tested and held by the default study
    and out of regime in quick, replicated by tiny-rep; (b) half tested by cap; (c) tested by no profile; a study
    of another space beside them."""
    space = tiny_variant(tmp_path, PROFILES)
    reports = tmp_path / "reports"
    _write(reports, "tiny", "default", [_claim("a", CHAIN_A, "supported", FULL_A)],
           {"b": "generalization runs only", "c": "transfer is never run in this space"})  # fmt: skip
    _write(reports, "tiny-rep", "default", [_claim("a", CHAIN_A, "supported", FULL_A)],
           {"b": "generalization runs only"}, original="tiny")  # fmt: skip
    _write(reports, "tiny-cap", "cap", [_claim("b", CHAIN_B, "supported", PART_B)],
           {"a": "capacity runs only", "c": "transfer is never run in this space"})  # fmt: skip
    _write(reports, "tiny-quick", "quick", [_claim("a", CHAIN_A, "out of regime", ())], {"b": "quick", "c": "quick"})
    _write(reports, "other", "default", [_claim("a", CHAIN_A, "not supported", FULL_A)], {})
    (reports / "other" / "summary.json").write_text((reports / "other" / "summary.json").read_text().replace(
        '"space": "tiny"', '"space": "other"'))  # fmt: skip
    return space, reports


def _info(space: Path, reports: Path) -> vsp.AnswerPage:
    return space_answer.answer_page(space_answer.read_space(space), reports)


def test_a_fully_tested_claim_is_supported_on_every_relation_from_its_deciding_study(fabricated) -> None:
    info = _info(*fabricated)
    a = next(c for c in info.claims if c.id == "a")
    assert (a.category, a.study, a.relations, len(a.held), a.untested, a.complete) == ("supported", "tiny", 4, 4, (),
                                                                                        True)  # fmt: skip
    rows = [r for r in info.rows if r.claim == "a"]
    assert [r.relation for r in rows] == ["C-C-C-C ≈ C-C-C-T", "C-C-C-T ≥ C-C-T-T", "C-C-T-T > C-T-T-T",
                                          "C-T-T-T ≫ ViT_REL"]  # fmt: skip
    assert {(r.status, r.study) for r in rows} == {(HELD, "tiny")}
    assert all(r.replication and r.replication[0].study == "tiny-rep" for r in rows)  # the replicate: replication
    assert a.replication == (("tiny-rep", "replicated"),) and a.others == (("tiny-quick", "out of regime"),)
    text = mdsp.page(info, "coatsearch answer space.yaml")
    assert "claim (a) Claim a is **supported on all 4 relations**" in text and "replicated by tiny-rep" in text
    assert "also judged by tiny-quick (out of regime)" in text


def test_a_partly_tested_claim_never_reads_a_bare_supported(fabricated) -> None:
    info = _info(*fabricated)
    b = next(c for c in info.claims if c.id == "b")
    assert (b.category, b.study, b.relations, b.untested) == ("supported", "tiny-cap", 4,
                                                               ("ViT_REL > C-C-C-T", "C-C-C-T > C-C-C-C"))  # fmt: skip
    text = mdsp.page(info, "coatsearch answer space.yaml")
    assert "**supported on 2 of 4 relations**" in text and "**supported**" not in text
    assert "not tested: ViT_REL > C-C-C-T, C-C-C-T > C-C-C-C" in text
    row = next(line for line in text.splitlines() if "| (b) " in line)
    assert "supported on 2 of 4 relations" in row and "(b) Claim b: supported |" not in row
    untested = next(line for line in text.splitlines() if "| ViT_REL > C-C-C-T" in line)
    assert "not tested: C-C-C-T not run by any study that tests (b)" in untested


def test_a_claim_no_profile_tests_says_why_on_every_relation(fabricated) -> None:
    info = _info(*fabricated)
    c = next(c for c in info.claims if c.id == "c")
    assert (c.category, c.study, c.untested) == ("not tested at this scale", "", ("C-C-T-T > C-T-T-T",))
    assert c.reason == "tiny: transfer is never run in this space; tiny-quick: quick"  # no profile is pending
    (row,) = [r for r in info.rows if r.claim == "c"]
    assert (row.status, row.estimate, row.study) == (NOT_TESTED, None, "")
    assert "claim (c) Transfer is **not tested**: tiny: transfer is never run" in mdsp.page(info, "x")


def test_of_two_profiles_testing_a_claim_the_firm_one_decides_and_a_relation_comes_from_where_it_was_measured(
    fabricated,
) -> None:
    space, reports = fabricated
    middle = (_pair("C-C-T-T", "C-T-T-T", ">", 1.2, "holds"),)
    _write(reports, "tiny-mid", "cap", [_claim("a", CHAIN_A, "unresolved", middle)], {})
    ext = (_pair("C-C-C-C", "C-C-C-T", "≈", 0.1, "equivalent"), _pair("C-C-C-T", "ViT_REL", "≫", 2.14, "holds"))
    for study in ("tiny", "tiny-rep"):  # the default now measures the extremes only
        claim = _claim("a", CHAIN_A, "supported", ext)
        path = reports / study / "summary.json"
        path.write_text(json.dumps({**json.loads(path.read_text()), "claims": [claim]}, ensure_ascii=False))
    info = _info(space, reports)
    a = next(c for c in info.claims if c.id == "a")
    assert (a.study, a.held, a.across) == ("tiny", ("C-C-C-C ≈ C-C-C-T", "C-C-T-T > C-T-T-T"), ("C-C-C-T ≫ ViT_REL",))
    assert a.others == (("tiny-mid", "unresolved"), ("tiny-quick", "out of regime"))
    by = {r.relation: r for r in info.rows if r.claim == "a"}
    assert by["C-C-T-T > C-T-T-T"].study == "tiny-mid" and by["C-C-C-T ≥ C-C-T-T"].status == NOT_TESTED
    assert not by["C-C-C-T ≫ ViT_REL"].counts and by["C-C-C-T ≫ ViT_REL"].estimate.d == 2.14
    want = "**supported on 2 of 4 relations, plus C-C-C-T ≫ ViT_REL, which spans several relations of the chain**"
    assert want in mdsp.page(info, "x")


def test_relations_gathered_from_two_studies_state_their_joint_family(fabricated) -> None:
    """Each study holds its own family at α 0.03; gathered from two, the page says so (0.06 together) and which
    strict relations hold at 0.015 in their study: here the middle's (Holm p 0.01), not the default's (0.02)."""
    space, reports = fabricated
    alone = next(c for c in _info(space, reports).claims if c.id == "a")  # every relation from one study
    assert (alone.sources, alone.held_jointly) == (("tiny",), ()) and "studies (tiny" not in mdsp.page(
        _info(space, reports), "x")  # fmt: skip
    mid = _pair("C-C-T-T", "C-T-T-T", ">", 1.2, "holds")
    mid = Pair(mid.a, mid.b, mid.paper, mid.key, mid.margin, mid.test, 0.004, 0.01, "holds")
    _write(reports, "tiny-mid", "cap", [_claim("a", CHAIN_A, "supported", (mid,))], {})
    ext = (_pair("C-C-C-C", "C-C-C-T", "≈", 0.1, "equivalent"), _pair("C-C-C-T", "ViT_REL", "≫", 2.14, "holds"))
    for study in ("tiny", "tiny-rep"):
        path = reports / study / "summary.json"
        claim = _claim("a", CHAIN_A, "supported", ext)
        path.write_text(json.dumps({**json.loads(path.read_text()), "claims": [claim]}, ensure_ascii=False))
    a = next(c for c in _info(space, reports).claims if c.id == "a")
    assert a.sources == ("tiny", "tiny-mid") and a.held_jointly == ("C-C-T-T > C-T-T-T",) and a.held_strict == 2
    text = mdsp.page(_info(space, reports), "x")
    assert "come from 2 studies (tiny, tiny-mid), each at family-wise α 0.03, so together at most 0.06" in text
    assert "jointly: C-C-T-T > C-T-T-T (of 2 held in their study)" in text  # C-C-C-T ≫ ViT_REL: Holm p 0.02


def test_the_study_that_tests_more_of_a_claim_decides_it_and_a_partly_held_claim_never_reads_supported(
    fabricated,
) -> None:
    """The default (supported) tests two relations; a middle study tests three, two of which do not hold. The middle
    decides (it tests more of the claim: a firmer study that tests less never decides it), the page counts what held
    (2 of 4), names what did not, keeps the default's held pair across the chain as its own row, and the joint family
    includes that pair."""
    space, reports = fabricated
    mid = (_pair("C-C-C-T", "C-C-T-T", "≥", 0.5, "non-inferior"), _pair("C-C-T-T", "C-T-T-T", ">", 0.3, "unresolved"),
           _pair("C-T-T-T", "ViT_REL", "≫", 0.8, "unresolved"))  # fmt: skip
    _write(reports, "tiny-mid", "cap", [_claim("a", CHAIN_A, "unresolved", mid)], {})
    ext = (_pair("C-C-C-C", "C-C-C-T", "≈", 0.1, "equivalent"), _pair("C-C-C-T", "ViT_REL", "≫", 2.14, "holds"))
    for study in ("tiny", "tiny-rep"):
        path = reports / study / "summary.json"
        claim = _claim("a", CHAIN_A, "supported", ext)
        path.write_text(json.dumps({**json.loads(path.read_text()), "claims": [claim]}, ensure_ascii=False))
    info = _info(space, reports)
    a = next(c for c in info.claims if c.id == "a")
    assert (a.study, a.category, a.untested) == ("tiny-mid", "unresolved", ())
    assert a.not_held == ("C-C-T-T > C-T-T-T", "C-T-T-T ≫ ViT_REL") and ("tiny", "supported") in a.others
    assert a.held == ("C-C-C-C ≈ C-C-C-T", "C-C-C-T ≥ C-C-T-T") and a.across == ("C-C-C-T ≫ ViT_REL",)
    text = mdsp.page(info, "x")
    assert "claim (a) Claim a is **unresolved; 4 of 4 relations tested, plus C-C-C-T ≫ ViT_REL" in text
    assert a.sources == ("tiny", "tiny-mid") and a.held_strict == 1  # the held pair across them counts


def test_the_page_is_written_once_per_space_and_regenerates_byte_identical(fabricated, monkeypatch) -> None:
    space, reports = fabricated
    monkeypatch.chdir(space.parent)
    path = space_answer.write_answer(space, reports)
    first = path.read_bytes()
    assert path == (reports / "tiny" / "answer.md").resolve() and first.startswith(b"# coatsearch answer: tiny\n")
    assert space_answer.write_answer(Path("space.yaml"), Path("reports")).read_bytes() == first  # typed differently
    assert "`coatsearch answer space.yaml`" in first.decode() and "[other]" not in first.decode()


def test_bad_input_is_one_line_and_exit_status_2(fabricated, tmp_path: Path, capsys) -> None:
    space, reports = fabricated
    (tmp_path / "empty").mkdir()
    cases = [([str(tmp_path / "nope.yaml"), "--reports-dir", str(reports)], "cannot read the space file"),
             ([str(space), "--reports-dir", str(tmp_path / "none")], "no such folder"),
             ([str(space), "--reports-dir", str(tmp_path / "empty")], "no report of space 'tiny'")]  # fmt: skip
    for args, why in cases:
        assert main(["answer", *args]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and why in err, err


@pytest.mark.committed
def test_the_committed_paper_layouts_reports_give_a_page_with_a_and_its_middle_from_the_middle_study() -> None:
    space = space_answer.read_space(ROOT / "spaces" / "paper_layouts.yaml")
    info = space_answer.answer_page(space, ROOT / "reports")  # read only: the page is not written here
    text = mdsp.page(info, "coatsearch answer spaces/paper_layouts.yaml")
    row = next(line for line in text.splitlines() if "| C-C-C-T ≫ ViT_REL" in line)
    assert "C-C-C-T − ViT_REL = +2.14 points" in row and "[+1.48, +2.79]" in row and "paper_layouts-rep" in row
    lines = text.splitlines()
    start = next(i for i, x in enumerate(lines) if x.startswith("| (a) "))
    block = lines[start : next(i for i, x in enumerate(lines) if x.startswith("| (b) "))]  # claim (a)'s rows
    for middle, status in (("C-C-C-T ≥ C-C-T-T", "held (non-inferior)"), ("C-C-T-T > C-T-T-T", "not held"),
                           ("C-T-T-T ≫ ViT_REL", "not held")):  # fmt: skip
        (line,) = [x for x in block if f"| {middle} " in x]
        assert status in line and "paper_layouts-middle" in line, line
    want = "claim (a) Generalization is **unresolved; 4 of 4 relations tested, plus C-C-C-T ≫ ViT_REL"
    assert want in text and "**supported" not in text  # the middle study tests more of (a) than the default
    assert "not held: C-C-T-T > C-T-T-T, C-T-T-T ≫ ViT_REL" in text and "come from 2 studies" in text
    assert text == mdsp.page(space_answer.answer_page(space, ROOT / "reports"), "coatsearch answer "
                             "spaces/paper_layouts.yaml")  # fmt: skip


@pytest.mark.committed
def test_the_committed_vit_stems_page_takes_f_from_the_study_that_tests_most_of_its_parts() -> None:
    """The default tests (f)'s gap alone (supported); the parts study tests gap, peak and training length
    (unresolved): (f) is the parts study's, and the default's firmer verdict is named beside it, not taken."""
    space = space_answer.read_space(ROOT / "spaces" / "vit_stems.yaml")
    info = space_answer.answer_page(space, ROOT / "reports")
    f = next(c for c in info.claims if c.id == "f")
    assert (f.study, f.category) == ("vit_stems-parts", "unresolved") and ("vit_stems", "supported") in f.others
    text = mdsp.page(info, "coatsearch answer spaces/vit_stems.yaml")
    assert "is **unresolved; 3 of 4 parts tested**" in text and "supported on" not in text
