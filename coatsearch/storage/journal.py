"""Checking and splitting a study journal's bytes: which line is the first damaged one, what to keep on repair.

An Optuna journal file is one JSON object per line, each ending in a newline and carrying an integer
`op_code` and a `worker_id`. Optuna replays the lines in order and numbers trials as it creates them, so a
lost line shifts every later trial: a repair keeps the complete records *before* the first damaged line
and moves that line and everything after it aside (empty lines carry no record and are simply dropped).
Files are read and rewritten under the lock Optuna's writers hold (the store hands it in; no optuna import).

`Lock` is that lock (Optuna's symlink protocol: `journal.log.lock -> journal.log`, made with one atomic
`symlink` and removed after each append), with bounded waits: a lock that points to another file (a
project moved after `kill -9`) or is not a link is explained in one line; one older than _STALE_S is
left by a killed writer (a writer holds it for one append) and is removed with a one-line note; a wait
longer than _WAIT_S is a one-line error. Optuna's own lock spins forever on a dangling link.
"""

from __future__ import annotations

import json
import os
import stat
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coatsearch import fsafe
from coatsearch.errors import UserError

_STALE_S = 10.0  # a journal lock older than this was left by a killed writer (a writer holds it per append)
_WAIT_S = 60.0  # the longest wait for a journal lock held by a live writer


@dataclass(frozen=True)
class Damage:
    """The first damaged line of a journal: its 1-based number, byte offset, and what is wrong with it."""

    line: int
    offset: int
    why: str
    records: int  # complete records before it


@dataclass(frozen=True)
class RepairCut:
    """A journal cut for repair: the bytes to keep, the damaged tail to move aside, empty lines dropped."""

    keep: bytes
    tail: bytes
    records: int  # records kept
    tail_lines: int  # lines moved aside (a last line without a newline counts as one)
    blank: int  # empty lines dropped before the damage


def problem(raw: bytes) -> str:
    """Why one complete line (without its newline) is not a journal record ("" when it is one)."""
    if not raw.strip():
        return "an empty line"
    if b"\0" in raw:
        return "NUL bytes"
    try:
        obj = json.loads(raw)
    except ValueError:  # JSONDecodeError and UnicodeDecodeError
        return f"not JSON: {_shown(raw)}"
    if not isinstance(obj, dict) or not isinstance(obj.get("op_code"), int) or "worker_id" not in obj:
        return f"JSON but not a journal record (no integer op_code and worker_id): {_shown(raw)}"
    return ""


def _shown(raw: bytes) -> str:
    text = raw[:40].decode("utf-8", errors="replace")
    return repr(text + ("..." if len(raw) > 40 else ""))


def _lines(data: bytes) -> Iterator[tuple[int, int, bytes, bool]]:
    """(number, offset, line, complete) for every line; a last line without a newline is not complete."""
    offset = 0
    parts = data.split(b"\n")
    for i, raw in enumerate(parts):
        last = i == len(parts) - 1
        if last and not raw:
            return
        yield i + 1, offset, raw, not last
        offset += len(raw) + 1


def first_damage(data: bytes) -> Damage | None:
    """The first line of `data` that is not a complete journal record, or None when every line is one."""
    records = 0
    for number, offset, raw, complete in _lines(data):
        why = problem(raw) if complete or b"\0" in raw else "cut short: the last line has no newline"
        if why:
            return Damage(number, offset, why, records)
        records += 1
    return None


def split(data: bytes) -> RepairCut:
    """Keep every record before the first damaged line (empty lines dropped); the rest is the tail."""
    keep: list[bytes] = []
    blank = 0
    for _, offset, raw, complete in _lines(data):
        if complete and not raw.strip():
            blank += 1
            continue
        if not complete or problem(raw):
            tail = data[offset:]
            return RepairCut(b"".join(keep), tail, len(keep), tail.count(b"\n") + (not tail.endswith(b"\n")), blank)
        keep.append(raw + b"\n")
    return RepairCut(b"".join(keep), b"", len(keep), 0, blank)


