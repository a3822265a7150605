"""Replaying samplers on a measured table (NAS-Bench-201 style): a study that measured every point of a finite
searched candidate, several seeds each, is the table; each sampler is run on it many times, each trial's value
one seed's measurement of its point, and its simple regret (the best mean in the table minus the table mean of
the incumbent, the point with the best value observed so far) is reported against the number of trials, mean
and 95% t interval over the repeats. Nothing trains or is written."""

from __future__ import annotations

import random
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coatsearch.analysis.measured_table import MeasuredTable, rows_of, table_from_rows
from coatsearch.errors import UserError
from coatsearch.space import search
from coatsearch.vocab.samplers import replayable

_ASKS_PER_TRIAL = 50  # asks per counted trial before a replay gives up (rejected points cost no trial)
REJECTS_MAX = 1_000  # rejected proposals in a row before a replay gives up (a sampler stuck on rejected points)


@dataclass(frozen=True)
class RegretCurve:
    """One sampler's regret after each number of trials: (trials, mean, ci low, ci high) over the repeats."""

    sampler: str
    points: tuple[tuple[int, float, float, float], ...]
    found: tuple[float, ...] = ()  # the table mean of each replay's final incumbent (one per search seed)


def table(study_name: str, studies_dir: str | Path) -> MeasuredTable:
    """The table of a study that measured every point; a UserError naming how many points it lacks otherwise."""
    from coatsearch.storage import found, store

    study = store.load_study(Path(studies_dir), study_name)
    space = found.study_space(study)
    return table_from_rows(space, rows_of(store.records(study, say=False)), f"study '{study_name}'")


_CSV_MAX = 256_000_000  # bytes of an exported table `replay --table` reads (a row per trial: about 1 KB each)
_CSV_COLUMNS = ("state", "value", "candidate", "seed")  # besides the searched candidate's `model.*` dimensions
_NUMBER_COLUMNS = ("value", "seed", "sample", "number", "reuse_of")  # a number or empty in each row read


def table_from_csv(space_file: str | Path, csv_file: str | Path) -> MeasuredTable:
    """The table of an exported study (`coatsearch export STUDY --format csv`) and the space it ran.

    The file is read through the bounded reader (a regular file of at most _CSV_MAX bytes) and checked before any
    replay: every column it needs present, a number (or nothing) in each numeric cell, and each row of the searched
    candidate naming a point of its space. Anything else is one UserError naming the file, its line and the field,
    and what is allowed: a row that names no point is refused, never counted as an extra point."""
    import io

    import pandas as pd

    from coatsearch import fsafe
    from coatsearch.space.objects import load_space

    space = load_space(space_file)
    raw = fsafe.read_named(Path(csv_file), _CSV_MAX, "table (CSV)")
    try:
        frame = pd.read_csv(io.BytesIO(raw))
    except pd.errors.EmptyDataError:
        raise UserError(f"{csv_file}: empty; a replay table is `coatsearch export STUDY --format csv` output "
                        "(a header line, then a line per trial)") from None  # fmt: skip
    except (ValueError, UnicodeDecodeError) as exc:  # pandas' ParserError is a ValueError
        raise UserError(f"{csv_file}: not a CSV table ({str(exc).strip().splitlines()[0][:120]})") from None
    records = frame.to_dict("records")
    _check_rows(space, records, list(frame.columns), str(csv_file))
    rows = [({k: v for k, v in row.items() if not pd.isna(v)}, row["state"],
             None if pd.isna(row["value"]) else row["value"], row.get("sample"), row.get("number"),
             None if pd.isna(row.get("reuse_of", float("nan"))) else int(row["reuse_of"]),
             _network(row)) for row in records]  # fmt: skip
    return table_from_rows(space, rows, str(csv_file))


