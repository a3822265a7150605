"""Session rules: CI installs every dataset and dependency, so a skipped test fails the run.

The one exception is a test marked `cuda` on a machine without CUDA (the GPU checks skip on the CPU). Skips are
read from the reports as they come, so a module skipped at collection counts like a skipped test.
`--workers auto` caches its probe per machine; tests point that cache at a temporary folder, never at ~.
"""

from __future__ import annotations

import os
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
