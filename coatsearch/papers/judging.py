"""Records → claim verdicts: the one code path `coatsearch report` and the calibration's simulated studies share."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from coatsearch.analysis import tables
from coatsearch.analysis.measure_results import EdfRow, MatchedLoss, UntestedClaim
from coatsearch.analysis.stats import MeasureNoises
from coatsearch.analysis.table_rows import CandidateRow
from coatsearch.papers import categories as K
from coatsearch.papers import frames, optim, paper, stem
from coatsearch.papers import measures as M
from coatsearch.papers import verdicts as V
from coatsearch.papers.claim_results import ClaimVerdict, Purposes, StemTables
from coatsearch.papers.standing import Standing
from coatsearch.storage import record as R

_EXPLORATORY = "exploratory: one eval set served choices and verdicts"
SPLIT = ("validation images served every choice (pruning, stop_at_acc, the objective, the best runs and lengths); "
         "test images the verdict measures only")  # fmt: skip

PER_SEED = ("test images sampled per seed: each seed's paired differences, and so every interval, include the "
            "variance of sampling the test images")  # fmt: skip
SHARED = ("one test draw serves every seed: the intervals hold the seed-to-seed noise, not the variance of sampling "
          "the test images (`data.test_sampling: per_seed` puts it in)")  # fmt: skip


@dataclass(frozen=True)
class Judged:
    """Everything the report and the calibration read from one judging of a study's records."""

    frames: frames.Frames  # the shared tables (frames.build, once)
    gen: MatchedLoss  # the matched-loss reading (frames.matched): table, level, key candidates, out of regime
    rows: tuple[CandidateRow, ...]  # tables.candidate_rows, with the derived readings
    acc: Any  # the runs table of the study's accuracy (frames.build)
    dims: list  # searched dimensions (optim.search_dims)
    runs: Any  # the runs table (None without runs)
    edf: tuple[EdfRow, ...]  # EDF rows of sampled runs (description; () with describe=False)
    noise: MeasureNoises  # per-measure paired noise (verdicts.noises)
    stems: StemTables | None  # claim (f)'s tables (stem.stem_tables)
    claims: list[ClaimVerdict]  # every judged claim, its verdict, scale, purposes and status
    untested: tuple[UntestedClaim, ...]  # claims the space marks untestable at its scale
    images: Purposes  # which images served which purpose (purposes)
    registration: str  # the study's line against its registration


def judge_records(space: dict, records: tables.Records, describe: bool = True, registered: Standing | None = None
                  ) -> Judged:  # fmt: skip
    """The report's shared tables (frames.build, once), candidate rows, claim (f)'s tables and every claim's verdict.

    describe=False leaves out rho and power (description only): the verdicts are the same, computed faster.
    `registered`: the study against its registration (registration.standing), which gives each claim its line;
    None = none registered.
    """
    fr = frames.build(space, records)
    gen, acc, runs = fr.matched, fr.acc, fr.runs
    derived = paper.readings(gen.readings, gen.level)  # the matched-loss accuracy: a report value
    rows = tables.candidate_rows(space, fr.records, derived)
    dims = optim.search_dims(fr.records)
    edf_rows = M.edf(runs) if describe and runs is not None and dims else ()
    noise = V.noises(rows)
    stems = stem.stem_tables(fr.complete, runs, acc) if runs is not None else None
    found = V.all_claims(rows, stems, noise, describe, regime_a=list(gen.out_of_regime), level_a=gen.level)
    images = purposes(fr.complete)
    found = [with_status(with_scale(space, fr.complete, _with_purposes(c, images), acc),
                         registered.line((c.id,)) if registered else None) for c in found]  # fmt: skip
    claims, untested = paper.untestable(space, found)
    line = registered.line([c.id for c in claims]) if registered else _UNREGISTERED  # the changes its claims see
    return Judged(fr, gen, rows, acc, dims, runs, edf_rows, noise, stems, claims, untested, images,
                  registration_line(line, claims))  # fmt: skip