def _check_rows(space: Any, records: list[dict[str, Any]], columns: Sequence[str], where: str) -> None:
    """The exported rows checked against the space (see table_from_csv); numeric cells made numbers in place; line
    numbers count the header as 1."""
    cands = [c for c in space.candidates if search.searches_model(c)]
    dims = search.model_dims(cands[0]) if cands else ()
    needed = (*_CSV_COLUMNS, *(d.path for d in dims))
    missing = [c for c in needed if c not in columns]
    if missing:
        raise UserError(f"{where}:1: no column '{missing[0]}'; a replay table has the columns {', '.join(needed)} "
                        "(`coatsearch export --format csv`)")  # fmt: skip
    allowed = {d.path: [search.label(v) for v in d.values() or ()] for d in dims}
    for line, row in enumerate(records, start=2):
        for col in (c for c in _NUMBER_COLUMNS if c in row):
            row[col] = _number(row[col], f"{where}:{line}: field '{col}'")  # text in a column: pandas left it text
        if not cands or row.get("candidate") != cands[0].name or row.get("state") not in ("COMPLETE", "REJECTED",
                                                                                          "REUSED"):  # fmt: skip
            continue
        for path, labels in allowed.items():
            if not any(_same(row.get(path), label) for label in labels):
                raise UserError(f"{where}:{line}: field '{path}': {row.get(path)!r:.40} names no point of the space "
                                f"of {cands[0].name}; allowed: {', '.join(map(str, labels))}")  # fmt: skip


def _number(cell: Any, where: str) -> float | int:
    """A numeric cell as a number (NaN: empty); a one-line UserError for text, a boolean or an infinity."""
    import math

    value = cell
    if isinstance(cell, str):
        try:
            value = float(cell.strip())
        except ValueError:
            value = None
    if value is None or isinstance(value, bool) or (isinstance(value, float) and math.isinf(value)):
        raise UserError(f"{where}: {cell!r:.40} is not a number; allowed: a finite number, or an empty cell")
    return value


def _same(cell: Any, label: Any) -> bool:
    """Whether a CSV cell (as pandas parsed it) is the choice `label`: text alike, numbers equal (32.0 is 32)."""
    if isinstance(label, str) or isinstance(cell, str):
        return isinstance(cell, str) and cell == label
    if isinstance(label, bool) or isinstance(cell, bool):
        return cell is label or (isinstance(cell, bool) and cell == label)
    try:
        return float(cell) == float(label)
    except (TypeError, ValueError):
        return False


def _network(row: Mapping[str, Any]) -> str:
    """A table row's network: its recorded structure read through today's identity rule (`search.identity`), so
    a table exported before the rule still names twins alike; else its `architecture` cell."""
    struct, layout = row.get("structure"), row.get("layout")
    if isinstance(struct, str) and struct:
        return search.arch_name(layout if isinstance(layout, str) else "", search.identity(struct))
    arch = row.get("architecture")
    return arch if isinstance(arch, str) else ""


def check_samplers(samplers: Sequence[str]) -> list[str]:
    """The sampler names, each a registered sampler that replays (vocab.samplers: one objective, choice lists; a
    one-line UserError naming them otherwise)."""
    known = replayable()
    bad = [s for s in samplers if s not in known]
    if bad or not samplers:
        raise UserError(f"--sampler {bad[0] if bad else ''!r} is not allowed; replay takes {', '.join(known)}, "
                        "comma-separated (single objective, choice lists)")  # fmt: skip
    return list(samplers)


def replay(measured: MeasuredTable, samplers: Sequence[str], trials: int, repeats: int) -> list[RegretCurve]:
    """Each sampler's regret curve over `repeats` replays of `trials` trials on the table."""
    check_samplers(samplers)
    if repeats < 2:
        raise UserError(f"--repeats {repeats}: a replay needs at least 2 repeats (an interval over them)")
    if isinstance(trials, bool) or not isinstance(trials, int) or trials < 1:
        raise UserError(f"--trials {trials!r}: not allowed; allowed: an integer >= 1")
    return [_curve(s, measured, trials, repeats) for s in samplers]


def _curve(sampler: str, measured: MeasuredTable, trials: int, repeats: int) -> RegretCurve:
    from coatsearch.analysis.search_stats import mean_ci

    best = _best(measured)
    runs = [_one(sampler, measured, trials, seed) for seed in range(repeats)]
    points = []
    for n in range(1, trials + 1):
        m, lo, hi = mean_ci([abs(best - run[n - 1]) for run in runs])
        points.append((n, m, lo, hi))
    return RegretCurve(sampler, tuple(points), tuple(run[-1] for run in runs))


def _best(measured: MeasuredTable) -> float:
    return (max if measured.maximize else min)(statistics.fmean(v) for v in measured.values.values())


