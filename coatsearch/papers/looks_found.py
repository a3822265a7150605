"""The earlier looks on record (papers/looks.py): the reports folder's looks record (papers/looks_record.py),
the other studies in the studies folder, the reports folder (each summary's looks and the earlier looks it counted)
and, when asked for, its git history.

Read only. A study of the same space, or of a space that pilots a claim, is judged from its own trials by the
report's path (the report passes judging.judge_records, without the description-only figures); its registration
says which space it is without opening its journal. Every `<reports>/*/summary.json` is read as it stands. Only
when asked for (`history=True`) are its committed versions read, with two bounded `git` calls in the reports
folder's checkout; outside a git checkout, without git, or past the time limit the history is left out with a
note. By default no git runs: a report depends on the folders it is given, not on the repository the working
directory is in, and one note says the history was not read. A study or summary that cannot be read is left out
with a note naming it; it never stops the report.
"""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from coatsearch.errors import UserError
from coatsearch.papers import looks as L
from coatsearch.papers.claim_results import ClaimVerdict

GIT_TIMEOUT_S = 20.0  # each git call; past it the history is left out with a note
HISTORY_MAX = 500  # commits of summary.json files read at most (newest first)
_HISTORY_BYTES = 256_000_000  # distinct summary.json versions read from the history at most, in all
NOT_ASKED = "report history: not read (the committed versions of the reports' summary.json are read only on request)"
JOURNAL = "journal.log"


Judge = Callable[[dict, list], list[ClaimVerdict]]  # a space record and trial records -> judged claims (judging's path)


def gather(studies_dir: Path, reports_dir: Path, study: str, space: Mapping[str, Any], judge: Judge,
           history: bool = False) -> L.Found:  # fmt: skip
    """Every earlier look of study `study` (space record `space`) on record: the looks record first (so a look
    keeps where it was first found), then studies (judged by `judge`), reports, then (`history`) the reports'
    committed versions; without `history` no git runs and one note says so."""
    this = L.ident(space)
    past = from_history(Path(reports_dir), this) if history else _not_asked(Path(reports_dir))
    parts = (from_record(Path(reports_dir), this), from_studies(Path(studies_dir), study, this, judge),
             from_reports(Path(reports_dir), this), past)  # fmt: skip
    return L.Found(tuple(x for f in parts for x in f.looks), tuple(n for f in parts for n in f.notes))


def from_record(reports_dir: Path, this: L.Ident) -> L.Found:
    """The looks the reports folder's looks record holds at this study's claims (its space's, and pilots'); a
    damaged record is a note, and its looks are left out."""
    from coatsearch.papers import looks_record

    try:
        return L.Found(tuple(x for x in looks_record.read(reports_dir) if L.relevant(x, this)))
    except UserError as exc:
        return L.Found((), (f"{exc}; its looks are left out",))


def _not_asked(reports_dir: Path) -> L.Found:
    """No looks from the history, which was not asked for: one note when a reports folder exists (no folder, no
    history to read, no note, as from_history)."""
    return L.Found((), (NOT_ASKED,) if reports_dir.is_dir() else ())


def _claims_of(studies_dir: Path, name: str, judge: Judge) -> tuple[dict, list[ClaimVerdict]]:
    """A study's space record and its claims, judged by `judge` from its trials (read only)."""
    from coatsearch.space import search
    from coatsearch.storage import store

    study = store.load_study(studies_dir, name)
    space = store.space_of(study)
    records = [r for r in search.regroup(store.records(study, say=False)) if r.state not in search.UNTRAINED]
    return space, judge(space, records)


def _relevant(folder: Path, this: L.Ident) -> bool:
    """Whether a study folder may hold looks: a registration of the same space or of a pilot space (none: maybe)."""
    from coatsearch.papers import registration

    reg = registration.load(folder)  # a damaged one: a UserError, noted by the caller
    return reg is None or reg.analysis.space == this.space or bool(reg.analysis.pilots)


