"""Replicate a registered study on fresh seeds and a fresh test draw: `coatsearch replicate STUDY`.

A replicate runs the original's registered space file and profile unchanged, on seeds the original never ran (by
default as many as it registered, numbered after the largest seed it used, re-evaluation seeds included) and on
the next test draw it never used, into the study `<STUDY>-rep`, registered with `replicate_of` = STUDY. Its report
sets each claim's verdict beside the original's and a pooled one (papers.replicate). Everything is checked
before anything is written: a missing or unregistered study, seeds the original used, a space file whose identity
(space.identity: content, or bytes for older registrations) is not the registered one, a test draw that reads
images an earlier look at the same claims read (papers.draws_seen: the reports folder and its record
test_draws.json, withdrawn looks included) are each one line (UserError).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coatsearch.errors import UserError
from coatsearch.space.draws import draws_of_space, parse, shares
from coatsearch.space.objects import Space, with_draw
from coatsearch.vocab.specs import DRAWS_MAX, SEED_MAX, SEEDS_MAX

if TYPE_CHECKING:
    from coatsearch.api import RunResult
    from coatsearch.papers.registration import Registration

SUFFIX = "-rep"  # the replicate's study name: the original's plus this
_CHAIN_MAX = 20  # replicates of replicates followed back for the seeds and draws already used


@dataclass(frozen=True)
class Replicate:
    """What a replicate runs: its study, the study it replicates, the space on fresh seeds and a fresh draw."""

    study: str
    original: str
    space: Space  # the registered space file and profile, on `seeds` and test draw `test_draw`
    seeds: tuple[int, ...]
    test_draw: int
    used_seeds: tuple[int, ...]  # every seed the original (and what it replicates) ran or registered
    used_draws: tuple[int, ...]  # every test draw they registered or recorded
    resumed: bool  # the replicate study was registered before: its own seeds and draw are kept


def parse_seeds(text: str) -> int | tuple[int, ...]:
    """`--seeds`: N, a count of fresh seeds (1..SEEDS_MAX), or a comma list of seeds (`5,6,7`; one alone: `7,`)."""
    from coatsearch.vocab import numbers

    if "," not in text:
        return numbers.parse_int(text.strip(), 1, SEEDS_MAX)
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts:
        raise ValueError(f"{text!r}: no seed listed; allowed: N (a count) or seeds like 5,6,7")
    return tuple(numbers.parse_int(p, 0, SEED_MAX) for p in parts)


def _checked_seeds(seeds: Any) -> int | tuple[int, ...] | None:
    """`seeds` as `--seeds` takes it (`numbers`: a count 1..SEEDS_MAX, not True or 2.7; or seeds 0..SEED_MAX, a
    list or tuple), else the CLI's one-line UserError."""
    from coatsearch.api import checked
    from coatsearch.vocab import numbers

    if seeds is None:
        return None
    if isinstance(seeds, list | tuple):
        return tuple(checked("seeds", numbers.count, s, 0, SEED_MAX) for s in seeds)
    return checked("seeds", numbers.count, seeds, 1, SEEDS_MAX)


def replicate(
    study: str,
    seeds: int | tuple[int, ...] | None = None,
    *,
    studies_dir: str | Path = "studies",
    reports_dir: str | Path = "reports",
    workers: int | str = "auto",
    device: str = "auto",
    trials: int | None = None,
    report: bool = True,
    progress: bool = True,
    plan_first: bool = False,
    space_file: str | Path | None = None,
) -> RunResult:
    """Run STUDY's registered space and profile on fresh seeds and a fresh test draw into `<study>-rep`
    (resumes), registered as its replicate, then write its report (original, replicate and pooled estimates).

    `seeds`: a count of fresh seeds (default: as many as the original registered), or the seeds themselves (none
    the original used). `space_file`: the space file, when it moved (its sha256 must be the registered one).
    The other arguments are `run`'s. Bad input is a one-line UserError before anything is written."""
    from coatsearch import api

    rep = prepare(study, seeds, studies_dir=studies_dir, space_file=space_file, reports_dir=reports_dir)
    return api.run(rep.space, study=rep.study, workers=workers, device=device, trials=trials, studies_dir=studies_dir,
                   reports_dir=reports_dir, report=report, progress=progress, plan_first=plan_first,
                   replicate_of=rep.original)  # fmt: skip


