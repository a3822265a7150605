"""A space's claims gathered across its studies, computed once for the answer page: each claim from the study whose
profile decides it, its relation rows (answer.space_rows), the regime rows of the studies used (answer.space_regime)
and each study's role. answer.view_space arranges the result into the page; nothing here reads a file or formats
text. The rule, stated on the page:

- A study *tests* a claim when its summary judges it (not `untested`, not 'not tested at this scale'). The claim's
  deciding study is the one that tests the most of it (relations, or claim (f)'s parts, with a test), then with
  the firmest category (supported / not supported, then unresolved, underpowered, out of regime), then the name: a
  study that tests less of a claim never decides it for being firmer. A replicate decides only when no original
  tests the claim, and is otherwise shown as replication.
- The claim's category is its deciding study's; no verdict here combines studies. Where its tested relations come
  from k > 1 studies, the strict ones held at α / k in their study are held at α jointly (Bonferroni over the
  studies).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from coatsearch.analysis import constants as CS
from coatsearch.analysis.measure_results import Detectable
from coatsearch.analysis.results import Estimate
from coatsearch.answer.space_regime import StudyRegime, regime_row
from coatsearch.answer.space_rows import HELD, NOT_HELD, NOT_TESTED, RelationRow, chain_relations, claim_rows
from coatsearch.answer.space_studies import SpaceFile, Study, judged, pairs, part_tested, tested
from coatsearch.papers import categories as K
from coatsearch.papers import claims as C
from coatsearch.papers.claim_results import ClaimVerdict

_RANK = {K.SUPPORTED: 0, K.NOT_SUPPORTED: 0, K.UNRESOLVED: 1, K.UNDERPOWERED: 2, K.OUT_OF_REGIME: 3}
PAPER_CLAIMS = {c.id: c for c in (*C.CHAIN_CLAIMS, C.REL_CLAIM, C.STEM_CLAIM)}


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
class Gathered:
    """The space's claims gathered: claims by id, their relation rows, the regime rows of the studies used, and a row
    per study (by folder) with its role."""

    claims: tuple[ClaimAnswer, ...]
    rows: tuple[RelationRow, ...]
    regime: tuple[StudyRegime, ...]
    studies: tuple[StudyRow, ...]


def gather(space: SpaceFile, studies: Sequence[Study]) -> Gathered:
    """The claims of `space` gathered from its studies (any order: sorted by folder here)."""
    studies = sorted(studies, key=lambda s: s.folder)
    ids = sorted({c.id for s in studies for c in s.summary.claims} | {u.id for s in studies for u in s.summary.untested}
                 | {c for p in space.profiles for c in p.untestable})  # fmt: skip
    claims: list[ClaimAnswer] = []
    rows: list[RelationRow] = []
    regime: list[StudyRegime] = []
    for cid in ids:
        claim, rows_of_claim = _claim(cid, space, studies)
        claims.append(claim)
        rows += rows_of_claim
        regime += _regime_rows(cid, rows_of_claim, studies)
    roles = tuple(_study_row(s, space, claims, rows) for s in studies)
    return Gathered(tuple(claims), tuple(rows), tuple(regime), roles)


def _ranked(cid: str, studies: Sequence[Study]) -> list[tuple[Study, ClaimVerdict]]:
    """The studies that test claim `cid`, the deciding one first (originals before replicates)."""
    found = [(s, c) for s in studies if (c := judged(s, cid)) is not None]
    originals = [x for x in found if not x[0].replicate_of] or found
    return sorted(originals, key=lambda x: (-_coverage(x[1]), _RANK.get(x[1].verdict, 9), x[0].folder))


def _coverage(claim: ClaimVerdict) -> int:
    """How much of the claim a study tested: its parts with an estimate (claim (f)), else its judged pairs with a
    test."""
    if claim.parts is not None:
        return sum(map(part_tested, claim.parts))
    return sum(map(tested, pairs(claim)))


def _claim(cid: str, space: SpaceFile, studies: Sequence[Study]) -> tuple[ClaimAnswer, tuple[RelationRow, ...]]:
    """Claim `cid` gathered, and its relation rows."""
    ranked = _ranked(cid, studies)
    paper = PAPER_CLAIMS.get(cid)
    pending = _pending(cid, space, studies)
    if not ranked:
        return _untested_claim(cid, paper, studies, pending)
    study, claim = ranked[0]
    rows = claim_rows(cid, claim, study, ranked, studies, pending)
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
    own = judged(replicate, cid)
    return f"no replication record (its own verdict: {own.verdict})" if own else "not tested by the replicate"


def _regime_rows(cid: str, rows: Sequence[RelationRow], studies: Sequence[Study]) -> list[StudyRegime]:
    """The regime row of each study a claim's rows come from, in the order they first appear."""
    by = {s.folder: s for s in studies}
    names = list(dict.fromkeys(r.study for r in rows if r.study))
    return [g for n in names if (c := judged(by[n], cid)) and (g := regime_row(c, by[n].summary)) is not None]


def _study_row(s: Study, space: SpaceFile, claims: Sequence[ClaimAnswer], rows: Sequence[RelationRow]) -> StudyRow:
    """A study's role on the page: the claims it decides, those it adds relations to, and whether it ran the profile
    as the space file has it now."""
    decides = tuple(c.id for c in claims if c.study == s.folder)
    adds = tuple(dict.fromkeys(r.claim for r in rows if r.study == s.folder and r.claim not in decides))
    recorded = str(s.summary.space.get("sha256") or "")
    mine = str(s.summary.space.get("profile_sha256") or "")  # the profile as run (reports made since it is recorded)
    now = {p.name: p.identity for p in space.profiles}.get(s.profile, "")
    same = (mine == now) if mine and now else (recorded in space.ids if recorded else None)
    return StudyRow(s.profile, s.folder, s.replicate_of, decides, adds, same)