def from_studies(studies_dir: Path, study: str, this: L.Ident, judge: Judge) -> L.Found:
    """The looks of every other study in the studies folder (same space, or a pilot of a claim), each judged by
    `judge` (the report passes judging's path, without the description-only figures)."""
    if not studies_dir.is_dir():
        return L.Found(())
    looks: list[L.Look] = []
    notes: list[str] = []
    for folder in sorted(p for p in studies_dir.iterdir() if p.is_dir() and p.name != study):
        if not (folder / JOURNAL).is_file():
            continue
        try:
            if not _relevant(folder, this):
                continue
            space, claims = _claims_of(studies_dir, folder.name, judge)
        except (UserError, OSError, ValueError) as exc:
            notes.append(f"study {folder.name}: not read ({exc}); its looks are left out")
            continue
        looks += L.looks_of("study", folder.name, L.ident(space), claims, this)
    return L.Found(tuple(looks), tuple(notes))


def from_reports(reports_dir: Path, this: L.Ident) -> L.Found:
    """The looks in the reports folder as it stands (<reports>/*/summary.json, committed or not)."""
    from coatsearch import fsafe

    looks: list[L.Look] = []
    notes: list[str] = []
    for path in sorted(reports_dir.glob("*/summary.json")) if reports_dir.is_dir() else ():
        try:
            text = fsafe.read_bytes(path, fsafe.JSON_MAX).decode("utf-8", "replace")
            looks += summary_looks(text, f"{path.parent.name}/summary.json", this, "report")
        except UserError as exc:
            notes.append(f"{exc}; its looks are left out")
    return L.Found(tuple(looks), tuple(notes))


def _run(root: Path, args: tuple[str, ...], stdin: bytes | None = None) -> bytes | None:
    """One bounded git call in `root`: its stdout, or None (no git, not a checkout, too slow, an error)."""
    try:
        done = subprocess.run(["git", "-C", str(root), "-c", "core.quotepath=off", *args], input=stdin,
                              capture_output=True, timeout=GIT_TIMEOUT_S, check=False)  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def _git(root: Path, *args: str) -> str | None:
    """A git call's stdout as text (None: see _run)."""
    out = _run(root, args)
    return None if out is None else out.decode("utf-8", "replace")


def _versions(root: Path) -> list[tuple[str, str]] | None:
    """(commit, path from the checkout's top) of each committed summary.json under `root`, newest first."""
    log = _git(root, "log", f"-{HISTORY_MAX}", "--format=@%H", "--name-only", "--", "*/summary.json")
    if log is None:
        return None
    out, commit = [], ""
    for line in log.splitlines():
        if line.startswith("@"):
            commit = line[1:].strip()
        elif line.strip() and commit:
            out.append((commit, line.strip()))
    return out


def committed(path: str, k: int) -> str:
    """Where a committed version is on record: its path and its place in the path's history, counted from the
    oldest (1), so a version keeps its number as later ones are committed; never a commit hash or a date (a
    committed report holds neither)."""
    return f"{path}, committed version {k}"


def _blobs(top: Path, versions: list[tuple[str, str]]) -> list[str | None]:
    """The text of each (commit, path) version (None: deleted there, or past the bounds).

    One `git cat-file --batch-check` gives every version's object and size; then one `--batch` reads each distinct
    object of at most fsafe.JSON_MAX bytes, while their total stays within _HISTORY_BYTES, so a huge summary.json
    anywhere in the history costs nothing (it is read by no one), and the whole read is bounded.
    """
    from coatsearch import fsafe

    specs = "".join(f"{c}:{p}\n" for c, p in versions).encode()
    checked = _run(top, ("cat-file", "--batch-check"), specs) or b""
    heads = [line.split() for line in checked.decode("utf-8", "replace").splitlines()]
    if len(heads) != len(versions):
        return [None] * len(versions)
    objects: dict[str, int] = {}
    for head in heads:
        if len(head) == 3 and head[2].isdigit() and int(head[2]) <= fsafe.JSON_MAX and head[0] not in objects:
            if sum(objects.values()) + int(head[2]) <= _HISTORY_BYTES:
                objects[head[0]] = int(head[2])
    data = _run(top, ("cat-file", "--batch"), "".join(f"{o}\n" for o in objects).encode()) or b""
    text: dict[str, str] = {}
    at = 0
    for obj, size in objects.items():
        end = data.find(b"\n", at)
        if end < 0 or len(data) < end + 1 + size:
            break
        text[obj] = data[end + 1 : end + 1 + size].decode("utf-8", "replace")
        at = end + 1 + size + 1
    return [text.get(head[0]) if len(head) == 3 else None for head in heads]