def prepare(
    original: str,
    seeds: int | tuple[int, ...] | None = None,
    *,
    studies_dir: str | Path = "studies",
    space_file: str | Path | None = None,
    reports_dir: str | Path = "reports",
) -> Replicate:
    """The replicate of `original` as it would run (nothing written): its space, fresh seeds and test draw; one
    line (UserError) when a draw it would read was read by an earlier look at its claims (`_check_fresh`)."""
    from coatsearch.papers import registration
    from coatsearch.storage import store
    from coatsearch.storage.paths import check_name

    seeds = _checked_seeds(seeds)
    studies, original = Path(studies_dir), check_name(original, "study")
    name = original + SUFFIX
    store.folder(studies, name)  # a name too long or a bad folder stops here
    reg = _registration_of(studies, original)
    space = _space(reg, original, space_file)
    used_seeds, used_draws = _used(studies, original, reg, space)
    mine = registration.load(store.folder(studies, name))
    resumed = mine is not None or store.storage_file(studies, name).exists()
    seen = _seen(Path(reports_dir), original, space, but=name if resumed else None)
    if resumed:
        return _check_fresh(_resumed(name, original, mine, seeds, space, used_seeds, used_draws), seen)
    chosen = _fresh_seeds(seeds, len(reg.analysis.seeds), used_seeds, original)
    draw = max((*used_draws, *(parse(d).draw for d in seen))) + 1  # past every draw index a look at it read
    if draw > DRAWS_MAX:
        raise UserError(f"study '{original}': no test draw left (draws {_join(used_draws)} used; at most {DRAWS_MAX})")
    fresh = with_draw(space, chosen, draw)
    if again := sorted(set(fresh.study.fresh_seeds) & set(used_seeds)):
        raise UserError(f"--seeds: the re-evaluation after seeds {_join(chosen)} would run seed(s) {_join(again)}, "
                        f"already used by '{original}'; allowed: seeds above {max(used_seeds)}")  # fmt: skip
    return _check_fresh(Replicate(name, original, fresh, chosen, draw, used_seeds, used_draws, False), seen)


def _seen(reports: Path, original: str, space: Space, but: str | None) -> dict[str, str]:
    """Draw label -> the look that read it: every look on record (papers.draws_seen) at the claims the original's
    reports judged, or of its space; `but`: a resumed replicate, whose standing report is its own look."""
    from coatsearch.papers import draws_seen

    claims = {c for look in draws_seen.current(reports) if look.study == original for c in look.claims}
    return draws_seen.draws_seen(reports, claims, space.name, but=but)


def _check_fresh(rep: Replicate, seen: dict[str, str]) -> Replicate:
    """`rep`, when none of its test draws reads images an earlier look at its claims read (space.draws.shares);
    else one line naming the first such draw and the look (docs/verdicts.md, "Fresh test images")."""
    mine = sorted(d.label for d in draws_of_space(rep.space))
    if clash := [(d, e) for d in mine for e in seen if shares(parse(d), parse(e))]:
        d, e = clash[0]
        raise UserError(
            f"study '{rep.study}': test draw '{d}' reads images of '{e}', which {seen[e]} read (an earlier look at "
            f"the same claims; {len(clash)} such draw(s)); a replicate reads fresh test images only (docs/verdicts.md, "
            "'Fresh test images')"
        )
    return rep


def _registration_of(studies: Path, original: str) -> Registration:
    """The original study's registration; a one-line UserError when the study or its registration is missing."""
    from coatsearch.papers import registration
    from coatsearch.storage import store

    if not store.storage_file(studies, original).exists():
        raise UserError(f"no study '{original}' under {studies}/ (expected {store.storage_file(studies, original)})")
    reg = registration.load(store.folder(studies, original))
    if reg is None:
        raise UserError(
            f"study '{original}' has no registered analysis ({registration.path(store.folder(studies, original))}); "
            "a replicate repeats a registered analysis (`run` registers one before a study's first trial)"
        )
    return reg


def _space(reg: Registration, original: str, space_file: str | Path | None) -> Space:
    """The registered space file and profile, loaded; refused when its bytes no longer hash to the registration."""
    from coatsearch import api

    given = space_file if space_file is not None else reg.source
    if not given:
        raise UserError(f"study '{original}': its registration records no space file; pass --space FILE")
    from coatsearch import fsafe
    from coatsearch.space.load import MAX_BYTES

    path = Path(given)
    try:  # bounded: a FIFO or /dev/zero named here, or as the registration's source, is one line
        raw = fsafe.read_named(path, MAX_BYTES, "space file")
    except UserError as exc:
        raise UserError(f"{exc} (the space file of '{original}'; pass --space FILE)") from None
    from coatsearch.space.identity import file_ids

    ids, registered = file_ids(raw, path), reg.analysis.space_sha256
    if registered is None:
        raise UserError(f"study '{original}': its registration records no space sha256; nothing to check against")
    if registered not in ids.values():  # its content hash, or its bytes' for a study registered before those
        now = ids.get("content", ids["bytes"])
        raise UserError(
            f"{path}: the space file changed since '{original}' was registered (sha256 {registered[:12]}… "
            f"registered, {now[:12]}… now); a replicate runs the registered analysis: restore the file"
        )
    space = api.load_space(path, reg.analysis.profile)
    if space.name != reg.analysis.space:
        raise UserError(f"{path}: space '{space.name}', but '{original}' registers space '{reg.analysis.space}'")
    return space