class Lock:
    """Optuna's journal file lock protocol (a symlink beside the journal), with bounded, explained waits."""

    def __init__(self, journal: Path, wait_s: float = _WAIT_S, stale_s: float = _STALE_S) -> None:
        self.target, self.path = str(journal), f"{journal}.lock"
        self.wait_s, self.stale_s = wait_s, stale_s

    def acquire(self) -> bool:
        """Take the lock; a UserError (one line) when it is foreign or still held after `wait_s` seconds."""
        deadline, pause = time.monotonic() + self.wait_s, 0.001
        while True:
            try:
                os.symlink(self.target, self.path)
                return True
            except FileExistsError:
                pass
            age = self._held_for()
            if age is not None and age > self.stale_s:
                self._remove(
                    f"coatsearch: note: removed a journal lock left by a killed writer ({self.path}, {age:.0f} s old)"
                )
                continue
            if time.monotonic() > deadline:
                raise UserError(
                    f"{self.path}: the study journal has been locked for over {self.wait_s:.0f} s by "
                    "another process; if no coatsearch process uses this study, remove this file"
                )
            time.sleep(pause)
            pause = min(pause * 2, 0.05)

    def _held_for(self) -> float | None:
        """Seconds since the existing lock was made (None: it vanished); a UserError when it is not ours."""
        try:
            st = os.lstat(self.path)
            link = os.readlink(self.path) if stat.S_ISLNK(st.st_mode) else None
        except FileNotFoundError:
            return None
        if link is None:
            raise UserError(
                f"{self.path}: is not a journal lock (a lock is a link to {self.target}); "
                "remove it if no coatsearch process uses this study"
            )
        if link != self.target:
            raise UserError(
                f"{self.path}: a lock left for another file ({link}; the study was moved after a "
                "killed run?); no writer of this journal holds it: remove this file"
            )
        return time.time() - st.st_mtime

    def _remove(self, note: str) -> None:
        aside = f"{self.path}.{uuid.uuid4().hex}"
        try:
            os.rename(self.path, aside)  # atomic: of two processes breaking it, one wins
        except FileNotFoundError:
            return
        os.unlink(aside)
        print(note, file=sys.stderr, flush=True)

    def release(self) -> None:
        """Give the lock back (renamed aside, then removed, as Optuna does)."""
        aside = f"{self.path}.{uuid.uuid4().hex}"
        try:
            os.rename(self.path, aside)
            os.unlink(aside)
        except FileNotFoundError:
            raise RuntimeError(f"{self.path}: the journal lock was removed while held") from None


@contextmanager
def paused(lock: Any) -> Iterator[None]:
    """Hold the writers' lock (no writer is mid-line meanwhile); go on unlocked where it cannot be taken."""
    try:
        lock.acquire()
    except OSError:  # a read-only folder: nobody writes there
        yield
        return
    try:
        yield
    finally:
        lock.release()


def check(path: Path, lock: Any) -> None:
    """Raise a one-line UserError at the journal's first damaged line, saying how to repair it."""
    with paused(lock):  # held for one read only: a writer's wait stays far below _STALE_S
        data = fsafe.read_bytes(path)
    damage = first_damage(data)
    if damage is not None:
        raise UserError(
            f"{path}:{damage.line}: damaged study journal ({damage.why}); `coatsearch repair {path.parent.name} "
            f"--studies-dir {path.parent.parent}` keeps the {damage.records} complete records before this line "
            "and moves the rest to a backup file beside it"
        )


@dataclass(frozen=True)
class Repaired:
    """What a repair did to a study journal."""

    journal: Path
    records: int  # complete records kept
    moved: int  # lines moved aside: the first damaged one and every line after it
    blank: int  # empty lines dropped
    backup: Path | None  # where the moved lines are (None when nothing was moved)


def repair(path: Path, lock: Any) -> Repaired:
    """Rewrite the journal at `path` with the records `split` keeps; the tail goes to `<name>.damaged-<time>`.

    Both go through `fsafe`: the backup is created new (never through a link, never over a file), the journal
    is replaced atomically from a temporary file of fsafe's own beside it, so a link planted under a backup
    or temporary name is never followed, nothing is written outside the study folder, and the journal stays
    a regular file.
    """
    with paused(lock):
        cut = split(fsafe.read_bytes(path))
        backup = None
        if cut.tail:
            backup = _free(path.with_name(f"{path.name}.damaged-{time.strftime('%Y%m%d-%H%M%S')}"))
            fsafe.create(backup, cut.tail)
        if cut.tail or cut.blank:
            fsafe.write(path, cut.keep)
    return Repaired(path, cut.records, cut.tail_lines, cut.blank, backup)


def _free(path: Path) -> Path:
    """`path`, or `path-2`, `path-3`... the first name that nothing holds (a dangling link holds its name)."""
    n, out = 1, path
    while os.path.lexists(out):
        n += 1
        out = path.with_name(f"{path.name}-{n}")
    return out
