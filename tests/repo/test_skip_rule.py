"""The session rule of tests/conftest.py, run on throw-away test files: a skip fails the run, except `cuda` ones."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

CONFTEST = Path(__file__).resolve().parents[1] / "conftest.py"
PLAIN = "import pytest\n\ndef test_ok():\n    pass\n\ndef test_gone():\n    pytest.skip('why')\n"
MODULE = "import pytest\n\npytest.importorskip('no_such_module_anywhere')\n\ndef test_x():\n    pass\n"
CUDA = "import pytest\n\n@pytest.mark.cuda\ndef test_gpu():\n    pytest.skip('needs a CUDA device')\n"
CLEAN = "def test_ok():\n    pass\n"


def _session(tmp_path: Path, files: dict[str, str]) -> subprocess.CompletedProcess:
    """Run pytest under a copy of the conftest on `files` (name -> source) in `tmp_path`."""
    shutil.copy(CONFTEST, tmp_path / "conftest.py")
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    cuda: needs CUDA\n")
    for name, source in files.items():
        (tmp_path / name).write_text(source)
    args = ["-q", "-rs", "-p", "no:cacheprovider", f"--basetemp={tmp_path / 'tmp'}", str(tmp_path)]
    env = {**os.environ, "PYTHONPATH": str(CONFTEST.parents[1])}  # the copy imports the repository's tests helpers
    return subprocess.run([sys.executable, "-m", "pytest", *args], capture_output=True, text=True, cwd=tmp_path,
                          env=env)  # fmt: skip


def test_skips_fail_the_session_and_are_named_except_cuda_ones_without_cuda(tmp_path):
    done = _session(tmp_path, {"test_plain.py": PLAIN, "test_module.py": MODULE, "test_gpu.py": CUDA})
    out = done.stdout + done.stderr
    assert done.returncode == pytest.ExitCode.TESTS_FAILED, out
    named = next(line for line in done.stdout.splitlines() if "(a skip is a failure here)" in line)
    assert "test_plain.py::test_gone" in named and "test_module.py" in named, named
    if torch.cuda.is_available():
        assert "3 test(s) skipped" in named and "test_gpu.py::test_gpu" in named, named
    else:
        assert "2 test(s) skipped" in named and "test_gpu" not in named, named


def test_a_session_without_skips_passes(tmp_path):
    done = _session(tmp_path, {"test_clean.py": CLEAN})
    assert done.returncode == pytest.ExitCode.OK and "skipped" not in done.stdout, done.stdout + done.stderr
