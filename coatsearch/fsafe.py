"""Files inside a study or report folder, and files a user names: one rule for reading and writing them.

- No symbolic link is followed: a link where coatsearch reads or writes a file is refused in one line
  (a cloned repository can commit links, so `reports/S/report.md -> ~/.bashrc` must not be written through).
- No special file is opened: FIFOs, devices and sockets are refused (a FIFO would block, `/dev/zero` never ends).
- Every read is bounded: the file's kind and size are checked with stat before it is opened (without blocking),
  at most `limit` bytes are read, and JSON nested deeper than _JSON_DEPTH is refused, so `/dev/zero`, a FIFO, a
  huge or deeply nested file is one line, never a hang, a MemoryError or a RecursionError. A file the user names
  (`--space`, `--resume`, a weights file) may be reached through a link; one inside a study or report folder not.
- What a study owns (checkpoints/, tensorboard/, mlartifacts/, artifacts/, weights/, ray/; mlflow.db) is reached
  through `owned(root, ...)`: every component below the study folder is checked, not only the last, so a link planted
  at any level
  (`checkpoints -> ~/work`) is one line, and `remove_owned` never removes through one.
- Every write goes to a temporary file in the same folder, is flushed to disk, then renamed over the target:
  a write that fails (a full disk, `ulimit -f`) leaves the previous file as it was and names the file.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from coatsearch.errors import UserError

_KINDS = {stat.S_IFIFO: "a FIFO", stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device"}
_KINDS |= {stat.S_IFSOCK: "a socket", stat.S_IFDIR: "a folder"}
JSON_MAX = 16_000_000  # bytes of a JSON file coatsearch reads (a report's summary.json, a table, a registration)
_JSON_DEPTH = 64  # nesting of a JSON file coatsearch reads (a report's summary.json has 7)
_UMASK = os.umask(0o022)
os.umask(_UMASK)  # read once: files get the mode open() would give them (mkstemp makes them 0600)


def _unlinked(path: Path, acts: str, where: str) -> os.stat_result | None:
    """lstat of `path`, None where nothing is; a one-line UserError when it cannot be read or is a symbolic link
    (coatsearch does not `acts` through links in `where`)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UserError(f"{path}: cannot be used ({exc.strerror})") from None
    if stat.S_ISLNK(st.st_mode):
        raise UserError(
            f"{path}: is a symbolic link (to {os.readlink(path)}); coatsearch does not {acts} through links in "
            f"{where}: remove the link"
        )
    return st


def check_plain(path: Path) -> Path:
    """`path` if it does not exist or is a regular file (not a link); a one-line UserError otherwise."""
    st = _unlinked(path, "read or write", "a study or report folder")
    if st is None:
        return Path(path)
    if not stat.S_ISREG(st.st_mode):
        kind = _KINDS.get(stat.S_IFMT(st.st_mode), "not a regular file")
        raise UserError(f"{path}: is {kind}, not a regular file; remove it")
    return Path(path)


def read_bytes(path: Path, limit: int | None = None) -> bytes:
    """The bytes of a regular file that is not a link (opened without following links, never blocking), of at most
    `limit` bytes (None: any size)."""
    check_plain(path)
    return _read(Path(path), limit, os.O_NOFOLLOW)


def read_named(path: Path, limit: int, what: str = "file") -> bytes:
    """The bytes of a file the user names (links followed): a regular file of at most `limit` bytes, else one line."""
    return _read(check_named(path, what), limit, 0, what)


def check_named(path: Path, what: str = "file") -> Path:
    """`path` if it names a regular file (links followed), checked with stat: a one-line UserError otherwise."""
    path = Path(path)
    try:
        st = os.stat(path)
    except OSError as exc:
        raise UserError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if not stat.S_ISREG(st.st_mode):
        kind = _KINDS.get(stat.S_IFMT(st.st_mode), "not a regular file")
        raise UserError(f"{path}: is {kind}; a {what} is a regular file")
    return path


