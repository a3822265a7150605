"""A space's answer page as its Info: the claims, relation rows and regime rows answer.space_claims gathered, and a
row per profile of the space file with its studies. It computes nothing and reads no file: it arranges what was
gathered in the page's order (answer.space_answer reads, answer.markdown_space formats).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from coatsearch.answer.space_claims import ClaimAnswer, Gathered, StudyRow
from coatsearch.answer.space_regime import StudyRegime
from coatsearch.answer.space_rows import RelationRow
from coatsearch.answer.space_studies import SpaceFile


@dataclass(frozen=True)
class AnswerPage:
    """The space's answer page: studies, claims, one row per relation, the regime rows of the studies used."""

    space: str
    source: str
    studies: tuple[StudyRow, ...]
    claims: tuple[ClaimAnswer, ...]
    rows: tuple[RelationRow, ...]
    regime: tuple[StudyRegime, ...]


def page(space: SpaceFile, found: Gathered) -> AnswerPage:
    """The answer page of `space` from its claims as gathered."""
    return AnswerPage(space.name, space.source, _study_rows(space, found.studies), found.claims, found.rows,
                      found.regime)  # fmt: skip


def _study_rows(space: SpaceFile, studies: Sequence[StudyRow]) -> tuple[StudyRow, ...]:
    """Each profile with its studies (or a row saying none yet), in the file's order, then studies of profiles the
    file no longer has."""
    out = []
    order = [p.name for p in space.profiles]
    for name in [*order, *sorted({s.profile for s in studies} - set(order))]:
        out += [s for s in studies if s.profile == name] or [StudyRow(name, "", "", (), (), None)]
    return tuple(out)
