"""The test draws each look at a claim read, on record, and the reuse that remains (docs/verdicts.md, "Fresh test
images").

`<reports>/test_draws.json` is the record: every look that read test images, the withdrawn ones included (recovered
from the reports' git history by benchmarks/draws_record.py), oldest first, with its claims, the draws it read
(space.draws labels) and the test fingerprints its summary.json recorded. `reuse` says which later look re-read
a draw an earlier look at the same claim read; a replicate (replication.prepare) refuses a draw `draws_seen` names.
Read only; the record travels with the reports, so a fresh clone sees what the committing machine saw.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from coatsearch.space.draws import draws_of_summary, parse, shares

RECORD = "test_draws.json"  # in the reports folder
FORMAT = 1
_UNTESTED = ("not tested", "untested")  # verdicts of a claim that read nothing


@dataclass(frozen=True)
class DrawLook:
    """One look's test draws: which study and report version, its claims, its draws and test fingerprints."""

    study: str  # the report's folder name
    where: str  # "reports/<study>/summary.json" as it stands, or "... @ <commit>" for a version from the history
    space: str | None
    profile: str
    claims: tuple[str, ...]  # the claims it judged on test images
    draws: tuple[str, ...]  # space.draws.DrawId labels, sorted
    test_fp: tuple[str, ...]  # the fingerprints of the test images its runs read, sorted
    withdrawn: bool = False  # no report stands for it now


@dataclass(frozen=True)
class Reuse:
    """A later look at `claim` that reads images of draws an earlier look at it read (space.draws.shares)."""

    claim: str
    look: str  # the later look's `where`
    earlier: str  # the earlier look's `where`
    draws: tuple[str, ...]  # the draws both read


def look_of_summary(summary: Mapping[str, Any], where: str, withdrawn: bool = False) -> DrawLook | None:
    """The DrawLook of a report's summary.json; None when it judged no claim on test images (or split none)."""
    images = summary.get("images")
    if not isinstance(images, Mapping) or images.get("state") not in ("split", "refused"):
        return None
    claims = tuple(sorted({str(c.get("id")) for c in summary.get("claims") or []
                           if c.get("images") in ("split", "refused")
                           and not str(c.get("verdict") or "").startswith(_UNTESTED)}))  # fmt: skip
    if not claims:
        return None
    fps = sorted({str(f) for r in images.get("runs") or [] for f in r.get("test_fp") or []})
    space = summary.get("space") or {}
    return DrawLook(
        str(summary.get("study") or Path(where.split(" @ ")[0]).parent.name),
        where,
        space.get("space"),
        str(space.get("profile") or "default"),
        claims,
        tuple(sorted(d.label for d in draws_of_summary(summary))),
        tuple(fps),
        withdrawn,
    )


def reuse(looks: Iterable[DrawLook]) -> tuple[Reuse, ...]:
    """Each (claim, later look, earlier look) pair that shares draws, `looks` oldest first."""
    out: list[Reuse] = []
    seen: list[DrawLook] = []
    for look in looks:
        for claim in look.claims:
            for earlier in seen:
                if claim in earlier.claims and (both := common(look.draws, earlier.draws)):
                    out.append(Reuse(claim, look.where, earlier.where, tuple(both)))
        seen.append(look)
    return tuple(out)


def common(draws: Iterable[str], earlier: Iterable[str]) -> tuple[str, ...]:
    """The draws (labels) of `draws` that read images of some draw of `earlier` by construction (space.draws.shares)."""
    before = [parse(e) for e in earlier]
    return tuple(sorted(d for d in draws if any(shares(parse(d), e) for e in before)))


def load(reports_dir: Path) -> tuple[DrawLook, ...]:
    """The record's looks, oldest first; () when the reports folder has no record."""
    path = Path(reports_dir) / RECORD
    if not path.is_file():
        return ()
    data = json.loads(path.read_text(encoding="utf-8"))
    return tuple(DrawLook(**{**x, "claims": tuple(x["claims"]), "draws": tuple(x["draws"]),
                             "test_fp": tuple(x["test_fp"])}) for x in data.get("looks") or [])  # fmt: skip


def dump(looks: Iterable[DrawLook]) -> str:
    """The record's text: its looks, oldest first, and the reuse among them (so a reader need not recompute it)."""
    looks = tuple(looks)
    body = {
        "format": FORMAT,
        "about": "every look that read test images, withdrawn ones included, oldest first (docs/verdicts.md, "
        "'Fresh test images'); reuse: later looks at a claim that re-read an earlier look's draws",
        "looks": [asdict(x) for x in looks],
        "reuse": [asdict(r) for r in reuse(looks)],
    }
    return json.dumps(body, indent=1) + "\n"


def current(reports_dir: Path) -> tuple[DrawLook, ...]:
    """The looks of the reports as they stand (`<reports>/*/summary.json`), by folder; unreadable ones left out."""
    out = []
    for path in sorted(Path(reports_dir).glob("*/summary.json")):
        try:
            summary = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if (look := look_of_summary(summary, f"{Path(reports_dir).name}/{path.parent.name}/summary.json")) is not None:
            out.append(look)
    return tuple(out)


def draws_seen(reports_dir: Path, claims: Iterable[str], space: str | None = None,
               but: str | None = None) -> dict[str, str]:  # fmt: skip
    """Draw label -> the first look that read it, over the record and the reports as they stand: the looks at any
    of `claims` or of space `space`, leaving out the standing look of study `but` (a resumed replicate's own; its
    withdrawn looks stay)."""
    want = set(claims)
    out: dict[str, str] = {}
    for look in (*load(reports_dir), *current(reports_dir)):
        own = look.study == but and not look.withdrawn
        if own or not (want & set(look.claims) or (space and look.space == space)):
            continue
        for d in look.draws:
            out.setdefault(d, look.where)
    return out
