"""A space's answer page as Infos: every claim gathered from the study whose profile decides it, one row per relation.

The input is each committed study of the space read through papers.summary_file (its judged claims, untested
claims and replication record) and the space file's profiles; nothing here reads a file or formats text
(answer.space_answer reads, answer.markdown_space formats). The rule, stated on the page:

- A study *tests* a claim when its summary judges it (not `untested`, not 'not tested at this scale'). The claim's
  deciding study is the one that tests the most of it (relations, or claim (f)'s parts, with a test), then with
  the firmest category (supported / not supported, then unresolved, underpowered, out of regime), then the name: a
  study that tests less of a claim never decides it for being firmer. A replicate decides only when no original
  tests the claim, and is otherwise shown as replication.
- A claim's relations are the neighbour relations of the paper's chain (`A ≈ B ≥ C` has two). Each is taken from the
  deciding study's deciding measure, else from another original study that measured exactly that pair; with
  fewer than 2 paired seeds it is not tested. A measured pair across names no study ran (C-C-C-T ≫ ViT_REL over
  C-C-T-T and C-T-T-T) is shown as its own row: it tests the chain's ends, not the relations it spans.
- The claim's category is its deciding study's; no verdict here combines studies.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from coatsearch.analysis import constants as CS
from coatsearch.analysis.measure_results import Detectable
from coatsearch.analysis.results import Estimate, Evidence, Pair
from coatsearch.answer.view_space_regime import StudyRegime, regime_row
from coatsearch.papers import categories as K
from coatsearch.papers import claims as C
from coatsearch.papers import verdicts as V
from coatsearch.papers.claim_results import ClaimVerdict, StemPart
from coatsearch.papers.summary_file import Summary

HELD, NOT_HELD, NOT_TESTED = "tested: held", "tested: not held", "not tested"
_HOLDS = ("holds", "equivalent", "non-inferior")  # a judged pair's status that keeps the paper's relation
_NOT_RUN = ("not run", "not tested", "")  # a part's status that ran no test
_SYMBOLS = ("≈", "≥", ">", "≫")
_RANK = {K.SUPPORTED: 0, K.NOT_SUPPORTED: 0, K.UNRESOLVED: 1, K.UNDERPOWERED: 2, K.OUT_OF_REGIME: 3}
PAPER_CLAIMS = {c.id: c for c in (*C.CHAIN_CLAIMS, C.REL_CLAIM, C.STEM_CLAIM)}


@dataclass(frozen=True)
class SpaceProfile:
    """A profile of the space file and the claims it declares untestable."""

    name: str
    untestable: tuple[str, ...]
    identity: str = ""  # space.identity.profile_sha256: what this profile runs, as the file stands


@dataclass(frozen=True)
class SpaceFile:
    """The space file the page answers for: its name, path as given, identities (content and bytes) and profiles."""

    name: str
    source: str
    ids: tuple[str, ...]
    profiles: tuple[SpaceProfile, ...]


@dataclass(frozen=True)
class Study:
    """One committed study of the space: its folder under reports/ and its summary, read."""

    folder: str
    summary: Summary

    @property
    def profile(self) -> str:
        """The profile it ran."""
        return str(self.summary.space.get("profile") or "default")

    @property
    def replicate_of(self) -> str:
        """The original study ('' unless a replicate)."""
        return self.summary.replicate_of


@dataclass(frozen=True)
class RowReplicate:
    """A relation measured again by a replicate of its study: the replicate, its estimate and the pair's status."""

    study: str
    estimate: Estimate | None
    detail: str


@dataclass(frozen=True)
class RelationRow:
    """One row of the page's verdict table: a relation of a claim, whether it was tested and held, its estimate,
    detectable difference and the study it is from ('' when not tested)."""

    claim: str
    relation: str  # 'C-C-T-T > C-T-T-T'
    counts: bool  # one of the claim's relations (False: a measured pair across names no study ran)
    status: str  # HELD / NOT_HELD / NOT_TESTED
    detail: str  # the pair's own status (holds, equivalent, reversed, unresolved, ...) or why it was not tested
    estimate: Estimate | None
    detectable: Detectable | None
    study: str
    replication: tuple[RowReplicate, ...]
    p_holm: float | None = None  # Holm-adjusted within its study's family (a strict relation: held below α)
    strict: bool = False  # a key relation (> or ≫): held only when shown


