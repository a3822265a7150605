"""Files inside a study or report folder: one rule for reading and writing them.

- No symbolic link is followed: a link where coatsearch reads or writes a file is refused in one line
  (a cloned repository can commit links, so `reports/S/report.md -> ~/.bashrc` must not be written through).
- No special file is opened: FIFOs, devices and sockets are refused (a FIFO would block, `/dev/zero` never ends).
- Every write goes to a temporary file in the same folder, is flushed to disk, then renamed over the target:
  a write that fails (a full disk, `ulimit -f`) leaves the previous file as it was and names the file.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from coatsearch.errors import UserError

_KINDS = {stat.S_IFIFO: "a FIFO", stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device"}
_KINDS |= {stat.S_IFSOCK: "a socket", stat.S_IFDIR: "a folder"}
_UMASK = os.umask(0o022)
os.umask(_UMASK)  # read once: files get the mode open() would give them (mkstemp makes them 0600)


def check_plain(path: Path) -> Path:
    """`path` if it does not exist or is a regular file (not a link); a one-line UserError otherwise."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return Path(path)
    except OSError as exc:
        raise UserError(f"{path}: cannot be used ({exc.strerror})") from None
    if stat.S_ISLNK(st.st_mode):
        raise UserError(
            f"{path}: is a symbolic link (to {os.readlink(path)}); coatsearch does not read or write through "
            "links in a study or report folder: remove the link"
        )
    if not stat.S_ISREG(st.st_mode):
        kind = _KINDS.get(stat.S_IFMT(st.st_mode), "not a regular file")
        raise UserError(f"{path}: is {kind}, not a regular file; remove it")
    return Path(path)


def read_bytes(path: Path) -> bytes:
    """The bytes of a regular file that is not a link (opened without following links, never blocking)."""
    check_plain(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        raise UserError(f"{path}: cannot be read ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):  # swapped between the check and the open
            raise UserError(f"{path}: is not a regular file; remove it")
        return fh.read()


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
