"""The hostile-input tests' contract checks: a deadline instead of a hang, hashes and listings of what is on disk,
the CLI run in a folder, and "refused": exit 2, one line, nothing written."""

from __future__ import annotations

import hashlib
import io
import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from pathlib import Path

from coatsearch.cli import main
from coatsearch.storage import store
from tests.report_records import SPACE, layout_records, make_study


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Fail the test (instead of hanging) when the block takes longer than `seconds`."""

    def stop(*_: object) -> None:
        raise TimeoutError(f"still running after {seconds} s: a hang")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def digest(path: Path) -> str:
    """The file's SHA-256."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def listing(root: Path) -> list[str]:
    """Every path under `root`, relative and sorted."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def cli(tmp_path: Path, argv: list[str], seconds: float = 60) -> tuple[int, str, str]:
    """Run the CLI in `tmp_path` under a deadline; (exit status, stdout, stderr)."""
    out, err, cwd = io.StringIO(), io.StringIO(), os.getcwd()
    os.chdir(tmp_path)
    try:
        with deadline(seconds), redirect_stdout(out), redirect_stderr(err):
            try:
                rc = main(argv)
            except SystemExit as exc:  # argparse's one-line flag error
                rc = int(exc.code or 0)
    finally:
        os.chdir(cwd)
    return rc, out.getvalue(), err.getvalue()


def refused(tmp_path: Path, argv: list[str], expected: str, outside: Path | None = None) -> str:
    """Exit 2, one line naming `expected`, nothing written under tmp_path, `outside` unchanged."""
    before, was = listing(tmp_path), digest(outside) if outside else None
    rc, _, err = cli(tmp_path, argv)
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert expected in err, err
    assert listing(tmp_path) == before
    if outside is not None:
        assert digest(outside) == was
    return err


def study(tmp_path: Path) -> Path:
    """A finished study `fab` under tmp_path/studies (no training); its journal."""
    make_study(tmp_path / "studies", "fab", SPACE, layout_records())
    store._OPEN.clear()
    return tmp_path / "studies" / "fab" / "journal.log"


def wsgi_request(app: object, method: str, path: str, body: bytes) -> str:
    """One WSGI request to the dashboard app; its status line."""
    environ = {"REQUEST_METHOD": method, "PATH_INFO": path, "wsgi.input": io.BytesIO(body),
               "CONTENT_LENGTH": str(len(body)), "CONTENT_TYPE": "application/json", "SERVER_NAME": "x",
               "SERVER_PORT": "1", "wsgi.url_scheme": "http", "wsgi.errors": io.StringIO()}  # fmt: skip
    statuses: list[str] = []
    b"".join(app(environ, lambda status, headers, *_: statuses.append(status)))  # type: ignore[operator]
    return statuses[0]
