"""Records → claim verdicts: the one code path `coatsearch report` and the calibration's simulated studies share."""

from __future__ import annotations

from coatsearch.report import frames, info, optim, paper, stem
from coatsearch.report import measures as M
from coatsearch.report import verdicts as V


def judge_records(space: dict, records: info.Records, describe: bool = True) -> dict:
    """The report's shared tables (frames.build, once), candidate rows, claim (f)'s tables and every claim's verdict.

    describe=False leaves out rho and power (description only): the verdicts are the same, computed faster.
    """
    fr = frames.build(space, records)
    gen, acc, runs = fr.matched, fr.acc, fr.runs
    derived = paper.readings(gen["matched"], gen["level"])  # the matched-loss accuracy: a report value
    rows = info.candidate_rows(space, fr.records, derived)
    dims = optim.search_dims(fr.records)
    edf_rows = M.edf(runs) if describe and runs is not None and dims else []
    noise = V.noises(rows)
    stems = stem.stem_tables(fr.complete, runs) if runs is not None else None
    found = V.all_claims(rows, stems, noise, describe, regime_a=gen["out_of_regime"])
    claims, untested = paper.untestable(space, found)
    return {"frames": fr, "gen": gen, "rows": rows, "acc": acc, "dims": dims, "runs": runs,
            "edf": edf_rows, "noise": noise, "stems": stems, "claims": claims, "untested": untested}  # fmt: skip
