"""What the answer page reads: the space file's profiles, each committed study's summary, and what a summary says of
one claim (judged or not, its deciding measure's pairs, which pairs and parts ran a test).

answer.space_answer fills these from the files; answer.space_rows and answer.space_claims compute the page from them.
"""

from __future__ import annotations

from dataclasses import dataclass

from coatsearch.analysis.results import Pair
from coatsearch.papers import categories as K
from coatsearch.papers.claim_results import ClaimVerdict, StemPart
from coatsearch.papers.summary_file import Summary

_NOT_RUN = ("not run", "not tested", "")  # a part's status that ran no test


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


def judged(study: Study, cid: str) -> ClaimVerdict | None:
    """The study's judgement of claim `cid` (None: untested there, or not tested at this scale)."""
    return next((c for c in study.summary.claims if c.id == cid and c.verdict != K.NOT_TESTED), None)


def pairs(claim: ClaimVerdict) -> tuple[Pair, ...]:
    """The judged pairs of the claim's deciding measure (its first evidence)."""
    return claim.evidence[0].pairs if claim.evidence else ()


def tested(p: Pair) -> bool:
    """A pair with a test: 2+ paired seeds and an interval."""
    return p.n >= 2 and p.ci is not None


def part_tested(part: StemPart) -> bool:
    """A part of claim (f) that ran its test: an estimate, and a status other than not run."""
    return part.status not in _NOT_RUN and part.d is not None