@dataclass(frozen=True)
class ClaimAnswer:
    """A claim gathered: its deciding study's category and what it carries, and which of its relations were tested,
    held, not held and not tested."""

    id: str
    title: str
    chain: str
    category: str  # the deciding study's, else K.NOT_TESTED
    reason: str  # the deciding study's reason, else why no study tests it
    decide: str
    status: str  # confirmatory, registered (no firm verdict possible) or exploratory ('' when not tested)
    scale: str
    study: str  # the deciding study ('' when none)
    estimate: Estimate | None
    detectable: Detectable | None
    word: str  # 'relation' or 'part'
    relations: int  # how many the claim has
    held: tuple[str, ...]
    not_held: tuple[str, ...]
    untested: tuple[str, ...]
    across: tuple[str, ...]  # measured pairs across names no study ran
    replication: tuple[tuple[str, str], ...]  # (replicate, outcome)
    others: tuple[tuple[str, str], ...]  # (another study that judged it, its category)
    sources: tuple[str, ...] = ()  # the studies its tested relations come from
    held_jointly: tuple[str, ...] = ()  # with sources > 1: the strict relations held at α / len(sources)
    held_strict: int = 0  # with sources > 1: the strict relations held in their study (at α)

    @property
    def complete(self) -> bool:
        """Every relation tested: only then may the category stand alone."""
        return not self.untested and self.category != K.NOT_TESTED


@dataclass(frozen=True)
class StudyRow:
    """A profile of the space and the study that ran it (or none yet): what it decides here, replicate of what."""

    profile: str
    study: str  # '' when no report of this profile is under reports/
    replicate_of: str
    decides: tuple[str, ...]  # claim ids it decides here
    adds: tuple[str, ...]  # claim ids it adds relations to
    same_space: bool | None  # the profile as it ran is the file's as it is now (None: no study); a report that
    # recorded no profile identity: the whole file as it ran is the file as it is now


@dataclass(frozen=True)
class AnswerPage:
    """The space's answer page: studies, claims, one row per relation, the regime rows of the studies used."""

    space: str
    source: str
    studies: tuple[StudyRow, ...]
    claims: tuple[ClaimAnswer, ...]
    rows: tuple[RelationRow, ...]
    regime: tuple[StudyRegime, ...]


def page(space: SpaceFile, studies: Sequence[Study]) -> AnswerPage:
    """The answer page of `space` from its studies (any order: sorted by folder here)."""
    studies = sorted(studies, key=lambda s: s.folder)
    ids = sorted({c.id for s in studies for c in s.summary.claims} | {u.id for s in studies for u in s.summary.untested}
                 | {c for p in space.profiles for c in p.untestable})  # fmt: skip
    claims: list[ClaimAnswer] = []
    rows: list[RelationRow] = []
    regime: list[StudyRegime] = []
    for cid in ids:
        claim, claim_rows = _claim(cid, space, studies)
        claims.append(claim)
        rows += claim_rows
        regime += _regime_rows(cid, claim_rows, studies)
    return AnswerPage(space.name, space.source, _study_rows(space, studies, claims, rows), tuple(claims), tuple(rows),
                      tuple(regime))  # fmt: skip


def _judged(study: Study, cid: str) -> ClaimVerdict | None:
    """The study's judgement of claim `cid` (None: untested there, or not tested at this scale)."""
    return next((c for c in study.summary.claims if c.id == cid and c.verdict != K.NOT_TESTED), None)


def _pairs(claim: ClaimVerdict) -> tuple[Pair, ...]:
    """The judged pairs of the claim's deciding measure (its first evidence)."""
    return claim.evidence[0].pairs if claim.evidence else ()


def _tested(p: Pair) -> bool:
    """A pair with a test: 2+ paired seeds and an interval."""
    return p.n >= 2 and p.ci is not None


def _ranked(cid: str, studies: Sequence[Study]) -> list[tuple[Study, ClaimVerdict]]:
    """The studies that test claim `cid`, the deciding one first (originals before replicates)."""
    found = [(s, c) for s in studies if (c := _judged(s, cid)) is not None]
    originals = [x for x in found if not x[0].replicate_of] or found
    return sorted(originals, key=lambda x: (-_coverage(x[1]), _RANK.get(x[1].verdict, 9), x[0].folder))