def purposes(done: Sequence) -> Purposes:
    """Which images served which purpose in a study's complete runs, and what that makes of its verdicts.

    state "split": every run has validation and test images (RunRecord.images) and no objective read the test
    images; "exploratory": some run has no split (records made before it), so one eval set served choices and
    verdicts; "refused": some run's objective was computed on the test images (record.on_test). `runs`: per run
    name with a split, its image counts and fingerprints.
    """
    split = [r for r in done if r.run.images]
    tainted = [(r.number, k) for r in split for k in R.on_test(r.run)]
    if tainted:
        (first, key), n = tainted[0], len({t[0] for t in tainted})
        state, line = (
            "refused",
            (
                f"refused: the objective `{key}` of {n} run(s) (trial {first} first) was computed on the test images, "
                "which decide verdicts; a measure selected on them is not judged"
            ),
        )
    elif not done or len(split) < len(done):
        state, line = "exploratory", _EXPLORATORY
    else:
        state, line = "split", SPLIT
    draws = sorted({int(r.run.images.get("test_draw") or 0) for r in split})
    per_seed = bool(split) and all(r.run.images.get("test_sampling") == "per_seed" for r in split)
    return Purposes(state, line, tuple(draws), tuple(_image_runs(split)),
                    (PER_SEED if per_seed else SHARED) if split else None)  # fmt: skip


def _image_runs(split: Sequence) -> list[dict]:
    """Per run name that recorded a validation fingerprint: its validation and test counts and fingerprints."""
    names = dict.fromkeys(k[: -len(".val_fingerprint")] for r in split for k in r.run.keys()
                          if k.endswith(".val_fingerprint"))  # fmt: skip

    def seen(name: str, key: str) -> list:
        return sorted({v for r in split if (v := r.run.value(f"{name}.{key}")) is not None}, key=str)

    return [{"run": n, "validation": seen(n, "val_images"), "validation_fp": seen(n, "val_fingerprint"),
             "test": seen(n, "eval_images"), "test_fp": seen(n, "eval_fingerprint")} for n in names]  # fmt: skip


def _with_purposes(claim: ClaimVerdict, images: Purposes) -> ClaimVerdict:
    """The claim under the study's image rule (`purposes`): refused (not decided), else tagged with the state
    (an exploratory one says why in the claim's status: `with_status`)."""
    if images.state == "refused":
        found = replace(claim.found, verdict=K.UNRESOLVED, why=images.line, reason=images.line.partition(":")[0],
                        decide="a study whose objectives read validation images only")  # fmt: skip
        return replace(claim, found=found, scope="", images="refused")
    return replace(claim, images="exploratory" if images.state == "exploratory" else "split")


FIRM = K.FIRM
_UNREGISTERED = "exploratory: no registered analysis"


def with_status(claim: ClaimVerdict, registered: str | None) -> ClaimVerdict:
    """The claim marked confirmatory (its study matches its registration, its runs split validation from test
    images, and a firm verdict was possible: categories.POSSIBLE), registered only (no firm verdict possible) or
    exploratory, with the reasons (`status`, `status_why`)."""
    why = [registered or _UNREGISTERED] if not (registered or "").startswith("confirmatory") else []
    if claim.images != "split":
        why.append(_EXPLORATORY if claim.images == "exploratory" else "its measure was selected on test images")
    if why:
        return replace(claim, status="exploratory", status_why="; ".join(w.removeprefix("exploratory: ") for w in why))
    status = K.status_word(True, claim.verdict)
    return replace(claim, status=status, status_why="" if status == "confirmatory" else claim.verdict)


def registration_line(line: str, claims: Sequence[ClaimVerdict]) -> str:
    """The study's registration line as the report shows it: 'confirmatory' only when some claim could reach a
    firm verdict (categories.POSSIBLE), else 'registered (no firm verdict possible)'."""
    if not line.startswith("confirmatory") or any(c.verdict in K.POSSIBLE for c in claims):
        return line
    return K.REGISTERED_ONLY + line.removeprefix("confirmatory")


def with_scale(space: dict, done: Sequence, claim: ClaimVerdict, acc: str | None) -> ClaimVerdict:
    """A firm verdict with the proxy scale it was reached at (`scale`); other verdicts unchanged."""
    if claim.verdict not in FIRM:
        return claim
    key = claim.evidence[0].key if claim.evidence else acc
    return replace(claim, scale=_scale_of(space, done, key.split(".")[0] if key else None))


def _scale_of(space: dict, done: Sequence, score: str | None) -> str:
    """'at this proxy scale: <dataset>, <images> training images, <size>x<size>x<channels>, <n> seeds, <steps>'."""
    size, channels, _ = tables.shape(space)
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