def _used(studies: Path, original: str, reg: Registration, space: Space) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(seeds, test draws) the original used, and every study it replicates in turn: registered and recorded."""
    from coatsearch.papers import registration
    from coatsearch.storage import store

    seeds: set[int] = set()
    draws: set[int] = set()
    name: str | None = original
    current: Registration | None = reg
    for _ in range(_CHAIN_MAX):
        if current is None or name is None:
            break
        a = current.analysis
        seeds |= {*a.seeds, *with_draw(space, a.seeds, 0).study.fresh_seeds}  # its re-evaluation seeds too
        draws.add(int(a.data.get("test_draw") or 0))
        if store.storage_file(studies, name).exists():
            for r in store.records(store.load_study(studies, name), say=False):
                seeds |= {r.seed} if r.seed is not None else set()
                draws |= {int(r.run.images["test_draw"] or 0)} if r.run.images else set()
        name = a.replicate_of
        current = registration.load(store.folder(studies, name)) if name else None
    return tuple(sorted(seeds)), tuple(sorted(draws))


def _fresh_seeds(seeds: int | tuple[int, ...] | None, count: int, used: tuple[int, ...], original: str) -> tuple:
    """The replicate's seeds: the given ones (none used before, none twice), else `count` after the largest used."""
    if isinstance(seeds, tuple):
        if not seeds:
            raise UserError("--seeds: no seed given")
        if twice := sorted({s for s in seeds if seeds.count(s) > 1}):
            raise UserError(f"--seeds: seed {twice[0]} is listed twice; allowed: distinct seeds")
        if clash := sorted(set(seeds) & set(used)):
            raise UserError(f"--seeds: seed(s) {_join(clash)} already used by '{original}' (seeds {_join(used)}); "
                            "a replicate runs on fresh seeds only")  # fmt: skip
        if len(seeds) > SEEDS_MAX:
            raise UserError(f"--seeds: {len(seeds)} seeds; at most {SEEDS_MAX}")
        return tuple(seeds)
    n = count if seeds is None else int(seeds)
    if not 1 <= n <= SEEDS_MAX:
        raise UserError(f"--seeds {n}: out of range; allowed: 1..{SEEDS_MAX}")
    start = max(used, default=-1) + 1
    if start + n - 1 > SEED_MAX:
        raise UserError(f"--seeds {n}: no {n} fresh seeds after {start - 1} (at most {SEED_MAX}); list them")
    return tuple(range(start, start + n))


def _resumed(name: str, original: str, mine: Registration | None, seeds: Any, space: Space,
             used_seeds: tuple[int, ...], used_draws: tuple[int, ...]) -> Replicate:  # fmt: skip
    """A replicate study that exists: resumed on its registered seeds and draw, if it is a replicate of `original`."""
    if mine is None or mine.analysis.replicate_of != original:
        what = "holds no registered replicate" if mine is None else f"replicates '{mine.analysis.replicate_of}'"
        raise UserError(f"study '{name}' exists and {what}, not a replicate of '{original}'; nothing was run")
    kept, draw = tuple(mine.analysis.seeds), int(mine.analysis.data.get("test_draw") or 0)
    if seeds is not None and seeds != (kept if isinstance(seeds, tuple) else len(kept)):
        raise UserError(f"study '{name}' replicates '{original}' on seeds {_join(kept)}; rerun without --seeds to "
                        "resume it")  # fmt: skip
    if (clash := sorted(set(kept) & set(used_seeds))) or draw in used_draws:
        why = f"seed(s) {_join(clash)}" if clash else f"test draw {draw}"
        raise UserError(f"study '{name}' shares {why} with '{original}': not a replicate of it; nothing was run")
    return Replicate(name, original, with_draw(space, kept, draw), kept, draw, used_seeds, used_draws, True)


def _join(values: Any) -> str:
    return ", ".join(map(str, values))