def _coverage(claim: ClaimVerdict) -> int:
    """How much of the claim a study tested: its parts with an estimate (claim (f)), else its judged pairs with a
    test."""
    if claim.parts is not None:
        return sum(map(_part_tested, claim.parts))
    return sum(map(_tested, _pairs(claim)))


def chain_relations(chain: str) -> tuple[tuple[str, str, str], ...] | None:
    """'A ≈ B > C' → ((A, ≈, B), (B, >, C)); None when the chain is not names joined by ≈ ≥ > ≫."""
    names, symbols = V.parse_chain(chain)
    if not symbols or len(names) != len(symbols) + 1 or any(s not in _SYMBOLS for s in symbols):
        return None
    return tuple(zip(names[:-1], symbols, names[1:], strict=True))


def _claim(cid: str, space: SpaceFile, studies: Sequence[Study]) -> tuple[ClaimAnswer, tuple[RelationRow, ...]]:
    """Claim `cid` gathered, and its relation rows."""
    ranked = _ranked(cid, studies)
    paper = PAPER_CLAIMS.get(cid)
    pending = _pending(cid, space, studies)
    if not ranked:
        return _untested_claim(cid, paper, studies, pending)
    study, claim = ranked[0]
    rows = _rows(cid, claim, study, ranked, studies, pending)
    counted = [r for r in rows if r.counts]
    reps = tuple((s.folder, _outcome(s, cid)) for s in studies if s.replicate_of == study.folder)
    others = tuple((s.folder, c.verdict) for s, c in ranked[1:])
    return ClaimAnswer(cid, claim.title, claim.chain, claim.verdict, claim.reason or claim.why, claim.decide,
                       claim.status or "", claim.scale or "", study.folder, claim.estimate, claim.detectable,
                       "part" if claim.parts is not None else "relation", len(counted),
                       tuple(r.relation for r in counted if r.status == HELD),
                       tuple(r.relation for r in counted if r.status == NOT_HELD),
                       tuple(r.relation for r in counted if r.status == NOT_TESTED),
                       tuple(r.relation for r in rows if not r.counts), reps, others,
                       *_jointly(rows)), rows  # fmt: skip


def _jointly(rows: Sequence[RelationRow]) -> tuple[tuple[str, ...], tuple[str, ...], int]:
    """(the studies the tested rows come from, pairs across untested relations included; the strict ones held at
    α / that many; the strict ones held in their study): each study holds
    its own family-wise error at α, so relations gathered from k studies hold jointly at k α (Bonferroni over the
    studies), and at α when each is held below α / k."""
    sources = tuple(dict.fromkeys(r.study for r in rows if r.status != NOT_TESTED))
    if len(sources) < 2:
        return sources, (), 0
    cut = CS.VERDICT_ALPHA / len(sources)
    strict = [r for r in rows if r.status == HELD and r.strict]
    return sources, tuple(r.relation for r in strict if r.p_holm is not None and r.p_holm < cut), len(strict)


def _untested_claim(cid: str, paper: C.Claim | None, studies: Sequence[Study],
                    pending: str) -> tuple[ClaimAnswer, tuple[RelationRow, ...]]:  # fmt: skip
    """A claim no study tests: every relation of its chain not tested, with why."""
    why = _untested_why(cid, studies, pending)
    title = paper.title if paper else next((u.title for s in studies for u in s.summary.untested if u.id == cid), "")
    chain = paper.chain if paper else ""
    named = [f"{a} {sym} {b}" for a, sym, b in chain_relations(chain) or ()] or [chain or f"claim ({cid})"]
    rows = tuple(RelationRow(cid, r, True, NOT_TESTED, why, None, None, "", ()) for r in named)
    return ClaimAnswer(cid, title, chain, K.NOT_TESTED, why, "", "", "", "", None, None, "relation", len(rows), (), (),
                       tuple(named), (), (), ()), rows  # fmt: skip


def _untested_why(cid: str, studies: Sequence[Study], pending: str) -> str:
    """Why no study tests claim `cid`: each original study's reason (by profile), and the profiles not yet run."""
    said: dict[str, str] = {}  # reason -> the first study that gives it
    for s in (s for s in studies if not s.replicate_of):
        reasons = [u.reason for u in s.summary.untested if u.id == cid]
        reasons += [c.reason or c.why for c in s.summary.claims if c.id == cid]  # its models, fewer than 2 measured
        for reason in reasons:
            said.setdefault(reason, s.folder)
    bits = [f"{study}: {reason}" for reason, study in said.items() if reason]
    return "; ".join([*bits, *([pending] if pending else [])]) or "no study of this space judges it"


