"""The report as sections: each computes one frozen Info from the report's context, then formats it as Markdown.

A `Section` is (name, compute, markdown): `compute(ctx)` reads the context built once per report and returns its
Info, or None when it has no data (the section is left out); `markdown(info)` only formats, and the figures that
name the section (plots.FIGURES) draw the same Info.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from coatsearch.papers.frames import Frames
from coatsearch.report.summary import StudySummary


@dataclass(frozen=True)
class ReportContext:
    """What every section reads, computed once per report: the space record, the frames and the study's summary
    (the values summary.json holds)."""

    study: str
    space: Mapping[str, Any]
    frames: Frames
    summary: StudySummary


@dataclass(frozen=True)
class Section:
    """One report section: its name, compute (context -> Info, or None: left out), markdown (Info -> text)."""

    name: str
    compute: Callable[[ReportContext], Any]
    markdown: Callable[[Any], str]


@dataclass(frozen=True)
class Report:
    """A computed report: the study's summary, and every section's Info in report order."""

    summary: StudySummary
    infos: Mapping[str, Any]  # section name -> its Info, or None when the section has no data


def compute(sections: tuple[Section, ...], ctx: ReportContext) -> dict[str, Any]:
    """Each section's Info (None where it has no data), in report order."""
    return {s.name: s.compute(ctx) for s in sections}


def render(sections: tuple[Section, ...], infos: Mapping[str, Any]) -> str:
    """The Markdown of the sections that have an Info, in order, blank-line separated."""
    parts = [s.markdown(infos[s.name]).strip() for s in sections if infos.get(s.name) is not None]
    return "\n\n".join(p for p in parts if p) + "\n"
