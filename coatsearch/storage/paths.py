"""Where a study and its report live: one rule for names and folders, checked before anything is written.

A study name is one path component (letters, digits, `_`, `.`, `-`; not `.` or `..`; at most NAME_MAX
characters). A root folder (`--studies-dir`, `--reports-dir`) is resolved and must be a folder or not exist
yet under a folder. The study's folder and the report's folder are computed here, resolved (symlinks
followed) and checked to lie inside their roots, so nothing coatsearch writes lands anywhere else.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from coatsearch.errors import UserError

NAME_MAX = 100  # characters in a study name
JOURNAL = "journal.log"  # the file that makes a folder a study folder (store.JOURNAL)
NAME = re.compile(r"[A-Za-z0-9_.-]+")


def check_name(name: str, what: str = "study name") -> str:
    """Return `name` if it is one safe path component (a str); a one-line UserError otherwise."""
    if not isinstance(name, str):
        raise UserError(f"{what} {name!r} is not allowed: a study name is a str of letters, digits, '_', '.' or '-'")
    if not name:
        raise UserError(f"{what} is empty; use letters, digits, '_', '.' or '-'")
    if len(name) > NAME_MAX:
        raise UserError(f"{what} {name[:20]!r}... is {len(name)} characters long; at most {NAME_MAX} allowed")
    if not NAME.fullmatch(name) or name in (".", ".."):
        raise UserError(f"{what} {name!r} is not allowed: use one name of letters, digits, '_', '.' or '-'")
    return name


def _check_root(path: Path, flag: str) -> Path:
    """`path` resolved; it must be a folder, or not exist yet with a folder as its nearest existing parent."""
    try:
        root = Path(path).expanduser().resolve()
    except (OSError, RuntimeError) as exc:  # a symlink loop
        raise UserError(f"{flag} {path}: cannot resolve ({exc})") from None
    if root.exists() and not root.is_dir():
        raise UserError(f"{flag} {path}: is a file, not a folder")
    parent = next(p for p in root.parents if p.exists()) if not root.exists() else root
    if not parent.is_dir():
        raise UserError(f"{flag} {path}: {parent} is a file, not a folder")
    return root


def inside(root: Path, name: str, flag: str, what: str = "study name") -> Path:
    """The folder `root/name` after checking the name and that it resolves (symlinks followed) inside root."""
    root = _check_root(root, flag)
    folder = (root / check_name(name, what)).resolve()
    if folder.parent != root:
        raise UserError(f"{flag} {root}: {name} leads outside it (to {folder})")
    if folder.exists() and not folder.is_dir():
        raise UserError(f"{folder}: is a file, not a folder")
    return folder


_ENUMERATE_SUFFIX = "-enumerate"


def enumerate_name(space: str, profile: str) -> str:
    """The study `coatsearch enumerate` measures a space's profile in by default (the table a search of the same
    space is judged against): the space's name, -PROFILE unless default, then -enumerate."""
    return f"{space}{'' if profile == 'default' else f'-{profile}'}{_ENUMERATE_SUFFIX}"


def study_folder(studies_dir: Path, name: str) -> Path:
    """The study's folder under `--studies-dir`, checked."""
    return inside(studies_dir, name, "--studies-dir")


def report_folder(reports_dir: Path, name: str, studies_dir: Path | None = None) -> Path:
    """The report's folder under `--reports-dir`, checked; never inside a study folder (`writable`)."""
    folder = inside(reports_dir, name, "--reports-dir")
    writable(folder, studies_dir, "--reports-dir", "a report", name)
    return folder


_STUDY_FILES = (JOURNAL, "claim.lock", "run.lock", "plan.json", "registration.json")  # a folder holding one: a study


def writable(path: Path, studies_dir: Path | None, flag: str, what: str, study: str | None = None) -> Path:
    """`path` if a command may write it there: the one rule for every file written outside a study's own run.

    Refused in one line when `path` (resolved, its last component not followed) is, or lies inside, a study
    folder: the folder of `study` under `studies_dir` (which a run creates), or any folder that holds a
    study's files (`_STUDY_FILES`), whichever study it belongs to. So `export A --out studies/B/journal.log`,
    `--reports-dir studies` and `--reports-dir studies/B` never write beside a study's journal.
    """
    path = Path(path).expanduser()
    try:
        target = path.parent.resolve() / path.name
    except (OSError, RuntimeError) as exc:
        raise UserError(f"{flag} {path}: cannot resolve ({exc})") from None
    own = inside(studies_dir, study, "--studies-dir") if studies_dir is not None and study else None
    for folder in (target, *target.parents):
        if folder == own or any(os.path.lexists(folder / f) for f in _STUDY_FILES):
            raise UserError(f"{flag} {path}: is inside the study folder {folder}; write {what} elsewhere")
    return path
