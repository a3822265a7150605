"""Where a study and its report live: one rule for names and folders, checked before anything is written.

A study name is one path component (letters, digits, `_`, `.`, `-`; not `.` or `..`; at most NAME_MAX
characters). A root folder (`--studies-dir`, `--reports-dir`) is resolved and must be a folder or not exist
yet under a folder. The study's folder and the report's folder are computed here, resolved (symlinks
followed) and checked to lie inside their roots, so nothing coatsearch writes lands anywhere else.
"""

from __future__ import annotations

import re
from pathlib import Path

from coatsearch.errors import UserError

NAME_MAX = 100  # characters in a study name
NAME = re.compile(r"[A-Za-z0-9_.-]+")


def check_name(name: str, what: str = "study name") -> str:
    """Return `name` if it is one safe path component; a one-line UserError otherwise."""
    if not name:
        raise UserError(f"{what} is empty; use letters, digits, '_', '.' or '-'")
    if len(name) > NAME_MAX:
        raise UserError(f"{what} {name[:20]!r}... is {len(name)} characters long; at most {NAME_MAX} allowed")
    if not NAME.fullmatch(name) or name in (".", ".."):
        raise UserError(f"{what} {name!r} is not allowed: use one name of letters, digits, '_', '.' or '-'")
    return name


def check_root(path: Path, flag: str) -> Path:
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
    root = check_root(root, flag)
    folder = (root / check_name(name, what)).resolve()
    if folder.parent != root:
        raise UserError(f"{flag} {root}: {name} leads outside it (to {folder})")
    if folder.exists() and not folder.is_dir():
        raise UserError(f"{folder}: is a file, not a folder")
    return folder


def study_folder(studies_dir: Path, name: str) -> Path:
    """The study's folder under `--studies-dir`, checked."""
    return inside(studies_dir, name, "--studies-dir")


def report_folder(reports_dir: Path, name: str) -> Path:
    """The report's folder under `--reports-dir`, checked."""
    return inside(reports_dir, name, "--reports-dir")
