"""Records → claim verdicts: the one code path `coatsearch report` and the calibration's simulated studies share."""

from __future__ import annotations

from collections.abc import Sequence

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
    found = V.all_claims(rows, stems, noise, describe, regime_a=gen["out_of_regime"], level_a=gen["level"])
    found = [with_scale(space, fr.complete, c, acc) for c in found]
    claims, untested = paper.untestable(space, found)
    return {"frames": fr, "gen": gen, "rows": rows, "acc": acc, "dims": dims, "runs": runs,
            "edf": edf_rows, "noise": noise, "stems": stems, "claims": claims, "untested": untested}  # fmt: skip


FIRM = ("supported", "not supported")


def with_scale(space: dict, done: Sequence, claim: dict, acc: str | None) -> dict:
    """A firm verdict with the proxy scale it was reached at (`scale`); other verdicts unchanged."""
    if claim["verdict"] not in FIRM:
        return claim
    key = claim["evidence"][0]["key"] if claim.get("evidence") else acc
    return {**claim, "scale": scale_of(space, done, key.split(".")[0] if key else None, claim)}


def scale_of(space: dict, done: Sequence, score: str | None, claim: dict) -> str:
    """'at this proxy scale: <dataset>, <images> training images, <size>x<size>x<channels>, <n> seeds, <steps>'."""
    size, channels, _ = info.shape(space)
    dataset = (space.get("data") or {}).get("dataset")
    images = sorted({v for r in done if score and (v := r.run.value(f"{score}.images")) is not None})
    steps = sorted({v for r in done if score and (v := r.run.value(f"{score}.steps")) is not None})
    seeds = len({r.seed for r in done if score and r.run.value(f"{score}.images") is not None})
    bits = [dataset or "", _span(images, "training images"), f"{size}x{size}x{channels}" if size else "",
            f"{seeds} seeds" if seeds else "", _span(steps, "steps a run")]  # fmt: skip
    return "at this proxy scale: " + ", ".join(b for b in bits if b)


def _span(values: list, what: str) -> str:
    """'500 what' or '100-1,300 what' ('' for none)."""
    if not values:
        return ""
    lo, hi = values[0], values[-1]
    return f"{lo:,} {what}" if lo == hi else f"{lo:,}–{hi:,} {what}"
