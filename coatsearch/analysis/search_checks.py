"""The checks of a search (analysis.search_results reads them into each searched candidate's result; the report's
markdown_search formats them): how many sampled points mapped to how many networks, the random-search baseline at
the same budget with the search's regret where the space is measured whole (analysis.search_stats, on the table
`replay` reads), and the Kendall tau between the search's objective and the re-evaluation on the networks measured
at both."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from coatsearch.analysis import search_stats as SS
from coatsearch.analysis.search_types import Mapped, Random, Tau
from coatsearch.space import search
from coatsearch.storage.record import TrialRecord
from coatsearch.storage.trials import REEVAL


def budgets(networks: int, k: int) -> tuple[int, ...]:
    """The budgets the random baseline is also given at: powers of two below the table's network count, but k."""
    return tuple(n for n in (2**i for i in range(networks.bit_length())) if n < networks and n != k)


def mapped(mine: Sequence[TrialRecord], records: Sequence[TrialRecord]) -> Mapped:
    """Points -> networks over the search's own trials (re-evaluations left out)."""
    by_number = {r.number: r for r in records}
    search_runs = [r for r in mine if (r.run.identity.sample or 0) < REEVAL]
    trained = [r for r in search_runs if r.state == "COMPLETE"]
    reused = [r for r in search_runs if r.state == "REUSED"]
    nets = {search.architecture(r.run) for r in trained}
    for r in reused:
        source = by_number.get(r.run.extra.get("reuse"))  # type: ignore[arg-type]
        nets.add(search.architecture(source.run) if source is not None else f"trial {r.run.extra.get('reuse')}")
    return Mapped(len(trained) + len(reused), len(trained), len(reused), len(nets - {""}))


@dataclass(frozen=True)
class EnumeratedTable:
    """Another study of the same space that measured it whole (`coatsearch enumerate`): its name and records."""

    study: str
    records: Sequence[TrialRecord]


def random_baseline(space: Mapping[str, Any], records: Sequence[TrialRecord], found: str, k: int, scale: float,
                    maximize: bool, table: EnumeratedTable | None = None) -> Random:  # fmt: skip
    """The random baseline at `k` trials, from the table of a space measured whole (every point trained,
    reused or rejected on the study's seeds): this study's, else `table`'s; the note says what is missing."""
    from coatsearch.analysis.measured_table import rows_of, table_from_rows
    from coatsearch.errors import UserError
    from coatsearch.space.objects import load_space

    source = ""
    try:
        built = load_space(str(space.get("source") or "space.yaml"), str(space.get("profile") or "default"),
                           text=str(space["space_yaml"]))  # fmt: skip
        try:
            measured = table_from_rows(built, rows_of(records), "the study")
        except UserError:
            if table is None:
                raise
            measured, source = table_from_rows(built, rows_of(table.records), f"study {table.study}"), table.study
    except UserError as exc:
        why = str(exc).removeprefix("the study ").removeprefix("the study: ")
        return Random(None, found, None, None, f"{why}; `coatsearch enumerate` measures it")
    except Exception as exc:  # noqa: BLE001 - an old or foreign space record: the section goes on without it
        return Random(None, found, None, None, f"the recorded space cannot be read back ({type(exc).__name__})")
    nets = SS.networks(measured.networks, {p: [v * scale for v in vs] for p, vs in measured.values.items()})
    base = SS.random_baseline(nets, k, maximize)
    means = {n.name: n.mean for n in nets}
    at = means.get(found)
    curve = tuple(SS.random_baseline(nets, n, maximize) for n in budgets(len(nets), k))
    return Random(base, found, at, base.regret_of(at, maximize) if at is not None else None, "", curve, source)


def fidelity(search_values: Mapping[str, list[float]], target: Mapping[str, list[float]]) -> Tau | None:
    """Kendall's tau between the search's objective and the re-evaluation's, per network (means over seeds)."""
    first = {n: statistics.fmean(v) for n, v in search_values.items() if v}
    second = {n: statistics.fmean(v) for n, v in target.items() if v}
    return SS.kendall(first, second)


@dataclass(frozen=True)
class Checks:
    """The checks of the search over one candidate (search_types.Searched holds them as its own fields)."""

    mapped: Mapped  # points -> networks
    random: Random | None  # the random-search baseline and the search's regret (None: the search found nothing)
    fidelity: Tau | None  # the search's objective against the re-evaluation (None: under 3 networks at both)


def checks(space: Mapping[str, Any], name: str, records: Sequence[TrialRecord], found: str, key: str,
           scale: float, maximize: bool, fresh: set[int], table: EnumeratedTable | None = None) -> Checks:  # fmt: skip
    """The checks of the search over candidate `name`; `found`: the architecture the search ranks first ("": none);
    `table`: a study of the same space measured whole, read when this one is not."""
    ours = [r for r in records if r.params.get("candidate") == name or r.candidate == name]
    k = int((space.get("study") or {}).get("samples") or 1)
    named = [r for r in records if r.state == "COMPLETE" and not r.searched()]
    searched_values: dict[str, list[float]] = {}
    target: dict[str, list[float]] = {}
    for r in ours + named:
        if r.state != "COMPLETE" or r.value is None:
            continue
        net = r.candidate if not r.searched() else search.architecture(r.run)
        again = (r.run.identity.sample or 0) >= REEVAL or (not r.searched() and r.seed in fresh)
        if not again:
            searched_values.setdefault(net, []).append(float(r.value) * scale)
        elif (v := r.run.number(key)) is not None:
            target.setdefault(net, []).append(v * scale)
    return Checks(
        mapped(ours, records),
        random_baseline(space, records, found, k, scale, maximize, table) if found else None,
        fidelity(searched_values, target),
    )
