"""What a report builds once from its records and hands to every section: the complete runs, the step curves of
every curve score, the matched-loss reading and the runs table of the study's accuracy (tables only, no text)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd

from coatsearch.analysis import run_frames, tables
from coatsearch.analysis.measure_results import MatchedLoss
from coatsearch.papers import paper
from coatsearch.storage.record import TrialRecord


@dataclass(frozen=True)
class Frames:
    """The tables a report computes once; sections read them, never the records' curves again."""

    records: tuple[TrialRecord, ...]
    complete: tuple[TrialRecord, ...]
    curves: Mapping[str, pd.DataFrame]  # curve score -> its step-level points (analysis.run_frames.curve_frame)
    matched: MatchedLoss  # paper.matched: the matched-loss reading of the generalization curves
    acc: str | None  # the accuracy the study is judged by (analysis.tables.primary_acc)
    runs: pd.DataFrame | None  # complete runs with `acc` measured (analysis.run_frames.runs_frame)


def build(space: dict, records: tables.Records) -> Frames:
    """Every shared table of one report, each computed once from the space record and the records."""
    done = tuple(tables.complete(records))
    curves = {score: run_frames.curve_frame(done, score) for score in tables.curve_scores()}
    acc = tables.primary_acc(space, done)
    gen = paper.matched(space, done)
    return Frames(tuple(records), done, curves, gen, acc, run_frames.runs_frame(done, acc) if acc else None)