def _pending(cid: str, space: SpaceFile, studies: Sequence[Study]) -> str:
    """'profile(s) capacity, full would test it: no report yet' ('' when none)."""
    ran = {s.profile for s in studies}
    names = [p.name for p in space.profiles if p.name not in ran and cid not in p.untestable]
    return f"profile(s) {', '.join(names)} would test it: no report yet" if names else ""


def _outcome(replicate: Study, cid: str) -> str:
    """A replicate's outcome for claim `cid`, from its replication record (else its own category)."""
    got = next((r for r in replicate.summary.replicated if r.id == cid), None)
    if got is not None:
        return got.outcome
    own = _judged(replicate, cid)
    return f"no replication record (its own verdict: {own.verdict})" if own else "not tested by the replicate"


def _unit(e: Evidence) -> str:
    return "points" if e.unit in ("%", "points") else e.unit


def _row_of(cid: str, rel: str, p: Pair, e: Evidence, study: Study, studies: Sequence[Study],
            counts: bool = True) -> RelationRow:  # fmt: skip
    """A measured pair as a row (not tested below 2 paired seeds), with its replicates' estimates of the same pair."""
    est = Estimate(f"{p.a} − {p.b}", p.d, p.ci, p.n, _unit(e)) if not math.isnan(p.d) else None
    pw = e.power
    det = None if pw is None else Detectable(pw.mdd if math.isfinite(pw.mdd) else None, pw.effect, _unit(e), pw.n)
    reps = tuple(r for s in studies if s.replicate_of == study.folder and (r := _replicate_row(s, cid, p)) is not None)
    if not _tested(p):
        why = f"{p.n} paired seed(s) in {study.folder}: no test"
        return RelationRow(cid, rel, counts, NOT_TESTED, why, est, det, study.folder, reps)
    status = HELD if p.status in _HOLDS else NOT_HELD
    return RelationRow(cid, rel, counts, status, p.status or "not judged", est, det, study.folder, reps, p.p_holm,
                       p.key)  # fmt: skip


def _replicate_row(replicate: Study, cid: str, p: Pair) -> RowReplicate | None:
    """The replicate's own measurement of pair p (None: it has none)."""
    claim = _judged(replicate, cid)
    got = next((q for q in _pairs(claim) if (q.a, q.b) == (p.a, p.b)), None) if claim else None
    if claim is None or got is None:
        return None
    est = None if math.isnan(got.d) else Estimate(f"{got.a} − {got.b}", got.d, got.ci, got.n, _unit(claim.evidence[0]))
    return RowReplicate(replicate.folder, est, got.status if _tested(got) else "no test")


def _rows(cid: str, claim: ClaimVerdict, study: Study, ranked: Sequence[tuple[Study, ClaimVerdict]],
          studies: Sequence[Study], pending: str) -> tuple[RelationRow, ...]:  # fmt: skip
    """The claim's relation rows: its parts, its chain's neighbour relations (then pairs across them), or its pairs."""
    if claim.parts is not None:
        return tuple(_part_row(cid, p, study) for p in claim.parts)
    links = chain_relations(claim.chain)
    pairs = _pairs(claim)
    if links is None or any(p.a not in claim.chain.split() or p.b not in claim.chain.split() for p in pairs):
        named = [(f"{p.a} {p.paper} {p.b}", p) for p in pairs]
        if not named:
            return (RelationRow(cid, claim.chain, True, NOT_TESTED, _why_not(claim, study, (), pending), None, None,
                                "", ()),)  # fmt: skip
        return tuple(_row_of(cid, rel, p, claim.evidence[0], study, studies) for rel, p in named)
    measured = {m.name for _, c in ranked for e in c.evidence[:1] for m in e.members}
    rows = [_link_row(cid, link, ranked, studies, measured, pending) for link in links]
    names = [a for a, _, _ in links] + [links[-1][2]]
    # pairs across names no study ran test the chain's ends, not the relations they span: each from the first study
    # (deciding first) that measured it
    spans: dict[tuple[str, str], tuple[Study, ClaimVerdict, Pair]] = {}
    for s, c in ranked:
        for p in _pairs(c):
            if {p.a, p.b} <= set(names) and names.index(p.b) - names.index(p.a) > 1:
                spans.setdefault((p.a, p.b), (s, c, p))
    for s, c, p in spans.values():
        rows.append(_row_of(cid, f"{p.a} {p.paper} {p.b}", p, c.evidence[0], s, studies, counts=False))
    return tuple(rows)


