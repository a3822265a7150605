"""The looks record: every look at a claim a report counted, kept in the reports folder (`reports/looks.json`).

A report counts the looks it finds on the disk that writes it (papers/looks_found.py: the studies folder, the
reports' summaries, on request their git history). Those folders differ between machines: a fresh clone has no
studies folder. So every report written adds its own looks and every earlier look it counted to the record, which
is committed with the reports; a later report, on any machine, reads the record first and counts the same looks.

Format (RECORD_VERSION 1): a JSON object `{"kind": KIND, "version": 1, "looks": [...]}`, each look the fields of
`looks.Look` (its `to_json`), sorted, one look per (space hash, profile, seeds, claim): a report's own reading
replaces an older one of it, and an earlier look keeps the entry the report showed. Written atomically through
coatsearch.fsafe; read within fsafe's bounds; a record from a newer coatsearch or a damaged one is one line (a
UserError naming the file), never a silent count.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from coatsearch.errors import UserError
from coatsearch.papers import looks as L

NAME = "looks.json"  # the record's file name in the reports folder
KIND = "coatsearch looks record"
RECORD_VERSION = 1


class _Entry(BaseModel):
    """One look as the record holds it (looks.Look's fields), checked strictly."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    source: str
    where: str
    space: str | None
    sha256: str | None
    profile: str
    seeds: list[int | str] | None
    claim: str
    verdict: str | None
    p: float | int | None
    images: str
    pilot: bool
    spends: bool


def parse(data: Any, where: str) -> L.Look:
    """A look from its JSON form (a record entry, or an earlier look a summary.json lists); a UserError else."""
    try:
        e = _Entry.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise UserError(f"{where}: a damaged look ({'.'.join(map(str, first['loc']))}: {first['msg']})") from None
    seeds = None if e.seeds is None else tuple(e.seeds)
    return L.Look(e.source, e.where, e.space, e.sha256, e.profile, seeds, e.claim, e.verdict,
                  None if e.p is None else float(e.p), e.images, e.pilot, e.spends)  # fmt: skip


def _key(x: L.Look) -> tuple:
    """One look per space hash, profile, seeds and claim."""
    return (*L.key(x), x.claim)


def read(reports_dir: Path) -> tuple[L.Look, ...]:
    """The looks of the record in `reports_dir` (none without one); a UserError naming it when it is damaged or
    from a newer coatsearch."""
    from coatsearch import fsafe

    path = Path(reports_dir) / NAME
    if not path.exists() and not path.is_symlink():
        return ()
    data = fsafe.read_json(path)  # a regular file within bounds, an object
    version = data.get("version")
    if data.get("kind") != KIND or not isinstance(version, int) or not 1 <= version <= RECORD_VERSION:
        raise UserError(
            f"{path}: not a looks record this coatsearch reads (kind {KIND!r}, version 1..{RECORD_VERSION})"
        )
    looks = data.get("looks")
    if not isinstance(looks, list):
        raise UserError(f"{path}: a damaged looks record (`looks` is no list)")
    return tuple(parse(x, f"{path}, look {i + 1}") for i, x in enumerate(looks))


def merged(old: Iterable[L.Look], new: Iterable[L.Look]) -> list[L.Look]:
    """The record's looks: `old` with `new` added, one per (space hash, profile, seeds, claim): the first of `new`
    replaces an old reading of it (a report passes its own looks first, then the looks it counted in the order it
    found them, the record's first); sorted so the same looks give the same file."""
    out: dict[tuple, L.Look] = {_key(x): x for x in old}
    seen: set[tuple] = set()
    for x in new:
        if _key(x) not in seen:
            seen.add(_key(x))
            out[_key(x)] = x
    return sorted(out.values(), key=lambda x: json.dumps(x.to_json(), sort_keys=True, ensure_ascii=False))


def text(looks: Sequence[L.Look]) -> str:
    """The record file's text."""
    body = {"kind": KIND, "version": RECORD_VERSION, "looks": [x.to_json() for x in looks]}
    return json.dumps(body, indent=1, ensure_ascii=False) + "\n"


def write(reports_dir: Path, looks: Iterable[L.Look]) -> Path:
    """Add `looks` to the record in `reports_dir` (made when missing), atomically; its path."""
    from coatsearch import fsafe

    path = Path(reports_dir) / NAME
    return fsafe.write(path, text(merged(read(reports_dir), looks)))


def own(where: str, this: L.Ident, readings: Sequence[Any]) -> list[L.Look]:
    """This study's own looks (`readings`: its judged claims) as the record keeps them: source "report", where
    the summary.json of its report folder."""
    return L.looks_of("report", where, this, readings, this)


def recorded(summary: Mapping[str, Any], where: str) -> list[L.Look]:
    """The earlier looks a summary.json counted (`looks.claims[].earlier`): a report made before the record, or on
    another machine, still hands on what it counted."""
    looks = summary.get("looks")
    claims = looks.get("claims") if isinstance(looks, Mapping) else None
    out = []
    for c in claims if isinstance(claims, list) else ():
        for i, x in enumerate(c.get("earlier") or () if isinstance(c, Mapping) else ()):
            out.append(parse(x, f"{where}, earlier look {i + 1}"))
    return out
