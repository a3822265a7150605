"""A measured table: a finite searched candidate measured in full (every point trained, reused or rejected on the
study's seeds), read from its trial rows. `replay` runs samplers on it; the report's random-search baseline
(analysis.search_checks) reads it. Pure: no study is opened here (replay.table opens one)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from coatsearch.errors import UserError
from coatsearch.space import search
from coatsearch.storage.trials import REEVAL


@dataclass(frozen=True)
class MeasuredTable:
    """A finite searched candidate measured in full: point (its stored values, dimension order) -> the values
    its seeds measured (a point whose network another point measured on a seed reads that measurement), the
    network each admitted point builds, the points rejected before training, and the objective's direction."""

    candidate: Any
    values: dict[tuple, list[float]]
    rejected: frozenset[tuple]
    maximize: bool
    networks: Mapping[tuple, str] = field(default_factory=dict)  # point -> network ({}: each point its own)

    def network(self, point: tuple) -> str:
        """The network a point builds (the point itself where the table does not say)."""
        return self.networks.get(point) or repr(point)


Row = tuple[Mapping[str, Any], str, Any, Any, Any, Any, str]  # params, state, value, sample, number, reuse, network


def rows_of(records: Sequence[Any]) -> list[Row]:
    """The rows a table reads from a study's trial records (storage.record.TrialRecord)."""
    return [(r.params, r.state, r.value, r.run.identity.sample, r.number, r.run.extra.get("reuse"),
             search.architecture(r.run)) for r in records]  # fmt: skip


def table_from_rows(space: Any, rows: Sequence[Row], where: str) -> MeasuredTable:
    """The table from the trial rows of the space's first searched candidate; a reused point (REUSED, `reuse`:
    the trial it reused) reads its source's measurement on that seed and builds its source's network."""
    cands = [c for c in space.candidates if search.searches_model(c)]
    if not cands or search.size(cands[0]) is None:
        raise UserError(f"{where}: replay needs a searched candidate with a finite space")
    cand = cands[0]
    paths = [d.path for d in search.model_dims(cand)]
    per: dict[tuple, dict[Any, float]] = {}
    networks: dict[tuple, str] = {}
    rejected: set[tuple] = set()
    measured: dict[Any, tuple[float, str]] = {}  # trial number -> (value, network): what a reuse reads
    reused: list[tuple[tuple, Any, Any]] = []
    for params, state, value, sample, number, reuse, net in rows:
        if (sample or 0) >= REEVAL:
            continue
        if state == "COMPLETE" and value is not None:  # any candidate's run: a point may reuse a named one's
            measured[number] = (float(value), net)
        if params.get("candidate") != cand.name:
            continue
        key = tuple(params.get(p) for p in paths)
        if state == "REJECTED":
            rejected.add(key)
        elif state == "COMPLETE" and value is not None:
            per.setdefault(key, {})[params.get("seed")] = float(value)
            networks[key] = net or networks.get(key, "")
        elif state == "REUSED" and reuse is not None:
            reused.append((key, params.get("seed"), reuse))
    for key, seed, source in reused:
        if source in measured:
            per.setdefault(key, {}).setdefault(seed, measured[source][0])
            networks[key] = networks.get(key) or measured[source][1]
    values = {k: list(v.values()) for k, v in per.items()}
    if not values:
        raise UserError(f"{where}: no point of {cand.name} was measured (a COMPLETE trial with a value); replay "
                        "needs a measured table")  # fmt: skip
    total = search.size(cand) or 0
    if len(values) + len(rejected - set(values)) < total:
        raise UserError(f"{where} measured or rejected {len(values) + len(rejected)} of the {total} "
                        "points; replay needs every point (run the space with study.sampler: grid)")  # fmt: skip
    direction = space.study.directions[0] if space.study.objectives else space.study.direction
    named = {k: n for k, n in networks.items() if n}
    return MeasuredTable(cand, values, frozenset(rejected), direction == "maximize", named)
