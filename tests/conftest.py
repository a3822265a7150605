"""Session rules: CI installs every dataset and dependency, so a skipped test fails the run.

The one exception is a test marked `cuda` on a machine without CUDA (the GPU checks skip on the CPU).
`--workers auto` caches its probe per machine; tests point that cache at a temporary folder, never at ~.
"""

from __future__ import annotations

import os
import tempfile

import pytest
import torch

os.environ.setdefault("COATSEARCH_CACHE", tempfile.mkdtemp(prefix="coatsearch-cache-"))


def _unexpected_skips(config: pytest.Config) -> list:
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter else []
    return [r for r in skipped if not ("cuda" in r.keywords and not torch.cuda.is_available())]


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Turn a green run with skips (other than CUDA tests without CUDA) into a failure."""
    if exitstatus == pytest.ExitCode.OK and _unexpected_skips(session.config):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    """Say why a run with skips failed."""
    skips = _unexpected_skips(config)
    if skips:
        names = ", ".join(r.nodeid for r in skips[:5])
        terminalreporter.write_line(f"FAILED: {len(skips)} test(s) skipped (a skip is a failure here): {names}")
