"""The verdict rule's committed tables, read as a report cites them: calibration.json (written by the calibration
generator, `python -m coatsearch.analysis.calibration`) and aa.json (written by benchmarks/bench_aa.py).

Each table carries every constant a report prints beside its figures, so reading one needs neither the simulator
nor the generator: the report path imports this module only (tests/repo/test_imports.py checks it).
"""

from __future__ import annotations

import sys
from pathlib import Path

from coatsearch.errors import UserError

RULE_VERSION = "2026-12-04.floor"  # bump when the verdict rule changes; both tables must then be regenerated
TABLE = Path(__file__).with_name("calibration.json")
AA_TABLE = Path(__file__).with_name("aa.json")  # A/A studies through the real trainer (benchmarks/bench_aa.py)
# The constants the generator writes beside the figures for the report (calibration.constants): the scenario whose
# per-claim figures a report cites, the seed counts of the simulated profiles, (f)'s effect in its own σ.
CITED = ("in_regime", "n_seeds", "stem_effect_sigma")
AA_DETAIL = ("verdicts", "errors", "history")  # an A/A table's per-study rows and earlier states: never cited


def table() -> dict | None:
    """The committed calibration of this rule version (calibration.json), or None when it is stale or missing."""
    data = _committed(TABLE)
    return data if data is not None and data.get("rule_version") == RULE_VERSION else None


def figures() -> dict | None:
    """The committed table's per-claim figures (in regime) and settings, without the per-replicate verdicts, for
    reports; `scenarios` holds every scenario's per-claim figures."""
    data = table()
    if data is None:
        return None
    try:
        per = {name: sc["per_claim"] for name, sc in data["scenarios"].items()}
        in_regime, n_seeds, stem_sigma = per[data["in_regime"]], data["n_seeds"], data["stem_effect_sigma"]
    except (KeyError, TypeError, AttributeError) as exc:  # a damaged table: not cited
        print(f"coatsearch: note: {TABLE.name}: no per-claim figures ({type(exc).__name__}: {exc}); left out",
              file=sys.stderr)  # fmt: skip
        return None
    return {**{k: v for k, v in data.items() if k != "scenarios" and k not in CITED}, "per_claim": in_regime,
            "n_seeds": n_seeds, "stem_effect_sigma": stem_sigma, "scenarios": per}  # fmt: skip


def aa_cited(data: dict) -> dict:
    """An A/A table as a report cites it (summary.json `rules.aa`): its figures, without per-study verdicts,
    errors or the states the table stood in before it grew (`history`, oldest first)."""
    return {k: v for k, v in data.items() if k not in AA_DETAIL}


def aa_states(data: dict) -> list[dict]:
    """Every state an A/A table has stood in, oldest first, each as a report cites it: a report made before the
    table grew cites the state it was made under (its study count and date), and stays true."""
    return [*data.get("history", []), aa_cited(data)]


def aa_figures() -> dict | None:
    """The committed A/A table's per-claim figures (firm share of studies with one architecture under every name,
    trained and reported for real) for this rule version, as a report cites them; None if stale or missing."""
    from coatsearch.analysis import aa_table

    data = _committed(AA_TABLE)
    if data is None:
        return None
    try:
        aa_table.check(data, AA_TABLE.relative_to(AA_TABLE.parents[2]))
    except UserError as exc:  # damaged: never cited as fact
        print(f"coatsearch: note: {exc}; the A/A column is left out", file=sys.stderr)
        return None
    return aa_cited(data) if data.get("rule_version") == RULE_VERSION else None


def _committed(path: Path) -> dict | None:
    """A committed table read with the bounded reader (None when missing; a damaged one is a note, then None)."""
    from coatsearch import fsafe

    if not path.exists():
        return None
    try:
        return fsafe.read_json(path, named=True)
    except UserError as exc:
        print(f"coatsearch: note: {exc}; it is left out", file=sys.stderr)
        return None