def _link_row(cid: str, link: tuple[str, str, str], ranked: Sequence[tuple[Study, ClaimVerdict]],
              studies: Sequence[Study], measured: set[str], pending: str) -> RelationRow:  # fmt: skip
    """One neighbour relation of the chain: from the first study (deciding first) that tested exactly this pair."""
    a, sym, b = link
    rel = f"{a} {sym} {b}"
    found = [(s, c, p) for s, c in ranked for p in _pairs(c) if (p.a, p.b) == (a, b)]
    hit = next((x for x in found if _tested(x[2])), found[0] if found else None)
    if hit is not None:
        s, c, p = hit
        return _row_of(cid, rel, p, c.evidence[0], s, studies)
    study, claim = ranked[0]
    missing = tuple(n for n in (a, b) if n not in measured)
    return RelationRow(cid, rel, True, NOT_TESTED, _why_not(claim, study, missing, pending), None, None, "", ())


def _why_not(claim: ClaimVerdict, study: Study, missing: tuple[str, ...], pending: str) -> str:
    """Why a relation of a judged claim was not tested: its models not run, else the deciding study's reason."""
    if missing:
        why = f"{', '.join(missing)} not run by any study that tests ({claim.id})"
    else:
        why = f"{study.folder}: {claim.verdict}: {claim.reason or claim.why}"
    return f"{why}; {pending}" if pending else why


def _part_tested(part: StemPart) -> bool:
    """A part of claim (f) that ran its test: an estimate, and a status other than not run."""
    return part.status not in _NOT_RUN and part.d is not None


def _part_row(cid: str, part: StemPart, study: Study) -> RelationRow:
    """One part of claim (f) as a row."""
    est = None if part.d is None else Estimate(part.short or part.what, part.d, part.ci, part.n, "points")
    if not _part_tested(part):
        return RelationRow(cid, part.what, True, NOT_TESTED, part.reason or part.status or "not run", est, None, "",
                           ())  # fmt: skip
    status = HELD if part.status in _HOLDS else NOT_HELD
    return RelationRow(cid, part.what, True, status, part.status, est, None, study.folder, ())


def _regime_rows(cid: str, rows: Sequence[RelationRow], studies: Sequence[Study]) -> list[StudyRegime]:
    """The regime row of each study a claim's rows come from, in the order they first appear."""
    by = {s.folder: s for s in studies}
    names = list(dict.fromkeys(r.study for r in rows if r.study))
    return [g for n in names if (c := _judged(by[n], cid)) and (g := regime_row(c, by[n].summary)) is not None]


def _study_rows(space: SpaceFile, studies: Sequence[Study], claims: Sequence[ClaimAnswer],
                rows: Sequence[RelationRow]) -> tuple[StudyRow, ...]:  # fmt: skip
    """Each profile with its studies (or none yet), then studies of profiles the file no longer has."""
    out = []
    order = [p.name for p in space.profiles]
    for name in [*order, *sorted({s.profile for s in studies} - set(order))]:
        mine = [s for s in studies if s.profile == name]
        out += [_study_row(s, space, claims, rows) for s in mine] or [StudyRow(name, "", "", (), (), None)]
    return tuple(out)


def _study_row(s: Study, space: SpaceFile, claims: Sequence[ClaimAnswer], rows: Sequence[RelationRow]) -> StudyRow:
    decides = tuple(c.id for c in claims if c.study == s.folder)
    adds = tuple(dict.fromkeys(r.claim for r in rows if r.study == s.folder and r.claim not in decides))
    recorded = str(s.summary.space.get("sha256") or "")
    mine = str(s.summary.space.get("profile_sha256") or "")  # the profile as run (reports made since it is recorded)
    now = {p.name: p.identity for p in space.profiles}.get(s.profile, "")
    same = (mine == now) if mine and now else (recorded in space.ids if recorded else None)
    return StudyRow(s.profile, s.folder, s.replicate_of, decides, adds, same)
