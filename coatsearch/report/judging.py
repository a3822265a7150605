"""Records → claim verdicts: the one code path `coatsearch report` and the calibration's simulated studies share."""

from __future__ import annotations

from coatsearch.report import info, optim, paper, stem
from coatsearch.report import measures as M
from coatsearch.report import verdicts as V


def judge_records(space: dict, records: list[dict], describe: bool = True) -> dict:
    """Matched-loss reading, candidate rows, claim (f)'s tables and every claim's verdict, from the records up.

    describe=False leaves out rho and power (description only): the verdicts are the same, computed faster.
    """
    gen = paper.matched(space, records)
    records = paper.with_matched(records, gen["matched"], gen["level"])
    rows = info.candidate_rows(space, records)
    acc = optim.primary_acc(space, records)
    dims = optim.search_dims(records)
    runs = M.runs_frame(records, acc) if acc else None
    edf_rows = M.edf(runs) if describe and runs is not None and dims else []
    noise = V.noises(rows)
    stems = stem.stem_tables(records, acc) if acc else None
    found = V.all_claims(rows, stems, noise, describe, regime_a=gen["out_of_regime"])
    claims, untested = paper.untestable(space, found)
    return {"gen": gen, "records": records, "rows": rows, "acc": acc, "dims": dims, "runs": runs,
            "edf": edf_rows, "noise": noise, "stems": stems, "claims": claims, "untested": untested}  # fmt: skip
