"""A report's summary.json read back typed: the one reading of it for the planner, the earlier looks, the
dashboard note and a space's answer page.

The report writes summary.json (report.write_report) from the typed results' `to_json`; this reads the parts other
commands use through the same types' `from_json`, for every format version up to SUMMARY_VERSION (0: a summary
written before it had a version). A summary from a newer coatsearch, or one whose parts are not what the types
wrote, is a UserError that names the file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coatsearch.analysis import json_form
from coatsearch.analysis.measure_results import UntestedClaim
from coatsearch.analysis.table_rows import CandidateRow
from coatsearch.analysis.tables import StudyEnvironment
from coatsearch.errors import UserError
from coatsearch.papers.claim_results import ClaimVerdict

SUMMARY_VERSION = 1  # summary.json's format; reports written before it have no `version` (read as 0)


@dataclass(frozen=True)
class Replicated:
    """One claim's outcome in a replicate's record (summary.json's replication section): replicated or not, and
    why."""

    id: str
    outcome: str  # replicated / not replicated / original not firm: nothing to replicate
    why: str

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Replicated:
        """The entry the replication section wrote."""
        return cls(str(data["id"]), str(data.get("outcome") or ""), str(data.get("why") or ""))


@dataclass(frozen=True)
class Summary:
    """What other commands read of a report's summary.json: its version, study, space, environment, judged claims,
    candidate rows, mean curves and the claims its space pilots."""

    version: int
    study: str
    space: Mapping[str, Any]  # source, profile, description, scale, input, sha256 (report._space_ids)
    environment: StudyEnvironment
    claims: tuple[ClaimVerdict, ...]
    candidates: tuple[CandidateRow, ...]  # analysis.tables.candidate_rows
    curves: Mapping[str, Any]  # score -> mean curves (report._curves), as written
    pilots: tuple[str, ...]  # the claims this study's space pilots (its looks table's `this`)
    untested: tuple[UntestedClaim, ...] = ()  # the claims its profile marks untestable
    replicate_of: str = ""  # the original study, when this one is a replicate (its `replication` record)
    replicated: tuple[Replicated, ...] = ()  # a replicate's outcome per claim


def is_summary(data: Any) -> bool:
    """Whether parsed JSON is a report's summary (an object with a space record), not some other file."""
    return isinstance(data, Mapping) and isinstance(data.get("space"), Mapping)


def from_json(data: Mapping[str, Any], where: str) -> Summary:
    """The Summary of parsed summary.json data; a UserError naming `where` when it is from a newer coatsearch or
    damaged (a list where an object belongs, a claim without its id)."""
    version = data.get("version", 0)
    if not isinstance(version, int) or not 0 <= version <= SUMMARY_VERSION:
        raise UserError(f"{where}: summary version {version!r} is not one this coatsearch reads (0..{SUMMARY_VERSION})")
    try:
        jf = json_form
        this = jf.mapping(jf.mapping(data.get("looks")).get("this"))
        rep = jf.mapping(data.get("replication"))
        return Summary(
            version,
            str(data.get("study") or ""),
            jf.mapping(data.get("space")),
            StudyEnvironment.from_json(jf.mapping(data.get("environment"))),
            tuple(ClaimVerdict.from_json(jf.mapping(c)) for c in jf.items(data.get("claims"))),
            tuple(CandidateRow.from_json(jf.mapping(r)) for r in jf.items(data.get("candidates"))),
            jf.mapping(data.get("curves")),
            tuple(str(p) for p in jf.items(this.get("pilots"))),
            tuple(UntestedClaim.from_json(jf.mapping(u)) for u in jf.items(data.get("untested"))),
            str(rep.get("original") or ""),
            tuple(Replicated.from_json(jf.mapping(c)) for c in jf.items(rep.get("claims"))),
        )
    except (AttributeError, TypeError, KeyError, ValueError, IndexError) as exc:
        raise UserError(f"{where}: a damaged summary ({type(exc).__name__}: {exc})") from None


def read(path: Path) -> Summary:
    """A report's summary.json, read within fsafe's bounds (a regular file, its size and depth)."""
    from coatsearch import fsafe

    return from_json(fsafe.read_json(path), str(path))  # a mapping (fsafe checks), its parts checked by the types