def _read(path: Path, limit: int | None, flags: int, what: str = "file") -> bytes:
    """Open without blocking, check the kind and size again on the open file, read at most limit + 1 bytes."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | flags)
    except OSError as exc:
        raise UserError(f"{path}: cannot be read ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):  # swapped between the check and the open
            raise UserError(f"{path}: is not a regular file; remove it")
        if limit is not None and st.st_size > limit:
            raise UserError(f"{path}: {st.st_size:,} bytes; a {what} here may have at most {limit:,}")
        raw = fh.read() if limit is None else fh.read(limit + 1)
    if limit is not None and len(raw) > limit:  # grew meanwhile
        raise UserError(f"{path}: more than {limit:,} bytes; a {what} here may have at most {limit:,}")
    return raw


def parse_json(raw: bytes | str, where: object, kind: type = dict, depth: int = _JSON_DEPTH) -> Any:
    """JSON text parsed: a value of `kind` nested at most `depth` deep; a one-line UserError naming `where` else."""
    try:
        value = json.loads(raw)
    except RecursionError:
        raise UserError(f"{where}: JSON nested too deeply (at most {depth} levels)") from None
    except ValueError as exc:  # not UTF-8, not JSON
        raise UserError(f"{where}: not a JSON file ({str(exc).splitlines()[0][:120]})") from None
    if not isinstance(value, kind):
        raise UserError(f"{where}: holds a JSON {type(value).__name__}, expected a {_JSON_NAMES.get(kind, kind)}")
    stack = [(value, 1)]
    while stack:  # iterative: a deep value cannot overflow this check
        node, level = stack.pop()
        if level > depth:
            raise UserError(f"{where}: JSON nested too deeply (at most {depth} levels)")
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
        stack += [(c, level + 1) for c in children if isinstance(c, dict | list)]
    return value


def read_json(path: Path, kind: type = dict, limit: int = JSON_MAX, *, named: bool = False) -> Any:
    """A JSON file read with the bounds above (`named`: a file the user names, links followed); one line else."""
    raw = read_named(path, limit, "JSON file") if named else read_bytes(path, limit)
    return parse_json(raw, path, kind)


_JSON_NAMES: dict[type, str] = {dict: "mapping (an object)", list: "list (an array)"}


@contextmanager
def replacing(path: Path) -> Iterator[Path]:
    """A temporary path beside `path` (same suffix) to write; renamed over `path` when the block succeeds.

    On any error the temporary file is removed and `path` is left as it was; an OSError (disk full, file
    size limit, permissions) becomes a one-line UserError naming `path`.
    """
    path = check_plain(Path(path))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=f".tmp{path.suffix}")
        os.fchmod(fd, 0o666 & ~_UMASK)
        os.close(fd)
    except OSError as exc:
        raise UserError(f"{path}: cannot be written ({exc.strerror})") from None
    tmp = Path(name)
    try:
        yield tmp
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        check_plain(path)  # a link made meanwhile is refused, not replaced silently
        os.replace(tmp, path)
    except OSError as exc:
        raise UserError(f"{path}: cannot be written ({exc.strerror}); the previous file is unchanged") from None
    finally:
        tmp.unlink(missing_ok=True)


def write(path: Path, data: bytes | str) -> Path:
    """Write `data` (text as UTF-8; undecodable file names escaped) to `path` atomically; returns `path`."""
    raw = data.encode("utf-8", errors="backslashreplace") if isinstance(data, str) else data
    with replacing(path) as tmp:
        tmp.write_bytes(raw)
    return Path(path)


def create(path: Path, data: bytes) -> Path:
    """Write `data` to a new file `path` (a backup): never through a link, never over an existing file."""
    check_plain(path)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666)
    except OSError as exc:  # a link or a file made meanwhile: O_EXCL never follows or replaces it
        raise UserError(f"{path}: cannot be created ({exc.strerror}); nothing was changed") from None
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    return Path(path)


OWNED = ("checkpoints", "tensorboard", "mlflow.db", "mlartifacts", "artifacts", "weights", "ray")  # what a study owns
# beside its journal and records: folders, and MLflow's SQLite file


def owned(root: Path, *parts: str | Path) -> Path:
    """`root/parts` (a path under a study folder) after checking every component below `root`, top down.

    None may be a symbolic link; each but the last must be a folder, the last a folder or a regular file (or the
    path may end where nothing exists yet); `parts` may not be absolute or hold `..`, so the path cannot leave
    `root`. A one-line UserError names the first component that breaks the rule.
    """
    root = Path(root)
    rel = Path(*parts) if parts else Path()
    if rel.is_absolute() or ".." in rel.parts:
        raise UserError(f"{root / rel}: leads outside the study folder {root}")
    path = root
    for i, name in enumerate(rel.parts):
        path = path / name
        st = _unlinked(path, "read, write or remove", "a study folder")
        if st is None:
            break  # nothing below exists yet: it will be made as a folder of the study
        last = i == len(rel.parts) - 1
        if not stat.S_ISDIR(st.st_mode) and (not last or not stat.S_ISREG(st.st_mode)):
            kind = _KINDS.get(stat.S_IFMT(st.st_mode), "not a regular file")
            raise UserError(f"{path}: is {kind}, where the study keeps a folder; remove it")
    return root / rel


def check_owned(root: Path) -> None:
    """Every folder the study at `root` owns (OWNED) checked with `owned`: a link there is one line."""
    for name in OWNED:
        owned(root, name)


def remove_owned(root: Path, *parts: str | Path) -> None:
    """Remove the folder `root/parts` and what it holds, never through a link: every component is checked first
    (`owned`), and shutil.rmtree removes a link inside it as a link, never what it points to."""
    path = owned(root, *parts)
    if not os.path.lexists(path):
        return
    try:
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()
    except OSError as exc:
        raise UserError(f"{path}: cannot be removed ({exc.strerror or exc})") from None
