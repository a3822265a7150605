"""Session rules: CI installs every dataset and dependency, so a skipped test fails the run.

The one exception is a test marked `cuda` on a machine without CUDA (the GPU checks skip on the CPU). Skips are
read from the reports as they come, so a module skipped at collection counts like a skipped test.
`--workers auto` caches its probe per machine; tests point that cache at a temporary folder, never at ~.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator

import pytest
import torch

from tests.support.registries import RegistryPatch

os.environ.setdefault("COATSEARCH_CACHE", tempfile.mkdtemp(prefix="coatsearch-cache-"))

_SKIPS: list[str] = []  # this session's skips that the rule does not allow (node ids, in order)


def allowed_skip(report: pytest.TestReport | pytest.CollectReport, cuda: bool) -> bool:
    """Whether a skip is the allowed one: a test marked `cuda` on a machine without CUDA (`cuda` False)."""
    return isinstance(report, pytest.TestReport) and "cuda" in report.keywords and not cuda


def _note(report: pytest.TestReport | pytest.CollectReport) -> None:
    if report.skipped and not hasattr(report, "wasxfail") and not allowed_skip(report, torch.cuda.is_available()):
        _SKIPS.append(report.nodeid)


def pytest_sessionstart(session: pytest.Session) -> None:
    """No skips noted yet."""
    _SKIPS.clear()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Note a skipped test (a skip in set-up included) unless it is the allowed one."""
    _note(report)


def pytest_collectreport(report: pytest.CollectReport) -> None:
    """Note a module or class skipped at collection (pytest.importorskip, a module-level pytest.skip)."""
    _note(report)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Turn a green run (or one whose every test was skipped) with skips other than CUDA's into a failure."""
    if exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED) and _SKIPS:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, exitstatus: int, config: pytest.Config) -> None:
    """Say why a run with skips failed."""
    if _SKIPS:
        names = ", ".join(_SKIPS[:5])
        terminalreporter.write_line(f"FAILED: {len(_SKIPS)} test(s) skipped (a skip is a failure here): {names}")


def _process_settings() -> tuple[int, str | None, bool, object]:
    """torch's process-wide settings a library call or a test could leave changed: intra-op threads, the
    TORCHINDUCTOR_COMPILE_THREADS variable, whether inductor's config is imported, and its compile_threads (or why
    it cannot be read: a test's undo once left it unreadable and every later compile failed, issue 56)."""
    config = sys.modules.get("torch._inductor.config")
    compile_threads: object = None
    if config is not None:
        try:
            compile_threads = config.compile_threads
        except AttributeError as exc:
            compile_threads = f"unreadable ({exc})"
    return torch.get_num_threads(), os.environ.get("TORCHINDUCTOR_COMPILE_THREADS"), config is not None, compile_threads


@pytest.fixture(autouse=True)
def _process_settings_kept(request: pytest.FixtureRequest) -> Iterator[None]:
    """No test leaves torch's threads or inductor's compile threads as it did not find them, so the suite passes in
    any order of its files (a test that must change them runs them in a process of its own)."""
    before = _process_settings()
    yield
    after = _process_settings()
    if not before[2]:  # inductor's config first imported by this test: it must still read, at its import value
        after = (*after[:2], False, None if isinstance(after[3], int | None) else after[3])
    if after != before:
        names = ("torch threads", "TORCHINDUCTOR_COMPILE_THREADS", "inductor config imported", "compile_threads")
        changed = [f"{n}: {b!r} -> {a!r}" for n, b, a in zip(names, before, after, strict=True) if a != b]
        pytest.fail(f"{request.node.nodeid} left process settings changed: {'; '.join(changed)}", pytrace=False)


@pytest.fixture(autouse=True)
def _fresh_storages():
    """Each test opens its journals anew (the store caches one storage per journal per process)."""
    from coatsearch.storage import store

    store._OPEN.clear()
    yield
    store._OPEN.clear()


@pytest.fixture
def registry_patch() -> Iterator[RegistryPatch]:
    """Registry entries set or removed by a test (tests/support/registries.py), undone at teardown."""
    patch = RegistryPatch()
    try:
        yield patch
    finally:
        patch.undo()