def from_history(reports_dir: Path, this: L.Ident) -> L.Found:
    """The looks in the committed versions of reports_dir/*/summary.json (same space, or a pilot's)."""
    if not reports_dir.is_dir():
        return L.Found(())
    top = _git(reports_dir, "rev-parse", "--show-toplevel")
    versions = _versions(reports_dir) if top else None
    if top is None or versions is None:
        return L.Found((), (f"report history: not read ({reports_dir} is not in a git checkout, or git is absent)",))
    looks: list[L.Look] = []
    notes: list[str] = []
    total = Counter(path for _, path in versions)
    nth: Counter[str] = Counter()
    for (_, path), text in zip(versions, _blobs(Path(top.strip()), versions), strict=True):
        nth[path] += 1  # versions come newest first
        try:
            looks += summary_looks(text, committed(path, total[path] - nth[path] + 1), this)
        except UserError as exc:
            notes.append(f"{exc}; its looks are left out")
    return L.Found(tuple(looks), tuple(notes))


def summary_looks(text: str | None, where: str, this: L.Ident, source: str = "report history") -> list[L.Look]:
    """The looks one summary.json holds (none when it is of another space, or not a summary), and the earlier
    looks it counted (looks_record.recorded); a UserError naming `where` when it is damaged (too deep, a list where
    a mapping belongs) or from a newer coatsearch."""
    from coatsearch import fsafe
    from coatsearch.papers import looks_record, summary_file

    try:
        data = fsafe.parse_json(text or "", where, object)
    except UserError as exc:
        if "not a JSON file" in str(exc):  # another kind of file: not a look
            return []
        raise
    if not summary_file.is_summary(data):
        return []
    summary = summary_file.from_json(data, where)
    env = summary.environment
    record = {**summary.space, "study": env.study, "data": env.data, "pilots": summary.pilots}
    sha = summary.space.get("sha256")
    own = L.looks_of(source, where, L.ident(record, sha if isinstance(sha, str) else None), summary.claims, this)
    return [*own, *(x for x in looks_record.recorded(data, where) if L.relevant(x, this))]


def seed_record(reports_dir: Path) -> Path:
    """Add to the record every look the reports folder's summaries hold: each report's own looks and the earlier
    looks it counted (a reports folder made before the record); its path."""
    from coatsearch import fsafe
    from coatsearch.papers import looks_record, summary_file

    looks: list[L.Look] = []
    for path in sorted(Path(reports_dir).glob("*/summary.json")):
        data = fsafe.read_json(path)
        if not summary_file.is_summary(data):
            continue
        where = f"{path.parent.name}/summary.json"
        s = summary_file.from_json(data, where)
        sha = s.space.get("sha256")
        this = L.ident({**s.space, "study": s.environment.study, "data": s.environment.data, "pilots": s.pilots},
                       sha if isinstance(sha, str) else None)  # fmt: skip
        looks += summary_looks(json.dumps(data), where, this, "report")
    return looks_record.write(reports_dir, looks)


if __name__ == "__main__":  # python -m coatsearch.papers.looks_found [REPORTS_DIR]
    import sys

    print(seed_record(Path(sys.argv[1] if len(sys.argv) > 1 else "reports")))