def _one(sampler: str, measured: MeasuredTable, trials: int, seed: int) -> list[float]:
    """One replay: the incumbent's table mean after each counted trial. As in a study, a rejected point costs no
    trial, and a point whose network this replay drew already is told that value and asks again, at most
    sampling.REUSE_MAX times for one trial (after which the trial ends as that reuse)."""
    import optuna

    from coatsearch.storage.sampling import REUSE_MAX, constrain, make_sampler, tell_rejected

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    dims, values, maximize = search.model_dims(measured.candidate), measured.values, measured.maximize
    dists: dict[str, optuna.distributions.BaseDistribution] = {
        d.path: optuna.distributions.CategoricalDistribution([search.label(v) for v in d.values() or ()]) for d in dims
    }
    study = optuna.create_study(direction="maximize" if maximize else "minimize", sampler=make_sampler(sampler, seed))
    rng, incumbent = random.Random(seed), None  # incumbent: (observed value, point)
    means: list[float] = []
    drawn: dict[str, float] = {}  # network -> the value this replay observed for it
    rejects = in_row = reuses = 0
    while len(means) < trials:
        trial = study.ask(dists)
        key = tuple(trial.params[d.path] for d in dims)
        if key not in values:  # rejected: a constraint or the budget, told as a study tells it
            tell_rejected(study, trial)
            rejects, in_row = rejects + 1, in_row + 1
            if in_row >= REJECTS_MAX:
                raise UserError(f"replay of {sampler} (search seed {seed}): {REJECTS_MAX} proposals in a row were "
                                f"points the table rejects, after {len(means)} of {trials} trials; allowed: fewer "
                                "--trials or another --sampler")  # fmt: skip
            if rejects > trials * _ASKS_PER_TRIAL:
                raise UserError(f"replay of {sampler}: fewer than {trials} admissible points in "
                                f"{trials * _ASKS_PER_TRIAL} asks")  # fmt: skip
            continue
        in_row = 0
        net = measured.network(key)
        constrain(trial, False)
        if net in drawn:  # measured already: told its value, trains nothing
            study.tell(trial, drawn[net])
            reuses += 1
            if reuses < REUSE_MAX:
                continue
        else:
            drawn[net] = rng.choice(values[key])  # one seed's measurement, as a real trial would give
            study.tell(trial, drawn[net])
            if incumbent is None or (drawn[net] > incumbent[0] if maximize else drawn[net] < incumbent[0]):
                incumbent = (drawn[net], key)
        reuses = 0
        assert incumbent is not None
        means.append(statistics.fmean(values[incumbent[1]]))  # the incumbent's table mean
    return means


def text(curves: list[RegretCurve], scale: float = 100.0) -> str:
    """The regret table: each sampler's mean regret [95% interval] at 1, 5, 10, 20, ... trials (points)."""
    trials = len(curves[0].points)
    marks = [n for n in (1, 2, 5, 10, 20, 50, 100, 200, 500) if n < trials] + [trials]
    lines = ["regret (best table mean - the incumbent's, points) after N trials, mean [95% CI] over repeats:",
             "sampler  " + "  ".join(f"N={n}".ljust(22) for n in marks)]  # fmt: skip
    for c in curves:
        cells = [f"{m * scale:.2f} [{lo * scale:.2f}, {hi * scale:.2f}]".ljust(22) for n, m, lo, hi in c.points
                 if n in marks]  # fmt: skip
        lines.append(f"{c.sampler:<8} " + "  ".join(cells))
    lines.append(f"best found after {trials} trials over the search seeds (table mean, points): median "
                 "[10th, 90th percentile] (min..max)")  # fmt: skip
    for c in curves:
        q = statistics.quantiles([v * scale for v in c.found], n=10, method="inclusive") if len(c.found) > 1 else []
        mid = statistics.median(c.found) * scale if c.found else float("nan")
        spread = f" [{q[0]:.2f}, {q[-1]:.2f}]" if q else ""
        lines.append(f"{c.sampler:<8} {mid:.2f}{spread} ({min(c.found) * scale:.2f}..{max(c.found) * scale:.2f}) "
                     f"over {len(c.found)} seeds")  # fmt: skip
    return "\n".join(lines)
